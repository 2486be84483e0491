"""The batch grader's pipeline: discover, read, identify, match, check, plan, run, compare.

    batch = grade_folder(Path("submitted"), releases, settings)
    write_outputs(batch, Path("grades"))

Each file goes through small steps, each with one concern (the modules of this package).
Only the run step executes learner code, in the sandbox's warm workers; everything else
reads plain data in this process. A file that fails a step becomes a row with status
``error`` and a message, and the batch goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

from autograder.grading.budget import Share, bounded, first_pass, in_rounds, stopped_at
from autograder.grading.compare import Context, grade_task, notebook_notes
from autograder.grading.discover import Discovery, Found, discover
from autograder.grading.feedback import write_feedback
from autograder.grading.guard import Names
from autograder.grading.identify import identify, implied_chapter
from autograder.grading.integrity import (
    CodeCell,
    Scan,
    blocked_findings,
    compare_release,
    scan_cells,
)
from autograder.grading.jobs import Plan, plan_job
from autograder.grading.match import Match, match_cells
from autograder.grading.model import (
    Batch,
    ExerciseResult,
    Finding,
    NotebookResult,
    Release,
    Task,
)
from autograder.grading.private_files import make_private_dir
from autograder.grading.read import Notebook, Unreadable, read_notebook, slim
from autograder.grading.report import UNSAFE_PREFIX, write_csv, write_json
from autograder.grading.status_bar import StatusBar
from autograder.sandbox import JobResult, Limits, WorkerPool, cgroup
from autograder.timelimit import call_with_time_limit

MAX_LIMITS_PER_JOB = 40  # a job may use at most this many time limits in all
SLACK_S = 2.0            # on top, for the job process to start and send its report
ISOLATION_TEXT = {
    "bubblewrap": "bubblewrap sandbox (minimal read-only root, private /tmp, new "
                  "PID/IPC/network namespaces, rlimits)",
    "none": f"{UNSAFE_PREFIX} (--unsafe-no-sandbox): learner code ran with only "
            "in-process confinement and could read whatever the grader's files permit",
}


Personalise = Callable[[str, Notebook, Release], tuple[Release, tuple[str, ...]]]


@dataclass(frozen=True)
class GradingSettings:
    """How to grade. ``protected`` are folders learner code may not read (the reference and
    release files, the submissions, the output); ``reference`` the top-level packages whose
    import in an answer cell is an integrity problem. Which answers are an untouched
    placeholder is the answer kind's to say."""

    workers: int = 1
    timeout_s: float = 10.0
    protected: tuple[str, ...] = ()
    reference: frozenset[str] = frozenset()
    memory_mb: int = 1024
    output_bytes: int = 1_000_000
    sandbox: str = "bubblewrap"            # "none" only with --unsafe-no-sandbox
    batch_budget_s: float | None = None    # the whole batch, reading included (budget.py)
    # Per-student numbers: (student, notebook, chapter release) -> that student's release
    # and notes about the file (whose numbers it carries); None grades the printed numbers.
    personalise: Personalise | None = None

    def limits(self, cost: int) -> Limits:
        """Sandbox limits: ``timeout_s`` per cell and per call; the whole job gets one
        time limit per exercise and function of its chapter's release (capped), plus a
        little slack. The cost comes from the release, never from the submitted file, so
        cells a learner adds cannot raise anyone's limit."""
        whole = self.timeout_s * min(max(cost, 1), MAX_LIMITS_PER_JOB) + SLACK_S
        return Limits(cpu_s=whole, wall_s=whole, call_timeout_s=self.timeout_s,
                      cell_timeout_s=self.timeout_s, memory_mb=self.memory_mb,
                      output_bytes=self.output_bytes)


@dataclass
class _Prepared:
    found: Found
    notebook: Notebook
    release: Release
    match: Match
    scan: Scan
    findings: list[Finding]
    plan: Plan
    notes: list[str] = field(default_factory=list)


# --- one file, before running -------------------------------------------------------------

def _error_rows(release: Release, message: str) -> tuple[ExerciseResult, ...]:
    return tuple(ExerciseResult(t.record.id, t.record.title, t.record.category, 0, t.record.points,
                                "error", message) for t in release.tasks)


def _problem(student: str, rel: str, message: str, release: Release | None,
             per_exercise: bool = True) -> NotebookResult:
    text = f"{rel}: {message}" if not message.startswith(rel) else message
    if release is None:
        return NotebookResult(student, rel, None, "", problem=text)
    rows = _error_rows(release, text) if per_exercise else ()
    return NotebookResult(student, rel, release.chapter, release.title, rows, problem=text)


def _prepare(found: Found, index: int, releases: Mapping[int, Release], names: Names,
             settings: GradingSettings) -> _Prepared:
    notebook = read_notebook(found.path)
    release = identify(notebook, releases)
    personal_notes: tuple[str, ...] = ()
    if settings.personalise is not None:
        release, personal_notes = settings.personalise(found.student, notebook, release)
    match = match_cells(notebook, release)
    runs = [CodeCell(i, match.answer_of(i), notebook.cells[i].source) for i in match.executed()]
    scan = scan_cells(runs, settings.reference)
    findings = compare_release(notebook, release, match) + list(scan.findings)
    plan = plan_job(str(index), notebook, release, match, names, settings.protected,
                    enforce=settings.sandbox == "none")
    prepared = _Prepared(found, slim(notebook), release, match, scan, findings, plan,
                         list(personal_notes))
    implied = implied_chapter(found.assignment, releases)
    if implied is not None and implied != release.chapter:
        prepared.notes.append(f"This notebook is chapter {release.chapter} (from its "
                              f"metadata), but it was submitted in the folder "
                              f"{found.assignment}/, which suggests chapter {implied}; it was "
                              f"graded as chapter {release.chapter}.")
    return prepared


# --- one file, after running -----------------------------------------------------------------

def _audit_log(prepared: _Prepared, result: JobResult) -> list[Finding]:
    outcome = result.values.get(prepared.plan.names.log)
    if outcome is None or outcome.type != "value" or not isinstance(outcome.value, list):
        return []
    entries: list[tuple[CodeCell | None, str, str]] = []
    for entry in outcome.value[:50]:
        if isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], int):
            entries.append((prepared.plan.origin(entry[0]), str(entry[1]), str(entry[2])))
    importing = {f.cell for f in prepared.findings if f.rule == "imports_reference"}
    return blocked_findings(entries, importing)


def _with_notes(row: ExerciseResult, notes: list[str]) -> ExerciseResult:
    return replace(row, notes=row.notes + tuple(notes)) if notes else row


def _finish(prepared: _Prepared, result: JobResult, settings: GradingSettings,
            limits: Limits) -> NotebookResult:
    ctx = Context(prepared.plan, result, prepared.match,
                  {c.index: c.source for c in prepared.notebook.cells}, prepared.scan,
                  prepared.findings + _audit_log(prepared, result), limits)
    # Notes about the file itself (filed under another chapter's folder) go on every row,
    # so that they reach the gradebook too.
    rows = tuple(_with_notes(_grade_one(ctx, task), prepared.notes)
                 for task in prepared.release.tasks)
    notes = tuple(prepared.notes) + notebook_notes(ctx)
    return NotebookResult(prepared.found.student, prepared.found.rel, prepared.release.chapter,
                          prepared.release.title, rows, notes, seconds=result.wall_s)


def _grade_one(ctx: Context, task: Task) -> ExerciseResult:
    """One exercise's row; a failure while judging one answer costs only that row."""
    try:
        return grade_task(ctx, task)
    except Exception as error:  # noqa: BLE001 - one answer never voids the notebook
        record = task.record
        return ExerciseResult(record.id, record.title, record.category, 0, record.points,
                              "error", _internal(error))


def _internal(error: Exception) -> str:
    return (f"the grader failed on this file ({type(error).__name__}: {error}); this is a "
            "bug in the grader, please report it with the file")


# --- the batch ------------------------------------------------------------------------------

def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _one_per_chapter(prepared: list[_Prepared]) -> tuple[list[_Prepared], list[NotebookResult]]:
    """Keep one notebook per student and chapter (the most recently modified); the others
    become problems naming the one that was graded."""
    groups: dict[tuple[str, int], list[_Prepared]] = {}
    for item in prepared:
        groups.setdefault((item.found.student, item.release.chapter), []).append(item)
    kept, dropped = [], []
    for (student, chapter), items in groups.items():
        items.sort(key=lambda p: (_mtime(p.found.path), p.found.rel))
        kept.append(items[-1])
        for other in items[:-1]:
            dropped.append(_problem(student, other.found.rel, (
                f"{student} has {len(items)} notebooks for chapter {chapter}; only the most "
                f"recently modified one ({items[-1].found.rel}) was graded"),
                other.release, per_exercise=False))
    return kept, dropped


def _unfilled_assignments(found: list[Found], kept: list[_Prepared],
                          releases: Mapping[int, Release]) -> list[NotebookResult]:
    """An assignment folder whose name points to a chapter the student has no graded
    notebook for (they filed another chapter's notebook there): error rows for it."""
    graded = {(p.found.student, p.release.chapter) for p in kept}
    problems: dict[tuple[str, int], NotebookResult] = {}
    for item in found:
        chapter = implied_chapter(item.assignment, releases)
        if chapter is None or (item.student, chapter) in graded:
            continue
        folder = item.rel.rsplit("/", 1)[0] + "/"
        problems.setdefault((item.student, chapter), _problem(
            item.student, folder, f"no chapter {chapter} notebook in this assignment folder "
            f"(it holds {Path(item.rel).name}, which is another chapter or could not be read)",
            releases[chapter]))
    return list(problems.values())


def _student(item: Found | _Prepared) -> str:
    return item.student if isinstance(item, Found) else item.found.student


def _unread(found: Found, message: str, releases: Mapping[int, Release]) -> NotebookResult:
    chapter = implied_chapter(found.assignment, releases)
    return _problem(found.student, found.rel, message,
                    releases.get(chapter) if chapter is not None else None)


def _prepare_all(discovery: Discovery, releases: Mapping[int, Release], names: Names,
                 settings: GradingSettings, progress: StatusBar | None,
                 deadline: float = float("inf")
                 ) -> tuple[list[_Prepared], list[NotebookResult]]:
    """Read and prepare the files within each student's bounds, in rounds, each student
    within their share of the batch's budget (:mod:`autograder.grading.budget`)."""
    prepared, problems = [], []
    to_read, over = bounded(discovery.found)
    reading, unread = Share(settings.batch_budget_s, map(_student, to_read)), list[Found]()
    for index, found in enumerate(reading.turns(in_rounds(to_read, _student), _student,
                                                deadline, unread)):
        began = time.monotonic()
        try:
            prepared.append(_prepare(found, index, releases, names, settings))
        except Exception as error:  # noqa: BLE001 - one file never stops the batch
            message = str(error) if isinstance(error, Unreadable) else _internal(error)
            problems.append(_unread(found, message, releases))
            if progress is not None:
                progress.step(f"{found.rel}: could not be read")
        reading.charge(found.student, time.monotonic() - began)
    out_of_time = (f"not graded: the batch's time budget ({settings.batch_budget_s or 0:g} s) "
                   "ran out before this file was read")
    for found, why in [*over, *((found, out_of_time) for found in unread)]:
        problems.append(_unread(found, why, releases))
        if progress is not None:
            progress.step(f"{found.rel}: not read")
    for missing in discovery.missing:
        chapter = implied_chapter(missing.assignment, releases)
        problems.append(_problem(missing.student, missing.rel, missing.message,
                                 releases.get(chapter) if chapter is not None else None))
    kept, dropped = _one_per_chapter(prepared)
    for item in dropped:
        if progress is not None:
            progress.step(f"{item.path}: not graded (another notebook of the same chapter)")
    problems += dropped + _unfilled_assignments(discovery.found, kept, releases)
    return kept, _without_duplicates(problems)


def _without_duplicates(problems: list[NotebookResult]) -> list[NotebookResult]:
    """An unreadable file in an assignment folder already stands for its chapter."""
    seen: set[tuple[str, int | None]] = set()
    out = []
    for problem in problems:
        key = (problem.student, problem.chapter)
        if problem.chapter is not None and problem.exercises:
            if key in seen:
                continue
            seen.add(key)
        out.append(problem)
    return out


def release_cost(release: Release) -> int:
    """Time limits a chapter's job may use: one per exercise, one more per function."""
    return sum(1 + task.calls for task in release.tasks)


FINISH_LIMIT_S = 60.0  # the grader's own time on one file's results, at most
JUDGES_PER_WORKER = 2  # threads judging results per sandbox worker (a lab waits on its ranks)


def _finish_bounded(item: _Prepared, result: JobResult, settings: GradingSettings,
                    limits: Limits) -> NotebookResult:
    """:func:`_finish` within :data:`FINISH_LIMIT_S`; whatever goes wrong, or takes too
    long, on one file's results becomes that file's error rows with the reason."""
    done = call_with_time_limit(_finish, (item, result, settings, limits), FINISH_LIMIT_S)
    if done.returned:
        return cast(NotebookResult, done.value)
    reason = (f"the grader spent more than {FINISH_LIMIT_S:g} s reading this file's results "
              "and stopped" if done.timed_out or done.error is None
              else _internal(cast(Exception, done.error)))
    return _problem(item.found.student, item.found.rel, reason, item.release)


def _run(prepared: list[_Prepared], settings: GradingSettings, pool: WorkerPool,
         progress: StatusBar | None, failed: list[str],
         deadline: float = float("inf")) -> Iterable[NotebookResult]:
    """Each file's result; ``failed`` collects the files the sandbox itself failed on.

    Under a batch budget, two passes: every file first runs within a short cap (the
    same for all, wherever it sorts), in rounds of one file per student, and a student
    whose files have used up their share of the budget waits for everyone else's
    (:mod:`autograder.grading.budget`); a file stopped at that cap runs again with its
    full limits after all the others, while the budget lasts. A file the budget leaves out
    is marked as not graded; the others keep their points.

    A file's results are judged (:func:`_finish`) in threads of this process while the
    sandbox runs the next files: a lab's judging mostly waits on its own ranks' process,
    so the labs of several files, and the sandbox's jobs, overlap. No learner code runs in
    this process; the threads only read results and drive sandboxed processes."""
    if not prepared:
        return
    limits = settings.limits(max(release_cost(p.release) for p in prepared))
    by_id = {p.plan.job.job_id: p for p in prepared}
    budget = settings.batch_budget_s
    share = Share(None if budget is None else max(deadline - time.monotonic(), 0.0),
                  map(_student, prepared), settings.workers)
    late: list[_Prepared] = []
    first = first_pass(limits, 2 * settings.timeout_s + SLACK_S)
    passes = [first, limits] if budget is not None else [limits]
    judging: list[Future[NotebookResult]] = []
    pool.start()  # launched before the files were read; now wait for its hello
    with ThreadPoolExecutor(JUDGES_PER_WORKER * settings.workers,
                            thread_name_prefix="judge") as judges:
        todo = in_rounds(prepared, _student)
        for number, pass_limits in enumerate(passes):
            pool.limits, again = pass_limits, []
            turns = share.turns(todo, _student, deadline, late)
            for result in pool.map(item.plan.job for item in turns):
                item = by_id[result.job_id]
                share.charge(item.found.student, result.wall_s)
                if number + 1 < len(passes) and pass_limits.wall_s < limits.wall_s \
                        and stopped_at(result, pass_limits):
                    again.append(item)
                    continue
                if result.infrastructure:
                    failed.append(f"{item.found.rel}: {result.message}")
                judging.append(judges.submit(_finish_bounded, item, result, settings, limits))
                yield from _judged(judging, progress, wait=False)
            todo = again
        yield from _judged(judging, progress, wait=True)
    for item in late:
        waited = ("; this student's other files had used up their share of it first"
                  if share.used_up(item.found.student) else "")
        yield _problem(item.found.student, item.found.rel, (
            f"not graded: the batch's time budget ({budget:g} s) ran out before this file "
            f"finished{waited} (it runs longer than most; grade it again on its own)"),
            item.release)


def _judged(judging: list[Future[NotebookResult]], progress: StatusBar | None,
            wait: bool) -> Iterator[NotebookResult]:
    """The judged files, removed from ``judging``: those done (all of them when ``wait``)."""
    ready = list(as_completed(judging)) if wait else [f for f in judging if f.done()]
    for future in ready:
        judging.remove(future)
        graded = future.result()  # _finish_bounded turns every failure into rows
        if progress is not None:
            progress.step(f"{graded.path}: {graded.points}/{graded.max_points}")
        yield graded


def _launch_quietly(pool: WorkerPool) -> None:
    """Start the pool's workers; a sandbox that cannot start says so when the pool is
    first needed (a batch whose files are all unreadable needs none)."""
    try:
        pool.launch()
    except (OSError, RuntimeError):
        pool.close()


def grade_folder(folder: Path, releases: Mapping[int, Release], settings: GradingSettings,
                 progress: Callable[[int], StatusBar] | None = None,
                 discovery: Discovery | None = None) -> Batch:
    """Grade every notebook under ``folder`` (or those ``discovery`` found there).
    ``progress(total)`` makes the progress display."""
    started = time.monotonic()
    deadline = started + (settings.batch_budget_s if settings.batch_budget_s is not None
                          else float("inf"))
    discovery = discover(folder) if discovery is None else discovery
    bar = progress(len(discovery.found)) if progress is not None else None
    names = Names()
    failed: list[str] = []
    pool = WorkerPool(max(1, min(settings.workers, len(discovery.found))),
                      settings.limits(1), sandbox=settings.sandbox, hidden=settings.protected)
    try:
        if discovery.found:  # the workers start while this process reads the files
            _launch_quietly(pool)
        prepared, problems = _prepare_all(discovery, releases, names, settings, bar, deadline)
        graded = list(_run(prepared, settings, pool, bar, failed, deadline))
    finally:
        pool.close()
    if bar is not None:
        bar.done()
    notebooks = sorted(graded + problems, key=lambda nb: (
        nb.student, -1 if nb.chapter is None else nb.chapter, nb.path))
    batch_problems = [] if discovery.found or discovery.missing else [
        f"{folder}: no student folders with notebooks to grade"]
    if failed:
        batch_problems.append(
            f"the sandbox failed on {len(failed)} file(s) twice (not the students' code); "
            "their rows are errors, grade them again: " + "; ".join(failed[:5]))
    return Batch(tuple(notebooks), tuple(discovery.ignored), tuple(batch_problems),
                 seconds=time.monotonic() - started,
                 isolation=ISOLATION_TEXT.get(settings.sandbox, settings.sandbox)
                 + _memory_text())


def _memory_text() -> str:
    """How each job's memory was bounded: by the kernel, or by the worker's measure."""
    why = cgroup.available()
    return ("; memory: one kernel-enforced limit per worker (a memory cgroup)" if not why
            else f"; memory: the sandbox's own measure ({why})")


def write_outputs(batch: Batch, out: Path) -> list[str]:
    """``grades.csv``, ``grades.json`` and ``feedback/<student>/chNN.html`` under ``out``
    (folders 0700, files 0600, each written whole or not at all). Returns the feedback
    pages that could not be written, one message each; the others are written anyway."""
    make_private_dir(out)
    write_csv(batch, out / "grades.csv")
    write_json(batch, out / "grades.json")
    failed: list[str] = []
    write_feedback(batch.notebooks, out / "feedback", failed)
    return failed


def protected_folders(*paths: os.PathLike[str] | str) -> tuple[str, ...]:
    """Absolute, symlink-free forms of ``paths`` (what the guard compares against)."""
    return tuple(sorted({os.path.realpath(os.fspath(p)) for p in paths}))

