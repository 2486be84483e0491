"""The gradebook: ``grades.csv`` (one row per student x exercise) and ``grades.json``.

CSV columns: student, chapter, exercise_id, points, max_points, status, message. A file
that could not be graded still gets rows: one per exercise of its chapter when the
chapter is known (from an assignment folder), otherwise one row with an empty exercise id,
so that no student silently disappears from the gradebook.

Neither file repeats hidden test inputs beyond the first failing case (the one the
learner's own check shows): details a verdict flags as :class:`HiddenInput` are left out.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autograder.grading.model import Batch, ExerciseResult, NotebookResult
from autograder.kinds.base import HiddenInput

CSV_COLUMNS = ("student", "chapter", "exercise_id", "points", "max_points", "status", "message")
JSON_VERSION = 1


def shown_details(details: tuple[str, ...]) -> tuple[str, ...]:
    """Details fit to show: without further failing cases (hidden test inputs)."""
    return tuple(d for d in details if not isinstance(d, HiddenInput))


def row_message(exercise: ExerciseResult) -> str:
    notes = " ".join(f"Note: {note}" for note in exercise.notes)
    return f"{exercise.message} {notes}".strip()


def csv_rows(batch: Batch) -> Iterator[dict[str, Any]]:
    for notebook in batch.notebooks:
        chapter = "" if notebook.chapter is None else notebook.chapter
        if not notebook.exercises:
            yield dict(student=notebook.student, chapter=chapter, exercise_id="", points=0,
                       max_points=0, status="error", message=notebook.problem or "no exercises")
        for exercise in notebook.exercises:
            yield dict(student=notebook.student, chapter=chapter,
                       exercise_id=exercise.exercise_id, points=exercise.points,
                       max_points=exercise.max_points, status=exercise.status,
                       message=row_message(exercise))


def write_csv(batch: Batch, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(csv_rows(batch))


def _exercise_json(exercise: ExerciseResult) -> dict[str, Any]:
    return dict(exercise_id=exercise.exercise_id, title=exercise.title, kind=exercise.kind,
                points=exercise.points, max_points=exercise.max_points,
                status=exercise.status, message=exercise.message, yours=exercise.yours,
                expected=exercise.expected, details=list(shown_details(exercise.details)),
                notes=list(exercise.notes))


def _notebook_json(notebook: NotebookResult) -> dict[str, Any]:
    return dict(student=notebook.student, path=notebook.path, chapter=notebook.chapter,
                title=notebook.title, points=notebook.points, max_points=notebook.max_points,
                problem=notebook.problem, notes=list(notebook.notes),
                seconds=round(notebook.seconds, 4),
                exercises=[_exercise_json(e) for e in notebook.exercises])


def summary(batch: Batch) -> dict[str, Any]:
    statuses = Counter(e.status for nb in batch.notebooks for e in nb.exercises)
    return dict(
        notebooks=len(batch.notebooks),
        graded=sum(1 for nb in batch.notebooks if not nb.problem),
        could_not_grade=sum(1 for nb in batch.notebooks if nb.problem),
        students=len({nb.student for nb in batch.notebooks if nb.student}),
        points=sum(nb.points for nb in batch.notebooks),
        max_points=sum(nb.max_points for nb in batch.notebooks),
        statuses=dict(sorted(statuses.items())), seconds=round(batch.seconds, 3),
    )


def batch_json(batch: Batch) -> dict[str, Any]:
    return dict(version=JSON_VERSION, summary=summary(batch), problems=list(batch.problems),
                ignored=list(batch.ignored),
                notebooks=[_notebook_json(nb) for nb in batch.notebooks])


def write_json(batch: Batch, path: Path) -> None:
    path.write_text(json.dumps(batch_json(batch), indent=2, ensure_ascii=False) + "\n",
                    encoding="utf-8")
