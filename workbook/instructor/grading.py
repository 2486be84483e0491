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
import threading
from collections.abc import Iterator, Mapping
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
    safe_text,
)
from autograder.grading.discover import course_submissions
from autograder.grading.model import Batch, Role
from autograder.grading.pipeline import Personalise
from autograder.grading.read import Cell, read_notebook
from autograder.grading.report import points_text
from autograder.grading.swap import replace_problem
from autograder.kinds import Lab
from autograder.sandbox import bwrap
from solutions.sim import process as simprocess
from workbook.instructor.gradebook import write_gradebook
from workbook.instructor.regrade import keep_pages, merge, read_previous, restrict
from workbook.instructor.term import Term, TermArguments
from workbook.outline import CHAPTERS, Chapter
from workbook.paths import instructor_path, learner_path
from workbook.records import all_labs, lookup

REFERENCE_PACKAGES = frozenset({"solutions", "workbook", "autograder"})


def _release_cell(cell: Cell, grade_ids: Mapping[str, str]) -> ReleaseCell:
    meta = workbook_meta(cell.metadata)
    tag = str(meta.get("role", ""))
    role: Role = "answer" if tag == "answer" else "check" if tag == "check" else "locked"
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


class Releases(Mapping[int, Release]):
    """Every chapter's release, each built the first time a notebook of that chapter asks
    for it: grading chapter 5 reads chapter 5's notebooks and records only."""

    def __init__(self, chapters: tuple[Chapter, ...] = CHAPTERS) -> None:
        self._chapters = {chapter.number: chapter for chapter in chapters}
        self._built: dict[int, Release] = {}

    def __getitem__(self, number: int) -> Release:
        if number not in self._built:
            self._built[number] = release(self._chapters[number])  # KeyError if unknown
        return self._built[number]

    def __iter__(self) -> Iterator[int]:
        return iter(self._chapters)

    def __len__(self) -> int:
        return len(self._chapters)

    @property
    def loaded(self) -> tuple[int, ...]:
        """The chapters built so far."""
        return tuple(sorted(self._built))


@cache
def releases() -> Releases:
    return Releases()


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


# What a gradebook folder can hold, in the order the summary names it.
WRITTEN = ("grades.csv", "grades.json", "totals.csv", "class_report.html", "class_report.csv",
           "canvas_import.csv", "canvas_feedback.zip", "moodle_grading_worksheet.csv",
           "moodle_feedback.zip")
WARM_RANK_HOSTS = 2  # labs' ranks' processes started ahead, each used for one learner only
MAX_TIMEOUT_S = 600.0  # per cell and call; beyond this a "limit" protects nothing


def settings(workers: int, timeout_s: float, submissions: Path, out: Path, *,
             sandbox: str = "bubblewrap", batch_budget_s: float | None = None,
             course: Path | None = None,
             personalise: Personalise | None = None) -> GradingSettings:
    extra = [course] if course is not None else []
    protected = protected_folders(*grader_files(), submissions, out, *extra)
    return GradingSettings(workers=workers, timeout_s=timeout_s, protected=protected,
                           reference=REFERENCE_PACKAGES, sandbox=sandbox,
                           batch_budget_s=batch_budget_s, personalise=personalise)


def _seconds_problem(name: str, value: float, most: float) -> str:
    if not (math.isfinite(value) and 0 < value <= most):
        return f"{name} must be a positive number of seconds, at most {most:g}, got {value:g}"
    return ""


def _bad_arguments(folder: Path, out: str, workers: int, timeout_s: float,
                   batch_s: float | None) -> str:
    if not folder.is_dir():
        return f"no such folder: {safe_text.visible(str(folder))}"
    if workers < 1:
        return f"--workers must be at least 1, got {workers}"
    problem = _seconds_problem("--timeout", timeout_s, MAX_TIMEOUT_S)
    if not problem and batch_s is not None:
        problem = _seconds_problem("--batch-timeout", batch_s, 7 * 24 * 3600.0)
    if problem:
        return problem
    if not out.strip():
        return "--out must name a folder for the grades (it was empty)"
    out_path = Path(out)
    if out_path.is_symlink() or (out_path.exists() and not out_path.is_dir()):
        return f"--out {safe_text.visible(out)} exists and is not a folder"
    if out_path.resolve().is_relative_to(folder.resolve()):
        return "--out must not be inside the submissions folder"
    return ""


def _sandbox_problem(unsafe: bool) -> str:
    if unsafe:
        return ""
    reason = bwrap.unavailable_reason()
    if not reason:
        return ""
    return (f"refusing to grade: learner code runs only inside the bubblewrap sandbox, and "
            f"{reason}. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or "
            "pass --unsafe-no-sandbox to grade with only in-process confinement, where a "
            "submission can read anything your user can (not recommended)")


def _summary(batch: Batch, out: Path) -> str:
    graded = [nb for nb in batch.notebooks if not nb.problem]
    students = len({nb.student for nb in batch.notebooks if nb.student})
    points = sum(nb.points for nb in graded)
    most = sum(nb.max_points for nb in graded)
    failed = sum(1 for nb in batch.notebooks if nb.problem)
    lines = [f"Graded {len(graded)} notebook(s) of {students} student(s) in "
             f"{batch.seconds:.1f} s: {points_text(points)} of {points_text(most)} points."]
    if failed:
        lines.append(f"{failed} file(s) or folder(s) could not be graded (status 'error').")
    lines.append(f"Learner code ran in: {batch.isolation}.")
    written = [name for name in WRITTEN if (out / name).exists()]
    lines.append(f"Wrote into {out}/: {', '.join(written)} and feedback/.")
    return safe_text.visible("\n".join(lines), keep_newlines=True)


def _say(text: str) -> None:
    print(f"workbook grade: {safe_text.visible(text)}", file=sys.stderr)


def _warm_up_labs(labs: list[Lab]) -> None:
    """Start the labs' ranks' servers while the grader reads the files (on a core that is
    otherwise waiting then); a server that cannot start says so when a lab needs it."""
    for kind in labs:
        try:
            kind.warm_up()
        except Exception:  # noqa: BLE001 - the lab that needs it starts it again
            return


def grade_cli(submissions: str | None, out: str, *, workers: int | None = None,
              timeout_s: float = 10.0, unsafe_no_sandbox: bool = False,
              nbgrader_course: str | None = None, batch_timeout_s: float | None = None,
              term_args: TermArguments | None = None) -> int:
    """Exit status: 0 every file graded, 1 some could not be (or no sandbox), 2 bad
    arguments. SUBMISSIONS holds the hand-in (student folders, or an LMS export: see
    :mod:`autograder.grading.discover`); ``nbgrader_course`` instead names an nbgrader
    course folder, whose ``submitted/`` is graded. With ``secret_file`` every notebook is
    graded in the numbers of the student it was handed in under. ``term_args`` carries the
    term: roster, secret, layout, deadline, assignment (:mod:`workbook.instructor.term`)."""
    if (submissions is None) == (nbgrader_course is None):
        _say("give either SUBMISSIONS or --nbgrader-course COURSE (not both)")
        return 2
    course = Path(nbgrader_course) if nbgrader_course is not None else None
    folder = course_submissions(course) if course is not None else Path(str(submissions))
    count = workers if workers is not None else (os.cpu_count() or 1)
    problem = _bad_arguments(folder, out, count, timeout_s, batch_timeout_s) or (
        replace_problem(Path(out)) if out.strip() else "")
    try:
        term = Term.from_arguments(term_args or TermArguments())
    except ValueError as error:
        problem = problem or str(error)
    if problem:
        _say(problem)
        return 2
    problem = _sandbox_problem(unsafe_no_sandbox)
    if problem:
        _say(problem)
        return 1
    if unsafe_no_sandbox:
        _say("WARNING: grading without the sandbox (--unsafe-no-sandbox); the report says so")
    out_path = Path(out)
    try:
        discovery = term.discover(folder)
        previous = read_previous(out_path) if term.only else None
    except ValueError as error:
        _say(str(error))
        return 2
    if previous is not None:
        known = {nb.student for nb in previous.notebooks} | set(previous.integrity) | {
            f.student for f in discovery.found}
        unknown = [s for s in term.only if s not in known]
        if unknown:
            _say(f"--only names students who are neither in the gradebook nor in the "
                 f"hand-in: {', '.join(unknown)}")
            return 2
        discovery = restrict(discovery, term.only)
        term.kept_integrity = {s: text for s, text in previous.integrity.items()
                               if s not in term.only and text}
    chosen = settings(count, timeout_s, folder, out_path, sandbox="none" if unsafe_no_sandbox
                      else "bubblewrap", batch_budget_s=batch_timeout_s, course=course,
                      personalise=term.personalise())
    chapters = releases()
    simprocess.keep_warm(WARM_RANK_HOSTS)
    if not unsafe_no_sandbox and discovery.found:
        labs = [lab.answer_kind for lab in all_labs() if isinstance(lab.answer_kind, Lab)]
        threading.Thread(target=_warm_up_labs, args=(labs,), name="labs", daemon=True).start()
    try:
        batch = term.finish(grade_folder(folder, chapters, chosen,
                                         lambda total: StatusBar(total, sys.stderr),
                                         discovery=discovery), discovery)
        fresh = batch   # what this run graded: its messages and exit status
        if previous is not None:
            batch = merge(batch, previous, term.only)
        graded = {nb.chapter for nb in batch.notebooks if nb.chapter is not None}
        if term.assignment is not None:
            graded = set(term.assignment.chapters)
        elif len(graded) > 1:
            term.notes.append(
                f"no --chapters: every student is out of all the chapters handed in "
                f"({', '.join(map(str, sorted(graded)))}); name the assignment's chapters "
                "with --chapters so that an upload of another chapter cannot change them")
        failed = write_gradebook(
            term, batch, discovery, out_path,
            {n: chapters[n].max_points for n in sorted(graded)},
            keep_pages(previous, out_path, term.only) if previous is not None else None)
    except (OSError, RuntimeError) as error:  # the sandbox could not start, OUT not writable
        _say(str(error))
        return 1
    for message in [*fresh.problems, *(nb.problem for nb in fresh.notebooks if nb.problem),
                    *failed]:
        print(f"could not grade: {safe_text.visible(message)}", file=sys.stderr)
    for warning in term.warnings():
        _say(f"WARNING: {warning}")
    print(_summary(fresh, out_path))
    flagged = term.flagged()
    if flagged:
        print(safe_text.visible(f"Integrity: {len(flagged)} student(s) flagged on strong "
                                f"evidence ({', '.join(flagged)}); the integrity column of "
                                "totals.csv says why."))
    return 0 if fresh.all_graded and not failed else 1
