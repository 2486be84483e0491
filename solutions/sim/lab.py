"""What every simulator lab shares: cases, running a learner's bundle, and the grader's report.

A lab is graded on the trusted side (:mod:`solutions.sim.channel`): the learner's function
runs in another process, the simulator here keeps the log, and the lab's
``verify(case, run)`` re-derives everything from that log and returns a :class:`Report`
(the first problem: rank, step, expected vs observed; the other checks; a text picture of
the learner's own trace).

Cases are drawn fresh for every grading from a seed the caller supplies
(:meth:`LabSpec.graded`): new shapes, including sizes the rank count does not divide, and
new data. The cases a notebook shows (:attr:`LabSpec.cases`) are only examples. Each case is
plain data carrying its own seed, so the verifier regenerates every rank's input itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solutions.sim import channel as simchannel
from solutions.sim import process as simprocess
from solutions.sim import verify as simverify
from solutions.sim.process import RunFailure
from solutions.sim.verify import Log

Case = Mapping[str, Any]
Run = Log | RunFailure
Called = dict[str, Any]   # {"value": what the learner's function returned}


@dataclass(frozen=True)
class Report:
    """The grader's verdict on one case. ``problem`` is empty when the case passed."""

    case: str                      # "N=5, M=13, int64"
    problem: str = ""
    checks: tuple[str, ...] = ()   # what was verified, one line each
    picture: str = ""              # the learner's trace, drawn as text
    ungraded: bool = False         # the grader could not run the case (not the learner's doing)

    @property
    def passed(self) -> bool:
        return not self.problem


@dataclass(frozen=True)
class LabSpec:
    """A lab: the example ``cases(params)`` a notebook shows, ``draw(rng)`` for one fresh
    graded case, each rank's private ``data(case)``, the grader's ``verify(case, run)``,
    ``describe(case)``, and ``name``, the function the learner writes.

    A per-rank program runs on the simulated cluster (``collectives=False`` takes
    ``rank.all_reduce``/``all_gather`` away; ``track_memory`` measures what every rank
    holds). A lab whose learner function is simply called (a schedule) gives
    ``call_args(case)`` instead.
    """

    name: str
    cases: Callable[[Mapping[str, Any]], tuple[dict[str, Any], ...]]
    draw: Callable[[random.Random], dict[str, Any]]
    data: Callable[[Case], list[Any]]
    verify: Callable[[Case, Any], Report]
    describe: Callable[[Case], str]
    collectives: bool = True
    track_memory: bool = False
    call_args: Callable[[Case], tuple[Any, ...]] | None = None
    n_graded: int = 6
    evidence: str = "its own messages"   # what a pass was checked from
    # Each regime (a named test on a case) is met by at least one case of every grading:
    # the shapes that tell a common wrong program from a right one (an uneven split, a
    # pipeline with more micro-batches than stages), so that no draw lets one pass by luck.
    regimes: tuple[tuple[str, Callable[[Case], bool]], ...] = ()

    def graded(self, seed: int) -> tuple[dict[str, Any], ...]:
        """The cases of one grading: drawn from ``seed`` (each with its own data seed), never
        of the shape of an example the notebook shows (a program that only looks the shown
        answers up earns nothing); a regime no case met replaces the last case not needed by
        another regime."""
        rng = random.Random(seed)
        shown = frozenset(_shape(case) for case in self.cases({}))
        drawn = [self._fresh(rng, shown) for _ in range(self.n_graded)]
        for name, holds in self.regimes:
            if any(holds(case) for case in drawn):
                continue
            needed = {i for _, test in self.regimes for i in
                      [next((k for k, c in enumerate(drawn) if test(c)), -1)] if i >= 0}
            spare = max(set(range(len(drawn))) - needed)
            drawn[spare] = self._draw_meeting(rng, holds, name, shown)
        return tuple(dict(case, seed=rng.randrange(1 << 30)) for case in drawn)

    def _fresh(self, rng: random.Random, shown: frozenset[Any]) -> dict[str, Any]:
        """One drawn case whose shape (everything but its data seed) is not in ``shown``,
        the shapes of the examples the notebook shows."""
        for _ in range(10_000):
            case = self.draw(rng)
            if _shape(case) not in shown:
                return case
        raise ValueError(f"lab {self.name}: its draw gives only the shown examples' shapes")

    def _draw_meeting(self, rng: random.Random, holds: Callable[[Case], bool],
                      name: str, shown: frozenset[Any]) -> dict[str, Any]:
        for _ in range(10_000):
            case = self._fresh(rng, shown)
            if holds(case):
                return case
        raise ValueError(f"lab {self.name}: its draw never gives a case of regime {name!r}")


def _shape(case: Case) -> tuple[tuple[str, Any], ...]:
    """A case without its data seed: what a lookup table of shown answers could key on."""
    return tuple(sorted((k, v) for k, v in case.items() if k != "seed"))


def run_on(spec: LabSpec, host: simprocess.Host, case: Case, time_limit_s: float) -> Any:
    """One case on an already loaded host: a :class:`Log`, ``{"value": ...}`` for a called
    function, or a :class:`RunFailure`."""
    if spec.call_args is not None:
        value = simchannel.call(host, spec.call_args(case), time_limit_s)
        return value if isinstance(value, RunFailure) else {"value": value}
    return simchannel.run(host, spec.data(case), collectives=spec.collectives,
                          track=spec.track_memory, time_limit_s=time_limit_s)


def run_case(spec: LabSpec, program: Callable[..., Any], case: Case,
             time_limit_s: float = 10.0) -> Any:
    """Run ``program`` (a function of this process, packed and run in a ranks' process of
    its own, without a sandbox) on one case: what :func:`run_on` returns."""
    from solutions.sim.bundle import pack

    host = simprocess.start_host(pack(program), None, time_limit_s, spec.collectives)
    if isinstance(host, RunFailure):
        return host
    try:
        return run_on(spec, host, case, time_limit_s)
    finally:
        host.close()


def grade_bundle(spec: LabSpec, bundle: Any, cases: Sequence[Case],
                 launch: simprocess.Launch | None = None, time_limit_s: float = 10.0,
                 ) -> list[Report]:
    """Run the learner's bundle on every case in a ranks' process (restarted after a case
    that broke it) and verify each run here."""
    reports: list[Report] = []
    host: simprocess.Host | RunFailure | None = None
    for case in cases:
        if reports and "was stopped" in reports[-1].problem or isinstance(host, RunFailure):
            reports.append(Report(spec.describe(case), "not run, after an earlier case was "
                                  "stopped or could not start"))
            continue
        if host is None:
            host = simprocess.start_host(bundle, launch, time_limit_s, spec.collectives)
        if isinstance(host, RunFailure):
            reports.append(Report(spec.describe(case), failure_text(host),
                                  ungraded=host.cause == "infrastructure"))
            continue
        run = run_on(spec, host, case, time_limit_s)
        reports.append(safe_verify(spec, case, run))
        if not host.in_sync:  # a time-out, a broken channel, a run it did not stop with
            host.close()
            host = None
    if isinstance(host, simprocess.Host):
        host.close()
    return reports


VERIFY_S = 5.0   # the trusted side's time to check one case's run


def safe_verify(spec: LabSpec, case: Case, run: Any, budget_s: float = VERIFY_S) -> Report:
    """``spec.verify`` within ``budget_s`` seconds: a run whose log takes longer to check
    (far more messages than the lab needs) fails, as any other broken run does."""
    try:
        with simverify.time_budget(budget_s):
            return spec.verify(case, run)
    except simverify.VerifyTimeout:
        size = (f"{len(run.messages)} messages in {run.steps} steps"
                if isinstance(run, Log) else "its answer")
        return Report(spec.describe(case), f"checking your run was stopped after "
                      f"{budget_s:g} s: {size}, far more than this lab needs (a correct "
                      "program sends a few messages per rank per step, and stops)")
    except Exception as error:  # noqa: BLE001 - a run no verifier expected: it fails
        return Report(spec.describe(case), f"the grader could not read this run "
                      f"({type(error).__name__}: {error})")


def read_results(log: Log, what: str) -> list[np.ndarray | None | str]:
    """Each rank's returned value as an array: None where it returned None, and a short
    description (a str) where it returned something that is not an array of numbers (a
    list of numbers counts as an array)."""
    out: list[np.ndarray | None | str] = []
    for result in log.results:
        if result is None or isinstance(result, np.ndarray):
            out.append(result)
        elif isinstance(result, list):
            try:
                out.append(np.asarray(result, dtype=np.float64))
            except (TypeError, ValueError, OverflowError):
                out.append("a list that is not an array of numbers")
        else:
            out.append(f"{repr(result)[:60]} (not an array)")
    return out


def failure_text(failure: RunFailure, who: str = "program") -> str:
    """What a learner reads for a run that ended early; the lead says what happened (an
    error the learner's ``who`` raised, a time-out, or a rule the simulator enforced)."""
    lead = {"program": f"Your {who} raised an error", "timeout": f"Your {who} was stopped",
            "rule": "The simulator stopped your program",
            "memory": "The simulator stopped your program",
            "channel": "The simulator stopped your program",
            "infrastructure": "The grader could not run this case"}[failure.cause]
    return f"{lead}: {failure.problem}"


def open_run(case_text: str, run: Any) -> Log | Report:
    """The run's log; or a report for a run that raised, was stopped, or is not a log."""
    if isinstance(run, RunFailure):
        return Report(case_text, failure_text(run))
    if not isinstance(run, Log):
        return Report(case_text, "the run produced no log")
    return run


def first_mismatch(got: np.ndarray, want: np.ndarray, exact: bool) -> int:
    """Flat index of the first element that differs (-1 if none)."""
    g, w = got.ravel(), want.ravel()
    if exact:
        bad = np.nonzero(g != w)[0]
    else:
        bad = np.nonzero(~np.isclose(g, w, rtol=1e-9, atol=1e-9))[0]
    return int(bad[0]) if bad.size else -1


def compare_result(rank: int, got: np.ndarray | None | str, want: np.ndarray, exact: bool,
                   what: str) -> str:
    """"" when ``got`` equals ``want`` (exactly, or within rel 1e-9), else what differs."""
    if isinstance(got, str):
        return f"rank {rank} returned {got}; expected its {what}, an array of shape {want.shape}"
    if got is None:
        return f"rank {rank} returned None; expected its {what}, an array of shape {want.shape}"
    if got.shape != want.shape:
        return (f"rank {rank} returned an array of shape {got.shape}; expected its {what}, "
                f"shape {want.shape}")
    k = first_mismatch(got.astype(np.float64), want.astype(np.float64), exact)
    if k >= 0:
        shown_want, shown_got = _distinct(want.ravel()[k].item(), got.ravel()[k].item())
        return (f"rank {rank}'s {what} is wrong at element {k}: expected {shown_want}, "
                f"observed {shown_got}")
    return ""


def _distinct(want: float, got: float) -> tuple[str, str]:
    """Both numbers with the fewest significant digits (at least 6) that tell them apart:
    "-0.916205" and "-0.157319", not seventeen digits each. Whole numbers stay exact."""
    if isinstance(want, int) and isinstance(got, int):
        return str(want), str(got)
    for digits in range(6, 18):
        a, b = f"{want:.{digits}g}", f"{got:.{digits}g}"
        if a != b:
            return a, b
    return repr(want), repr(got)


def grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A fixed-width text table."""
    table = [list(header)] + [list(r) for r in rows]
    widths = [max(len(row[c]) for row in table) for c in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in table]
    return "\n".join(lines)
