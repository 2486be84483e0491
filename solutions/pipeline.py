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

Beyond 1F1B: zero-bubble schedules (Qi et al., "Zero Bubble (Almost) Pipeline
Parallelism", ICLR 2024) split the backward into B, the gradient with respect to the
input (on the critical path), and W, the gradient with respect to the weights (free to
move), and use W to fill the bubble. DualPipe (DeepSeek-V3 technical report,
arXiv:2412.19437, §3.2.1, Table 2) feeds microbatches from both ends of the pipeline.

One simulator, :func:`simulate`, plays every schedule: each GPU runs its operations in a
fixed order, each as soon as its GPU is free and its input has arrived (communication is
free); W operations, when split off, run where the order puts them (ZB-H1) or fill the
gaps (the lazy policy). Time is in *slots*: by default a
forward and a whole backward take one slot each (t_f = t_b = 1, t_w = 0). The bubble
fractions do not depend on that choice, since the bubble (p-1)(t_f + t_b) and the compute
m(t_f + t_b) scale together.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from solutions._checks import non_negative, positive, positive_int
from solutions.pipeline_schedules import (
    Step,
    dualpipe_bubble,
    interleaved_activation_factor,
    interleaved_microbatch_error,
    interleaved_order,
    microbatch_group,
    v_shape_bubble_rate,
    v_shape_peak_microbatches,
    zb_h1_bubble_slots,
    zb_h1_order,
)

Schedule = Literal["gpipe", "1f1b", "zb-h1"]
Phase = Literal["F", "B"]
#: one operation on one stage: (start slot, "F" or "B", microbatch index)
Op = tuple[int, Phase, int]
#: one simulated operation: (start, duration, "F"/"B"/"W", microbatch, chunk), in slots
Span = tuple[float, float, str, int, int]
#: the schedules :func:`schedule_spans` plays
SCHEDULE_NAMES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved", "zb-h1", "1f1b-lazy-w")
#: the orders and formulas of :mod:`solutions.pipeline_schedules`, part of this module's API
__all__ = [
    "SCHEDULE_NAMES", "ChunkOp", "Deadlock", "Op", "Phase", "Schedule", "ScheduleError", "Span",
    "Step", "activation_memory_gb", "bubble_over_compute", "bubble_over_total",
    "dualpipe_bubble", "execute", "idle_slots", "idle_spans", "in_flight_microbatches",
    "interleaved_activation_factor", "interleaved_microbatch_error", "interleaved_order",
    "makespan", "makespan_slots", "microbatch_group", "min_microbatches",
    "p2p_total_gb_per_step", "peak_activations", "peak_in_flight", "schedule_1f1b",
    "schedule_gpipe", "schedule_spans", "simulate", "v_shape_bubble_rate",
    "v_shape_peak_microbatches", "zb_h1_bubble_slots", "zb_h1_order",
]


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
    of ``multiple_of`` (older Megatron-LM releases needed m divisible by p when
    interleaving; current Megatron-Core needs only m >= p, see
    :func:`interleaved_microbatch_error`). The
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
    * ZB-H1: stage i holds p - i between F and B and up to i more whose W waits
      (:func:`zb_h1_order`), so min(p, m) on every stage, counting a W's stash as a
      forward's (Qi et al., ICLR 2024, §2.1).
    """
    p, m, _ = _validate(pp, m, 1)
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
    p, m, v = _validate(pp, m, v)
    non_negative("activation_gb", activation_gb)
    if p == 1:
        return 0.0
    return 2 * (p * v - 1) * m * activation_gb


# -- the simulator ---------------------------------------------------------------------

def _gpipe_order(pp: int, m: int, stage: int) -> list[Step]:
    """All forwards, then all backwards (GPipe, Huang et al. 2019, Fig. 2c)."""
    return [("F", 0, j) for j in range(m)] + [("B", 0, j) for j in range(m)]


def _one_f_one_b_order(pp: int, m: int, stage: int) -> list[Step]:
    """Warmup forwards, then alternate one forward / one backward, then drain backwards.

    Stage i warms up with min(p - i - 1, m) forwards (Narayanan et al. 2021, Fig. 4 top;
    Megatron-LM's ``forward_backward_pipelining_without_interleaving``).
    """
    warmup = min(pp - stage - 1, m)
    order: list[Step] = [("F", 0, j) for j in range(warmup)]
    for k in range(m - warmup):
        order += [("F", 0, warmup + k), ("B", 0, k)]
    return order + [("B", 0, j) for j in range(m - warmup, m)]


class Deadlock(RuntimeError):
    """No operation can run again; ``cursor[s]`` is the index of GPU s's next operation."""

    def __init__(self, cursor: list[int]) -> None:
        super().__init__("pipeline schedule deadlocked")
        self.cursor = list(cursor)


def simulate(pp: int, v: int, orders: list[list[Step]], t_f: float = 1, t_b: float = 1,
             t_w: float = 0, split_w: bool = False) -> list[list[Span]]:
    """Play per-GPU orders; per GPU, its spans in start order. Times in slots.

    Chunk c of GPU s is virtual stage c p + s, and an operation on a chunk lasts 1/v of
    the stage's time. A forward needs the previous virtual stage's forward of the same
    microbatch; a backward needs the next one's backward (the last needs its own
    forward); a W needs its own B. With ``split_w`` the backward is split (Qi et al. 2024,
    §2): B lasts ``t_b`` and a W of ``t_w`` follows it. A GPU whose order lists its W
    passes runs them where the order puts them; a GPU whose order lists none runs each
    owed W whenever it would otherwise wait (the lazy policy of
    :func:`deferred_w_order`'s schedule). Without ``split_w`` the backward lasts
    t_b + t_w. Raises :class:`Deadlock` (a RuntimeError that knows where each GPU
    stopped) when no operation can ever run again.
    """
    scale = Fraction(1, v)
    length = {"F": Fraction(str(t_f)) * scale, "W": Fraction(str(t_w)) * scale,
              "B": Fraction(str(t_b + (0 if split_w else t_w))) * scale}
    lazy = [split_w and all(phase != "W" for phase, _, _ in order) for order in orders]
    end: dict[tuple[str, int, int], Fraction] = {}
    spans: list[list[Span]] = [[] for _ in range(pp)]
    free, cursor = [Fraction(0)] * pp, [0] * pp
    owed: list[list[tuple[int, int]]] = [[] for _ in range(pp)]
    now = Fraction(0)
    while any(cursor[s] < len(orders[s]) or owed[s] for s in range(pp)):
        for s in range(pp):
            if free[s] > now:
                continue
            phase, c, mb = orders[s][cursor[s]] if cursor[s] < len(orders[s]) else ("", 0, 0)
            virtual = c * pp + s
            dep = _dependency(pp, v, s, phase, mb, c) if phase else None
            if phase and (dep is None or end.get(dep, now + 1) <= now):
                cursor[s] += 1
                if phase == "B" and lazy[s]:
                    owed[s].append((c, mb))
            elif owed[s]:
                phase, (c, mb) = "W", owed[s].pop(0)
                virtual = c * pp + s
            else:
                continue
            spans[s].append((float(now), float(length[phase]), phase, mb, c))
            end[(phase, virtual, mb)] = free[s] = now + length[phase]
        later = [t for t in (*free, *end.values()) if t > now]
        if not later:
            if any(cursor[s] < len(orders[s]) or owed[s] for s in range(pp)):
                raise Deadlock(cursor)
            break
        now = min(later)
    return spans


def schedule_spans(schedule: str, pp: int, m: int, v: int = 1, t_f: float = 1,
                   t_b: float = 1, t_w: float = 0) -> list[list[Span]]:
    """The spans of ``schedule`` (one of :data:`SCHEDULE_NAMES`) for p stages, m microbatches.

    ``v`` counts only for "interleaved", which needs m >= p (current Megatron-Core; see
    :func:`interleaved_microbatch_error`). "zb-h1" is :func:`zb_h1_order` with W split
    off; "1f1b-lazy-w" is 1F1B with every W postponed until its GPU would otherwise wait.
    That second one has ZB-H1's bubble, but on the last stage every W waits for the drain,
    so the W stashes of all m microbatches are held at once: memory that grows with m, as
    in GPipe. It is shown as the schedule ZB-H1 is not.
    """
    p, m, v = _validate(pp, m, v)
    for name, value in (("t_f", t_f), ("t_b", t_b), ("t_w", t_w)):
        non_negative(name, value)
    if schedule == "interleaved":
        problem = interleaved_microbatch_error(p, m, microbatch_group(p, m))
        if problem:
            raise ValueError(problem)
        return simulate(p, v, [interleaved_order(p, m, v, s) for s in range(p)], t_f, t_b, t_w)
    orders = {"gpipe": _gpipe_order, "1f1b": _one_f_one_b_order, "zb-h1": zb_h1_order,
              "1f1b-lazy-w": _one_f_one_b_order}
    if schedule not in orders:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULE_NAMES)}, "
                         f"got {schedule!r}")
    return simulate(p, 1, [orders[schedule](p, m, s) for s in range(p)], t_f, t_b, t_w,
                    split_w=schedule in ("zb-h1", "1f1b-lazy-w"))


def makespan(spans: list[list[Span]]) -> float:
    """The end of the last operation, in slots."""
    return max(start + length for ops in spans for start, length, *_ in ops)


def idle_spans(ops: list[Span], span: float) -> list[tuple[float, float]]:
    """The gaps of one GPU between time 0 and ``span``: (start, length) each: its bubble."""
    gaps, t = [], 0.0
    for start, length, *_ in sorted(ops):
        if start > t + 1e-9:
            gaps.append((t, start - t))
        t = max(t, start + length)
    if span > t + 1e-9:
        gaps.append((t, span - t))
    return gaps


def peak_activations(ops: list[Span], w_share: float = 1.0) -> float:
    """Most microbatches' worth of a stage's activations one GPU holds at once, in units of
    one microbatch's stash on a whole stage (M_B).

    Qi et al.'s accounting (ICLR 2024, §3.1): a forward adds M_B; B frees M_B - M_W; W
    frees M_W. A chunk is 1/v of a stage, so it counts 1/v. A W needs each linear layer's
    input and output gradient (dW = X^T dY), so M_W is of the same order as M_B (Qi et
    al., Table 1, only say it is smaller); ``w_share`` is M_W / M_B, and the default 1
    counts the microbatches in flight (forward run, weight gradient not yet). Without
    split-off W passes a microbatch is freed when its B ends.
    """
    non_negative("w_share", w_share)
    v = max((chunk for *_, chunk in ops), default=0) + 1
    has_w = {(mb, chunk) for _, _, phase, mb, chunk in ops if phase == "W"}
    events: list[tuple[float, float]] = []  # (time, change); frees sort first on ties
    for start, length, phase, mb, chunk in ops:
        end = round(start + length, 9)  # float slots: a B ending as an F starts is a tie
        if phase == "F":
            events.append((round(start, 9), 1 / v))
        elif phase == "B":
            kept = w_share if (mb, chunk) in has_w else 0.0
            events.append((end, (kept - 1) / v))
        elif phase == "W":
            events.append((end, -w_share / v))
    held = peak = 0.0
    for _, change in sorted(events):
        held += change
        peak = max(peak, held)
    return peak


# -- whole-stage schedules as slot lists (GPipe, 1F1B) ----------------------------------

def _as_ops(spans: list[list[Span]]) -> list[list[Op]]:
    return [[(int(start), "F" if phase == "F" else "B", mb) for start, _, phase, mb, _ in ops]
            for ops in spans]


def schedule_gpipe(pp: int, m: int) -> list[list[Op]]:
    """GPipe schedule: for each stage, its (start slot, "F"/"B", microbatch) in order.

    Unit time per forward and per backward. The iteration lasts 2(m + p - 1) slots, of
    which each stage is busy 2m and idle 2(p - 1).
    """
    return _as_ops(schedule_spans("gpipe", pp, m))


def schedule_1f1b(pp: int, m: int) -> list[list[Op]]:
    """1F1B (PipeDream-Flush) schedule: per stage, (start slot, "F"/"B", microbatch).

    Unit time per forward and per backward. Same length and idle time as GPipe, but
    stage i never holds more than p - i microbatches' activations.
    """
    return _as_ops(schedule_spans("1f1b", pp, m))


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


# -- learner-written schedules (the chapter 5 lab) --------------------------------------

class ScheduleError(ValueError):
    """A schedule that cannot run; ``stage`` and ``position`` locate the offending action."""

    def __init__(self, message: str, stage: int = -1, position: int = -1) -> None:
        super().__init__(message)
        self.stage, self.position = stage, position


#: one operation in an executed schedule: (start slot, phase, microbatch, chunk)
ChunkOp = tuple[int, Phase, int, int]
_Key = tuple[str, int, int]  # (phase, virtual stage, microbatch)


def _dependency(pp: int, v: int, stage: int, phase: str, mb: int, chunk: int) -> _Key | None:
    """What must finish before (phase, mb) of ``chunk`` on ``stage`` starts.

    Chunk c of stage s is virtual stage k = c p + s (v = 1: k = s). A forward needs the
    previous virtual stage's forward of the same microbatch; a backward needs the next
    virtual stage's backward, and the last virtual stage's backward its own forward. A W
    (weight gradient) needs its own B.
    """
    k = chunk * pp + stage
    if phase == "W":
        return ("B", k, mb)
    if phase == "F":
        return ("F", k - 1, mb) if k > 0 else None
    return ("B", k + 1, mb) if k < pp * v - 1 else ("F", k, mb)


def _check_actions(pp: int, m: int, v: int, orders: Sequence[Sequence[Step]]) -> None:
    """Every stage runs F and B of every (chunk, microbatch) exactly once, nothing else."""
    if len(orders) != pp:
        raise ScheduleError(f"expected one action list per stage ({pp}), got {len(orders)}")
    for s, order in enumerate(orders):
        seen: set[Step] = set()
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


def execute(pp: int, m: int, orders: Sequence[Sequence[Step]],
            v: int = 1) -> list[list[ChunkOp]]:
    """Run per-stage action lists, each action (phase, chunk, microbatch) taking 1 slot.

    Each action starts as soon as its stage is free and its dependency has finished
    (communication is free). Raises :class:`ScheduleError` naming the first offending
    action: a malformed or missing one, or one that waits for an action that can never run
    before it (a dependency violation that would deadlock the pipeline).
    """
    p, m, v = _validate(pp, m, v)
    _check_actions(p, m, v, orders)
    try:  # a chunk action lasts t/v, so t_f = t_b = v makes each one slot long
        spans = simulate(p, v, [list(order) for order in orders], t_f=v, t_b=v)
    except Deadlock as stuck:
        raise _stuck(p, v, orders, stuck.cursor) from None
    return [[(int(start), phase, mb, chunk)  # type: ignore[misc]
             for start, _, phase, mb, chunk in ops] for ops in spans]


def _ordered_before_own_input(pp: int, v: int, orders: Sequence[Sequence[Step]],
                              cursor: list[int]) -> ScheduleError | None:
    """A stuck stage whose next action needs, through the chain of dependencies, an action
    that its own list puts later: that ordering is the root of the deadlock, whatever the
    other stages wait for."""
    where = [{tuple(a): i for i, a in enumerate(order)} for order in orders]
    for s in range(pp):
        if cursor[s] >= len(orders[s]):
            continue
        phase, chunk, mb = orders[s][cursor[s]]
        dep = _dependency(pp, v, s, phase, mb, chunk)
        hops = 0
        while dep is not None:
            owner, dep_chunk = dep[1] % pp, dep[1] // pp
            position = where[owner].get((dep[0], dep_chunk, dep[2]), -1)
            if position < cursor[owner]:
                break  # already ran: this chain is not stuck
            if owner == s:
                what = f"{phase} of microbatch {mb}" + (f" (chunk {chunk})" if v > 1 else "")
                need = f"{dep[0]} of microbatch {dep[2]}" + (
                    f" (chunk {dep_chunk})" if v > 1 else "")
                return ScheduleError(
                    f"stage {s}, action {cursor[s]}: {what} needs {need} on this same stage "
                    f"to run first{' (through the stages between)' if hops else ''}, but "
                    f"your list puts it later (action {position}): the schedule deadlocks "
                    "here", s, cursor[s])
            dep = _dependency(pp, v, owner, dep[0], dep[2], dep_chunk)
            hops += 1
    return None


def _stuck(pp: int, v: int, orders: Sequence[Sequence[Step]],
           cursor: list[int]) -> ScheduleError:
    """The error for the action at the root of a deadlock.

    From the first stuck stage, follow what each stage's next action waits for: the stage
    whose next action waits on itself (a later action in its own list) or closes a cycle
    holds the offending action; the stages before it in the chain only wait.
    """
    root = _ordered_before_own_input(pp, v, orders, cursor)
    if root is not None:
        return root
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
