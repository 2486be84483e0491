"""Lab answers: the learner's program runs on a simulated cluster and is graded by its trace.

The learner writes ``function_name`` (a per-rank program, or a function returning a
schedule). For every case the record's ``cases(params)`` lists, ``job(case)`` describes the
run as plain data (each rank's data, the cluster's options); ``run_job(program, job)``
executes it and returns a plain-data log (messages, each rank's result); ``verify(case,
log)`` re-derives everything from that log and returns a report. The kind knows no lab:
cases, jobs, running and verifying come from the record (which takes them from
``solutions``). The halves are separate on purpose: in batch grading the jobs run inside
the sandbox and only the plain logs come back (:meth:`Lab.grade_logs` grades them in the
grader's process), so nothing the learner's code counted or patched is believed.

The verdict names the first failing case and its first problem (the rank and step, the
expected and observed message or value) and carries a text picture of the learner's own
trace; a pass lists what was verified.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from autograder.kinds._common import error_text, show
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict, is_blank
from autograder.kinds.trip import Ask, AskRun, AskSource, Reason, Reply, RunResult, Unread
from autograder.timelimit import call_with_time_limit

Case = Mapping[str, Any]


class Report(Protocol):
    """What a lab's ``verify`` returns for one case."""

    @property
    def case(self) -> str: ...          # "N=5, M=13, int64"

    @property
    def problem(self) -> str: ...       # "" when the case passed

    @property
    def checks(self) -> tuple[str, ...]: ...

    @property
    def picture(self) -> str: ...       # the learner's trace as text ("" for none)


@dataclass(frozen=True)
class Lab(AnswerKind):
    """The learner writes ``def function_name signature``; the record supplies ``cases``,
    ``job``, ``run_job`` and ``verify`` (see the module docstring). ``stub_body`` is the body of the
    answer cell's starting code; ``time_limit_s`` bounds one case's run."""

    function_name: str
    signature: str
    cases: Callable[[Params], Sequence[Case]]
    job: Callable[[Case], Any]
    run_job: Callable[[Callable[..., Any], Any], Any]
    verify: Callable[[Case, Any], Report]
    stub_body: str = "    # your code here\n    return None"
    time_limit_s: float = 10.0
    name: str = "lab"
    # For batch grading: the modules ``run_job`` needs and its "module:function" name.
    sandbox_modules: tuple[str, ...] = ()
    sandbox_entry: str = ""

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        if isinstance(answer, RecordedLogs):
            return self.grade_logs(answer.logs, params)
        if not callable(answer) or isinstance(answer, (numbers.Number, str, type)):
            return Verdict("invalid", f"Pass your function itself, e.g. check(..., "
                           f"{self.function_name}), without quotes or parentheses; got "
                           f"{show(answer, 30)}.", yours=show(answer))
        return self._verdict([self._run(answer, case) for case in self.cases(params)])

    def requests(self, params: Params, names: CellNames) -> tuple[Ask, ...]:
        """The learner's function run by ``sandbox_entry`` on every case's job, and its
        source (to tell the untouched stub)."""
        return (AskRun(self.function_name, self.sandbox_modules, self.sandbox_entry,
                       tuple(self.jobs(params))), AskSource(self.function_name))

    def collect(self, reply: Reply, params: Params, names: CellNames) -> Any | Unread:
        """The plain log of every job (a job that failed becomes a log saying so, which the
        verifier explains)."""
        runs = reply.runs(self.function_name)
        if isinstance(runs, Unread):
            return runs
        source = reply.source(self.function_name)
        if source is not None and self.is_stub_source(source):
            return Unread(Reason.UNANSWERED, self.function_name,
                          f"{self.function_name} is still the starting code")
        return RecordedLogs(tuple(_log_of(run) for run in runs))

    def jobs(self, params: Params) -> list[Any]:
        """The plain-data job of every case, in order: what a sandbox runs."""
        return [self.job(case) for case in self.cases(params)]

    def grade_logs(self, logs: Sequence[Any], params: Params) -> Verdict:
        """Grade one plain log per case (in ``cases(params)`` order), wherever they ran."""
        cases = list(self.cases(params))
        return self._verdict([self._verify(case, logs[i] if i < len(logs) else None)
                              for i, case in enumerate(cases)])

    def _verdict(self, reports: Sequence[Report]) -> Verdict:
        passed = sum(1 for r in reports if not r.problem)
        yours = f"{self.function_name}: {passed} of {len(reports)} cases"
        failed = [r for r in reports if r.problem]
        if not failed:
            return Verdict("correct", f"Correct: your {self.function_name} passes all "
                           f"{len(reports)} cases, checked from its own messages.",
                           yours=yours, expected=f"{len(reports)} of {len(reports)} cases",
                           score=1.0, details=tuple(reports[0].checks),
                           picture=_titled(reports[0]))
        first = failed[0]
        details = [f"{passed} of {len(reports)} cases passed."]
        details += [f"Also case {r.case}: {r.problem}" for r in failed[1:3]]
        return Verdict("wrong", f"Case {first.case}: {first.problem}", yours=yours,
                       score=passed / len(reports), details=tuple(details),
                       picture=_titled(first))

    def describe(self) -> str:
        return (f"a Python function, def {self.function_name}{self.signature}, run on the "
                "simulated cluster")

    def stub(self) -> str:
        """The source an answer cell starts with."""
        return f"def {self.function_name}{self.signature}:\n{self.stub_body}"

    # -- what the notebook builder, the checker and the grader ask every kind ----------------
    def placeholder(self, names: CellNames) -> str:
        return self.stub()

    def solution_source(self, expected: Any, names: CellNames) -> str:
        """The instructor's cell: import the reference program under the learner's name."""
        module = getattr(expected, "__module__", None) or "solutions"
        name = getattr(expected, "__name__", self.function_name)
        alias = "" if name == self.function_name else f" as {self.function_name}"
        return f"from {module} import {name}{alias}  # the reference solution"

    def value_name(self, names: CellNames) -> str | None:
        return None

    def check_argument(self, names: CellNames) -> str:
        return self.function_name

    def with_time_limit(self, limit_s: float) -> Lab:
        return replace(self, time_limit_s=limit_s)

    def is_untouched(self, answer: Any) -> bool:
        return is_blank(answer) or self.is_stub(answer)

    def is_stub_source(self, source: str) -> bool:
        """True when ``source`` (a function's text, as the grader reads it from the cells)
        is the stub as generated, blank lines and trailing spaces aside."""
        def lines(text: str) -> list[str]:
            return [line.rstrip() for line in text.strip().splitlines() if line.strip()]
        return isinstance(source, str) and lines(source) == lines(self.stub())

    def is_stub(self, answer: Any) -> bool:
        """True when ``answer`` is still the untouched stub (compares compiled code)."""
        code = getattr(answer, "__code__", None)
        if code is None:
            return False
        namespace: dict[str, Any] = {}
        exec(compile(self.stub(), "<stub>", "exec"), namespace)  # our own source only
        stub_code = namespace[self.function_name].__code__
        return (code.co_code, code.co_consts, code.co_names) == (
            stub_code.co_code, stub_code.co_consts, stub_code.co_names)

    # -- helpers ----------------------------------------------------------------------------
    def _run(self, program: Callable[..., Any], case: Case) -> Report:
        """Run and verify one case; a time-out or an error escaping the runner fails it."""
        outcome = call_with_time_limit(self.run_job, (program, self.job(case)),
                                       self.time_limit_s)
        if outcome.timed_out:
            return _Failed(_case_text(case), f"your program did not finish within "
                           f"{self.time_limit_s:g} s (an endless loop, or a rank that never "
                           "returns?)")
        if outcome.error is not None:  # runners report the program's own errors themselves
            return _Failed(_case_text(case), f"your program raised {error_text(outcome.error)}")
        return self._verify(case, outcome.value)

    def _verify(self, case: Case, log: Any) -> Report:
        try:
            return self.verify(case, log)
        except Exception as error:  # noqa: BLE001 - a log no verifier expected
            return _Failed(_case_text(case),
                           f"the grader could not read this run ({error_text(error)})")


@dataclass(frozen=True)
class RecordedLogs:
    """The logs a sandbox returned for each job, handed to :meth:`Lab.grade` by the batch
    grader in place of the learner's function (which never leaves the sandbox)."""

    logs: tuple[Any, ...]


@dataclass(frozen=True)
class _Failed:
    case: str
    problem: str
    checks: tuple[str, ...] = ()
    picture: str = ""


def _log_of(run: RunResult) -> Any:
    if not run.failure:
        return run.value
    error_type = "timeout" if run.failure in ("timeout", "skipped") else "program"
    return {"error": run.message, "error_type": error_type}


def _case_text(case: Case) -> str:
    return ", ".join(f"{key}={show(value, 20)}" for key, value in case.items()
                     if key != "seed")


def _titled(report: Report) -> str:
    if not report.picture:
        return ""
    return f"Your trace, case {report.case}:\n{report.picture}"
