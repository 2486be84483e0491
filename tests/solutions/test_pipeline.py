"""Pipeline bubble (both normalisations), memory, point-to-point volume and schedules."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from solutions import pipeline as pl
from solutions import pipeline_simulator as simulator
from solutions.pipeline_schedules import PipelineOp


def _slots(spans: list[list[simulator.Span]]) -> list[list[tuple[float, str, int]]]:
    """Per stage, (start, phase, microbatch) of each operation: the by-hand form."""
    return [[(s.start, s.op.phase, s.op.microbatch) for s in ops] for ops in spans]

# -- bubble -----------------------------------------------------------------------------


def test_bubble_over_compute() -> None:
    # (4-1)/12 = 0.25; m = 32: 3/32 = 0.09375
    assert pl.bubble_over_compute(4, 12) == pytest.approx(0.25)
    assert pl.bubble_over_compute(4, 32) == pytest.approx(0.09375)


def test_bubble_over_total() -> None:
    # (4-1)/(12 + 3) = 0.2
    assert pl.bubble_over_total(4, 12) == pytest.approx(0.2)


def test_interleaved_bubble() -> None:
    # 3/(12 x 4) = 0.0625; over total 3/(48 + 3) = 0.0588235
    assert pl.bubble_over_compute(4, 12, 4) == pytest.approx(0.0625)
    assert pl.bubble_over_total(4, 12, 4) == pytest.approx(0.05882353)


def test_no_pipeline_no_bubble() -> None:
    assert pl.bubble_over_compute(1, 8) == 0.0
    assert pl.bubble_over_total(1, 8) == 0.0


def test_bubble_over_compute_can_exceed_one() -> None:
    # 8 stages, 2 microbatches: 7/2 = 3.5
    assert pl.bubble_over_compute(8, 2) == pytest.approx(3.5)


@pytest.mark.parametrize("args", [(0, 8, 1), (4, 0, 1), (4, 8, 0), (4, 8.5, 1), (-2, 8, 1)])
def test_bubble_rejects_impossible_inputs(args: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        pl.bubble_over_compute(*args)
    with pytest.raises(ValueError):
        pl.bubble_over_total(*args)


# -- minimum microbatches ---------------------------------------------------------------

def test_min_microbatches_strictly_below_five_percent() -> None:
    # 7/0.05 = 140 gives exactly 5 %, so 141
    assert pl.min_microbatches(8, 0.05) == 141


def test_min_microbatches_interleaved() -> None:
    # v = 2: 7/(0.05 x 2) = 70 exactly -> 71; v = 4: 35 exactly -> 36
    assert pl.min_microbatches(8, 0.05, v=2) == 71
    assert pl.min_microbatches(8, 0.05, v=4) == 36


def test_min_microbatches_multiple_of_pipeline_depth() -> None:
    # older Megatron-LM interleaving needed m % p == 0: 71 -> 72, 36 -> 40
    assert pl.min_microbatches(8, 0.05, v=2, multiple_of=8) == 72
    assert pl.min_microbatches(8, 0.05, v=4, multiple_of=8) == 40


def test_min_microbatches_non_integer_bound() -> None:
    # 3/0.07 = 42.86 -> 43 (3/43 = 0.0698 < 0.07; 3/42 = 0.0714)
    assert pl.min_microbatches(4, 0.07) == 43


def test_min_microbatches_one_stage() -> None:
    # no bubble at all: one microbatch is enough
    assert pl.min_microbatches(1, 0.01) == 1


def test_min_microbatches_rejects_impossible_target() -> None:
    with pytest.raises(ValueError):
        pl.min_microbatches(8, 0.0)
    with pytest.raises(ValueError):
        pl.min_microbatches(8, -0.05)


# -- memory -----------------------------------------------------------------------------

def test_in_flight_gpipe_is_m() -> None:
    assert pl.in_flight_microbatches(4, 12, "gpipe") == 12
    assert pl.in_flight_microbatches(4, 12, "gpipe", stage=3) == 12


def test_in_flight_1f1b_is_p_minus_stage() -> None:
    # stage 0: 4, stage 1: 3, stage 3 (last): 1
    assert [pl.in_flight_microbatches(4, 12, "1f1b", s) for s in range(4)] == [4, 3, 2, 1]


def test_in_flight_1f1b_capped_by_m() -> None:
    # 8 stages but only 3 microbatches: at most 3
    assert pl.in_flight_microbatches(8, 3, "1f1b") == 3


def test_activation_memory() -> None:
    # 1F1B first stage: 4 x 2 GB = 8 GB; GPipe: 12 x 2 GB = 24 GB
    assert pl.activation_memory_gb(2.0, 4, 12, "1f1b") == pytest.approx(8.0)
    assert pl.activation_memory_gb(2.0, 4, 12, "gpipe") == pytest.approx(24.0)


def test_memory_rejects_bad_stage_or_schedule() -> None:
    with pytest.raises(ValueError):
        pl.in_flight_microbatches(4, 12, "1f1b", stage=4)
    with pytest.raises(ValueError):
        pl.in_flight_microbatches(4, 12, "1f1b", stage=-1)
    with pytest.raises(ValueError):
        pl.in_flight_microbatches(4, 12, "dualpipe")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        pl.activation_memory_gb(0.0, 4, 12)


# -- point-to-point ---------------------------------------------------------------------

def test_p2p_interleaved() -> None:
    # (4 x 4 - 1) = 15 boundaries x 12 microbatches x (0.5 + 0.5) GB = 180 GB
    assert pl.p2p_total_gb_per_step(0.5, 4, 12, 4) == pytest.approx(180.0)


def test_p2p_plain() -> None:
    # 3 boundaries x 12 x 1 GB = 36 GB
    assert pl.p2p_total_gb_per_step(0.5, 4, 12) == pytest.approx(36.0)


def test_p2p_single_gpu_sends_nothing() -> None:
    assert pl.p2p_total_gb_per_step(0.5, 1, 12, 4) == 0.0


# -- schedules --------------------------------------------------------------------------

def test_gpipe_schedule_small_case_by_hand() -> None:
    # p = 2, m = 2. Stage 0: F0@0 F1@1, then B0 waits for stage 1's B0 (slot 3) -> B0@4 B1@5.
    # Stage 1: F0@1 F1@2 B0@3 B1@4.
    assert _slots(simulator.schedule_gpipe(2, 2)) == [
        [(0, "F", 0), (1, "F", 1), (4, "B", 0), (5, "B", 1)],
        [(1, "F", 0), (2, "F", 1), (3, "B", 0), (4, "B", 1)],
    ]


def test_1f1b_schedule_small_case_by_hand() -> None:
    # p = 3, m = 3. Last stage alternates F/B as soon as it can: F0@2 B0@3 F1@4 B1@5 F2@6 B2@7.
    # Stage 1: F0@1 F1@2 B0@4 F2@5 B1@6 B2@8 (each B waits for stage 2's B to end).
    # Stage 0 warms up with 2 forwards, runs F2 (its steady-state forward), then its
    # backwards wait for stage 1's: B0@5 B1@7 B2@9. It held 3 = p microbatches.
    schedule = _slots(simulator.schedule_1f1b(3, 3))
    assert schedule[2] == [
        (2, "F", 0), (3, "B", 0), (4, "F", 1), (5, "B", 1), (6, "F", 2), (7, "B", 2)]
    assert schedule[1] == [
        (1, "F", 0), (2, "F", 1), (4, "B", 0), (5, "F", 2), (6, "B", 1), (8, "B", 2)]
    assert schedule[0] == [
        (0, "F", 0), (1, "F", 1), (2, "F", 2), (5, "B", 0), (7, "B", 1), (9, "B", 2)]


@pytest.mark.parametrize("make", [simulator.schedule_gpipe, simulator.schedule_1f1b])
@pytest.mark.parametrize(("pp", "m"), [(2, 1), (4, 4), (4, 12), (8, 3), (8, 32), (5, 7)])
def test_schedule_idle_time_matches_the_bubble_formulas(
    make: Callable[[int, int], list[list[simulator.Span]]], pp: int, m: int
) -> None:
    schedule = make(pp, m)
    # Unit slots: the iteration lasts 2(m + p - 1); every stage is busy 2m.
    assert simulator.makespan(schedule) == 2 * (m + pp - 1)
    for idle in simulator.idle_slots(schedule):
        assert idle == 2 * (pp - 1)
        assert idle / (2 * m) == pytest.approx((pp - 1) / m)
        assert idle / (2 * (m + pp - 1)) == pytest.approx((pp - 1) / (m + pp - 1))


@pytest.mark.parametrize(("pp", "m"), [(4, 12), (8, 3), (6, 6)])
def test_schedules_hold_the_predicted_microbatches(pp: int, m: int) -> None:
    gpipe = [simulator.peak_activations(ops) for ops in simulator.schedule_gpipe(pp, m)]
    one_f_one_b = [simulator.peak_activations(ops) for ops in simulator.schedule_1f1b(pp, m)]
    assert gpipe == [m] * pp
    assert one_f_one_b == [min(pp - s, m) for s in range(pp)]


def test_schedules_respect_dependencies() -> None:
    schedule = _slots(simulator.schedule_1f1b(4, 8))
    start = {(s, ph, mb): t for s, ops in enumerate(schedule) for t, ph, mb in ops}
    for (s, ph, mb), t in start.items():
        if ph == "F" and s > 0:
            assert t >= start[(s - 1, "F", mb)] + 1
        if ph == "B" and s < 3:
            assert t >= start[(s + 1, "B", mb)] + 1
        if ph == "B":
            assert t >= start[(s, "F", mb)] + 1
    # every stage runs every microbatch forward and backward exactly once
    assert all(sorted((ph, mb) for _, ph, mb in ops)
               == sorted([("F", j) for j in range(8)] + [("B", j) for j in range(8)])
               for ops in schedule)


# -- one simulator for every schedule -----------------------------------------------------

@pytest.mark.parametrize(("pp", "m"), [(2, 4), (3, 5), (4, 4), (4, 8), (8, 16), (16, 64)])
def test_zb_h1_bubble_is_a_third_of_1f1b_with_equal_times(pp: int, m: int) -> None:
    # Qi et al. 2024, §3: with T_F = T_B = T_W, 1F1B idles (p-1)(F+B+W) = 3(p-1) slots per
    # stage and ZB-H1 (p-1)(F+B-W) = p-1; every stage computes 3m.
    one_f_one_b = simulator.schedule_spans("1f1b", pp, m, 1, 1, 1, 1)
    zero_bubble = simulator.schedule_spans("zb-h1", pp, m, 1, 1, 1, 1)
    assert simulator.makespan(one_f_one_b) == 3 * m + 3 * (pp - 1)
    assert simulator.makespan(zero_bubble) == 3 * m + (pp - 1)
    assert pl.zb_h1_bubble_slots(pp, 1, 1, 1) == pp - 1
    for ops in zero_bubble:
        whole = simulator.makespan(zero_bubble)
        idle = sum(length for _, length in simulator.idle_spans(ops, whole))
        assert idle == pytest.approx(pp - 1)


@pytest.mark.parametrize(("pp", "m"), [(4, 8), (8, 16)])
def test_zb_h1_with_a_longer_input_gradient(pp: int, m: int) -> None:
    # t_f = 1, t_b = 2, t_w = 1: bubble (p-1)(1 + 2 - 1) = 2(p-1); compute 4m
    spans = simulator.schedule_spans("zb-h1", pp, m, 1, 1, 2, 1)
    assert simulator.makespan(spans) == 4 * m + 2 * (pp - 1)


def test_zb_h1_runs_every_pass_once_and_w_after_its_b() -> None:
    spans = simulator.schedule_spans("zb-h1", 4, 8, 1, 1, 1, 1)
    for ops in spans:
        assert sorted((s.op.phase, s.op.microbatch) for s in ops) == sorted(
            (phase, mb) for phase in "BFW" for mb in range(8))
        done_b = {s.op.microbatch: s.end for s in ops if s.op.phase == "B"}
        assert all(s.start >= done_b[s.op.microbatch] for s in ops if s.op.phase == "W")


@pytest.mark.parametrize(("pp", "m", "v"), [(2, 4, 3), (4, 8, 2), (4, 8, 4), (8, 16, 2)])
def test_interleaving_activation_factor_matches_the_simulated_first_stage(
        pp: int, m: int, v: int) -> None:
    # Korthikanti et al. 2022, §4.2.3: GPU 0 holds p(1 + (p-1)/(p v)) microbatches' worth
    spans = simulator.schedule_spans("interleaved", pp, m, v)
    assert simulator.peak_activations(spans[0]) == pytest.approx(pp + (pp - 1) / v)
    assert pl.interleaved_activation_factor(pp, v) == pytest.approx(1 + (pp - 1) / (pp * v))


def test_interleaved_activation_factor_by_hand() -> None:
    assert pl.interleaved_activation_factor(4, 2) == pytest.approx(1.375)  # 1 + 3/8
    assert pl.interleaved_activation_factor(1, 4) == 1.0
    with pytest.raises(ValueError):
        pl.interleaved_activation_factor(4, 0)


def test_dualpipe_bubble_from_deepseek_v3_table_2() -> None:
    # (8/2 - 1) x (F&B + B - 3W) = 3 x (3 + 2 - 3) = 6 slots; 1F1B would idle 7 x 3 = 21
    assert pl.dualpipe_bubble(8, 3, 2, 1) == 6
    assert pl.dualpipe_bubble(2, 3, 2, 1) == 0
    with pytest.raises(ValueError, match="even"):
        pl.dualpipe_bubble(7, 3, 2, 1)
    with pytest.raises(ValueError):
        pl.zb_h1_bubble_slots(4, 1, -1, 1)


def test_simulator_reports_a_deadlock() -> None:
    # stage 0 insists on microbatch 1's forward before 0's, stage 1 on 0's before 1's, and
    # stage 0 then wants 0's backward first: 1's backward never comes back in time.
    orders = [[PipelineOp("F", 1), PipelineOp("B", 0), PipelineOp("F", 0), PipelineOp("B", 1)],
              [PipelineOp("F", 0), PipelineOp("B", 0), PipelineOp("F", 1), PipelineOp("B", 1)]]
    with pytest.raises(RuntimeError, match="deadlock"):
        simulator.simulate(2, 1, orders)


def test_schedule_spans_rejects_unknown_schedules_and_bad_times() -> None:
    with pytest.raises(ValueError, match="schedule must be one of"):
        simulator.schedule_spans("dualpipe", 4, 8)
    with pytest.raises(ValueError):
        simulator.schedule_spans("1f1b", 4, 8, t_b=-1)
