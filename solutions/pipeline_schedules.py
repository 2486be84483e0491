"""The orders a pipeline's GPUs run: GPipe, 1F1B, interleaved 1F1B (with Megatron-Core's
rules for it) and zero-bubble ZB-H1, each a list of :class:`PipelineOp`, the one record for
one pipeline operation, and the dependency rule between operations.

Notation as in :mod:`solutions.pipeline` (p stages, m microbatches, v chunks per GPU);
:mod:`solutions.pipeline_simulator` plays the orders written here. Zero-bubble schedules
(Qi, Wan, Huang & Lin, "Zero Bubble (Almost) Pipeline Parallelism", ICLR 2024,
arXiv:2401.10241) split the backward into B, the input gradient (on the critical path), and
W, the weight gradient, which can wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from solutions._checks import positive_int
from solutions.pipeline import check_shape

#: forward, backward (the input gradient when W is split off), weight gradient
Phase = Literal["F", "B", "W"]
PHASES: tuple[Phase, ...] = ("F", "B", "W")


@dataclass(frozen=True)
class PipelineOp:
    """One operation of a pipeline schedule on one GPU: the forward ("F"), the backward
    ("B"; only the input gradient when the weight gradient is split off) or the
    weight-gradient pass ("W", Qi et al. 2024, §2) of ``microbatch`` through model chunk
    ``chunk`` of that GPU (0 without interleaving; chunk c of GPU s is virtual stage
    c p + s, Narayanan et al. 2021, §2.2.2). Microbatches and chunks count from 0.

    A GPU's order is a list of these; the simulator places each one in time as a
    :class:`solutions.pipeline_simulator.Span`, which holds the same record.
    """

    phase: Phase
    microbatch: int
    chunk: int = 0

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {self.phase!r}")
        for name, value in (("microbatch", self.microbatch), ("chunk", self.chunk)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")


def dependency(pp: int, v: int, stage: int, op: PipelineOp) -> tuple[int, PipelineOp] | None:
    """(GPU, operation) that must finish before ``op`` on ``stage`` starts.

    Chunk c of stage s is virtual stage k = c p + s (v = 1: k = s). A forward needs the
    previous virtual stage's forward of the same microbatch; a backward needs the next
    virtual stage's backward, and the last virtual stage's backward its own forward. A W
    (weight gradient) needs its own B.
    """
    k = op.chunk * pp + stage
    needed: tuple[int, Phase]
    if op.phase == "W":
        needed = (k, "B")
    elif op.phase == "F":
        if k == 0:
            return None
        needed = (k - 1, "F")
    else:
        needed = (k + 1, "B") if k < pp * v - 1 else (k, "F")
    virtual, phase = needed
    return virtual % pp, PipelineOp(phase, op.microbatch, virtual // pp)


# -- plain schedules ------------------------------------------------------------------

def gpipe_order(pp: int, m: int, stage: int) -> list[PipelineOp]:
    """All forwards, then all backwards (GPipe, Huang et al. 2019, Fig. 2c)."""
    return [PipelineOp("F", j) for j in range(m)] + [PipelineOp("B", j) for j in range(m)]


def one_f_one_b_order(pp: int, m: int, stage: int) -> list[PipelineOp]:
    """Warmup forwards, then alternate one forward / one backward, then drain backwards.

    Stage i warms up with min(p - i - 1, m) forwards (Narayanan et al. 2021, Fig. 4 top;
    Megatron-LM's ``forward_backward_pipelining_without_interleaving``).
    """
    warmup = min(pp - stage - 1, m)
    order = [PipelineOp("F", j) for j in range(warmup)]
    for k in range(m - warmup):
        order += [PipelineOp("F", warmup + k), PipelineOp("B", k)]
    return order + [PipelineOp("B", j) for j in range(m - warmup, m)]


# -- interleaving ----------------------------------------------------------------------

def microbatch_group(pp: int, m: int, group: int | None = None) -> int:
    """N, the microbatches that pass through one chunk before the next chunk starts.

    Megatron-Core's default is p (``microbatch_group_size_per_vp_stage``); when m is not a
    multiple of p, ``None`` picks N = m, the setting that schedules any m >= p.
    """
    if group is not None:
        return positive_int("group", group)
    return pp if m % pp == 0 else m


def interleaved_order(pp: int, m: int, v: int, stage: int,
                      group: int | None = None) -> list[PipelineOp]:
    """Interleaved 1F1B's order on ``stage`` (Megatron-Core's
    ``forward_backward_pipelining_with_interleaving`` and ``get_schedule_table``;
    Narayanan et al. 2021, Fig. 4).

    Microbatches go in groups of N (:func:`microbatch_group`; the last group takes the
    rest): a group's microbatches pass through chunk 0, then the same ones through chunk
    1, and so on; backwards visit the chunks in reverse. Stage i warms up with
    (p - i - 1) x 2 + (v - 1) x N chunk forwards (capped at m v), then alternates.
    """
    n = microbatch_group(pp, m, group)
    table: list[tuple[int, int]] = []  # (chunk, microbatch) in schedule order
    for first in range(0, m, n):
        last = m if first + n >= m else first + n
        table += [(c, j) for c in range(v) for j in range(first, last)]
    total = m * v
    forward = [PipelineOp("F", j, c) for c, j in table]
    backward = [PipelineOp("B", j, v - 1 - c) for c, j in table]
    warmup = min((pp - stage - 1) * 2 + (v - 1) * n, total)
    order = forward[:warmup]
    for i in range(total - warmup):
        order += [forward[warmup + i], backward[i]]
    return order + backward[total - warmup:]


def interleaved_microbatch_error(pp: int, m: int, group: int | None = None) -> str:
    """Why Megatron-Core's interleaved schedule cannot run m microbatches on p stages, or "".

    Current Megatron-Core (``megatron/core/pipeline_parallel/schedules.py``,
    ``forward_backward_pipelining_with_interleaving``) runs microbatches in groups of N
    (``microbatch_group_size_per_vp_stage``, by default p) and asserts p <= N <= m, and
    that m mod N is 0 or at least p. The default N = p (``model_parallel_config.py``)
    still asks for a multiple of p, but setting N (``--microbatch-group-size-per-virtual-
    pipeline-stage``), e.g. to m, schedules any m >= p; ``group=None`` means that choice.
    m < p cannot run. Older Megatron-LM releases required m to be a multiple of p, with no
    N to choose; Llama 3 (§3.3.2) changed its own schedule to allow m < p.
    """
    p, m, _ = check_shape(pp, m, 1)
    n = m if group is None else positive_int("group", group)
    if not p <= n <= m:
        return (f"the interleaved schedule needs p <= N <= m microbatches per group (N = {n}, "
                f"p = {p}, m = {m}): with m = {m} below p = {p} it cannot run")
    if m % n and m % n < p:
        return (f"the interleaved schedule needs m mod N to be 0 or at least p: "
                f"{m} mod {n} = {m % n} is below p = {p}")
    return ""


# -- zero bubble ----------------------------------------------------------------------

def zb_h1_order(pp: int, m: int, stage: int) -> list[PipelineOp]:
    """ZB-H1's order on ``stage`` (Qi et al., "Zero Bubble (Almost) Pipeline Parallelism",
    ICLR 2024, §2.1 and Fig. 3): 1F1B's F/B order, with each W placed after the B
    ``stage`` microbatches later ("adjusts the starting points of W passes depending on
    the number of warm-up microbatches").

    Stage i holds at most p - i microbatches between F and B (1F1B) plus at most i
    between B and W, so every stage has at most p microbatches in flight: 1F1B's peak
    memory p M_B, since a W's stash M_W is at most M_B (Qi et al., Table 1). The i
    deferred W passes fill stage i's drain.
    """
    warmup = min(pp - stage - 1, m)
    order = [PipelineOp("F", j) for j in range(warmup)]
    pending: list[int] = []

    def backward(k: int) -> None:
        order.append(PipelineOp("B", k))
        pending.append(k)
        if len(pending) > stage:
            order.append(PipelineOp("W", pending.pop(0)))

    for k in range(m - warmup):
        order.append(PipelineOp("F", warmup + k))
        backward(k)
    for k in range(m - warmup, m):
        backward(k)
    return order + [PipelineOp("W", j) for j in pending]
