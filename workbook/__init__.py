"""The Distributed Training Workbook: exercises, checking and progress for learners.

    import workbook as wb
    wb.check("0.1", "1.75 GB")      # instant feedback, recorded in your progress log
    wb.hint("0.1"); wb.solution("0.1"); wb.practice("0.1")
    wb.progress()                   # mastery and day streak
    wb.narration("ch00/intro")      # narration: the transcript, and audio once rendered

Importing this package is cheap: matplotlib, ipywidgets and nbformat load only when a
function that needs them is called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autograder.exercise import Exercise

# name -> module that defines it; loaded on first use to keep `import workbook` fast.
_CHECKING, _PROGRESS = "workbook.learner.checking", "workbook.learner.progress_commands"
_PAGE = "workbook.learner.prediction_page"
_LAZY = {
    "check": _CHECKING, "hint": _CHECKING, "solution": _CHECKING, "practice": _CHECKING,
    "grading_mode": _CHECKING,
    "progress": _PROGRESS, "export_progress": _PROGRESS, "import_progress": _PROGRESS,
    "use_drive": _PROGRESS, "predict": _PROGRESS, "predictions": _PROGRESS,
    "progress_key": _PROGRESS, "use_progress_key": _PROGRESS,
    "widget": "workbook.learner.widgets",
    "prediction_lock": _PAGE, "reveal": _PAGE, "reflection": _PAGE, "ledger": _PAGE,
    "narration": "workbook.narrate", "your_numbers": "workbook.learner.personal_numbers",
}

__all__ = ["exercise", "exercises", *_LAZY]


def exercises() -> tuple[Exercise, ...]:
    """All 58 exercise records, in the workbook's order (0.1 ... 9.9)."""
    from workbook.records import all_exercises

    return all_exercises()


def exercise(exercise_id: str) -> Exercise:
    """One exercise record by id, e.g. ``exercise("5.3")``."""
    from workbook.records import lookup

    return lookup(exercise_id)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'workbook' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
