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


def interleaved_order(pp: int, m: int, v: int, stage: int) -> list[tuple[Phase, int, int]]:
    """The order in which ``stage`` runs its chunk operations: (phase, chunk, microbatch).

    Interleaved 1F1B (Narayanan et al. 2021, §2.2.2; Megatron-LM's
    ``forward_backward_pipelining_with_interleaving``): virtual microbatch k (0 <= k < m v)
    belongs to group k // (p v); inside a group, p consecutive microbatches pass through
    chunk 0, then the same p through chunk 1, and so on. Backwards visit the chunks in
    reverse. Stage i warms up with (p - i - 1) x 2 + (v - 1) p forwards.
    """
    total = m * v

    def chunk(k: int, forward: bool) -> int:
        c = (k % (pp * v)) // pp
        return c if forward else v - 1 - c

    def microbatch(k: int) -> int:
        return (k // (pp * v)) * pp + k % pp

    warmup = min((pp - stage - 1) * 2 + (v - 1) * pp, total)
    order: list[tuple[Phase, int, int]] = [("F", chunk(k, True), microbatch(k))
                                           for k in range(warmup)]
    for i in range(total - warmup):
        order += [("F", chunk(warmup + i, True), microbatch(warmup + i)),
                  ("B", chunk(i, False), microbatch(i))]
    order += [("B", chunk(k, False), microbatch(k)) for k in range(total - warmup, total)]
    return order


class ScheduleError(ValueError):
    """A schedule that cannot run; ``stage`` and ``position`` locate the offending action."""

    def __init__(self, message: str, stage: int = -1, position: int = -1) -> None:
        super().__init__(message)
        self.stage, self.position = stage, position


#: one operation in an executed schedule: (start slot, phase, microbatch, chunk)
ChunkOp = tuple[int, Phase, int, int]
_Key = tuple[Phase, int, int]  # (phase, virtual stage, microbatch)


def _dependency(pp: int, v: int, stage: int, phase: Phase, mb: int, chunk: int) -> _Key | None:
    """What must finish before (phase, mb) of ``chunk`` on ``stage`` starts.

    Chunk c of stage s is virtual stage k = c p + s (v = 1: k = s). A forward needs the
    previous virtual stage's forward of the same microbatch; a backward needs the next
    virtual stage's backward, and the last virtual stage's backward its own forward.
    """
    k = chunk * pp + stage
    if phase == "F":
        return ("F", k - 1, mb) if k > 0 else None
    return ("B", k + 1, mb) if k < pp * v - 1 else ("F", k, mb)


def _check_actions(pp: int, m: int, v: int, orders: list[list[tuple[Phase, int, int]]]) -> None:
    """Every stage runs F and B of every (chunk, microbatch) exactly once, nothing else."""
    if len(orders) != pp:
        raise ScheduleError(f"expected one action list per stage ({pp}), got {len(orders)}")
    for s, order in enumerate(orders):
        seen: set[tuple[Phase, int, int]] = set()
        for i, (phase, chunk, mb) in enumerate(order):
            if phase not in ("F", "B") or not 0 <= mb < m or not 0 <= chunk < v:
                raise ScheduleError(f"stage {s}, action {i}: {(phase, chunk, mb)!r} is not an "
                                    f"action (phase F or B, chunk 0..{v - 1}, microbatch "
                                    f"0..{m - 1})", s, i)
            if (phase, chunk, mb) in seen:
                raise ScheduleError(f"stage {s}, action {i}: {phase} of microbatch {mb} "
                                    f"(chunk {chunk}) runs twice", s, i)
            seen.add((phase, chunk, mb))
        if len(seen) != 2 * m * v:
            raise ScheduleError(f"stage {s} runs {len(seen)} of its {2 * m * v} actions "
                                f"(a forward and a backward of each of the {m} microbatches"
                                + (f" in each of its {v} chunks)" if v > 1 else ")"), s,
                                len(order))


def execute(pp: int, m: int, orders: list[list[tuple[Phase, int, int]]],
            v: int = 1) -> list[list[ChunkOp]]:
    """Run per-stage action lists, each action (phase, chunk, microbatch) taking 1 slot.

    Each action starts as soon as its stage is free and its dependency has finished
    (communication is free). Raises :class:`ScheduleError` naming the first offending
    action: a malformed or missing one, or one that waits for an action that can never run
    before it (a dependency violation that would deadlock the pipeline).
    """
    p, m, v = _validate(pp, m, v)
    _check_actions(p, m, v, orders)
    end: dict[_Key, int] = {}
    result: list[list[ChunkOp]] = [[] for _ in range(p)]
    free_at, cursor = [0] * p, [0] * p
    while any(cursor[s] < len(orders[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            while cursor[s] < len(orders[s]):
                phase, chunk, mb = orders[s][cursor[s]]
                dep = _dependency(p, v, s, phase, mb, chunk)
                if dep is not None and dep not in end:
                    break
                start = max(free_at[s], end[dep] if dep is not None else 0)
                result[s].append((start, phase, mb, chunk))
                end[(phase, chunk * p + s, mb)] = free_at[s] = start + 1
                cursor[s] += 1
                progressed = True
        if not progressed:
            raise _stuck(p, v, orders, cursor)
    return result


def _stuck(pp: int, v: int, orders: list[list[tuple[Phase, int, int]]],
           cursor: list[int]) -> ScheduleError:
    """The error for the action at the root of a deadlock.

    From the first stuck stage, follow what each stage's next action waits for: the stage
    whose next action waits on itself (a later action in its own list) or closes a cycle
    holds the offending action; the stages before it in the chain only wait.
    """
    s = next(i for i in range(pp) if cursor[i] < len(orders[i]))
    visited: set[int] = set()
    while True:
        visited.add(s)
        phase, chunk, mb = orders[s][cursor[s]]
        dep = _dependency(pp, v, s, phase, mb, chunk)
        assert dep is not None
        owner = dep[1] % pp
        if owner == s or owner in visited or cursor[owner] >= len(orders[owner]):
            break
        s = owner
    dep_phase, k, dep_mb = dep
    what = f"{phase} of microbatch {mb}" + (f" (chunk {chunk})" if v > 1 else "")
    needs = f"{dep_phase} of microbatch {dep_mb} on stage {k % pp}" + (
        f" (chunk {k // pp})" if v > 1 else "")
    return ScheduleError(f"stage {s}, action {cursor[s]}: {what} needs {needs} first, which "
                         "cannot run before it: the schedule deadlocks here", s, cursor[s])


def _simulate(pp: int, orders: list[list[tuple[Phase, int]]]) -> list[list[Op]]:
    """Start each operation as early as its stage and its dependency allow (1 slot each)."""
    m = sum(1 for phase, _ in orders[0] if phase == "F")
    ran = execute(pp, m, [[(phase, 0, mb) for phase, mb in order] for order in orders])
    return [[(start, phase, mb) for start, phase, mb, _ in ops] for ops in ran]


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
