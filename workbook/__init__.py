"""The Distributed Training Workbook: exercises, checking and progress for learners.

Importing this package is cheap: matplotlib, ipywidgets and nbformat load only when a
function that needs them is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.exercise import Exercise

__all__ = ["exercise", "exercises"]


def exercises() -> tuple[Exercise, ...]:
    """All 58 exercise records, in the workbook's order (0.1 ... 9.9)."""
    from workbook.exercises import all_exercises

    return all_exercises()


def exercise(exercise_id: str) -> Exercise:
    """One exercise record by id, e.g. ``exercise("5.3")``."""
    from workbook.exercises import lookup

    return lookup(exercise_id)
