"""Turn a job's plain-data result into one gradebook row per exercise, in the grader's process.

Every answer is judged by its record's own ``grade`` (the code behind the notebook's check
cell), so the batch grader and the notebook agree. Points are all or nothing: the
record's points when the verdict passed, zero otherwise, as nbgrader gives for a check
cell that raises. Each row also keeps the verdict's ``score`` where the answer kind grades
in parts or cases; a term whose policies turn partial credit on makes it points later,
so that this default stays what nbgrader gives. What could not be
judged gets a status that says why:

* ``unanswered``: the answer cell still holds its placeholder (None, or a function that
  returns None for every input);
* ``error``: the answer cell is missing or doubled, the cell raised before the answer
  existed, or the whole job was stopped;
* ``integrity``: the answer is an object built to fool a comparison (a float subclass, a
  class defining ``__eq__``), or its cell reached for the reference code or the grader's
  files;
* ``wrong`` / ``correct``: the verdict of ``record.grade``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from autograder.exercise import Exercise
from autograder.grading.integrity import CodeCell, Scan
from autograder.grading.jobs import Plan
from autograder.grading.match import Match
from autograder.grading.model import ExerciseResult, Finding, Status, Task
from autograder.grading.replay import Replay
from autograder.kinds.base import Verdict
from autograder.kinds.trip import Reason, Recorded, RunResult, Unread
from autograder.sandbox import JobResult, JobStatus, Limits, Outcome, OutcomeType


@dataclass(frozen=True)
class Context:
    """What grading one notebook's exercises needs besides the task itself."""

    plan: Plan
    result: JobResult
    match: Match
    sources: Mapping[int, str]           # submitted cell index -> source
    scan: Scan
    findings: Sequence[Finding]
    limits: Limits


class _Stop(Exception):
    """Grading this exercise ends here with a row that is not a verdict."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@cache
def _with_time_limit(record: Exercise, limit_s: float) -> Exercise:
    """The record with its function's per-call limit set to the sandbox's, so messages about
    a time-out name the limit that applied."""
    limited = record.answer_kind.with_time_limit(limit_s)
    if limited is record.answer_kind:
        return record
    return dataclasses.replace(record, answer_kind=limited)


# --- why an answer is not there -------------------------------------------------------------

def _cell_error_text(ctx: Context, answer_index: int) -> str:
    """What went wrong in the answer cell, as a clause ("raised X: y (line 2)")."""
    for error in ctx.result.cell_errors:
        origin = ctx.plan.origin(error.cell)
        if origin is None or origin.index != answer_index:
            continue
        line = f" (line {error.line})" if error.line else ""
        if error.error_type == "TimeLimitExceeded":
            return (f"ran longer than {ctx.limits.cell_timeout_s:g} s and was stopped "
                    "(an endless loop?)")
        if error.error_type == "MemoryError":
            return "ran out of memory"
        if error.error_type == "OutputLimitExceeded":
            return "printed more than the output limit allows"
        if error.error_type == "SystemExit":
            return "called sys.exit()"
        if error.error_type == "SyntaxError":
            return f"has a syntax error{line}: {error.message}"
        return f"raised {error.error_type}: {error.message}{line}"
    return ""


def _missing(ctx: Context, task: Task, name: str) -> _Stop:
    index = ctx.match.answers[task.record.id][0]
    problem = _cell_error_text(ctx, index)
    if problem:
        return _Stop("error", f"Your answer cell {problem}, so {name} was never set.")
    return _Stop("error", f"{name} is not defined after your answer cell: keep the line that "
                 f"defines {name} in the answer cell.")


def _unavailable(ctx: Context) -> _Stop:
    reason = ctx.result.message or "the sandbox returned nothing"
    return _Stop("error", f"The grader could not read your answers: {reason}.")


# --- reading outcomes: the Reply a kind's collect() reads ------------------------------------

def _short_type(outcome: Outcome) -> str:
    """The class name (without its module) of the value an outcome is about."""
    return outcome.type_name.rpartition(".")[2]


def _not_plain(ctx: Context, outcome: Outcome, name: str, what: str) -> Unread:
    if outcome.type is OutcomeType.INTEGRITY:
        return Unread(Reason.FORGED, name, f"{what} is {outcome.message}: an object made to "
                      "pass comparisons, so it was not accepted.")
    if _short_type(outcome) in ctx.scan.eq_classes:
        return Unread(Reason.FORGED, name, f"{what} is an instance of {_short_type(outcome)}, "
                      "a class that defines its own comparison; the grader compares plain "
                      "values and does not run the learner's comparison code, so it was not "
                      "accepted.")
    return Unread(Reason.NOT_PLAIN, name, f"{what} is not plain data ({outcome.message}); "
                  "answer with a number, a string, a list or a dict.")


def _no_answer(outcome: Outcome | None, name: str) -> Unread | None:
    """Why there is nothing at all for ``name``: the job ended, or the name is not there."""
    if outcome is None or outcome.type is OutcomeType.UNAVAILABLE:
        return Unread(Reason.NO_RESULT, name)
    if outcome.type is OutcomeType.MISSING:
        return Unread(Reason.MISSING, name)
    return None


@dataclass(frozen=True)
class SandboxReply:
    """One exercise's :class:`~autograder.kinds.trip.Reply`, read from the job's result."""

    ctx: Context
    exercise: str

    def _kept(self, name: str) -> str:
        return self.ctx.plan.names.snapshot(self.exercise, name)

    def value(self, name: str) -> Any | Unread:
        outcome = self.ctx.result.values.get(self._kept(name))
        absent = _no_answer(outcome, name)
        if absent is not None or outcome is None:
            return absent
        if outcome.ok:
            return outcome.value
        if outcome.type is OutcomeType.NOT_PLAIN and outcome.type_name == "ellipsis":
            return None  # `answer = ...` is a placeholder too
        return _not_plain(self.ctx, outcome, name, f"Your {name}")

    def function(self, name: str) -> Recorded | Any | Unread:
        kept = self._kept(name)
        outcomes = self.ctx.result.calls.get(kept, ())
        first = outcomes[0] if outcomes else None
        absent = _no_answer(first, name)
        if absent is not None or first is None:
            return absent
        if first.type is OutcomeType.NOT_FUNCTION:
            bound = self.ctx.result.values.get(kept)
            if bound is not None and bound.ok:
                return bound.value  # the kind explains what a function answer looks like
            return Unread(Reason.NOT_FUNCTION, name, first.type_name)
        for outcome in outcomes:
            if outcome.type is OutcomeType.INTEGRITY or (
                    outcome.type is OutcomeType.NOT_PLAIN
                    and _short_type(outcome) in self.ctx.scan.eq_classes):
                return _not_plain(self.ctx, outcome, name, f"A value returned by {name}")
        return Replay(name, self.ctx.plan.args_of(self.exercise, name), outcomes,
                      skipped_type=self.ctx.plan.names.skipped,
                      learner_value_errors=self.ctx.scan.value_errors)

    def runs(self, name: str) -> Sequence[RunResult] | Unread:
        outcomes = self.ctx.result.calls.get(self.ctx.plan.names.harness(self.exercise, name), ())
        first = outcomes[0] if outcomes else None
        absent = _no_answer(first, name)
        if absent is not None:
            return absent
        return [self._run(outcome) for outcome in outcomes]

    def _run(self, outcome: Outcome) -> RunResult:
        if outcome.ok:
            return RunResult(outcome.value)
        if outcome.type is OutcomeType.TIMEOUT:
            return RunResult(failure="timeout", message=(
                f"it did not finish within {self.ctx.limits.call_timeout_s:g} s "
                "(an endless loop?)"))
        if outcome.type is OutcomeType.RAISED and \
                outcome.type_name == self.ctx.plan.names.skipped:
            return RunResult(failure="skipped",
                             message="not run, after an earlier case ran out of time")
        text = (f"{outcome.type_name}: {outcome.message}" if outcome.type is OutcomeType.RAISED
                else outcome.message or outcome.type.value)
        return RunResult(failure="program", message=text.rstrip(": "))

    def source(self, name: str) -> str | None:
        outcome = self.ctx.result.sources.get(name)
        if outcome is None or not outcome.ok or not isinstance(outcome.value, str):
            return None
        return outcome.value


def _stop(ctx: Context, task: Task, unread: Unread) -> _Stop:
    """The row for an answer that could not be read."""
    match unread.reason:
        case Reason.UNANSWERED:
            return _Stop("unanswered", f"Not answered: {unread.detail}.")
        case Reason.MISSING:
            return _missing(ctx, task, unread.name)
        case Reason.NO_RESULT:
            return _unavailable(ctx)
        case Reason.NOT_FUNCTION:
            return _Stop("wrong", f"{unread.name} is not a function defined with def or "
                         f"lambda (it is a {unread.detail or 'value'}).")
        case Reason.FORGED:
            return _Stop("integrity", unread.detail)
    return _Stop("wrong", unread.detail)  # Reason.NOT_PLAIN


def _answer(ctx: Context, task: Task) -> Any:
    """The answer as the notebook's check cell would have passed it to ``check``."""
    record = task.record
    answer = record.answer_kind.collect(SandboxReply(ctx, record.id), record.params,
                                        record.names)
    if isinstance(answer, Unread):
        raise _stop(ctx, task, answer)
    return answer


# --- the row ------------------------------------------------------------------------------------

def _structural(ctx: Context, task: Task) -> _Stop | None:
    cells = ctx.match.answers.get(task.record.id, ())
    if not cells:
        return _Stop("error", f"The answer cell of exercise {task.record.id} is missing "
                     "(deleted, or its metadata removed); copy it back from the release "
                     "notebook.")
    if len(cells) > 1:
        where = ", ".join(str(i + 1) for i in cells)
        return _Stop("error", f"{len(cells)} cells claim to be the answer cell of exercise "
                     f"{task.record.id} (cells {where}); keep one and delete the copies.")
    return None


def grade_task(ctx: Context, task: Task) -> ExerciseResult:
    record = task.record
    mine = [f for f in ctx.findings if f.exercise == record.id]
    serious = [f.message for f in mine if f.serious]
    cells = ctx.match.answers.get(record.id, ())
    base = ExerciseResult(
        exercise_id=record.id, title=record.title, category=record.category, points=0,
        max_points=record.points, status="error", message="",
        notes=tuple(f.message for f in mine if not f.serious),
        answer_source=ctx.sources.get(cells[0], "") if len(cells) == 1 else "")
    verdict: Verdict | None = None
    stop = _structural(ctx, task)
    if stop is None:
        try:
            verdict = _with_time_limit(record, ctx.limits.call_timeout_s).grade(
                _answer(ctx, task))
        except _Stop as raised:
            stop = raised
    if serious:
        otherwise = verdict.message if verdict else stop.message if stop else ""
        return replace(base, status="integrity", message=" ".join(serious) + (
            f" (Otherwise: {otherwise})" if otherwise else ""),
            yours=verdict.yours if verdict else "")
    if stop is not None:
        return replace(base, status=stop.status, message=stop.message)
    assert verdict is not None
    if verdict.ungraded:
        return replace(base, status="error", message=verdict.message)
    return replace(base, points=record.points if verdict.passed else 0,
                   status="correct" if verdict.passed else "wrong", message=verdict.message,
                   yours=verdict.yours, expected=verdict.expected, details=verdict.details,
                   picture=verdict.picture, score=_score(record, verdict),
                   misconceptions=verdict.misconceptions)


def _score(record: Exercise, verdict: Verdict) -> float:
    """The fraction of the points partial credit would give: the verdict's score where the
    answer kind grades in parts or cases, else 1 for a pass and 0 otherwise."""
    if verdict.passed:
        return 1.0
    if not record.answer_kind.partial_credit:
        return 0.0
    return min(1.0, max(0.0, float(verdict.score)))


def notebook_notes(ctx: Context) -> tuple[str, ...]:
    """Notes about the notebook as a whole: the sandbox's verdict on the job, errors in the
    learner's added cells, and notebook-level findings."""
    notes = []
    if ctx.result.status is not JobStatus.OK and any(
            o.type is not OutcomeType.UNAVAILABLE for o in ctx.result.values.values()):
        notes.append(f"The sandbox stopped part of your code: {ctx.result.message}.")
    shown = 0
    for error in ctx.result.cell_errors:
        origin: CodeCell | None = ctx.plan.origin(error.cell)
        if origin is None or origin.exercise or shown >= 5:
            continue
        line = f", line {error.line}" if error.line else ""
        notes.append(f"Cell {origin.index + 1} (added by the learner{line}) raised "
                     f"{error.error_type}: {error.message}")
        shown += 1
    notes += [f.message for f in ctx.findings if not f.exercise]
    return tuple(notes)
