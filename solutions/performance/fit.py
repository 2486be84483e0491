"""Step-time model: the few constants fitted to published runs, and the fit itself.

Every other number in the model is a datasheet figure, a microbenchmark or a stated
assumption; these are the only ones chosen to match training runs, and only on the runs of
``solutions/data/published_runs.json`` marked ``"split": "fit"``:

* ``SUSTAINED_FRACTION`` per GPU generation (A100; H100, which H800 and H200 share;
  Blackwell, B200 and GB200, which takes the H100's when no Blackwell run is fitted on): the
  share of the
  microbenchmark GEMM and attention rates a training step sustains (clocks under sustained
  power, kernels and launch gaps the model does not list);
* ``ELEMENTWISE_PASSES`` (eager PyTorch, Megatron-LM's hand-fused kernels, Transformer
  Engine's fused kernels): HBM passes over each activation byte by element-wise kernels;
* ``OVERLAP_INTERFERENCE``: the share of overlapped communication time that still slows the
  computation under it.
* ``POWER_CLOCK_EXPONENT`` (:mod:`solutions.gpu_family`): how hard a power limit slows the
  tensor cores, ``clock ~ power^(1/k)``, searched from the voltage-floor bound ``k = 1``,
  where a measured GEMM under a deep cap sits (its prior, below), up beyond the cubic DVFS
  law.
* ``TRITON_FA_SLOWDOWN`` (:mod:`solutions.performance.flops`): how much slower the Triton
  port of FlashAttention-1 is than FlashAttention-2, within the 1.3-2.5x the
  FlashAttention-2 paper states.

:func:`fit` repeats the search (coordinate descent over fixed grids, then moves of one or two
constants a grid step at a time, minimising :func:`score`, the score the model was fitted
with: every constant but the power law on the runs at full power, then the power law on the
runs under a stated limit) and ``benchmarks/validate_performance.py --fit`` prints its
result beside the values in use.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from solutions import gpu_family
from solutions.performance import flops as pf
from solutions.performance import stage as ps


class FittableRun(Protocol):
    """What the fit reads of a published run (:class:`solutions.performance.validation.
    PublishedRun`, which imports this module): its source, whether it may be fitted on,
    and the model's relative error on it."""

    @property
    def source(self) -> str: ...

    @property
    def source_id(self) -> str: ...

    @property
    def fitted(self) -> bool: ...

    @property
    def power_limited(self) -> bool: ...

    def error(self) -> float: ...


@dataclass(frozen=True)
class Constant:
    """One fitted constant: its name, the grid searched and how to read and set it."""

    name: str
    grid: tuple[float, ...]
    #: The constants whose fitted values' mean this one takes when no fitted row depends
    #: on it (a GPU generation with no run to fit on takes the previous one's share).
    fallback: tuple[str, ...] = ()

    def get(self) -> float:
        module, key = _where(self.name)
        if key is None:
            return float(getattr(module, self.name))
        return float(getattr(module, self.name.split("[")[0])[key])

    def set(self, value: float) -> None:
        module, key = _where(self.name)
        if key is None:
            setattr(module, self.name, value)
            return
        getattr(module, self.name.split("[")[0])[key] = value


#: The constant fitted on the runs under a stated power limit, after the others.
POWER_LAW = "POWER_CLOCK_EXPONENT"


def _where(name: str) -> tuple[object, str | None]:
    module = {"OVERLAP_INTERFERENCE": ps, POWER_LAW: gpu_family}.get(name, pf)
    return module, (name.split("[")[1].strip("]'\"") if "[" in name else None)


def _grid(lo: float, hi: float, step: float) -> tuple[float, ...]:
    n = round((hi - lo) / step)
    return tuple(round(lo + i * step, 6) for i in range(n + 1))


CONSTANTS: tuple[Constant, ...] = (
    Constant("SUSTAINED_FRACTION['A100']", _grid(0.60, 1.00, 0.01)),
    Constant("SUSTAINED_FRACTION['H100']", _grid(0.60, 1.00, 0.01)),
    Constant("SUSTAINED_FRACTION['B200']", _grid(0.60, 1.00, 0.01),
             fallback=("SUSTAINED_FRACTION['H100']",)),
    # passes over HBM: within what counting the kernels allows (about 6 reads and writes
    # of Korthikanti's 34 s b h bytes per layer in eager mode, fewer when fused, but no
    # fewer than the 3 that fused kernels' own reads and writes make:
    # solutions.performance.flops.ELEMENTWISE_PASSES)
    Constant("ELEMENTWISE_PASSES['eager']", _grid(3.0, 12.0, 1.0)),
    # Megatron-LM fuses some element-wise chains by hand (bias + GeLU, scale + mask +
    # softmax, bias + dropout + add; Narayanan et al. 2021, §4.2) and leaves the rest to
    # eager PyTorch: without a run of its own it takes the midpoint of the two neighbours'
    # fitted passes, eager PyTorch's and Transformer Engine's (the full fit lands there:
    # 12, 8 and 4)
    Constant("ELEMENTWISE_PASSES['megatron']", _grid(3.0, 12.0, 1.0),
             fallback=("ELEMENTWISE_PASSES['eager']", "ELEMENTWISE_PASSES['fused']")),
    Constant("ELEMENTWISE_PASSES['fused']", _grid(3.0, 6.0, 1.0)),
    Constant("OVERLAP_INTERFERENCE", _grid(0.0, 0.5, 0.05)),
    Constant(POWER_LAW, _grid(1.0, 4.0, 0.25)),
    Constant("TRITON_FA_SLOWDOWN", _grid(1.3, 2.5, 0.1)),
)


#: |error| above which a run counts as a miss of the model, not something to fit to.
CLIP = 0.25


def score(runs: Sequence[FittableRun]) -> float:
    """Mean over sources of the mean |error| of each source's runs, each |error| clipped at
    :data:`CLIP`: every source weighs the same, however many rows it gives, so that the
    constants describe the sources' common physics rather than the largest source, and a
    run the model cannot describe does not drag the rest."""
    by_source: dict[str, list[float]] = {}
    for run in runs:
        by_source.setdefault(run.source_id or run.source, []).append(
            min(abs(run.error()), CLIP))
    return statistics.fmean(statistics.fmean(e) for e in by_source.values())


@contextmanager
def constants_set(values: dict[str, float]) -> Iterator[None]:
    """Run a block with the named constants set to ``values``, restored afterwards."""
    by_name = {c.name: c for c in CONSTANTS}
    saved = {name: by_name[name].get() for name in values}
    try:
        for name, value in values.items():
            by_name[name].set(value)
        yield
    finally:
        for name, value in saved.items():
            by_name[name].set(value)


def current() -> dict[str, float]:
    """The values in use."""
    return {c.name: c.get() for c in CONSTANTS}


#: Where the search starts: the microbenchmark rates as they are, a few passes, no
#: interference, the Triton kernel in the middle of its stated range, and clock in
#: proportion to power under a cap (k = 1). The last is measured, not assumed: cuBLAS
#: GEMMs on a GB300 capped at 500 W of its 1,400 W ran at about 617 TFLOP/s against
#: 1,600-2,174 uncapped, a ratio of 0.28-0.39 for a power ratio of 0.357
#: (facebookexperimental/triton pull request #2023, July 2026, benchmark script
#: ``denoise.sh``); k = 1 gives 0.357, the cubic law 0.71. A constant no fitted row reads
#: keeps this value, so a fit without a capped run predicts capped runs with it.
START: dict[str, float] = {c.name: v for c, v in zip(
    CONSTANTS, (1.0, 1.0, 1.0, 6.0, 6.0, 3.0, 0.0, 1.0, 1.9), strict=True)}


def fit(runs: Sequence[FittableRun], rounds: int = 4) -> dict[str, float]:
    """The constants, fitted on the rows of ``runs`` with ``fitted`` set (ValueError if
    there are none), in two stages.

    First every constant but the power law, on the runs at full power: coordinate descent
    from :data:`START` (each constant in turn takes the grid value with the lowest
    :func:`score`), polished by :func:`_pair_moves`. Then the power law alone, on the runs
    under a stated power limit, the others held: a capped run cannot tell a slower clock
    from a lower sustained share, so it is not let move the share.

    A constant that no row depends on (every grid value scores the same, e.g. Megatron-LM's
    element-wise passes when no Megatron-LM run is among the rows, or the power law without
    a capped run) keeps its starting value instead of the grid's first, or takes the mean
    of its ``fallback`` constants' fitted values (Blackwell's sustained share without a
    Blackwell run takes the H100's; Megatron-LM's passes the midpoint of eager PyTorch's and
    Transformer Engine's). The module's constants are left unchanged."""
    rows = [r for r in runs if r.fitted]
    if not rows:
        raise ValueError("no runs marked for fitting")
    full_power = tuple(c for c in CONSTANTS if c.name != POWER_LAW)
    power_law = tuple(c for c in CONSTANTS if c.name == POWER_LAW)
    best, informed = dict(START), set[str]()
    for stage_rows, constants in (([r for r in rows if not r.power_limited], full_power),
                                  ([r for r in rows if r.power_limited], power_law)):
        if stage_rows:
            best = _descend(stage_rows, best, constants, rounds, informed)
            best = _pair_moves(stage_rows, best, constants)
    for constant in CONSTANTS:
        if constant.name not in informed and constant.fallback:
            best[constant.name] = statistics.fmean(best[f] for f in constant.fallback)
    return best


def _descend(rows: Sequence[FittableRun], start: dict[str, float],
             constants: Sequence[Constant], rounds: int, informed: set[str]) -> dict[str, float]:
    """Coordinate descent over ``constants`` from ``start``: each in turn takes the grid
    value with the lowest :func:`score` on ``rows``; a constant whose grid values all score
    the same is left where it is, and the others are added to ``informed``."""
    best = dict(start)
    for _ in range(rounds):
        for constant in constants:
            scores = {}
            for value in constant.grid:
                with constants_set({**best, constant.name: value}):
                    scores[value] = score(rows)
            if max(scores.values()) - min(scores.values()) > 1e-12:
                best[constant.name] = min(constant.grid, key=scores.__getitem__)
                informed.add(constant.name)
    return best


def _pair_moves(rows: Sequence[FittableRun], best: dict[str, float],
                constants: Sequence[Constant]) -> dict[str, float]:
    """Polish a coordinate-descent result: move one of ``constants``, or two at once, one
    grid step each while that lowers :func:`score`. Constants that trade against each other
    on the same rows (a generation's sustained share and the element-wise passes of the
    software its runs used) stall a search that moves one at a time. A constant is only
    moved when the move needs it: a two-constant move must beat both of its one-constant
    halves, so a constant that no row reads is never carried along."""
    seen: dict[tuple[float, ...], float] = {}

    def scored(values: dict[str, float]) -> float:
        # a point is scored once: the halves of a pair move are the single moves just tried
        key = tuple(values[c.name] for c in constants)
        if key not in seen:
            with constants_set(values):
                seen[key] = score(rows)
        return seen[key]

    def moved(values: dict[str, float], *steps: tuple[Constant, int]) -> dict[str, float]:
        out = dict(values)
        for constant, step in steps:
            out[constant.name] = _step(constant, values[constant.name], step)
        return out

    best, current = dict(best), scored(best)
    improved = True
    while improved:
        improved = False
        for constant in constants:
            for step in (-1, 1):
                trial = moved(best, (constant, step))
                trial_score = scored(trial)
                if trial_score < current - 1e-12:
                    best, current, improved = trial, trial_score, True
        for i, first in enumerate(constants):
            for second in constants[i + 1:]:
                for a in (-1, 1):
                    for b in (-1, 1):
                        trial = moved(best, (first, a), (second, b))
                        trial_score = scored(trial)
                        if trial_score >= current - 1e-12:
                            continue
                        halves = min(scored(moved(best, (first, a))),
                                     scored(moved(best, (second, b))))
                        if trial_score < halves - 1e-12:
                            best, current, improved = trial, trial_score, True
    return best


def _step(constant: Constant, value: float, step: int) -> float:
    """The grid value ``step`` places from ``value`` (the nearest grid value), held at the
    grid's ends."""
    index = min(range(len(constant.grid)), key=lambda i: abs(constant.grid[i] - value))
    return constant.grid[max(0, min(len(constant.grid) - 1, index + step))]
