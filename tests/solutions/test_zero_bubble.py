"""Zero-bubble schedules: ZB-H1 as Qi et al. define it, the lazy-W variant it is not, and
the published V-shape family.

The in-flight count is measured twice: on the simulated spans (peak_activations) and,
independently, by walking each stage's order (F adds a microbatch, its W removes it).
"""

from __future__ import annotations

import pytest

from solutions import pipeline as pl
from solutions import pipeline_schedules as schedules
from solutions import pipeline_simulator as simulator
from solutions.pipeline_schedules import PipelineOp

CASES = [(p, m) for p in (2, 3, 4, 5, 8, 12, 16) for m in (1, 2, 3, p - 1, p, p + 1, 2 * p,
                                                             3 * p + 1, 64) if m >= 1]
TIMES = [(1, 1, 1), (1, 2, 1), (2, 1, 1), (1, 1, 0.5)]


def _in_flight_by_order(order: list[PipelineOp]) -> int:
    held = peak = 0
    for op in order:
        held += {"F": 1, "W": -1}.get(op.phase, 0)
        peak = max(peak, held)
    return peak


@pytest.mark.parametrize(("pp", "m"), CASES)
def test_zb_h1_order_keeps_at_most_p_in_flight_on_every_stage(pp: int, m: int) -> None:
    for stage in range(pp):
        order = schedules.zb_h1_order(pp, m, stage)
        assert _in_flight_by_order(order) <= pp
        assert _in_flight_by_order(order) == min(pp, m)  # the first stage's 1F1B peak too
        deferred = max(sum(1 for op in order[:i] if op.phase == "B")
                       - sum(1 for op in order[:i] if op.phase == "W")
                       for i in range(len(order) + 1))
        assert deferred <= stage + 1  # stage i defers at most i W passes (+ the one just run)


@pytest.mark.parametrize(("pp", "m"), CASES)
@pytest.mark.parametrize("times", TIMES)
def test_simulated_zb_h1_peak_in_flight_is_at_most_p(pp: int, m: int,
                                                     times: tuple[float, ...]) -> None:
    spans = simulator.schedule_spans("zb-h1", pp, m, 1, *times)
    peaks = [simulator.peak_activations(ops) for ops in spans]
    assert max(peaks) <= pp
    # 1F1B's own peak on the first stage is the same min(p, m)
    one_f_one_b = simulator.schedule_spans("1f1b", pp, m, 1, *times)
    assert peaks[0] == simulator.peak_activations(one_f_one_b[0])


@pytest.mark.parametrize(("pp", "m"), CASES)
def test_closed_form_in_flight_matches_the_simulator(pp: int, m: int) -> None:
    spans = simulator.schedule_spans("zb-h1", pp, m, 1, 1, 1, 1)
    for stage, ops in enumerate(spans):
        assert simulator.peak_activations(ops) == pl.in_flight_microbatches(pp, m, "zb-h1", stage)


@pytest.mark.parametrize(("pp", "m"), [(4, 8), (8, 16), (3, 10), (16, 64)])
def test_zb_h1_bubble_matches_qi_et_al(pp: int, m: int) -> None:
    # (p-1)(t_F + t_B - t_W) idle per stage (Qi et al. 2024 §2.1); every stage computes
    # m (t_F + t_B + t_W)
    for t_f, t_b, t_w in ((1, 1, 1), (1, 2, 1)):
        spans = simulator.schedule_spans("zb-h1", pp, m, 1, t_f, t_b, t_w)
        assert simulator.makespan(spans) == pytest.approx(m * (t_f + t_b + t_w)
                                                   + pl.zb_h1_bubble_slots(pp, t_f, t_b, t_w))


def test_w_stash_is_counted_not_free() -> None:
    # with M_W = 0 ZB-H1's stage i would look like 1F1B's p - i; with M_W = M_B it holds p
    spans = simulator.schedule_spans("zb-h1", 4, 8, 1, 1, 1, 1)
    assert [simulator.peak_activations(ops, w_share=0) for ops in spans] == [4, 3, 2, 1]
    assert [simulator.peak_activations(ops) for ops in spans] == [4, 4, 4, 4]
    assert [simulator.peak_activations(ops, w_share=0.5) for ops in spans] == [4, 3.5, 3, 2.5]


@pytest.mark.parametrize("pp", [2, 4, 8])
def test_lazy_w_memory_grows_with_m(pp: int) -> None:
    # every W postponed to idle time: the last stage has no idle time until the drain, so
    # it holds all m microbatches' W stash, as GPipe holds all m forwards
    for m in (pp, 2 * pp, 4 * pp):
        lazy = simulator.schedule_spans("1f1b-lazy-w", pp, m, 1, 1, 1, 1)
        zb = simulator.schedule_spans("zb-h1", pp, m, 1, 1, 1, 1)
        assert simulator.peak_activations(lazy[-1]) == m
        # the same bubble, not the same memory
        assert simulator.makespan(lazy) == simulator.makespan(zb)
        assert max(simulator.peak_activations(ops) for ops in zb) == pp


def test_v_shape_family_as_published() -> None:
    # sail-sg table for arXiv:2405.15362: memory p, (p+4)//3, (p+2)//2, p
    assert [pl.v_shape_peak_microbatches(8, s) for s in ("1f1b", "v-min", "v-half", "v-zb")] \
        == [8, 4, 5, 8]
    assert pl.v_shape_bubble_rate(8, 64, "v-zb") == 0
    assert pl.v_shape_bubble_rate(8, 64, "v-half") == pytest.approx(8 / 128)
    assert pl.v_shape_bubble_rate(6, 36, "v-min") == pytest.approx(12 / 108)
    with pytest.raises(ValueError, match="one of"):
        pl.v_shape_peak_microbatches(8, "zb-h2")


@pytest.mark.parametrize(("pp", "m", "group", "ok"), [
    (4, 8, None, True), (4, 6, None, True), (4, 71, None, True), (4, 3, None, False),
    (4, 6, 4, False), (4, 8, 4, True), (4, 9, 5, True), (8, 12, 8, False), (4, 10, 6, True),
    (4, 10, 3, False), (4, 10, 11, False)])
def test_interleaved_microbatch_rule_is_megatron_cores(pp: int, m: int, group: int | None,
                                                      ok: bool) -> None:
    # schedules.py: N in [PP, M], and M mod N is 0 or >= PP
    assert (schedules.interleaved_microbatch_error(pp, m, group) == "") is ok


def test_interleaved_schedule_runs_m_not_a_multiple_of_p() -> None:
    spans = simulator.schedule_spans("interleaved", 4, 6, 2)
    assert all(len(ops) == 2 * 6 * 2 for ops in spans)
    with pytest.raises(ValueError, match="below p"):
        simulator.schedule_spans("interleaved", 4, 3, 2)
