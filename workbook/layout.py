"""Where each chapter's files live and the names its generated answer cells assign.

Kept apart from the builder (which needs nbformat) so that the grader and the tests can
use the same facts without loading it.
"""

from __future__ import annotations

from pathlib import Path

from autograder.exercise import Exercise
from workbook.outline import Chapter

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCE_DIR = PACKAGE_DIR / "chapters"
NOTEBOOK_DIR = PACKAGE_DIR / "notebooks"
INSTRUCTOR_DIR = NOTEBOOK_DIR / "instructor"


def source_path(chapter: Chapter) -> Path:
    return SOURCE_DIR / f"{chapter.stem}.md"


def learner_path(chapter: Chapter) -> Path:
    return NOTEBOOK_DIR / f"{chapter.stem}.ipynb"


def instructor_path(chapter: Chapter) -> Path:
    return INSTRUCTOR_DIR / f"{chapter.stem}.ipynb"


def answer_name(record: Exercise) -> str:
    """The variable a learner assigns: ``answer_5_1`` for exercise 5.1."""
    return "answer_" + record.id.replace(".", "_")


def bug_line_name(record: Exercise) -> str:
    """The variable holding a debug exercise's line: ``bug_line_5_5``."""
    return "bug_line_" + record.id.replace(".", "_")
