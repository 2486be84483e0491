"""The pipeline simulator: one list scheduler that plays every schedule's orders in time.

Each GPU runs its operations (:class:`solutions.pipeline_schedules.PipelineOp`) in a fixed
order, each as soon as its GPU is free and its input has arrived (communication is free);
W operations, when split off, run where the order puts them (ZB-H1) or fill the gaps (the
lazy policy). Time is in *slots*: by default a forward and a whole backward take one slot
each (t_f = t_b = 1, t_w = 0). The bubble fractions of :mod:`solutions.pipeline` do not
depend on that choice, since the bubble (p-1)(t_f + t_b) and the compute m(t_f + t_b) scale
together; the spans measure them, and the memory of each GPU (Qi et al., ICLR 2024, §3.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from solutions._checks import non_negative
from solutions.pipeline import check_shape
from solutions.pipeline_schedules import (
    PipelineOp,
    dependency,
    gpipe_order,
    interleaved_microbatch_error,
    interleaved_order,
    microbatch_group,
    one_f_one_b_order,
    zb_h1_order,
)

#: the schedules :func:`schedule_spans` plays
SCHEDULE_NAMES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved", "zb-h1", "1f1b-lazy-w")


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
    exact = {"F": Fraction(str(t_f)) * scale, "W": Fraction(str(t_w)) * scale,
             "B": Fraction(str(t_b + (0 if split_w else t_w))) * scale}
    # exact times as integers in units of 1/unit slot (a span's float is then the correctly
    # rounded quotient, as Fraction's own float would be)
    unit = math.lcm(*(x.denominator for x in exact.values()))
    length = {phase: int(x * unit) for phase, x in exact.items()}
    lazy = [split_w and all(op.phase != "W" for op in order) for order in orders]
    end: dict[tuple[int, PipelineOp], int] = {}
    spans: list[list[Span]] = [[] for _ in range(pp)]
    free, cursor = [0] * pp, [0] * pp
    owed: list[list[PipelineOp]] = [[] for _ in range(pp)]
    now = 0
    while any(cursor[s] < len(orders[s]) or owed[s] for s in range(pp)):
        for s in range(pp):
            if free[s] > now:
                continue
            op = orders[s][cursor[s]] if cursor[s] < len(orders[s]) else None
            dep = dependency(pp, v, s, op) if op is not None else None
            if op is not None and (dep is None or end.get(dep, now + 1) <= now):
                cursor[s] += 1
                if op.phase == "B" and lazy[s]:
                    owed[s].append(PipelineOp("W", op.microbatch, op.chunk))
            elif owed[s]:
                op = owed[s].pop(0)
            else:
                continue
            spans[s].append(Span(now / unit, length[op.phase] / unit, op))
            end[(s, op)] = free[s] = now + length[op.phase]
        # every operation but a GPU's latest ended by the time that one started, so the
        # ends still ahead are the GPUs' free times
        later = [t for t in free if t > now]
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
    :func:`~solutions.pipeline_schedules.interleaved_microbatch_error`). "zb-h1" is
    :func:`~solutions.pipeline_schedules.zb_h1_order` with W split off; "1f1b-lazy-w" is
    1F1B with every W postponed until its GPU would otherwise wait. That second one has
    ZB-H1's bubble, but on the last stage every W waits for the drain, so the W stashes
    of all m microbatches are held at once: memory that grows with m, as in GPipe. It is
    shown as the schedule ZB-H1 is not.
    """
    p, m, v = check_shape(pp, m, v)
    for name, value in (("t_f", t_f), ("t_b", t_b), ("t_w", t_w)):
        non_negative(name, value)
    if schedule == "interleaved":
        problem = interleaved_microbatch_error(p, m, microbatch_group(p, m))
        if problem:
            raise ValueError(problem)
        return simulate(p, v, [interleaved_order(p, m, v, s) for s in range(p)], t_f, t_b, t_w)
    orders = {"gpipe": gpipe_order, "1f1b": one_f_one_b_order, "zb-h1": zb_h1_order,
              "1f1b-lazy-w": one_f_one_b_order}
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
