"""The narration scripts: shape, length, speakability, parsing and key lookup."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from narration import scripts
from narration.scripts import (
    SECTIONS,
    chapter_keys,
    keys,
    make_segment,
    parse_script,
    script_source,
    segment,
)

# Characters a speech engine reads badly or not at all; formulas go in words instead.
UNSPEAKABLE = set("=/×^()*+<>_`#[]{}$%|\\~")


def test_ten_chapters_of_exactly_five_sections_in_order() -> None:
    for chapter in range(10):
        parsed = parse_script(script_source(chapter), chapter)
        expected = [f"ch{chapter:02d}/{s}" for s in ("intro", "predict", "explore",
                                                      "exercises", "recap")]
        assert list(parsed) == expected, f"chapter {chapter}"


def test_keys_lists_all_fifty_once() -> None:
    assert len(keys()) == 50  # 10 chapters x 5 sections
    assert len(set(keys())) == 50
    assert keys()[0] == "ch00/intro" and keys()[-1] == "ch09/recap"


def test_chapter_keys_matches_sections() -> None:
    assert chapter_keys(5) == ("ch05/intro", "ch05/predict", "ch05/explore",
                               "ch05/exercises", "ch05/recap")
    assert SECTIONS == ("intro", "predict", "explore", "exercises", "recap")
    with pytest.raises(ValueError, match="chapter must be"):
        chapter_keys(10)


@pytest.mark.parametrize("key", keys())
def test_segment_lasts_half_a_minute_to_two_minutes(key: str) -> None:
    # 30 s to 120 s at 150 words a minute is 75 to 300 words.
    words = len(segment(key).text.split())
    assert 75 <= words <= 300, f"{key}: {words} words"


@pytest.mark.parametrize("key", keys())
def test_segment_text_is_speakable(key: str) -> None:
    text = segment(key).text
    bad = sorted(set(text) & UNSPEAKABLE)
    assert not bad, f"{key} contains {bad}"
    # "16,384" may be read as two numbers; scripts write numbers without separators.
    assert not re.search(r"\d,\d", text), key
    assert "\n\n\n" not in text and text == text.strip()


def test_titles_name_chapter_and_section_and_the_chapter_title_when_given() -> None:
    assert segment("ch05/intro").title == "Chapter 5: Introduction"
    titles = {9: "Capstone: a run"}
    assert scripts.segment_title("ch09/exercises", titles) == (
        "Chapter 9, Capstone: a run: Pause and try it"
    )
    assert scripts.segment_title("ch05/recap", titles) == "Chapter 5: Recap"


def test_the_chapters_are_the_script_files() -> None:
    folder = Path(scripts.__file__).parent / "scripts"
    on_disk = sorted(int(p.stem[2:]) for p in folder.glob("ch[0-9][0-9].md"))
    assert scripts.chapters() == tuple(on_disk) == tuple(range(10))
    with pytest.raises(ValueError, match=r"chapter must be one of 0\.\.9, got 10"):
        scripts.chapter_key_prefix(10)


# Facts the seed got wrong; the narration must say them the corrected way.
CORRECTED_FACTS = [
    ("ch05/intro", "both schedules have the same bubble: p minus one over m"),
    ("ch05/intro", "at most p micro-batches in flight"),
    ("ch09/recap", "tensor, context, pipeline, data"),
    ("ch04/intro", "PyTorch's distributed data parallel wrapper groups gradients into buckets"),
    ("ch07/intro", "fourteen bytes per parameter"),
    ("ch09/recap", "not the length of training"),
    ("ch03/recap", "only a course heuristic"),
]


@pytest.mark.parametrize(("key", "phrase"), CORRECTED_FACTS)
def test_corrected_facts_are_stated(key: str, phrase: str) -> None:
    assert phrase in segment(key).text


def test_unknown_key_names_close_matches() -> None:
    with pytest.raises(KeyError, match="did you mean ch05/intro"):
        segment("ch05/intor")
    with pytest.raises(KeyError, match="no narration segment 'zzz'"):
        segment("zzz")


def test_make_segment_counts_words_and_estimates_time() -> None:
    seg = make_segment("ch01/recap", " ".join(["word"] * 150))
    assert seg.word_count == 150
    assert seg.estimated_seconds == 60.0  # 150 words at 150 words/minute
    # SHA-256 of "abc" from FIPS 180-2, appendix B.1.
    assert scripts.text_hash("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_parse_rewraps_lines_and_keeps_paragraphs() -> None:
    source = "# Chapter 3\n\n## ch03/intro\nfirst line\nsecond line\n\n\nnew paragraph\n"
    parsed = parse_script(source, 3)
    assert parsed["ch03/intro"].text == "first line second line\n\nnew paragraph"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("## ch03/intro\na\n## ch03/intro\nb\n", "appears twice"),
        ("## ch04/intro\na\n", "belongs to another chapter"),
        ("stray words\n## ch03/intro\na\n", "text before the first"),
        ("## chapter3/intro\na\n", "not of the form"),
    ],
)
def test_parse_rejects_malformed_scripts(source: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_script(source, 3)
