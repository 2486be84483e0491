"""Turn a job's plain-data result into one gradebook row per exercise, in the grader's process.

Every answer is judged by its record's own ``grade`` (the code behind the notebook's check
cell), so the batch grader and the notebook agree. Points are all or nothing: the
record's points when the verdict passed, zero otherwise, as nbgrader gives for a check
cell that raises. What could not be judged gets a status that says why:

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
from autograder.grading.jobs import Plan, test_args
from autograder.grading.match import Match
from autograder.grading.model import ExerciseResult, Finding, Status, Task
from autograder.grading.replay import Replay
from autograder.kinds.base import Verdict
from autograder.sandbox import JobResult, Limits, Outcome


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


# --- reading outcomes -------------------------------------------------------------------------

def _type_of(outcome: Outcome) -> str:
    """The class name of the value an outcome is about: the sandbox's ``error_type`` when it
    sets one, else the type its message ends with ("not plain data: mod.Cls")."""
    qualified = outcome.error_type or outcome.message.rpartition(" ")[2]
    return qualified.rpartition(".")[2]


def _not_plain(ctx: Context, outcome: Outcome, what: str) -> _Stop:
    text = outcome.message
    if outcome.kind == "integrity":
        return _Stop("integrity", f"{what} is {text.removeprefix('answer is ')}: an object "
                     "made to pass comparisons, so it was not accepted.")
    type_name = _type_of(outcome)
    if type_name in ctx.scan.eq_classes:
        return _Stop("integrity", f"{what} is an instance of {type_name}, a class that "
                     "defines its own comparison; the grader compares plain values and does "
                     "not run the learner's comparison code, so it was not accepted.")
    return _Stop("wrong", f"{what} is not plain data ({text}); answer with a number, a "
                 "string, a list or a dict.")


def _value(ctx: Context, task: Task, learner_name: str) -> Any:
    outcome = ctx.result.values.get(ctx.plan.names.snapshot(task.record.id, "value"))
    if outcome is None or outcome.kind == "unavailable":
        raise _unavailable(ctx)
    if outcome.kind == "missing":
        raise _missing(ctx, task, learner_name)
    if outcome.kind == "value":
        return outcome.value
    if outcome.kind == "not_plain" and outcome.message.endswith("ellipsis"):
        return None  # `answer = ...` is a placeholder too
    raise _not_plain(ctx, outcome, f"Your {learner_name}")


def _function(ctx: Context, task: Task) -> Any:
    """A Replay of the learner's function, or the plain value bound to its name."""
    name = task.function_name or ""
    snapshot = ctx.plan.names.snapshot(task.record.id, "function")
    outcomes = ctx.result.calls.get(snapshot, ())
    first = outcomes[0] if outcomes else Outcome("unavailable")
    if first.kind == "unavailable":
        raise _unavailable(ctx)
    if first.kind == "missing":
        raise _missing(ctx, task, name)
    if first.kind == "not_function":
        bound = ctx.result.values.get(snapshot)
        if bound is not None and bound.kind == "value":
            return bound.value  # the record explains what a function answer looks like
        raise _Stop("wrong", f"{name} is not a function defined with def or lambda "
                    f"({first.message.rpartition(' is a ')[2]}).")
    for outcome in outcomes:
        if outcome.kind == "integrity" or (
                outcome.kind == "not_plain" and _type_of(outcome) in ctx.scan.eq_classes):
            raise _not_plain(ctx, outcome, f"A value returned by {name}")
    if all(o.kind == "value" and o.value is None for o in outcomes):
        raise _Stop("unanswered", f"Not answered: {name} still returns None.")
    return Replay(name, test_args(task), outcomes, skipped_type=ctx.plan.names.skipped,
                  learner_value_errors=ctx.scan.value_errors)


def _answer(ctx: Context, task: Task) -> Any:
    """The answer as the notebook's check cell would have passed it to ``check``."""
    record = task.record
    if task.mode == "value":
        value = _value(ctx, task, task.value_name or "the answer")
        if record.answer_kind.is_untouched(value):
            raise _Stop("unanswered", f"Not answered: expected {record.answer_kind.describe()}.")
        return value
    if task.mode == "function":
        return _function(ctx, task)
    line = _value(ctx, task, task.value_name or "the bug line")
    if record.answer_kind.is_untouched(line):
        raise _Stop("unanswered", f"Not answered: expected {record.answer_kind.describe()}.")
    return (line, _function(ctx, task))


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
        exercise_id=record.id, title=record.title, kind=record.category, points=0,
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
    return replace(base, points=record.points if verdict.passed else 0,
                   status="correct" if verdict.passed else "wrong", message=verdict.message,
                   yours=verdict.yours, expected=verdict.expected, details=verdict.details)


def notebook_notes(ctx: Context) -> tuple[str, ...]:
    """Notes about the notebook as a whole: the sandbox's verdict on the job, errors in the
    learner's added cells, and notebook-level findings."""
    notes = []
    if ctx.result.status != "ok" and any(
            o.kind != "unavailable" for o in ctx.result.values.values()):
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
