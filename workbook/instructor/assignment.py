"""The assignment a grading run is bound to: its chapters, title and points possible.

An LMS download is one assignment's submissions, so its grading says which chapters the
assignment holds (``--chapters 0,3``, or ``--release FOLDER``: the chapters of the
``workbook release`` that handed it out, read from its ``answer-key/manifest.json``). Every
student is then out of exactly those chapters' points, whatever anyone uploaded: a notebook
of another chapter is an error row for its uploader and changes no one's maximum, nor the
points possible written for the LMS.

Its title names the grade column of the LMS import (``--assignment``; default "Workbook
ch00" or "Workbook ch00+ch03"), so that importing one assignment never overwrites another.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.model import Batch, NotebookResult
from workbook.instructor.release import KEY_FOLDER, parse_chapters


@dataclass(frozen=True)
class Assignment:
    chapters: tuple[int, ...]
    title: str

    def max_points(self, chapter_points: Mapping[int, int]) -> int:
        return sum(chapter_points[c] for c in self.chapters)


def default_title(chapters: tuple[int, ...]) -> str:
    return "Workbook " + "+".join(f"ch{c:02d}" for c in chapters)


def _release_chapters(folder: Path) -> tuple[int, ...]:
    manifest = folder / KEY_FOLDER / "manifest.json"
    try:
        chapters = json.loads(manifest.read_text(encoding="utf-8"))["chapters"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"--release {folder}: no readable {KEY_FOLDER}/manifest.json "
                         "(the folder `workbook release --roster ...` wrote)") from None
    numbers = [c["number"] if isinstance(c, dict) else c for c in chapters]
    if not numbers or not all(type(n) is int for n in numbers):
        raise ValueError(f"--release {folder}: its manifest names no chapters")
    return tuple(sorted(set(numbers)))


def from_arguments(chapters: str | None, title: str | None,
                   release: str | None) -> Assignment | None:
    """The assignment the command line names, None when it names none; ValueError for a
    bad value or two sources that disagree."""
    numbers: tuple[int, ...] | None = None
    if chapters is not None:
        numbers = tuple(c.number for c in parse_chapters(chapters))
    if release is not None:
        released = _release_chapters(Path(release))
        if numbers is not None and numbers != released:
            raise ValueError(f"--chapters {chapters} and --release {release} (chapters "
                             f"{', '.join(map(str, released))}) disagree")
        numbers = released
    if numbers is None:
        if title is not None:
            raise ValueError("--assignment names an assignment's title; say which chapters "
                             "it holds with --chapters (or --release)")
        return None
    return Assignment(numbers, (title or "").strip() or default_title(numbers))


def bind(batch: Batch, assignment: Assignment) -> Batch:
    """The batch with every notebook of a chapter outside the assignment turned into an
    error row for its uploader (graded work of the assignment's chapters is untouched)."""
    chapters = ", ".join(f"{c}" for c in assignment.chapters)
    notebooks: list[NotebookResult] = []
    for notebook in batch.notebooks:
        if notebook.chapter is not None and notebook.chapter not in assignment.chapters \
                and not notebook.problem:
            notebook = dataclasses.replace(
                notebook, exercises=(), chapter=None,
                problem=f"{notebook.path}: a notebook of chapter {notebook.chapter}, handed "
                        f"in to '{assignment.title}' (chapter {chapters}); it was not "
                        "graded and counts for nothing here")
        notebooks.append(notebook)
    return dataclasses.replace(batch, notebooks=tuple(notebooks))
