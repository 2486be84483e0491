"""A pipeline schedule written by hand (the chapter 5 lab's): run it, or name the action
that breaks it.

:func:`execute` takes per-stage lists of :class:`solutions.pipeline_schedules.PipelineOp`,
checks that each stage runs the forward and backward of every (chunk, microbatch) once,
and plays them in :func:`solutions.pipeline_simulator.simulate` with every action one slot
long. A schedule that deadlocks is blamed on the action at the root of the deadlock (the
stage whose next action waits on itself, or closes a cycle), not on a stage that only waits.
"""

from __future__ import annotations

from collections.abc import Sequence

from solutions.pipeline import check_shape
from solutions.pipeline_schedules import PipelineOp, dependency
from solutions.pipeline_simulator import Deadlock, Span, simulate


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
    p, m, v = check_shape(pp, m, v)
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
        dep = dependency(pp, v, s, op)
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
            dep = dependency(pp, v, owner, needed)
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
        dep = dependency(pp, v, s, op)
        assert dep is not None
        owner, needed = dep
        if owner == s or owner in visited or cursor[owner] >= len(orders[owner]):
            break
        s = owner
    return ScheduleError(f"stage {s}, action {cursor[s]}: {_name(op, v)} needs "
                         f"{_name(needed, v, owner)} first, which cannot run before it: the "
                         "schedule deadlocks here", s, cursor[s])
