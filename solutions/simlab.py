"""What every simulator lab shares: cases, the grader's report, and running a program safely.

A lab is graded in two halves that may live in different processes:

* :func:`run_case` runs the learner's program on the simulator for one case and returns
  the plain-data log (in the notebook, or inside the grading sandbox);
* the lab's ``verify(case, log)`` re-derives everything from that log in the grader's
  process and returns a :class:`Report`: the first problem (rank, step, expected vs
  observed), the other checks, and a text picture of the learner's own trace.

Each case is plain data (a dict) and carries its own seed, so the grader regenerates every
rank's initial data itself instead of trusting what came back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solutions import simcluster as sim
from solutions import simwire
from solutions.simverify import BadTrace, Log, array_from_plain, read_log

Case = Mapping[str, Any]


@dataclass(frozen=True)
class Report:
    """The grader's verdict on one case. ``problem`` is empty when the case passed."""

    case: str                      # "N=5, M=13, int64"
    problem: str = ""
    checks: tuple[str, ...] = ()   # what was verified, one line each
    picture: str = ""              # the learner's trace, drawn as text

    @property
    def passed(self) -> bool:
        return not self.problem


@dataclass(frozen=True)
class LabSpec:
    """A lab: its ``cases(params)``, each rank's private ``data(case)``, the grader's
    ``verify(case, log)``, and ``name``, the function the learner writes.

    A per-rank program runs on the simulated cluster (``links``; ``collectives=False``
    takes ``rank.all_reduce``/``all_gather`` away). A lab whose learner function is simply
    called (a schedule) gives ``call_args(case)`` instead.
    """

    name: str
    cases: Callable[[Mapping[str, Any]], tuple[dict[str, Any], ...]]
    data: Callable[[Case], list[Any]]
    verify: Callable[[Case, Any], Report]
    links: Callable[[Case], sim.Links] = field(default=lambda case: sim.Links())
    collectives: bool = True
    call_args: Callable[[Case], tuple[Any, ...]] | None = None

    def job(self, case: Case) -> dict[str, Any]:
        """The plain-data job for ``case`` (built by the grader, run wherever)."""
        if self.call_args is not None:
            return simwire.call_job(*self.call_args(case))
        return simwire.cluster_job(self.data(case), collectives=self.collectives,
                                   links=self.links(case))


def run_case(spec: LabSpec, program: Callable[..., Any], case: Case) -> dict[str, Any]:
    """Run ``program`` on one case, exactly as the grading sandbox does: through the
    case's plain job. The plain log, or {"error": ...} naming the rank and step."""
    return simwire.run_job(program, spec.job(case))


def read_results(log: Log, what: str) -> list[np.ndarray | None | str]:
    """Each rank's returned value as an array: None where it returned None, and a short
    description (a str) where it returned something that is not an array of numbers (a
    list of numbers counts as an array)."""
    out: list[np.ndarray | None | str] = []
    for rank, result in enumerate(log.results):
        if result is None:
            out.append(None)
        elif isinstance(result, dict):
            try:
                out.append(array_from_plain(result, f"rank {rank}'s {what}"))
            except BadTrace as error:
                out.append(f"something that is not an array ({error})")
        elif isinstance(result, list):
            try:
                out.append(np.asarray(result, dtype=np.float64))
            except (TypeError, ValueError):
                out.append("a list that is not an array of numbers")
        else:
            out.append(repr(result)[:60])
    return out


def open_run(case_text: str, tree: Any) -> Log | Report:
    """The run's log, read once; or a report for a run that raised, was stopped, or
    returned something that is not a trace."""
    if isinstance(tree, dict) and "error" in tree:
        kind = tree.get("error_type")
        lead = {"program": "Your program raised",
                "timeout": "Your program was stopped"}.get(str(kind),
                                                            "The simulator stopped your program")
        return Report(case_text, f"{lead}: {tree['error']}")
    try:
        return read_log(tree)
    except BadTrace as error:
        return Report(case_text, f"The run's log could not be read: {error}.")


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
