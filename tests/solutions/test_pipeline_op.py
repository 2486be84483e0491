"""One record for one pipeline operation: every order, simulator, checker and the lab's
reading of a learner's lists carry the same ``PipelineOp``, and it comes out as it went in."""

from __future__ import annotations

import pytest

from solutions import pipeline_execute as executor
from solutions import pipeline_schedules as schedules
from solutions import pipeline_simulator as simulator
from solutions.pipeline_schedules import PipelineOp
from solutions.pipeline_simulator import Span
from solutions.sim import pipeline_lab as simpipeline


def _orders(schedule: str, pp: int, m: int, v: int) -> list[list[PipelineOp]]:
    """Each GPU's order, read back from the simulator (the op of each span, in start order)."""
    return [[s.op for s in ops] for ops in simulator.schedule_spans(schedule, pp, m, v)]


def test_the_record_is_frozen_typed_and_chunk_defaults_to_zero() -> None:
    op = PipelineOp("F", 3)
    assert (op.phase, op.microbatch, op.chunk) == ("F", 3, 0)
    assert op == PipelineOp("F", 3, 0) and hash(op) == hash(PipelineOp("F", 3, 0))
    with pytest.raises(AttributeError):
        op.microbatch = 4  # type: ignore[misc]


@pytest.mark.parametrize(("phase", "microbatch", "chunk", "word"), [
    ("X", 0, 0, "phase"), ("f", 0, 0, "phase"), ("F", -1, 0, "microbatch"),
    ("B", 0, -2, "chunk"), ("F", True, 0, "microbatch"), ("F", 1.0, 0, "microbatch"),
    ("W", 0, "0", "chunk")])
def test_malformed_operations_are_refused_with_what_was_expected(
        phase: object, microbatch: object, chunk: object, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        PipelineOp(phase, microbatch, chunk)  # type: ignore[arg-type]


@pytest.mark.parametrize(("pp", "m", "v"), [(2, 3, 1), (4, 8, 1), (4, 8, 2), (3, 6, 3)])
def test_an_order_goes_through_the_simulator_and_the_checker_unchanged(
        pp: int, m: int, v: int) -> None:
    orders = [schedules.interleaved_order(pp, m, v, s) for s in range(pp)]
    played = simulator.simulate(pp, v, orders)
    assert [[s.op for s in ops] for ops in played] == orders  # same records, same order
    ran = executor.execute(pp, m, orders, v)
    assert [[s.op for s in ops] for ops in ran] == orders
    assert all(isinstance(s, Span) and s.duration == 1 for ops in ran for s in ops)


@pytest.mark.parametrize(("pp", "m"), [(2, 1), (3, 3), (4, 8), (5, 2)])
def test_the_whole_stage_schedules_place_the_plain_orders(pp: int, m: int) -> None:
    # schedule_gpipe / schedule_1f1b (once (start, phase, microbatch) tuples) hold the same
    # records as the orders, each one slot long
    for placed, order in ((simulator.schedule_gpipe(pp, m), schedules.gpipe_order),
                          (simulator.schedule_1f1b(pp, m), schedules.one_f_one_b_order)):
        assert [[s.op for s in ops] for ops in placed] == [order(pp, m, s) for s in range(pp)]
        assert all(s.duration == 1 and s.start == int(s.start) for ops in placed for s in ops)


def test_zero_bubble_orders_name_their_weight_passes_with_the_same_record() -> None:
    order = schedules.zb_h1_order(3, 4, 2)
    assert {op.phase for op in order} == {"F", "B", "W"}
    spans = simulator.schedule_spans("zb-h1", 3, 4, 1, 1, 1, 1)
    assert [s.op for s in spans[2]] == order  # ZB-H1 runs its W where its order puts them
    lazy = simulator.schedule_spans("1f1b-lazy-w", 3, 4, 1, 1, 1, 1)
    owed = {s.op for ops in lazy for s in ops if s.op.phase == "W"}
    assert owed == {PipelineOp("W", mb) for mb in range(4)}  # the simulator's own W passes


@pytest.mark.parametrize(("pp", "m", "v"), [(4, 8, 1), (3, 3, 1), (2, 4, 2), (3, 6, 3)])
def test_a_learners_tuples_become_the_record_and_back(pp: int, m: int, v: int) -> None:
    # the lab's reference is written as a learner writes it: plain tuples, which cross the
    # sandbox as lists; read back they are the library's orders
    written = simpipeline.pipeline_schedule(pp, m, v)
    assert all(type(a) is tuple and len(a) == (2 if v == 1 else 3)
               for stage in written for a in stage)
    tree = {"value": [[list(a) for a in stage] for stage in written]}
    read = simpipeline._actions(tree, m, v)
    expected = (_orders("1f1b", pp, m, 1) if v == 1
                else [schedules.interleaved_order(pp, m, v, s) for s in range(pp)])
    assert read == expected
    assert [[simpipeline.written(op, v) for op in stage] for stage in read] == written


@pytest.mark.parametrize(("entry", "fragment"), [
    (["X", 0], "stage 0, action 0: ('X', 0, 0) is not an action (phase F or B, chunk 0..0, "
               "microbatch 0..3)"),
    (["F", -1], "('F', 0, -1) is not an action"),
    (["W", 0], "('W', 0, 0) is not an action"),
    (["F", 9], "('F', 0, 9) is not an action"),
    (["F", "0"], "['F', '0'] is not (phase, microbatch)"),
    (["F", 0, 0, 0], "is not (phase, microbatch)"),
])
def test_malformed_learner_entries_get_the_labs_message(entry: list[object],
                                                          fragment: str) -> None:
    tree = {"value": [[entry], []]}
    report = simpipeline.verify({"pp": 2, "m": 4, "v": 1}, tree)
    assert fragment in report.problem
