"""Pipeline parallelism in closed form: the bubble, in-flight microbatches, activation
memory, point-to-point volume, and the published bubbles and memory of the schedules beyond
1F1B.

Notation (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC21, §2.2): p pipeline stages (``pp``), m microbatches per batch
(``m``), v model chunks per GPU for the interleaved schedule (``v``; v = 1 is the plain
schedule), t_f and t_b the forward and backward time of one microbatch on one stage.

The bubble is the same (p - 1)(t_f + t_b) for GPipe (Huang et al., NeurIPS 2019) and for
1F1B (PipeDream-Flush; Harlap et al. 2018 / Narayanan et al. 2021): both fill and drain the
pipeline once per batch. Interleaving divides it by v. Two ways to express it are in use,
so both have their own, explicit function:

* :func:`bubble_over_compute` = bubble / ideal compute time = (p-1) / (m v). This is
  Narayanan et al.'s "bubble time fraction" (§2.2.1, §2.2.2);
* :func:`bubble_over_total` = bubble / whole iteration time = (p-1) / (m v + p - 1), the
  share of wall-clock (and GPU-hours) that is idle.

Beyond 1F1B: zero-bubble schedules (Qi, Wan, Huang & Lin, "Zero Bubble (Almost) Pipeline
Parallelism", ICLR 2024, arXiv:2401.10241) split the backward into B, the gradient with
respect to the input (on the critical path), and W, the gradient with respect to the
weights (free to move), and use W to fill the bubble. DualPipe (DeepSeek-V3 technical
report, arXiv:2412.19437, §3.2.1, Table 2) feeds microbatches from both ends of the pipeline.

The orders each GPU runs are in :mod:`solutions.pipeline_schedules`; the simulator that
plays them, and checks these formulas, in :mod:`solutions.pipeline_simulator`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from solutions._checks import non_negative, positive, positive_int

Schedule = Literal["gpipe", "1f1b", "zb-h1"]


def check_shape(pp: int, m: int, v: int = 1) -> tuple[int, int, int]:
    """(p, m, v) checked as whole numbers >= 1: stages, microbatches, chunks per GPU."""
    return positive_int("pp", pp), positive_int("m", m), positive_int("v", v)


def bubble_over_compute(pp: int, m: int, v: int = 1) -> float:
    """Bubble time over ideal compute time: (p - 1) / (m v) (a fraction, not a percentage).

    Narayanan et al. 2021, §2.2.1 (GPipe and 1F1B: (p-1)/m) and §2.2.2 (interleaved:
    (p-1)/(m v)). Can exceed 1 when m v < p - 1.
    """
    p, m, v = check_shape(pp, m, v)
    return (p - 1) / (m * v)


def bubble_over_total(pp: int, m: int, v: int = 1) -> float:
    """Bubble time over total iteration time: (p - 1) / (m v + p - 1) (a fraction < 1).

    Same bubble as :func:`bubble_over_compute`, divided by compute + bubble instead of by
    compute alone: (p-1)(t_f+t_b)/v over m(t_f+t_b) + (p-1)(t_f+t_b)/v.
    """
    p, m, v = check_shape(pp, m, v)
    return (p - 1) / (m * v + p - 1)


def min_microbatches(pp: int, target_bubble: float, v: int = 1, multiple_of: int = 1) -> int:
    """Smallest m with bubble over compute (p-1)/(m v) *strictly* below ``target_bubble``.

    m > (p-1)/(v x target), so m = floor((p-1)/(v x target)) + 1, rounded up to a multiple
    of ``multiple_of`` (older Megatron-LM releases needed m divisible by p when
    interleaving; current Megatron-Core needs only m >= p, see
    :func:`solutions.pipeline_schedules.interleaved_microbatch_error`). The
    target is read as the decimal the caller wrote (0.05 is exactly 1/20), so a bubble of
    exactly 5% does not count as below 5%. ``target_bubble`` is a fraction, not a percentage.
    """
    p, _, v = check_shape(pp, 1, v)
    step = positive_int("multiple_of", multiple_of)
    positive("target_bubble", target_bubble)
    target = Fraction(str(target_bubble))
    m = int(Fraction(p - 1) / (v * target)) + 1  # int() floors a positive Fraction
    return -(-m // step) * step


# -- memory: microbatches in flight ---------------------------------------------------

def in_flight_microbatches(pp: int, m: int, schedule: Schedule = "1f1b", stage: int = 0) -> int:
    """Peak number of microbatches whose activations ``stage`` (0-based) holds at once.

    * GPipe: every stage runs all m forwards before any backward, so m.
    * 1F1B: stage i runs p - i - 1 warmup forwards, then one more forward before its first
      backward, so at most p - i (p on the first stage), and never more than m.
      Narayanan et al. 2021, §2.2.1: in-flight microbatches are limited to the pipeline
      depth p, not the m of GPipe.
    * ZB-H1: stage i holds p - i between F and B and up to i more whose W waits
      (:func:`~solutions.pipeline_schedules.zb_h1_order`), so min(p, m) on every stage,
      counting a W's stash as a forward's (Qi et al., ICLR 2024, §2.1).
    """
    p, m, _ = check_shape(pp, m, 1)
    non_negative("stage", stage)
    if stage >= p:
        raise ValueError(f"stage must be in 0..{p - 1}, got {stage}")
    if schedule == "gpipe":
        return m
    if schedule == "1f1b":
        return min(p - stage, m)
    if schedule == "zb-h1":
        return min(p, m)
    raise ValueError(f"schedule must be 'gpipe', '1f1b' or 'zb-h1', got {schedule!r}")


def activation_memory_gb(
    activation_gb_per_microbatch: float, pp: int, m: int,
    schedule: Schedule = "1f1b", stage: int = 0,
) -> float:
    """Peak stashed activations on one stage, in GB: in-flight microbatches x GB each.

    ``activation_gb_per_microbatch`` is what one microbatch leaves stashed on that stage
    until its backward pass runs.
    """
    positive("activation_gb_per_microbatch", activation_gb_per_microbatch)
    return in_flight_microbatches(pp, m, schedule, stage) * activation_gb_per_microbatch


# -- point-to-point volume -----------------------------------------------------------

def p2p_total_gb_per_step(activation_gb: float, pp: int, m: int, v: int = 1) -> float:
    """Point-to-point bytes sent between GPUs per batch, summed over all GPUs, in GB.

    The model is cut into p v chunks placed round-robin (chunk j on GPU j mod p), so each
    of the p v - 1 chunk boundaries crosses GPUs when p > 1. Per microbatch, each boundary
    carries the activation forward and its gradient (same size) backward:
    2 (p v - 1) m x ``activation_gb``. Interleaving multiplies the boundaries, hence the
    communication, by about v (Narayanan et al. 2021, §2.2.2). One stage: nothing to send.
    """
    p, m, v = check_shape(pp, m, v)
    non_negative("activation_gb", activation_gb)
    if p == 1:
        return 0.0
    return 2 * (p * v - 1) * m * activation_gb


# -- the published bubbles and memory of other schedules --------------------------------

def interleaved_activation_factor(pp: int, v: int) -> float:
    """Peak activations of interleaved 1F1B's first stage over plain 1F1B's: 1 + (p-1)/(p v).

    Plain 1F1B holds p microbatches of a whole stage on GPU 0; interleaving's deeper
    warm-up ((p-1) x 2 + (v-1) x p chunk forwards, each 1/v of a stage) makes it
    p + (p-1)/v. Korthikanti et al., "Reducing Activation Recomputation in Large
    Transformer Models", MLSys 2023, §4.2.3. A pure number >= 1.
    """
    p, _, v = check_shape(pp, 1, v)
    return 1 + (p - 1) / (p * v)


def zb_h1_bubble_slots(pp: int, t_f: float, t_b: float, t_w: float) -> float:
    """Idle time per stage of ZB-H1, (p-1)(t_f + t_b - t_w), in the unit of the times.

    Qi et al. 2024, §2.1 (handcrafted schedule ZB-H1,
    :func:`~solutions.pipeline_schedules.zb_h1_order`): stage i delays its W passes by i
    microbatches, which keeps every stage at p microbatches in flight (1F1B's peak memory)
    while the delayed W passes fill the drain, so the bubble shrinks from 1F1B's
    (p-1)(t_f + t_b + t_w). ``t_b`` is the input-gradient pass only, ``t_w`` the weight
    gradient. With t_f = t_b = t_w it is a third of 1F1B's bubble.
    """
    p, _, _ = check_shape(pp, 1, 1)
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
    p, _, _ = check_shape(pp, 1, 1)
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
    p, _, _ = check_shape(pp, 1, 1)
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
    p, m, _ = check_shape(pp, m, 1)
    table = {"1f1b": p / m, "v-min": 2 * p / (3 * m), "v-half": p / (2 * m), "v-zb": 0.0}
    if schedule not in table:
        raise ValueError(f"schedule must be one of {', '.join(table)}, got {schedule!r}")
    return table[schedule]
