"""Lab: write a 1F1B (and an interleaved 1F1B) pipeline schedule as per-stage action lists.

The learner's function returns, for each of the p stages, the order in which it runs its
actions: ("F", microbatch) / ("B", microbatch) when v = 1, or ("F", chunk, microbatch) with
v model chunks per stage. The lab reads them into
:class:`~solutions.pipeline_schedules.PipelineOp` records and
:func:`solutions.pipeline_execute.execute` runs them (every action one slot, each as early as
its stage and its dependency allow), rejecting the first action that is malformed, missing,
repeated, or can never start (a dependency violation).

Graded by rules, against Narayanan et al., SC21, §2.2, never against a stored schedule: the
makespan must be the minimum for unit actions, 2 m v + 2 (p - 1) slots (bubble (p-1)/(m v)
of the compute), and no stage may hold more microbatches (chunk activations) in flight than
1F1B's: min(p - s, m) on stage s for v = 1
(:func:`solutions.pipeline.in_flight_microbatches`), and for v > 1 the interleaved
schedule's warm-up plus the one in flight, min(2 (p - s - 1) + (v - 1) p + 1, m v) chunk
activations (Megatron-LM's interleaved 1F1B runs that many forwards before its first
backward; equal to the peak of :func:`solutions.pipeline_schedules.interleaved_order` on
every case drawn). GPipe meets the makespan but not the memory bound.

The graded cases come from a space no table of answers can cover at less than the size of
the code it replaces (:func:`draw_space`: 1F1B on 2..16 stages with any m from 2 to 64, so
mostly m not a multiple of p; interleaved on 2..8 stages with v from 2 to 4 and m a multiple
of p up to 8p, as Megatron-LM requires): 1,113 shapes whose answers, written out, are several
megabytes.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from solutions.pipeline import bubble_over_compute, in_flight_microbatches
from solutions.pipeline_execute import ScheduleError, execute, not_an_action
from solutions.pipeline_schedules import PipelineOp, interleaved_order, one_f_one_b_order
from solutions.pipeline_simulator import Span, makespan, peak_activations
from solutions.sim.lab import Case, LabSpec, Report, failure_text, grid
from solutions.sim.process import RunFailure


def written(op: PipelineOp, v: int) -> tuple[Any, ...]:
    """``op`` as a learner writes it: (phase, microbatch) when v = 1, else (phase, chunk,
    microbatch)."""
    return (op.phase, op.microbatch) if v == 1 else (op.phase, op.chunk, op.microbatch)


def pipeline_schedule(pp: int, m: int, v: int) -> list[list[tuple[Any, ...]]]:
    """Reference, in the learner's form: 1F1B for v = 1, Megatron-LM's interleaved order
    for v > 1."""
    if v == 1:
        return [[written(op, 1) for op in one_f_one_b_order(pp, m, s)] for s in range(pp)]
    return [[written(op, v) for op in interleaved_order(pp, m, v, s)] for s in range(pp)]


def cases(params: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    shapes = params.get("cases", ((4, 8, 1), (3, 3, 1), (4, 2, 1), (2, 5, 1),
                                  (2, 4, 2), (4, 8, 2), (3, 6, 3)))
    return tuple(dict(pp=p, m=m, v=v) for p, m, v in shapes)


MAX_PP_1F1B, MAX_M_1F1B = 16, 64
MAX_PP_INTERLEAVED, MAX_V, MAX_GROUPS = 8, 4, 8


def draw(rng: random.Random) -> dict[str, Any]:
    """A fresh graded case from :func:`draw_space`: 1F1B with m below, at or above p (any
    m from 2, mostly not a multiple of p; with one microbatch every order is 1F1B), or
    interleaved with m a multiple of p (as Megatron-LM requires)."""
    if rng.random() < 0.6:
        return dict(pp=rng.randint(2, MAX_PP_1F1B), m=rng.randint(2, MAX_M_1F1B), v=1)
    pp = rng.randint(2, MAX_PP_INTERLEAVED)
    return dict(pp=pp, m=pp * rng.randint(1, MAX_GROUPS), v=rng.randint(2, MAX_V))


def draw_space() -> list[tuple[int, int, int]]:
    """Every (p, m, v) :func:`draw` can give."""
    return [(pp, m, 1) for pp in range(2, MAX_PP_1F1B + 1) for m in range(2, MAX_M_1F1B + 1)] \
        + [(pp, pp * k, v) for pp in range(2, MAX_PP_INTERLEAVED + 1)
           for v in range(2, MAX_V + 1) for k in range(1, MAX_GROUPS + 1)]


def describe(case: Case) -> str:
    v = int(case["v"])
    return f"p={case['pp']}, m={case['m']}" + (f", v={v} (interleaved)" if v > 1 else " (1F1B)")


def _actions(tree: Any, m: int, v: int) -> list[list[PipelineOp]]:
    """The learner's lists read as operations; ScheduleError naming the first entry that is
    not (phase, microbatch), or (phase, chunk, microbatch) with chunks."""
    orders = tree.get("value") if isinstance(tree, dict) else None
    if not isinstance(orders, list):
        raise ScheduleError(f"return a list with one list of actions per stage, not "
                               f"{orders!r}"[:200])
    out: list[list[PipelineOp]] = []
    for s, stage in enumerate(orders):
        if not isinstance(stage, list):
            raise ScheduleError(f"stage {s}: expected a list of actions, got {stage!r}", s)
        out.append([_action(a, s, i, m, v) for i, a in enumerate(stage)])
    return out


def _action(a: Any, stage: int, position: int, m: int, v: int) -> PipelineOp:
    """One entry of a learner's list as an operation."""
    ok = isinstance(a, list) and len(a) in (2, 3) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in a[1:])
    if not ok or (len(a) == 2 and v > 1):
        form = "(phase, microbatch)" if v == 1 else "(phase, chunk, microbatch)"
        raise ScheduleError(f"stage {stage}, action {position}: {a!r} is not {form}",
                               stage, position)
    phase, chunk, mb = (a[0], 0, a[1]) if len(a) == 2 else (a[0], a[1], a[2])
    try:
        return PipelineOp(phase, mb, chunk)
    except ValueError:
        raise not_an_action(stage, position, (phase, chunk, mb), m, v) from None


def peak_bound(pp: int, m: int, v: int) -> list[int]:
    """Most microbatches (v = 1) or chunk activations (v > 1) stage s may hold at once: 1F1B's
    min(p - s, m); interleaved 1F1B's warm-up forwards plus the one in flight."""
    if v == 1:
        return [in_flight_microbatches(pp, m, "1f1b", s) for s in range(pp)]
    return [min(2 * (pp - s - 1) + (v - 1) * pp + 1, m * v) for s in range(pp)]


def _held(ops: list[Span], v: int) -> int:
    """Most chunk activations a stage holds at once (microbatches when v = 1): the
    simulator's peak, in whole-stage microbatches, times v."""
    return round(peak_activations(ops) * v)


def verify(case: Case, tree: Any) -> Report:
    text = describe(case)
    if isinstance(tree, RunFailure):
        return Report(text, failure_text(tree, "function"))
    pp, m, v = int(case["pp"]), int(case["m"]), int(case["v"])
    try:
        ran = execute(pp, m, _actions(tree, m, v), v)
    except ScheduleError as error:
        return Report(text, f"The schedule was rejected: {error}.")
    picture = gantt(ran, v)
    span = round(makespan(ran))
    best = 2 * m * v + 2 * (pp - 1)
    bubble = (span - 2 * m * v) / (2 * m * v)
    if span != best:
        return Report(text, f"makespan {span} slots, bubble {bubble:.1%} of compute; expected "
                      f"the minimum 2mv + 2(p-1) = {best} slots, bubble (p-1)/(mv) = "
                      f"{bubble_over_compute(pp, m, v):.1%}: some stage waits longer than "
                      "it must", picture=picture)
    for s, (ops, bound) in enumerate(zip(ran, peak_bound(pp, m, v), strict=True)):
        if (peak := _held(ops, v)) > bound:
            reference = "1F1B" if v == 1 else f"interleaved 1F1B (v={v})"
            unit = "microbatches'" if v == 1 else "chunk"
            return Report(text, f"stage {s} holds {peak} {unit} activations at once; "
                          f"{reference} holds at most {bound} there: start a backward as soon "
                          "as one is ready instead of running more forwards", picture=picture)
    bound_name = "1F1B's" if v == 1 else "interleaved 1F1B's"
    return Report(text, checks=(f"makespan {span} slots (the minimum)",
                                f"bubble {bubble:.1%} of compute = (p-1)/(mv)",
                                f"activations in flight within {bound_name} bound on every "
                                "stage"),
                  picture=picture)


def gantt(ran: list[list[Span]], v: int) -> str:
    """One row per stage, one column per slot: F3 (forward of microbatch 3), B3, or '.' idle;
    with chunks, a letter follows the microbatch (F3a = chunk 0)."""
    span = round(makespan(ran))
    if span > 80:
        return ""
    rows = []
    for s, ops in enumerate(ran):
        cells = ["."] * span
        for placed in ops:
            op = placed.op
            cells[round(placed.start)] = f"{op.phase}{op.microbatch}" + (
                "abcdefgh"[op.chunk] if v > 1 else "")
        rows.append([f"stage {s}"] + cells)
    return grid(["slot"] + [str(t) for t in range(span)], rows)


SPEC = LabSpec(name="pipeline_schedule", cases=cases, draw=draw, data=lambda case: [],
               verify=verify, describe=describe, evidence="running its schedule",
               call_args=lambda case: (int(case["pp"]), int(case["m"]), int(case["v"])),
               regimes=(("1F1B with m > p", lambda c: c["v"] == 1 and c["m"] > c["pp"]),
                        ("1F1B with m < p", lambda c: c["v"] == 1 and c["m"] < c["pp"]),
                        ("1F1B with m not a multiple of p",
                         lambda c: c["v"] == 1 and c["m"] % c["pp"] != 0),
                        ("interleaved", lambda c: c["v"] > 1)))
