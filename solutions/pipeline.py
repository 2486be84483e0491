"""Pipeline parallelism: bubble, in-flight microbatches, point-to-point volume, schedules.

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

Schedule generators (:func:`schedule_gpipe`, :func:`schedule_1f1b`) use unit time for a
forward *and* for a backward (t_f = t_b = 1 slot). The bubble fractions do not depend on
that choice, since the bubble (p-1)(t_f + t_b) and the compute m(t_f + t_b) scale
together; unit slots keep the Gantt chart on an integer grid.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from solutions._checks import non_negative, positive, positive_int

Schedule = Literal["gpipe", "1f1b"]
Phase = Literal["F", "B"]
#: one operation on one stage: (start slot, "F" or "B", microbatch index)
Op = tuple[int, Phase, int]


def _validate(pp: int, m: int, v: int) -> tuple[int, int, int]:
    return positive_int("pp", pp), positive_int("m", m), positive_int("v", v)


def bubble_over_compute(pp: int, m: int, v: int = 1) -> float:
    """Bubble time over ideal compute time: (p - 1) / (m v) (a fraction, not a percentage).

    Narayanan et al. 2021, §2.2.1 (GPipe and 1F1B: (p-1)/m) and §2.2.2 (interleaved:
    (p-1)/(m v)). Can exceed 1 when m v < p - 1.
    """
    p, m, v = _validate(pp, m, v)
    return (p - 1) / (m * v)


def bubble_over_total(pp: int, m: int, v: int = 1) -> float:
    """Bubble time over total iteration time: (p - 1) / (m v + p - 1) (a fraction < 1).

    Same bubble as :func:`bubble_over_compute`, divided by compute + bubble instead of by
    compute alone: (p-1)(t_f+t_b)/v over m(t_f+t_b) + (p-1)(t_f+t_b)/v.
    """
    p, m, v = _validate(pp, m, v)
    return (p - 1) / (m * v + p - 1)


def min_microbatches(pp: int, target_bubble: float, v: int = 1, multiple_of: int = 1) -> int:
    """Smallest m with bubble over compute (p-1)/(m v) *strictly* below ``target_bubble``.

    m > (p-1)/(v x target), so m = floor((p-1)/(v x target)) + 1, rounded up to a multiple
    of ``multiple_of`` (Megatron-LM's interleaved schedule needs m divisible by p). The
    target is read as the decimal the caller wrote (0.05 is exactly 1/20), so a bubble of
    exactly 5% does not count as below 5%. ``target_bubble`` is a fraction, not a percentage.
    """
    p, _, v = _validate(pp, 1, v)
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
    """
    p, m, _ = _validate(pp, m, 1)
    non_negative("stage", stage)
    if stage >= p:
        raise ValueError(f"stage must be in 0..{p - 1}, got {stage}")
    if schedule == "gpipe":
        return m
    if schedule == "1f1b":
        return min(p - stage, m)
    raise ValueError(f"schedule must be 'gpipe' or '1f1b', got {schedule!r}")


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
    p, m, v = _validate(pp, m, v)
    non_negative("activation_gb", activation_gb)
    if p == 1:
        return 0.0
    return 2 * (p * v - 1) * m * activation_gb


# -- schedules for a Gantt chart ------------------------------------------------------

def _gpipe_order(pp: int, m: int, stage: int) -> list[tuple[Phase, int]]:
    """All forwards, then all backwards (GPipe, Huang et al. 2019, Fig. 2c)."""
    forwards: list[tuple[Phase, int]] = [("F", j) for j in range(m)]
    backwards: list[tuple[Phase, int]] = [("B", j) for j in range(m)]
    return forwards + backwards


def _one_f_one_b_order(pp: int, m: int, stage: int) -> list[tuple[Phase, int]]:
    """Warmup forwards, then alternate one forward / one backward, then drain backwards.

    Stage i warms up with min(p - i - 1, m) forwards (Narayanan et al. 2021, Fig. 4 top;
    Megatron-LM's ``forward_backward_pipelining_without_interleaving``).
    """
    warmup = min(pp - stage - 1, m)
    order: list[tuple[Phase, int]] = [("F", j) for j in range(warmup)]
    for k in range(m - warmup):
        order += [("F", warmup + k), ("B", k)]
    order += [("B", j) for j in range(m - warmup, m)]
    return order


def _dependency(pp: int, stage: int, phase: Phase, mb: int) -> tuple[int, Phase, int] | None:
    """The operation (stage, phase, microbatch) that must finish before this one starts."""
    if phase == "F":
        return (stage - 1, "F", mb) if stage > 0 else None
    return (stage + 1, "B", mb) if stage < pp - 1 else (stage, "F", mb)


def _simulate(pp: int, orders: list[list[tuple[Phase, int]]]) -> list[list[Op]]:
    """Start each operation as early as its stage and its dependency allow (1 slot each)."""
    end: dict[tuple[int, Phase, int], int] = {}
    result: list[list[Op]] = [[] for _ in range(pp)]
    free_at = [0] * pp
    cursor = [0] * pp
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for s in range(pp):
            while cursor[s] < len(orders[s]):
                phase, mb = orders[s][cursor[s]]
                dep = _dependency(pp, s, phase, mb)
                if dep is not None and dep not in end:
                    break
                start = max(free_at[s], end[dep] if dep is not None else 0)
                result[s].append((start, phase, mb))
                end[(s, phase, mb)] = free_at[s] = start + 1
                cursor[s] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            raise RuntimeError("schedule deadlocked")  # cannot happen for these orders
    return result


def schedule_gpipe(pp: int, m: int) -> list[list[Op]]:
    """GPipe schedule: for each stage, its (start slot, "F"/"B", microbatch) in order.

    Unit time per forward and per backward. The iteration lasts 2(m + p - 1) slots, of
    which each stage is busy 2m and idle 2(p - 1).
    """
    p, m, _ = _validate(pp, m, 1)
    return _simulate(p, [_gpipe_order(p, m, s) for s in range(p)])


def schedule_1f1b(pp: int, m: int) -> list[list[Op]]:
    """1F1B (PipeDream-Flush) schedule: per stage, (start slot, "F"/"B", microbatch).

    Unit time per forward and per backward. Same length and idle time as GPipe, but
    stage i never holds more than p - i microbatches' activations.
    """
    p, m, _ = _validate(pp, m, 1)
    return _simulate(p, [_one_f_one_b_order(p, m, s) for s in range(p)])


def makespan_slots(schedule: list[list[Op]]) -> int:
    """Length of a schedule in slots: the end of its last operation."""
    return max(start + 1 for ops in schedule for start, _, _ in ops)


def idle_slots(schedule: list[list[Op]]) -> list[int]:
    """Idle slots per stage between time 0 and the end of the whole schedule."""
    span = makespan_slots(schedule)
    return [span - len(ops) for ops in schedule]


def peak_in_flight(ops: list[Op]) -> int:
    """Most microbatches one stage holds at once (forward done, backward not yet done)."""
    held = peak = 0
    for _, phase, _ in sorted(ops):
        held += 1 if phase == "F" else -1
        peak = max(peak, held)
    return peak
