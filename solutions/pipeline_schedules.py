"""Pipeline schedules beyond plain 1F1B: interleaving's order and rules, zero-bubble orders,
and the published bubbles and memory of ZB-H1, DualPipe and the V-shape family.

Notation as in :mod:`solutions.pipeline` (p stages, m microbatches, v chunks per GPU); its
simulator plays the orders written here. Zero-bubble schedules (Qi, Wan, Huang & Lin, "Zero
Bubble (Almost) Pipeline Parallelism", ICLR 2024, arXiv:2401.10241) split the backward into
B, the input gradient (on the critical path), and W, the weight gradient, which can wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from solutions._checks import non_negative, positive_int

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
    :class:`solutions.pipeline.Span`, which holds the same record.
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


def _validate(pp: int, m: int, v: int) -> tuple[int, int, int]:
    return positive_int("pp", pp), positive_int("m", m), positive_int("v", v)


# -- interleaving ----------------------------------------------------------------------

def interleaved_activation_factor(pp: int, v: int) -> float:
    """Peak activations of interleaved 1F1B's first stage over plain 1F1B's: 1 + (p-1)/(p v).

    Plain 1F1B holds p microbatches of a whole stage on GPU 0; interleaving's deeper
    warm-up ((p-1) x 2 + (v-1) x p chunk forwards, each 1/v of a stage) makes it
    p + (p-1)/v. Korthikanti et al., "Reducing Activation Recomputation in Large
    Transformer Models", MLSys 2023, §4.2.3. A pure number >= 1.
    """
    p, _, v = _validate(pp, 1, v)
    return 1 + (p - 1) / (p * v)


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
    p, m, _ = _validate(pp, m, 1)
    n = m if group is None else positive_int("group", group)
    if not p <= n <= m:
        return (f"the interleaved schedule needs p <= N <= m microbatches per group (N = {n}, "
                f"p = {p}, m = {m}): with m = {m} below p = {p} it cannot run")
    if m % n and m % n < p:
        return (f"the interleaved schedule needs m mod N to be 0 or at least p: "
                f"{m} mod {n} = {m % n} is below p = {p}")
    return ""



# -- zero bubble and beyond -------------------------------------------------------------

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


def zb_h1_bubble_slots(pp: int, t_f: float, t_b: float, t_w: float) -> float:
    """Idle time per stage of ZB-H1, (p-1)(t_f + t_b - t_w), in the unit of the times.

    Qi et al. 2024, §2.1 (handcrafted schedule ZB-H1, :func:`zb_h1_order`): stage i
    delays its W passes by i microbatches, which keeps every stage at p microbatches in
    flight (1F1B's peak memory) while the delayed W passes fill the drain, so the bubble
    shrinks from 1F1B's (p-1)(t_f + t_b + t_w). ``t_b`` is the input-gradient pass only,
    ``t_w`` the weight gradient. With t_f = t_b = t_w it is a third of 1F1B's bubble.
    """
    p, _, _ = _validate(pp, 1, 1)
    for name, value in (("t_f", t_f), ("t_b", t_b), ("t_w", t_w)):
        non_negative(name, value)
    return (p - 1) * (t_f + t_b - t_w)


def dualpipe_bubble(pp: int, t_f_and_b: float, t_b_full: float, t_w: float) -> float:
    """DualPipe's bubble, (p/2 - 1)(t_F&B + t_B - 3 t_W), in the unit of the times.

    DeepSeek-V3 report §3.2.1, Table 2, in its notation: ``t_b_full`` is a whole backward
    chunk (input and weight gradient), ``t_w`` its weight part, ``t_f_and_b`` the time of a
    forward and a backward chunk run overlapped. DualPipe keeps two copies of the
    parameters (each GPU holds a stage of both directions) and p + 1 microbatches of
    activations, and needs an even p.
    """
    p, _, _ = _validate(pp, 1, 1)
    if p % 2:
        raise ValueError(f"DualPipe needs an even number of stages, got pp = {p}")
    for name, value in (("t_f_and_b", t_f_and_b), ("t_b_full", t_b_full), ("t_w", t_w)):
        non_negative(name, value)
    return (p / 2 - 1) * (t_f_and_b + t_b_full - 3 * t_w)


def v_shape_peak_microbatches(pp: int, schedule: str) -> int:
    """Peak activation memory of the V-shape zero-bubble family, in microbatches of a whole
    stage (M_B units), as published.

    Qi, Wan, Amar & Lin, "Pipeline Parallelism with Controllable Memory", NeurIPS 2024
    (arXiv:2405.15362), and the authors' summary table (sail-sg): each GPU holds two
    chunks in a V (GPU i holds chunks i and 2p-1-i). "1f1b": p; "v-min": (p + 4) // 3;
    "v-half": (p + 2) // 2; "v-zb" (ZB-V of arXiv:2401.10241): p, 1F1B's memory with
    (almost) no bubble.
    """
    p, _, _ = _validate(pp, 1, 1)
    table = {"1f1b": p, "v-min": (p + 4) // 3, "v-half": (p + 2) // 2, "v-zb": p}
    if schedule not in table:
        raise ValueError(f"schedule must be one of {', '.join(table)}, got {schedule!r}")
    return table[schedule]


def v_shape_bubble_rate(pp: int, m: int, schedule: str) -> float:
    """The published approximate bubble rate of the V-shape family with t_F = t_B = t_W, a
    fraction of the iteration (1 - (F+B+W) m / longest stage time).

    Same source as :func:`v_shape_peak_microbatches`: 1F1B about p/m, V-Min about
    2p/(3m), V-Half about p/(2m), V-ZB 0. Approximations for m much larger than p.
    """
    p, m, _ = _validate(pp, m, 1)
    table = {"1f1b": p / m, "v-min": 2 * p / (3 * m), "v-half": p / (2 * m), "v-zb": 0.0}
    if schedule not in table:
        raise ValueError(f"schedule must be one of {', '.join(table)}, got {schedule!r}")
    return table[schedule]
