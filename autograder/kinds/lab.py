"""Lab answers: the learner's program runs on a simulated cluster and is graded by its trace.

The learner writes ``function_name`` (a per-rank program, or a function returning a
schedule). The record hands the kind a :class:`LabRuntime` (the simulator's side, from the
reference library); the kind knows no lab and no simulator. Grading never runs the
learner's code where the simulator, its log or the verifier live:

* the learner's function travels as a bundle (its code and what it uses, as data) to a
  ranks' process, inside bubblewrap where available (:func:`sandbox_launch`), that talks
  to the simulator only through the rank channel;
* the simulator and the verifier run in a *trusted* process: in ``workbook check`` and the
  batch grader that is the grader's own process (the learner's code never ran there); in a
  learner's kernel (``wb.check``), where the learner's code did run, a fresh interpreter
  started for the check (``runtime.trusted_module``), so that nothing patched in the
  kernel changes the verdict;
* the graded cases are drawn fresh for every grading, from a seed the caller supplies
  (``grading_seed`` in the params) or a new random one.

The verdict names the first failing case and its first problem (the rank and step, the
expected and observed message or value) and carries a text picture of the learner's own
trace; a pass lists what was verified.
"""

from __future__ import annotations

import json
import numbers
import secrets
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, Protocol

from autograder.kinds._common import show
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict, is_blank
from autograder.kinds.trip import Ask, AskRun, AskSource, Reason, Reply, Unread

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

    @property
    def ungraded(self) -> bool: ...     # the grader could not run the case


class LabRuntime(Protocol):
    """The simulator's side of a lab, handed in by the record."""

    @property
    def pack_entry(self) -> tuple[tuple[str, ...], str]:
        """(modules, "module:function") the batch grader's sandbox runs to pack a function."""

    @property
    def trusted_module(self) -> str:
        """The module ``python -I -m`` runs for a check from a learner's kernel: it reads
        {"exercise", "bundle", "seed"} as JSON and prints the verdict's fields."""

    def pack(self, function: Any) -> Any:
        """The function as a bundle; ValueError (with the reason) if it cannot travel."""

    def pack_file(self, source: str, filename: str, name: str) -> Any:
        """A bundle that defines ``name`` by running a whole file's ``source``."""

    def run(self, bundle: Any, seed: int, time_limit_s: float,
            launch: Any) -> tuple[str, list[Report]]:
        """Run and verify the cases drawn from ``seed``: (what a pass was checked from, one
        report per case). ``launch`` forks the ranks' process in the sandbox (see
        :func:`sandbox_launch`), or None to start it plainly."""

    def prestart(self, prepare: Any) -> None:
        """Start, with ``prepare`` (see :func:`sandbox_prepare`), what ``launch`` will fork
        this lab's ranks' processes from."""


@dataclass(frozen=True)
class LabSource:
    """A learner's file (``workbook check 0.7 my_ring.py``): its text, never run here."""

    source: str
    filename: str


@dataclass(frozen=True)
class RecordedLogs:
    """What the batch grader's sandbox returned for the lab's one job: the learner's
    function packed as a bundle (``{"bundle": ...}``) or why it could not be."""

    logs: tuple[Any, ...]


@dataclass(frozen=True)
class Lab(AnswerKind):
    """The learner writes ``def function_name signature``; ``runtime`` runs the lab and
    ``exercise`` names it for a fresh trusted process. ``stub_body`` is the body of the
    answer cell's starting code; ``time_limit_s`` bounds one case's run."""

    partial_credit: ClassVar[bool] = True  # the score counts cases or parts

    function_name: str
    signature: str
    runtime: LabRuntime
    exercise: str
    stub_body: str = "    # your code here\n    return None"
    time_limit_s: float = 10.0
    name: str = "lab"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        seed = _seed(params)
        if isinstance(answer, LabSource):
            return self.grade_bundle(self.runtime.pack_file(answer.source, answer.filename,
                                                            self.function_name), seed)
        if isinstance(answer, RecordedLogs):
            return self._grade_recorded(answer, seed)
        if not callable(answer) or isinstance(answer, (numbers.Number, str, type)):
            return Verdict("invalid", f"Pass your function itself, e.g. check(..., "
                           f"{self.function_name}), without quotes or parentheses; got "
                           f"{show(answer, 30)}.", yours=show(answer))
        try:
            bundle = self.runtime.pack(answer)
        except ValueError as error:
            return Verdict("invalid", f"Your {self.function_name} cannot be run on the "
                           f"simulated cluster: {error}.", yours=show(answer))
        return self._grade_elsewhere(bundle, seed)

    def warm_up(self) -> None:
        """Start the sandboxed server this lab's ranks' processes are forked from (a batch
        grader calls it in the background before the first file is judged)."""
        prepare = sandbox_prepare()
        if prepare is not None:
            self.runtime.prestart(prepare)

    def grade_bundle(self, bundle: Any, seed: int) -> Verdict:
        """Grade a bundle here: this process must be one the learner's code never ran in."""
        evidence, reports = self.runtime.run(bundle, seed, self.time_limit_s,
                                             sandbox_launch())
        return lab_verdict(self.function_name, evidence, reports, seed)

    def _grade_recorded(self, answer: RecordedLogs, seed: int) -> Verdict:
        first = answer.logs[0] if answer.logs else None
        if isinstance(first, dict) and "bundle" in first:
            return self.grade_bundle(first["bundle"], seed)
        error = first.get("error") if isinstance(first, dict) else None
        return Verdict("wrong", f"Your {self.function_name} could not be run: "
                       f"{str(error or 'the grader received nothing from the notebook')[:300]}.",
                       yours=f"{self.function_name}: not run")

    def _grade_elsewhere(self, bundle: Any, seed: int) -> Verdict:
        """Grade in a fresh interpreter (the caller's process ran the learner's code)."""
        request = {"exercise": self.exercise, "bundle": bundle, "seed": seed}
        budget = self.time_limit_s * 10 + 30
        try:
            done = subprocess.run([sys.executable, "-I", "-m", self.runtime.trusted_module],
                                  input=json.dumps(request).encode(), capture_output=True,
                                  timeout=budget, check=False)
            fields = json.loads(done.stdout.decode() or "null")
            return Verdict(**{**fields, "details": tuple(fields["details"])})
        except (subprocess.TimeoutExpired, ValueError, TypeError, KeyError) as error:
            return Verdict("invalid", f"The lab grader could not run ({type(error).__name__}); "
                           "try the check again.")

    # -- the trip through the batch grader's sandbox (autograder.kinds.trip) -----------------
    def requests(self, params: Params, names: CellNames) -> tuple[Ask, ...]:
        """The sandbox only packs the learner's function (one job), and returns its source
        (to tell the untouched stub)."""
        modules, entry = self.runtime.pack_entry
        return (AskRun(self.function_name, modules, entry, ({},)),
                AskSource(self.function_name))

    def collect(self, reply: Reply, params: Params, names: CellNames) -> Any | Unread:
        runs = reply.runs(self.function_name)
        if isinstance(runs, Unread):
            return runs
        source = reply.source(self.function_name)
        if source is not None and self.is_stub_source(source):
            return Unread(Reason.UNANSWERED, self.function_name,
                          f"{self.function_name} is still the starting code")
        return RecordedLogs(tuple(run.value if not run.failure else
                                  {"error": run.message, "error_type": run.failure}
                                  for run in runs))

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

    def answer_from_file(self, source: str, filename: str) -> LabSource:
        return LabSource(source, filename)  # never run where the check runs

    def check_argument(self, names: CellNames) -> str:
        return self.function_name

    def with_time_limit(self, limit_s: float) -> Lab:
        return replace(self, time_limit_s=limit_s)

    def is_untouched(self, answer: Any) -> bool:
        if isinstance(answer, LabSource):
            return False
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


def _seed(params: Params) -> int:
    """The grading's seed: the caller's ``grading_seed``, else a fresh random one."""
    given = params.get("grading_seed") if isinstance(params, Mapping) else None
    if isinstance(given, int) and not isinstance(given, bool):
        return given
    return secrets.randbelow(1 << 31)


def sandbox_launch() -> Any:
    """What forks a lab's ranks' process inside bubblewrap where it works here (a warm
    server as ``nobody``, unable to create namespaces; each process walled in by seccomp:
    :mod:`autograder.sandbox.rank_server`), else None (start it plainly)."""
    from autograder.sandbox import bwrap, rank_client

    if bwrap.unavailable_reason():
        return None
    return rank_client.launch


def sandbox_prepare() -> Any:
    """The companion of :func:`sandbox_launch`: what starts the warm server ahead of the
    first lab (same arguments as the launch), or None where labs run unsandboxed."""
    from autograder.sandbox import rank_client

    return rank_client.prepare if sandbox_launch() is not None else None


def lab_verdict(function_name: str, evidence: str, reports: Sequence[Report],
                seed: int) -> Verdict:
    """The verdict on one grading's reports (the cases drawn from ``seed``)."""
    passed = sum(1 for r in reports if not r.problem)
    yours = f"{function_name}: {passed} of {len(reports)} cases"
    stuck = next((r for r in reports if r.ungraded), None)
    if stuck is not None:
        return Verdict("invalid", f"{stuck.problem}. This is the grader's fault, not your "
                       "code's: nothing was counted; check (or grade) again.", yours=yours,
                       ungraded=True)
    failed = [r for r in reports if r.problem]
    drawn = f"cases drawn for this check (seed {seed})"
    if not failed:
        return Verdict("correct", f"Correct: your {function_name} passes all {len(reports)} "
                       f"{drawn}, checked from {evidence}.",
                       yours=yours, expected=f"{len(reports)} of {len(reports)} cases",
                       score=1.0, details=tuple(reports[0].checks),
                       picture=_titled(reports[0]))
    first = failed[0]
    details = [f"{passed} of {len(reports)} {drawn} passed."]
    details += [f"Also case {r.case}: {r.problem}" for r in failed[1:3]]
    return Verdict("wrong", f"Case {first.case}: {first.problem}", yours=yours,
                   score=passed / len(reports), details=tuple(details), picture=_titled(first))


def verdict_fields(verdict: Verdict) -> dict[str, Any]:
    """A verdict as JSON-ready fields (what a trusted process prints)."""
    return asdict(verdict)


def _titled(report: Report) -> str:
    if not report.picture:
        return ""
    return f"Your trace, case {report.case}:\n{report.picture}"
