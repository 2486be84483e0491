"""``workbook grade SUBMISSIONS --out OUT``: grade a class's notebooks with the batch grader.

The engine in :mod:`autograder.grading` knows no exercise; this module hands it what the
workbook knows: each chapter's release notebook (cells, ids, nbgrader grade ids from the
instructor version) and its exercise records (whose answer kinds say what learners assign
and what counts as untouched), which folders learner code must never read, and which
packages hold the reference solutions.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import autograder
import solutions
from autograder.cell_metadata import grade_id, workbook_meta
from autograder.grading import (
    GradingSettings,
    Release,
    ReleaseCell,
    StatusBar,
    Task,
    grade_folder,
    protected_folders,
    write_outputs,
)
from autograder.grading.model import Batch
from autograder.grading.read import Cell, read_notebook
from workbook.layout import instructor_path, learner_path
from workbook.outline import CHAPTERS, Chapter
from workbook.records import lookup

REFERENCE_PACKAGES = frozenset({"solutions", "workbook", "autograder"})


def _release_cell(cell: Cell, grade_ids: Mapping[str, str]) -> ReleaseCell:
    meta = workbook_meta(cell.metadata)
    tag = str(meta.get("role", ""))
    role = "answer" if tag == "answer" else "check" if tag == "check" else "locked"
    return ReleaseCell(cell.cell_id, cell.cell_type, role, str(meta.get("exercise", "")),
                       grade_ids.get(cell.cell_id, ""), cell.source, tag)


def release(chapter: Chapter) -> Release:
    """The chapter's learner release, with nbgrader grade ids from the instructor version."""
    learner = read_notebook(learner_path(chapter))
    instructor_file = instructor_path(chapter)
    grade_ids: dict[str, str] = {}
    if instructor_file.exists():
        grade_ids = {c.cell_id: grade_id(c.metadata) for c in read_notebook(instructor_file).cells}
    cells = tuple(_release_cell(cell, grade_ids) for cell in learner.cells)
    tasks = tuple(Task(lookup(c.exercise)) for c in cells if c.role == "answer")
    return Release(chapter.number, chapter.title, chapter.stem, cells, tasks)


@cache
def releases() -> dict[int, Release]:
    return {chapter.number: release(chapter) for chapter in CHAPTERS}


def _package_dir(module: object) -> Path:
    return Path(str(getattr(module, "__file__", ""))).resolve().parent


def grader_files() -> list[Path]:
    """What learner code must not read: the reference and workbook packages and, in a source
    checkout, everything in the project folder except virtual environments (the learner's
    numpy may live there)."""
    packages = [_package_dir(m) for m in (solutions, autograder, sys.modules["workbook"])]
    root = packages[-1].parent
    paths = list(packages)
    if (root / "pyproject.toml").exists():
        paths += [entry for entry in root.iterdir()
                  if not (entry.is_dir() and (entry / "pyvenv.cfg").exists())]
    return paths


def settings(workers: int, timeout_s: float, submissions: Path, out: Path) -> GradingSettings:
    protected = protected_folders(*grader_files(), submissions, out)
    return GradingSettings(workers=workers, timeout_s=timeout_s, protected=protected,
                    reference=REFERENCE_PACKAGES)


def _bad_arguments(folder: Path, out: Path, workers: int, timeout_s: float) -> str:
    if not folder.is_dir():
        return f"no such folder: {folder}"
    if workers < 1:
        return f"--workers must be at least 1, got {workers}"
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        return f"--timeout must be a positive number of seconds, got {timeout_s:g}"
    if out.exists() and not out.is_dir():
        return f"--out {out} exists and is not a folder"
    if out.resolve().is_relative_to(folder.resolve()):
        return "--out must not be inside the submissions folder"
    return ""


def _summary(batch: Batch, out: Path) -> str:
    graded = [nb for nb in batch.notebooks if not nb.problem]
    students = len({nb.student for nb in batch.notebooks if nb.student})
    points = sum(nb.points for nb in graded)
    most = sum(nb.max_points for nb in graded)
    failed = sum(1 for nb in batch.notebooks if nb.problem)
    lines = [f"Graded {len(graded)} notebook(s) of {students} student(s) in "
             f"{batch.seconds:.1f} s: {points} of {most} points."]
    if failed:
        lines.append(f"{failed} file(s) or folder(s) could not be graded (status 'error').")
    lines.append(f"Wrote {out / 'grades.csv'}, {out / 'grades.json'} and {out / 'feedback'}/.")
    return "\n".join(lines)


def grade_cli(submissions: str, out: str, *, workers: int | None = None,
              timeout_s: float = 10.0) -> int:
    """Exit status: 0 every file graded, 1 some could not be, 2 bad arguments."""
    folder, out_path = Path(submissions), Path(out)
    count = workers if workers is not None else (os.cpu_count() or 1)
    problem = _bad_arguments(folder, out_path, count, timeout_s)
    if problem:
        print(f"workbook grade: {problem}", file=sys.stderr)
        return 2
    try:
        batch = grade_folder(folder, releases(), settings(count, timeout_s, folder, out_path),
                             lambda total: StatusBar(total, sys.stderr))
        write_outputs(batch, out_path)
    except (OSError, RuntimeError) as error:  # the sandbox could not start, OUT not writable
        print(f"workbook grade: {error}", file=sys.stderr)
        return 1
    for message in [*batch.problems, *(nb.problem for nb in batch.notebooks if nb.problem)]:
        print(f"could not grade: {message}", file=sys.stderr)
    print(_summary(batch, out_path))
    return 0 if batch.all_graded else 1
