"""The metadata the notebook builder writes into cells and the grader reads back.

Two namespaces, in the spirit of nbgrader's ``utils.is_solution`` / ``utils.is_grade``:

* ``workbook``: the project's own, on notebooks (``{"chapter": 5, "role": "learner"}``)
  and on exercise cells (``{"exercise": "5.1", "role": "answer"}``);
* ``nbgrader`` (schema 3), in the instructor notebook only: solution regions in answer
  cells, graded check cells with points, every other cell locked.

The builder writes with the functions here and the grader reads with them, so the two
cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

METADATA_KEY = "workbook"
NBGRADER_KEY = "nbgrader"
NBGRADER_SCHEMA_VERSION = 3
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"


def exercise_slug(exercise_id: str) -> str:
    """``5_1`` for exercise 5.1: the form used in variable names and grade ids."""
    return exercise_id.replace(".", "_")


def exercise_grade_id(role: str, exercise_id: str) -> str:
    """nbgrader's grade id of an exercise cell: ``answer_5_1``, ``check_5_1``."""
    return f"{role}_{exercise_slug(exercise_id)}"


# -- writing (the builder) -----------------------------------------------------------------
def nbgrader_cell(grade_id: str, *, solution: bool = False, grade: bool = False,
                  points: int = 0) -> dict[str, Any]:
    """nbgrader metadata for one cell; a cell that is not a solution is locked."""
    meta: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": not solution,
                            "schema_version": NBGRADER_SCHEMA_VERSION, "solution": solution,
                            "task": False}
    if grade:
        meta["points"] = points
    return meta


def exercise_cell(exercise_id: str, role: str) -> dict[str, str]:
    """The workbook metadata of an exercise cell: prompt, answer, check or widget."""
    return {"exercise": exercise_id, "role": role}


def with_solution(placeholder: str, solution: str) -> str:
    """An instructor answer cell: the placeholder, then the solution region."""
    return f"{placeholder}\n{BEGIN_SOLUTION}\n{solution}\n{END_SOLUTION}"


# -- reading (the grader) ------------------------------------------------------------------
def workbook_meta(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``workbook`` entry of a notebook's or cell's metadata ({} when absent or odd)."""
    meta = metadata.get(METADATA_KEY)
    return meta if isinstance(meta, Mapping) else {}


def grade_id(metadata: Mapping[str, Any]) -> str:
    """nbgrader's grade id in a cell's metadata, or ""."""
    meta = metadata.get(NBGRADER_KEY)
    value = meta.get("grade_id") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) else ""


def has_solution(source: str) -> bool:
    """True for a cell that still holds an nbgrader solution region: a line that is the
    begin marker alone (indentation aside), and a later line that is the end marker alone,
    as nbgrader writes them. A comment or string that quotes a marker is no region."""
    begun = False
    for line in source.splitlines():
        text = line.strip()
        if text == BEGIN_SOLUTION:
            begun = True
        elif begun and text == END_SOLUTION:
            return True
    return False


def answer_exercise(metadata: Mapping[str, Any]) -> str:
    """The exercise whose answer cell carries ``metadata`` (from the workbook entry, else
    from nbgrader's ``answer_N_M`` grade id), or ""."""
    meta = workbook_meta(metadata)
    if meta.get("role") == "answer":
        return str(meta.get("exercise", ""))
    found = grade_id(metadata)
    if found.startswith("answer_"):
        return found.removeprefix("answer_").replace("_", ".")
    return ""
