"""Regrading some students only (``workbook grade ... --only s1,s2``).

The gradebook in ``--out`` is read back (its ``grades.json``); the named students are
graded afresh from the hand-in, and every other student keeps their rows, their total,
their integrity findings and their feedback pages exactly as the gradebook had them. The
new gradebook is still written whole and swapped in, so it is never a mixture of two
half-written runs.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.grading.discover import Discovery
from autograder.grading.model import Batch, ExerciseResult, NotebookResult


@dataclass(frozen=True)
class Previous:
    """What a gradebook folder held, for the students a partial regrade keeps."""

    notebooks: tuple[NotebookResult, ...]
    integrity: dict[str, str] = field(default_factory=dict)
    folders: dict[str, str] = field(default_factory=dict)   # student -> feedback folder


def _exercise(row: dict[str, Any]) -> ExerciseResult:
    return ExerciseResult(
        exercise_id=str(row["exercise_id"]), title=str(row.get("title", "")),
        category=str(row.get("category", "")), points=row.get("points", 0),
        max_points=row.get("max_points", 0), status=row.get("status", "error"),
        message=str(row.get("message", "")), yours=str(row.get("yours", "")),
        expected=str(row.get("expected", "")), details=tuple(row.get("details", ())),
        notes=tuple(row.get("notes", ())), score=float(row.get("score", 0.0) or 0.0),
        policy=str(row.get("policy", "")),
        misconceptions=tuple(str(m) for m in row.get("misconceptions", ())))


def read_previous(out: Path) -> Previous:
    """The gradebook in ``out``; ValueError when there is none to keep students from."""
    try:
        tree = json.loads((out / "grades.json").read_text(encoding="utf-8"))
        notebooks = tuple(NotebookResult(
            student=str(nb["student"]), path=str(nb.get("path", "")),
            chapter=nb.get("chapter"), title=str(nb.get("title", "")),
            exercises=tuple(_exercise(e) for e in nb.get("exercises", ())),
            notes=tuple(nb.get("notes", ())), problem=str(nb.get("problem", "")))
            for nb in tree["notebooks"])
        students = tree.get("students", [])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"--only regrades some students of an earlier gradebook, and --out "
                         f"{out} holds none that can be read ({error})") from None
    return Previous(notebooks,
                    {s["student"]: s.get("integrity", "") for s in students},
                    {s["student"]: s.get("feedback_folder", "") for s in students})


def restrict(discovery: Discovery, only: Collection[str]) -> Discovery:
    """The hand-in of the named students only."""
    return dataclasses.replace(
        discovery, found=[f for f in discovery.found if f.student in only],
        missing=[m for m in discovery.missing if m.student in only])


def merge(batch: Batch, previous: Previous, only: Collection[str]) -> Batch:
    """The fresh rows of the named students with everyone else's kept rows."""
    kept = tuple(nb for nb in previous.notebooks if nb.student not in only)
    return dataclasses.replace(batch, notebooks=(*kept, *batch.notebooks))


def keep_pages(previous: Previous, old: Path, only: Collection[str]) -> Callable[[Path], None]:
    """A step that copies the kept students' feedback folders into a new gradebook."""
    def copy(new: Path) -> None:
        for student, folder in previous.folders.items():
            source = old / "feedback" / folder
            if student in only or not folder or not source.is_dir() or source.is_symlink():
                continue
            shutil.copytree(source, new / "feedback" / folder, symlinks=True,
                            dirs_exist_ok=True)
    return copy
