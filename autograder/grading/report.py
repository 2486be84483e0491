"""The gradebook: ``grades.csv`` (one row per student x exercise) and ``grades.json``.

CSV columns: student, chapter, exercise_id, points, max_points, status, message, policy
(what a term's policies changed in the row: "late 2 days: -20 %", "override: ..."). Points
are whole numbers unless a policy made them fractional, then written with at most two
decimals and no trailing zeros ("2.7", never "2.70" or "3.0"). An ``excused`` row is 0 of
0 in the CSV; the JSON keeps what the exercise is worth in its ``max_points`` (and its
partial-credit ``score`` unrounded), so that a gradebook read back is the one written. A file
that could not be graded still gets rows: one per exercise of its chapter when the
chapter is known (from an assignment folder), otherwise one row with an empty exercise id,
so that no student silently disappears from the gradebook.

Neither file repeats hidden test inputs beyond the first failing case (the one the
learner's own check shows): details a verdict flags as :class:`HiddenInput` are left out.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autograder.grading.model import Batch, ExerciseResult, NotebookResult
from autograder.grading.private_files import write_private
from autograder.grading.safe_text import for_csv, for_json
from autograder.kinds.base import HiddenInput

CSV_COLUMNS = ("student", "chapter", "exercise_id", "points", "max_points", "status", "message",
               "policy")
JSON_VERSION = 2  # 2: an exercise's "kind" is now "category"
UNSAFE_PREFIX = "NO SANDBOX"  # how Batch.isolation starts when graded without bubblewrap
UNSAFE_NOTE = "Note: graded WITHOUT the sandbox (--unsafe-no-sandbox)."


def points_value(points: float) -> int | float:
    """Points rounded to two decimals, as an int when whole (``3``, ``2.7``, ``0.33``)."""
    rounded = round(float(points), 2)
    return int(rounded) if rounded.is_integer() else rounded


def points_text(points: float) -> str:
    """Points as written in a gradebook: ``3``, ``2.7``, ``0.33`` (no trailing zeros)."""
    return str(points_value(points))


def shown_details(details: tuple[str, ...]) -> tuple[str, ...]:
    """Details fit to show: without further failing cases (hidden test inputs)."""
    return tuple(d for d in details if not isinstance(d, HiddenInput))


def row_message(exercise: ExerciseResult) -> str:
    notes = " ".join(f"Note: {note}" for note in exercise.notes)
    return f"{exercise.message} {notes}".strip()


def _notebook_rows(notebook: NotebookResult) -> list[dict[str, Any]]:
    chapter = "" if notebook.chapter is None else notebook.chapter
    rows = []
    if not notebook.exercises:
        rows.append(dict(student=notebook.student, chapter=chapter, exercise_id="", points=0,
                         max_points=0, status="error",
                         message=notebook.problem or "no exercises", policy=""))
    for exercise in notebook.exercises:
        rows.append(dict(student=notebook.student, chapter=chapter,
                         exercise_id=exercise.exercise_id,
                         points=points_text(exercise.points),
                         max_points=exercise.counted_max, status=exercise.status,
                         message=row_message(exercise), policy=exercise.policy))
    return rows


def _failed_row(notebook: NotebookResult, error: Exception) -> dict[str, Any]:
    return dict(student=notebook.student, chapter="", exercise_id="", points=0, max_points=0,
                status="error", message=f"this student's rows could not be written "
                                        f"({type(error).__name__}); see grades.json",
                policy="")


def csv_rows(batch: Batch) -> Iterator[dict[str, Any]]:
    """Every row, each cell made safe for a spreadsheet; one notebook's failure costs only
    its own rows (replaced by an error row naming the student)."""
    unsafe = batch.isolation.startswith(UNSAFE_PREFIX)
    for notebook in batch.notebooks:
        try:
            rows = _notebook_rows(notebook)
        except Exception as error:  # noqa: BLE001 - never lose the other students
            rows = [_failed_row(notebook, error)]
        for row in rows:
            if unsafe:
                row["message"] = f"{row['message']} {UNSAFE_NOTE}".strip()
            yield {key: for_csv(value) for key, value in row.items()}


def csv_text(batch: Batch) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(csv_rows(batch))
    return buffer.getvalue()


def write_csv(batch: Batch, path: Path) -> None:
    write_private(path, csv_text(batch))


def _exercise_json(exercise: ExerciseResult) -> dict[str, Any]:
    return dict(exercise_id=exercise.exercise_id, title=exercise.title, category=exercise.category,
                points=points_value(exercise.points), max_points=exercise.max_points,
                status=exercise.status, message=exercise.message, yours=exercise.yours,
                expected=exercise.expected, details=list(shown_details(exercise.details)),
                notes=list(exercise.notes), score=exercise.score,
                policy=exercise.policy, misconceptions=list(exercise.misconceptions))


def _notebook_json(notebook: NotebookResult) -> dict[str, Any]:
    return dict(student=notebook.student, path=notebook.path, chapter=notebook.chapter,
                title=notebook.title, points=points_value(notebook.points),
                max_points=notebook.max_points,
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
        points=points_value(sum(nb.points for nb in batch.notebooks)),
        max_points=sum(nb.max_points for nb in batch.notebooks),
        statuses=dict(sorted(statuses.items())), seconds=round(batch.seconds, 3),
    )


def _safe_notebook_json(notebook: NotebookResult) -> dict[str, Any]:
    try:
        return _notebook_json(notebook)
    except Exception as error:  # noqa: BLE001 - never lose the other students
        return dict(student=notebook.student, path=notebook.path, chapter=None, points=0,
                    max_points=0, problem=f"this notebook's results could not be written "
                                          f"({type(error).__name__}: {error})", exercises=[])


def batch_json(batch: Batch) -> dict[str, Any]:
    """The whole batch as a JSON tree whose strings all encode as UTF-8."""
    tree = dict(version=JSON_VERSION, summary=summary(batch), isolation=batch.isolation,
                problems=list(batch.problems), ignored=list(batch.ignored),
                notebooks=[_safe_notebook_json(nb) for nb in batch.notebooks])
    return dict(for_json(tree))


def write_json(batch: Batch, path: Path) -> None:
    write_private(path, json.dumps(batch_json(batch), indent=2, ensure_ascii=False) + "\n")
