"""Step-time model: validation by software family, ranking within sweeps, and memory.

Three measures beside :mod:`solutions.performance.validation`'s fit/held-out split:

* **Leave one family out** (:func:`leave_one_family_out`). A family is the software a run
  used, its :mod:`solutions.stack` preset (Megatron-LM 2021, Megatron-Core, DeepSpeed's
  pipeline engine, DeepSpeed ZeRO-3, FSDP, FSDP2/torchtitan, Llama 3's FSDP). For each
  family the constants of :mod:`solutions.performance.fit` are fitted on the ``fit`` rows of
  the *other* families only, and the family's every row is predicted with them; the best
  constant share of peak is fitted on the same rows and scored on the same family, so the
  two columns compare like with like. A family the fit rows never contained is predicted
  by the constants in use, which saw none of it.
* **Ranking within a sweep** (:func:`sweep_ranking`): a sweep is one source's runs of one
  model (at least three); Kendall's tau between predicted and reported values says how
  often the model orders two layouts of the sweep the way they measured (Kendall 1938,
  tau-a: concordant minus discordant pairs over all pairs; 1 is the same order, -1 the
  reverse). A constant share of peak ranks by FLOPs alone and is reported beside it.
* **Memory** (:func:`memory_errors`): the planner's peak memory per GPU
  (:func:`solutions.planner.memory.memory_per_gpu`, with the run's stack) against the
  source's measured peak, in GiB, for the runs whose source gives one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from solutions.performance import fit as fitting
from solutions.performance.validation import (
    ErrorSummary,
    PublishedRun,
    baseline_errors,
    baseline_fraction,
    summarise_errors,
)
from solutions.planner.memory import memory_per_gpu

GIB = 2**30


@dataclass(frozen=True)
class FamilyResult:
    """One family predicted without its own rows in the fit, beside the constant baseline."""

    family: str
    model: ErrorSummary
    baseline: ErrorSummary
    baseline_fraction: float
    fit_rows: int  # rows of the other families the constants were fitted on


def leave_one_family_out(runs: Sequence[PublishedRun]) -> list[FamilyResult]:
    """Each family's runs predicted with constants fitted on the other families' fit rows
    (module doc); the module's constants are left as they were."""
    results = []
    for family in sorted({r.family for r in runs}):
        own = [r for r in runs if r.family == family]
        others = [r for r in runs if r.family != family and r.fitted]
        constants = (fitting.fit(others) if any(r.fitted for r in own)
                     else fitting.current())
        with fitting.constants_set(constants):
            errors = [r.error() for r in own]
            fraction = baseline_fraction(others)
            base = baseline_errors(own, fraction)
        labels = [r.label for r in own]
        results.append(FamilyResult(family, summarise_errors(labels, errors),
                                    summarise_errors(labels, base), fraction, len(others)))
    return results


def kendall_tau(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Kendall's tau-a of two equally long sequences: (concordant - discordant pairs) /
    all pairs; a pair tied in either sequence counts as neither (ValueError below 2). Values
    equal to 1 part in 10^9 are ties: the constant baseline predicts equal values for runs of
    one model and sequence length, which floating-point rounding would otherwise order."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("kendall_tau needs two sequences of the same length >= 2")
    score = 0
    for i, j in itertools.combinations(range(len(xs)), 2):
        if math.isclose(xs[i], xs[j], rel_tol=1e-9) or math.isclose(ys[i], ys[j], rel_tol=1e-9):
            continue
        dx, dy = xs[i] - xs[j], ys[i] - ys[j]
        score += (dx * dy > 0) - (dx * dy < 0)
    return score / (len(xs) * (len(xs) - 1) / 2)


@dataclass(frozen=True)
class SweepRanking:
    """Kendall's tau of the model and of the constant baseline within one sweep."""

    name: str
    runs: int
    model_tau: float
    baseline_tau: float


def sweep_ranking(runs: Sequence[PublishedRun], min_runs: int = 3) -> list[SweepRanking]:
    """Every sweep (one source, one model, ``min_runs`` runs or more) with tau of the
    model's and the constant baseline's predictions against the reported values."""
    sweeps: dict[tuple[str, str], list[PublishedRun]] = {}
    for run in runs:
        sweeps.setdefault((run.source_id or run.source, run.arch.name), []).append(run)
    fraction = baseline_fraction([r for r in runs if r.fitted])
    out = []
    for (source, model), rows in sorted(sweeps.items()):
        if len(rows) < min_runs or len({r.metric for r in rows}) > 1:
            continue
        reported = [r.reported for r in rows]
        predicted = [r.predicted() for r in rows]
        # the baseline predicts every run at one MFU: in the run's metric that is the
        # reported value scaled by fraction / implied MFU (inverted for step times)
        base = [r.reported * (1 + e) for r, e in zip(rows, baseline_errors(rows, fraction),
                                                      strict=True)]
        out.append(SweepRanking(f"{source}: {model}", len(rows),
                                kendall_tau(predicted, reported), kendall_tau(base, reported)))
    return out


@dataclass(frozen=True)
class MemoryError:
    """The planner's peak memory for one run against the source's measurement, GiB."""

    label: str
    predicted_gib: float
    reported_gib: float

    @property
    def error(self) -> float:
        return self.predicted_gib / self.reported_gib - 1


def memory_errors(runs: Sequence[PublishedRun]) -> list[MemoryError]:
    """Every run with a measured peak memory, predicted by the planner for the run's stack."""
    return [MemoryError(r.label, memory_per_gpu(r.arch, r.config, r.stack).total_bytes / GIB,
                        r.memory_gib)
            for r in runs if r.memory_gib is not None]


def families_markdown(runs: Sequence[PublishedRun]) -> str:
    """The three measures as Markdown tables (module doc)."""
    lines = ["| Family left out | Runs | Fit rows used | Model median \\|error\\| | Within 15 % "
             "| Constant MFU | Constant median \\|error\\| | Constant within 15 % |",
             "|---|---|---|---|---|---|---|---|"]
    for f in leave_one_family_out(runs):
        lines.append(f"| {f.family} | {f.model.n} | {f.fit_rows} | {f.model.median:.1%} "
                     f"| {f.model.within:.0%} | {f.baseline_fraction:.1%} "
                     f"| {f.baseline.median:.1%} | {f.baseline.within:.0%} |")
    lines += ["", "| Sweep (source: model) | Runs | Kendall tau, model | Kendall tau, "
              "constant MFU |", "|---|---|---|---|"]
    lines += [f"| {s.name} | {s.runs} | {s.model_tau:+.2f} | {s.baseline_tau:+.2f} |"
              for s in sweep_ranking(runs)]
    lines += ["", "| Run | Memory predicted (GiB) | Measured (GiB) | Error |", "|---|---|---|---|"]
    lines += [f"| {m.label} | {m.predicted_gib:.1f} | {m.reported_gib:.1f} | {m.error:+.1%} |"
              for m in memory_errors(runs)]
    return "\n".join(lines)

