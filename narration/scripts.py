"""The narration scripts: one markdown file per chapter, five spoken sections each.

Each file ``narration/scripts/chNN.md`` holds a top-level heading line and then five
sections, each introduced by a second-level heading that is exactly its key::

    # Chapter 5

    ## ch05/intro
    Spoken text, plain prose, one or more paragraphs ...

    ## ch05/predict
    ...

The text under a heading is what a learner reads in the transcript and what the
offline renderer speaks, so it is written for the ear: numbers and formulas in words
("p minus one over m"), no symbols a speech engine would mangle.

The chapters narrated are the script files present; chapter titles are not kept here.
A caller that knows them (the workbook's outline) passes them to the player.

Files are read with :mod:`importlib.resources`, so they are found the same way from a
source checkout, an installed wheel or a zip import.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

# The five sections every chapter narrates, in the order a learner meets them.
SECTIONS: tuple[str, ...] = ("intro", "predict", "explore", "exercises", "recap")

SECTION_TITLES: dict[str, str] = {
    "intro": "Introduction",
    "predict": "Make a prediction",
    "explore": "Explore",
    "exercises": "Pause and try it",
    "recap": "Recap",
}

# Spoken pace used for the estimate shown beside a transcript: 150 words a minute is
# a common figure for narration and audiobooks.
WORDS_PER_MINUTE = 150.0

_HEADING = re.compile(r"^##\s+(\S+)\s*$")
_KEY = re.compile(r"^ch(\d{2})/([a-z_]+)$")
_SCRIPT_FILE = re.compile(r"^ch(\d{2})\.md$")


@dataclass(frozen=True)
class Segment:
    """One narrated section: its key, title (chapter number and section) and spoken text."""

    key: str
    title: str
    text: str
    word_count: int
    estimated_seconds: float
    text_hash: str


@lru_cache(maxsize=1)
def chapters() -> tuple[int, ...]:
    """The numbers of the chapters that have a script file, in order."""
    folder = resources.files("narration").joinpath("scripts")
    found = (_SCRIPT_FILE.match(entry.name) for entry in folder.iterdir())
    return tuple(sorted(int(match.group(1)) for match in found if match))


def chapter_key_prefix(chapter: int) -> str:
    """``"ch05"`` for chapter 5; ValueError for a chapter with no script."""
    if chapter not in chapters():
        raise ValueError(f"chapter must be one of {_ranges(chapters())}, got {chapter}")
    return f"ch{chapter:02d}"


def _ranges(numbers: tuple[int, ...]) -> str:
    """``"0..9"`` for consecutive numbers, else the list."""
    if numbers and list(numbers) == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}..{numbers[-1]}"
    return ", ".join(map(str, numbers))


def chapter_keys(chapter: int) -> tuple[str, ...]:
    """The five keys of one chapter, in section order."""
    prefix = chapter_key_prefix(chapter)
    return tuple(f"{prefix}/{section}" for section in SECTIONS)


def split_key(key: str) -> tuple[int, str]:
    """``"ch05/intro"`` -> ``(5, "intro")``; ValueError for a malformed key."""
    match = _KEY.match(key)
    if match is None:
        raise ValueError(f"narration key {key!r} is not of the form 'chNN/section'")
    return int(match.group(1)), match.group(2)


def segment_title(key: str, chapter_titles: Mapping[int, str] | None = None) -> str:
    """``"Chapter 5: Introduction"``, or with the chapter's title when ``chapter_titles``
    (chapter number -> title) has it: ``"Chapter 5, Pipeline parallelism: Introduction"``."""
    chapter, section = split_key(key)
    name = (chapter_titles or {}).get(chapter)
    where = f"Chapter {chapter}, {name}" if name else f"Chapter {chapter}"
    return f"{where}: {SECTION_TITLES.get(section, section)}"


def text_hash(text: str) -> str:
    """SHA-256 of the spoken text (hex); the renderer re-renders when it changes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_segment(key: str, text: str) -> Segment:
    """Build a Segment, computing the word count, spoken-time estimate and hash."""
    words = len(text.split())
    return Segment(
        key=key,
        title=segment_title(key),
        text=text,
        word_count=words,
        estimated_seconds=round(words * 60.0 / WORDS_PER_MINUTE, 1),
        text_hash=text_hash(text),
    )


def parse_script(source: str, chapter: int) -> dict[str, Segment]:
    """Parse one chapter file into its segments, in file order.

    Raises ValueError for a heading whose key belongs to another chapter, a repeated
    key, or text before the first section heading.
    """
    prefix = chapter_key_prefix(chapter)
    bodies: dict[str, list[str]] = {}
    current: str | None = None
    for number, line in enumerate(source.splitlines(), start=1):
        heading = _HEADING.match(line)
        if heading:
            current = heading.group(1)
            _check_heading(current, prefix, bodies, number)
            bodies[current] = []
        elif current is not None:
            bodies[current].append(line)
        elif line.strip() and not line.startswith("# "):
            raise ValueError(f"{prefix}.md line {number}: text before the first '## key'")
    return {key: make_segment(key, _join_paragraphs(lines)) for key, lines in bodies.items()}


def _check_heading(key: str, prefix: str, seen: dict[str, list[str]], number: int) -> None:
    split_key(key)  # malformed keys raise here
    if not key.startswith(prefix + "/"):
        raise ValueError(f"{prefix}.md line {number}: key {key!r} belongs to another chapter")
    if key in seen:
        raise ValueError(f"{prefix}.md line {number}: key {key!r} appears twice")


def _join_paragraphs(lines: list[str]) -> str:
    """Rewrap hard-wrapped lines: paragraphs are separated by a blank line."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines + [""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return "\n\n".join(paragraphs)


def script_source(chapter: int) -> str:
    """The raw markdown of one chapter's script, read from the installed package."""
    name = f"{chapter_key_prefix(chapter)}.md"
    folder = resources.files("narration").joinpath("scripts")
    return folder.joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _all_segments() -> dict[str, Segment]:
    segments: dict[str, Segment] = {}
    for chapter in chapters():
        segments.update(parse_script(script_source(chapter), chapter))
    return segments


def keys() -> tuple[str, ...]:
    """Every narration key, chapter by chapter, in section order within a file."""
    return tuple(_all_segments())


def segment(key: str) -> Segment:
    """The segment for ``key``; KeyError naming the closest keys when it is unknown."""
    segments = _all_segments()
    try:
        return segments[key]
    except KeyError:
        close = difflib.get_close_matches(key, segments, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no narration segment {key!r}{hint}") from None


def segments(keys_: tuple[str, ...] | list[str] | None = None) -> list[Segment]:
    """Segments for the given keys (all of them when ``None``)."""
    return [segment(k) for k in (keys() if keys_ is None else keys_)]


def reload() -> None:
    """Forget the parsed scripts (after editing a script file in a running kernel)."""
    _all_segments.cache_clear()
    chapters.cache_clear()
