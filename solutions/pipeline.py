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
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from solutions._checks import non_negative, positive, positive_int
from solutions.pipeline_schedules import (
    Phase,
    PipelineOp,
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
#: the schedules :func:`schedule_spans` plays
SCHEDULE_NAMES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved", "zb-h1", "1f1b-lazy-w")
#: the orders and formulas of :mod:`solutions.pipeline_schedules`, part of this module's API
__all__ = [
    "SCHEDULE_NAMES", "Deadlock", "Phase", "PipelineOp", "Schedule", "ScheduleError", "Span",
    "activation_memory_gb", "bubble_over_compute", "bubble_over_total",
    "dualpipe_bubble", "execute", "idle_slots", "idle_spans", "in_flight_microbatches",
    "interleaved_activation_factor", "interleaved_microbatch_error", "interleaved_order",
    "makespan", "microbatch_group", "min_microbatches",
    "p2p_total_gb_per_step", "peak_activations", "peak_in_flight", "schedule_1f1b",
    "schedule_gpipe", "schedule_spans", "simulate", "v_shape_bubble_rate",
    "v_shape_peak_microbatches", "zb_h1_bubble_slots", "zb_h1_order",
]


@dataclass(frozen=True)
class Span:
    """One operation placed in time on its GPU: ``op`` starts at ``start`` and lasts
    ``duration``, both in slots."""

    start: float
    duration: float
    op: PipelineOp

    @property
    def end(self) -> float:
        """When the operation finishes, in slots."""
        return self.start + self.duration


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

def _gpipe_order(pp: int, m: int, stage: int) -> list[PipelineOp]:
    """All forwards, then all backwards (GPipe, Huang et al. 2019, Fig. 2c)."""
    return [PipelineOp("F", j) for j in range(m)] + [PipelineOp("B", j) for j in range(m)]


def _one_f_one_b_order(pp: int, m: int, stage: int) -> list[PipelineOp]:
    """Warmup forwards, then alternate one forward / one backward, then drain backwards.

    Stage i warms up with min(p - i - 1, m) forwards (Narayanan et al. 2021, Fig. 4 top;
    Megatron-LM's ``forward_backward_pipelining_without_interleaving``).
    """
    warmup = min(pp - stage - 1, m)
    order = [PipelineOp("F", j) for j in range(warmup)]
    for k in range(m - warmup):
        order += [PipelineOp("F", warmup + k), PipelineOp("B", k)]
    return order + [PipelineOp("B", j) for j in range(m - warmup, m)]


class Deadlock(RuntimeError):
    """No operation can run again; ``cursor[s]`` is the index of GPU s's next operation."""

    def __init__(self, cursor: list[int]) -> None:
        super().__init__("pipeline schedule deadlocked")
        self.cursor = list(cursor)


def simulate(pp: int, v: int, orders: Sequence[Sequence[PipelineOp]], t_f: float = 1,
             t_b: float = 1, t_w: float = 0, split_w: bool = False) -> list[list[Span]]:
    """Play per-GPU orders; per GPU, its spans in start order. Times in slots.

    Chunk c of GPU s is virtual stage c p + s, and an operation on a chunk lasts 1/v of
    the stage's time. A forward needs the previous virtual stage's forward of the same
    microbatch; a backward needs the next one's backward (the last needs its own
    forward); a W needs its own B. With ``split_w`` the backward is split (Qi et al. 2024,
    §2): B lasts ``t_b`` and a W of ``t_w`` follows it. A GPU whose order lists its W
    passes runs them where the order puts them; a GPU whose order lists none runs each
    owed W whenever it would otherwise wait (the lazy policy of the "1f1b-lazy-w"
    schedule). Without ``split_w`` the backward lasts t_b + t_w. Raises :class:`Deadlock`
    (a RuntimeError that knows where each GPU stopped) when no operation can ever run again.
    """
    scale = Fraction(1, v)
    length = {"F": Fraction(str(t_f)) * scale, "W": Fraction(str(t_w)) * scale,
              "B": Fraction(str(t_b + (0 if split_w else t_w))) * scale}
    lazy = [split_w and all(op.phase != "W" for op in order) for order in orders]
    end: dict[tuple[int, PipelineOp], Fraction] = {}
    spans: list[list[Span]] = [[] for _ in range(pp)]
    free, cursor = [Fraction(0)] * pp, [0] * pp
    owed: list[list[PipelineOp]] = [[] for _ in range(pp)]
    now = Fraction(0)
    while any(cursor[s] < len(orders[s]) or owed[s] for s in range(pp)):
        for s in range(pp):
            if free[s] > now:
                continue
            op = orders[s][cursor[s]] if cursor[s] < len(orders[s]) else None
            dep = _dependency(pp, v, s, op) if op is not None else None
            if op is not None and (dep is None or end.get(dep, now + 1) <= now):
                cursor[s] += 1
                if op.phase == "B" and lazy[s]:
                    owed[s].append(PipelineOp("W", op.microbatch, op.chunk))
            elif owed[s]:
                op = owed[s].pop(0)
            else:
                continue
            spans[s].append(Span(float(now), float(length[op.phase]), op))
            end[(s, op)] = free[s] = now + length[op.phase]
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


def makespan(spans: Sequence[Sequence[Span]]) -> float:
    """The end of the last operation, in slots."""
    return max(span.end for ops in spans for span in ops)


def idle_spans(ops: Sequence[Span], span: float) -> list[tuple[float, float]]:
    """The gaps of one GPU between time 0 and ``span``: (start, length) each: its bubble."""
    gaps, t = [], 0.0
    for placed in sorted(ops, key=lambda o: o.start):
        if placed.start > t + 1e-9:
            gaps.append((t, placed.start - t))
        t = max(t, placed.end)
    if span > t + 1e-9:
        gaps.append((t, span - t))
    return gaps


def peak_activations(ops: Sequence[Span], w_share: float = 1.0) -> float:
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
    v = max((placed.op.chunk for placed in ops), default=0) + 1
    has_w = {(p.op.microbatch, p.op.chunk) for p in ops if p.op.phase == "W"}
    events: list[tuple[float, float]] = []  # (time, change); frees sort first on ties
    for placed in ops:
        op, end = placed.op, round(placed.end, 9)  # a B ending as an F starts is a tie
        if op.phase == "F":
            events.append((round(placed.start, 9), 1 / v))
        elif op.phase == "B":
            kept = w_share if (op.microbatch, op.chunk) in has_w else 0.0
            events.append((end, (kept - 1) / v))
        else:
            events.append((end, -w_share / v))
    held = peak = 0.0
    for _, change in sorted(events):
        held += change
        peak = max(peak, held)
    return peak


# -- whole-stage schedules in unit slots (GPipe, 1F1B) -----------------------------------

def schedule_gpipe(pp: int, m: int) -> list[list[Span]]:
    """GPipe schedule: per stage, its operations in order, one slot each.

    The iteration lasts 2(m + p - 1) slots, of which each stage is busy 2m and idle
    2(p - 1).
    """
    return schedule_spans("gpipe", pp, m)


def schedule_1f1b(pp: int, m: int) -> list[list[Span]]:
    """1F1B (PipeDream-Flush) schedule: per stage, its operations in order, one slot each.

    Same length and idle time as GPipe, but stage i never holds more than p - i
    microbatches' activations.
    """
    return schedule_spans("1f1b", pp, m)


def idle_slots(spans: Sequence[Sequence[Span]]) -> list[float]:
    """Idle time per stage between time 0 and the end of the whole schedule, in slots."""
    whole = makespan(spans)
    return [whole - sum(placed.duration for placed in ops) for ops in spans]


def peak_in_flight(ops: Sequence[Span]) -> int:
    """Most operations' activations one stage holds at once (a forward started, its
    backward not yet): microbatches without interleaving, chunk activations with it."""
    held = peak = 0
    for placed in sorted(ops, key=lambda o: o.start):
        held += {"F": 1, "B": -1}.get(placed.op.phase, 0)
        peak = max(peak, held)
    return peak


# -- learner-written schedules (the chapter 5 lab) --------------------------------------

class ScheduleError(ValueError):
    """A schedule that cannot run; ``stage`` and ``position`` locate the offending action."""

    def __init__(self, message: str, stage: int = -1, position: int = -1) -> None:
        super().__init__(message)
        self.stage, self.position = stage, position


def not_an_action(stage: int, position: int, written: tuple[object, ...], m: int,
                  v: int) -> ScheduleError:
    """The error for an entry of a learner's list that is no operation of this pipeline;
    ``written`` is what they wrote, as (phase, chunk, microbatch)."""
    return ScheduleError(f"stage {stage}, action {position}: {written!r} is not an action "
                         f"(phase F or B, chunk 0..{v - 1}, microbatch 0..{m - 1})",
                         stage, position)


def _dependency(pp: int, v: int, stage: int,
                op: PipelineOp) -> tuple[int, PipelineOp] | None:
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


def _check_actions(pp: int, m: int, v: int, orders: Sequence[Sequence[PipelineOp]]) -> None:
    """Every stage runs F and B of every (chunk, microbatch) exactly once, nothing else."""
    if len(orders) != pp:
        raise ScheduleError(f"expected one action list per stage ({pp}), got {len(orders)}")
    for s, order in enumerate(orders):
        seen: set[PipelineOp] = set()
        for i, op in enumerate(order):
            if op.phase not in ("F", "B") or op.microbatch >= m or op.chunk >= v:
                raise not_an_action(s, i, (op.phase, op.chunk, op.microbatch), m, v)
            if op in seen:
                raise ScheduleError(f"stage {s}, action {i}: {op.phase} of microbatch "
                                    f"{op.microbatch} (chunk {op.chunk}) runs twice", s, i)
            seen.add(op)
        if len(seen) != 2 * m * v:
            raise ScheduleError(f"stage {s} runs {len(seen)} of its {2 * m * v} actions "
                                f"(a forward and a backward of each of the {m} microbatches"
                                + (f" in each of its {v} chunks)" if v > 1 else ")"), s,
                                len(order))


def execute(pp: int, m: int, orders: Sequence[Sequence[PipelineOp]],
            v: int = 1) -> list[list[Span]]:
    """Run per-stage action lists, each action taking 1 slot.

    Each action starts as soon as its stage is free and its dependency has finished
    (communication is free). Raises :class:`ScheduleError` naming the first offending
    action: a malformed or missing one, or one that waits for an action that can never run
    before it (a dependency violation that would deadlock the pipeline).
    """
    p, m, v = _validate(pp, m, v)
    _check_actions(p, m, v, orders)
    try:  # a chunk action lasts t/v, so t_f = t_b = v makes each one slot long
        return simulate(p, v, orders, t_f=v, t_b=v)
    except Deadlock as stuck:
        raise _stuck(p, v, orders, stuck.cursor) from None


def _name(op: PipelineOp, v: int, stage: int | None = None) -> str:
    """How a learner's message names ``op``: its phase and microbatch, then its stage when
    given and its chunk when there are several."""
    where = "" if stage is None else f" on stage {stage}"
    return f"{op.phase} of microbatch {op.microbatch}{where}" + (
        f" (chunk {op.chunk})" if v > 1 else "")


def _ordered_before_own_input(pp: int, v: int, orders: Sequence[Sequence[PipelineOp]],
                              cursor: list[int]) -> ScheduleError | None:
    """A stuck stage whose next action needs, through the chain of dependencies, an action
    that its own list puts later: that ordering is the root of the deadlock, whatever the
    other stages wait for."""
    where = [{op: i for i, op in enumerate(order)} for order in orders]
    for s in range(pp):
        if cursor[s] >= len(orders[s]):
            continue
        op = orders[s][cursor[s]]
        dep = _dependency(pp, v, s, op)
        hops = 0
        while dep is not None:
            owner, needed = dep
            position = where[owner].get(needed, -1)
            if position < cursor[owner]:
                break  # already ran: this chain is not stuck
            if owner == s:
                return ScheduleError(
                    f"stage {s}, action {cursor[s]}: {_name(op, v)} needs {_name(needed, v)} "
                    f"on this same stage to run first"
                    f"{' (through the stages between)' if hops else ''}, but your list puts "
                    f"it later (action {position}): the schedule deadlocks here", s, cursor[s])
            dep = _dependency(pp, v, owner, needed)
            hops += 1
    return None


def _stuck(pp: int, v: int, orders: Sequence[Sequence[PipelineOp]],
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
        op = orders[s][cursor[s]]
        dep = _dependency(pp, v, s, op)
        assert dep is not None
        owner, needed = dep
        if owner == s or owner in visited or cursor[owner] >= len(orders[owner]):
            break
        s = owner
    return ScheduleError(f"stage {s}, action {cursor[s]}: {_name(op, v)} needs "
                         f"{_name(needed, v, owner)} first, which cannot run before it: the "
                         "schedule deadlocks here", s, cursor[s])
