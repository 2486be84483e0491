"""Where each chapter's files live.

Kept apart from the builder (which needs nbformat) so that the grader and the tests can
use the same facts without loading it.
"""

from __future__ import annotations

from pathlib import Path

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
