"""Chapter 5 explorer: the prediction, the interleaved schedule, the Gantt charts, the widget."""

from __future__ import annotations

from typing import Any

import matplotlib
import pytest

from solutions import pipeline_simulator as simulator
from workbook.explorers import ch05

matplotlib.use("Agg")


def controls(box: Any) -> dict[str, Any]:
    """Every widget below ``box`` that has a description, keyed by it."""
    found: dict[str, Any] = {}
    for child in getattr(box, "children", ()):
        if getattr(child, "description", ""):
            found[child.description] = child
        found.update(controls(child))
    return found


def status_of(box: Any) -> str:
    return str(box.status.value)


# -- prediction ---------------------------------------------------------------------------

def test_prediction_is_about_half() -> None:
    # (p-1)/m = 5/10 = 0.5 of the ideal compute time (not exercise 5.1's 4 stages and 12)
    assert ch05.PREDICTION.actual() == "about half"
    assert ch05.PREDICTION.actual() in ch05.PREDICTION.options


# -- schedules ----------------------------------------------------------------------------

def test_1f1b_idle_slots_on_the_first_stage() -> None:
    # p = 4, m = 4: GPU 0 runs F1..F4 in slots 0-3; B1 comes back at 3 (down) + 1 + 3 (up)
    # = slot 7, then B2, B3, B4 every other slot (9, 11, 13). Makespan 2(m + p - 1) = 14.
    spans = ch05.stage_spans("1f1b", 4, 4)
    assert ch05.makespan(spans) == 14
    assert ch05.idle_spans(spans[0], 14) == [(4.0, 3.0), (8.0, 1.0), (10.0, 1.0), (12.0, 1.0)]
    # 3 + 1 + 1 + 1 = 6 = 2(p - 1) idle slots


def test_interleaved_two_stages_two_microbatches_by_hand() -> None:
    # p = 2, m = 2, v = 2, in chunk units (1/2 slot). GPU 0 warms up with
    # (2-0-1) x 2 + (2-1) x 2 = 4 = all forwards, at 0, 1, 2, 3; its backwards wait for
    # GPU 1 and start at 5, 7, 8, 9. Makespan 10 units = 5 slots = 2m + 2(p-1)/v.
    spans = simulator.schedule_spans("interleaved", 2, 2, 2)
    assert [s.start for s in spans[0]] == [0.0, 0.5, 1.0, 1.5, 2.5, 3.5, 4.0, 4.5]
    assert [s.op.phase for s in spans[0]] == ["F"] * 4 + ["B"] * 4
    assert ch05.makespan(spans) == 5.0
    # all four half-stage chunks held before the first backward: 4 x 1/2 = 2 microbatches
    assert ch05.peak_activations(spans[0]) == 2.0


def test_interleaved_idle_time_is_the_bubble() -> None:
    # p = 4, m = 8, v = 2: busy 2m = 16 slots, idle 2(p-1)/v = 3, makespan 19
    spans = simulator.schedule_spans("interleaved", 4, 8, 2)
    assert ch05.makespan(spans) == 19.0
    assert all(sum(length for _, length in ch05.idle_spans(ops, 19.0)) == pytest.approx(3.0)
               for ops in spans)


def test_interleaved_needs_m_at_least_pp_not_a_multiple() -> None:
    # current Megatron-Core: N in [p, m] and m mod N is 0 or >= p; N = m runs m = 6 on p = 4
    assert ch05.makespan(simulator.schedule_spans("interleaved", 4, 6, 2)) == 2 * 6 + 3 * 2 / 2
    with pytest.raises(ValueError, match="below p"):
        simulator.schedule_spans("interleaved", 4, 3, 2)
    with pytest.raises(ValueError):
        ch05.stage_spans("zigzag", 4, 8)


def test_summary_lines_count_slots_and_activations() -> None:
    lines = ch05.summary_lines("1f1b", 4, 8, 2)
    assert lines[0] == "Step: 22 slots; each stage computes 16 and idles 6."  # 2(8 + 3) = 22
    assert "37.5% of ideal compute" in lines[1]  # 3/8
    assert "27.3% of the step" in lines[1]  # 3/11
    # 1F1B: GPU i holds p - i; GPipe: all m on every GPU
    assert lines[2].startswith("Activations held at the peak, in microbatches, GPU 0 to 3: "
                               "4, 3, 2, 1 ")
    assert "GPU 0 to 3: 8, 8, 8, 8 " in ch05.summary_lines("gpipe", 4, 8, 2)[2]
    # interleaved GPU i: (4-i-1) x 2 + (2-1) x 4 warm-up chunks + 1, each half a stage:
    # (6+4+1)/2 = 5.5, (4+4+1)/2 = 4.5, (2+4+1)/2 = 3.5, (0+4+1)/2 = 2.5
    assert "GPU 0 to 3: 5.5, 4.5, 3.5, 2.5 " in ch05.summary_lines("interleaved", 4, 8, 2)[2]


# -- failure states in words ---------------------------------------------------------------

def test_good_configuration_has_no_message() -> None:
    assert ch05.pipeline_messages("1f1b", 4, 40, 1, 10.0) == []  # 3/40 = 7.5% < 10%


def test_bubble_above_target() -> None:
    # 3/4 = 75%; below 10% needs m > 3/0.1 = 30, so 31
    assert ch05.pipeline_messages("1f1b", 4, 4, 1, 10.0) == [
        "✘ Bubble 75% of ideal compute is above your 10% target; m = 31 microbatches "
        "would meet it."]


def test_bubble_exactly_at_target_is_not_below() -> None:
    # 7/140 = 5% exactly; strictly below needs 141
    (message,) = ch05.pipeline_messages("1f1b", 8, 140, 1, 5.0)
    assert "exactly at, not below," in message and "m = 141" in message


def test_interleaving_needs_m_at_least_pp_and_the_fix_need_not_be_a_multiple() -> None:
    # m = 6 with p = 4 runs (groups of N = 6); bubble 3/(6 x 2) = 25%; below 10% needs
    # m > 15 -> 16; m = 3 < p cannot run
    (message,) = ch05.pipeline_messages("interleaved", 4, 6, 2, 10.0)
    assert "25%" in message and "m = 16" in message
    assert ch05.pipeline_messages("interleaved", 4, 9, 2, 50.0) == []  # 3/18 = 16.7%
    messages = ch05.pipeline_messages("interleaved", 4, 3, 2, 10.0)
    assert "at least PP microbatches: m = 3 is below 4" in messages[0]
    # 3/(m x 3) < 5% needs m > 20; the interleaved fix is never below p
    assert "m = 8 microbatches" in ch05.pipeline_messages("interleaved", 8, 2, 4, 50.0)[-1]


def test_too_few_microbatches_and_v_ignored_without_interleaving() -> None:
    messages = ch05.pipeline_messages("1f1b", 8, 4, 1, 50.0)
    assert messages[0].startswith("✘ Only 4 microbatches for 8 stages")
    assert "175%" in messages[1]  # 7/4
    # GPipe ignores v: 3/12 = 25%
    assert "25%" in ch05.pipeline_messages("gpipe", 4, 12, 4, 10.0)[0]


# -- figures ------------------------------------------------------------------------------

def test_gantt_figure_has_three_bar_sets_per_gpu() -> None:
    fig = ch05.gantt_figure("1f1b", 4, 4)
    (ax,) = fig.axes
    assert len(ax.collections) == 12  # forward, backward, idle for each of 4 GPUs
    forwards_gpu0 = ax.collections[0]
    assert len(forwards_gpu0.get_paths()) == 4  # m forwards
    assert ax.get_xlim() == (0.0, 14.0)
    assert "bubble 75% of compute" in ax.get_title(loc="left")


def test_compare_figure_has_three_schedules_on_a_shared_axis() -> None:
    fig = ch05.compare_figure(4, 8, 2)
    assert len(fig.axes) == 3
    assert [ax.get_title(loc="left").split(",")[0] for ax in fig.axes] == [
        "GPipe", "1F1B", "Interleaved 1F1B"]
    assert fig.axes[2].get_xlim() == (0.0, 22.0)  # the longest schedule sets the shared axis


# -- the explorer ---------------------------------------------------------------------------

def test_explorer_reports_and_redraws(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[tuple[Any, ...]] = []
    real = ch05.gantt_figure

    def spy(*args: Any) -> Any:
        drawn.append(args)
        return real(*args)

    monkeypatch.setattr(ch05, "gantt_figure", spy)
    box = ch05.explorer()
    widgets = controls(box)
    # 5 stages, not the exercises' 4: moving m to their 12 does not answer 5.1
    assert drawn == [("1f1b", 5, 6, 2)]
    assert "✘ Bubble 66.7%" in status_of(box)  # (5 - 1) / 6
    assert widgets["Chunks per GPU (v)"].disabled

    widgets["Microbatches (m)"].value = 40  # (5 - 1) / 40 = 10 %: at the target, not below
    assert "exactly at, not below" in status_of(box) and "m = 41 microbatches" in status_of(box)
    widgets["Microbatches (m)"].value = 41
    assert drawn[-1] == ("1f1b", 5, 41, 2)
    assert "✔" in status_of(box) and "✘" not in status_of(box)

    widgets["Microbatches (m)"].value = 3
    widgets["Schedule"].value = "Interleaved 1F1B"
    assert not widgets["Chunks per GPU (v)"].disabled
    assert "at least PP microbatches" in status_of(box)
    assert drawn[-1] == ("1f1b", 5, 3, 2)  # nothing drawn for an impossible schedule

    widgets["Microbatches (m)"].value = 16
    assert drawn[-1] == ("interleaved", 5, 16, 2)


# -- beyond 1F1B ------------------------------------------------------------------------------

def test_zero_bubble_summary_and_messages() -> None:
    lines = ch05.summary_lines("zb-h1", 4, 8, 2)
    # F, B, W one slot each: compute 3 x 8 = 24, idle p - 1 = 3, makespan 27
    assert lines[0] == "Step: 27 slots; each stage computes 24 and idles 3."
    assert "12.5% of ideal compute" in lines[1]  # 3 / 24
    # at most p in flight on every GPU: 1F1B's peak p, not 1F1B's p - i
    assert "GPU 0 to 3: 4, 4, 4, 4 " in lines[2]
    assert "p(1 + (p-1)/(p v))" not in lines[2]  # no interleaving formula for ZB-H1
    # (p-1)/(3m) < 5% needs m > 20: 21
    assert "m = 21 microbatches" in ch05.pipeline_messages("zb-h1", 4, 8, 2, 5.0)[0]
    assert ch05.pipeline_messages("zb-h1", 4, 21, 2, 5.0) == []


def test_interleaved_summary_names_the_activation_factor_only_where_it_applies() -> None:
    # p(1 + (p-1)/(p v)) = 4 x 1.375 = 5.5, the simulated GPU 0 figure
    assert "p(1 + (p-1)/(p v)) = 5.5" in ch05.summary_lines("interleaved", 4, 8, 2)[2]
    # m = p = 4: the warm-up (3 x 2 + 4 = 10 chunks) is capped at m v = 8, GPU 0 holds 4;
    # p = 8, m = 8, v = 4: 8 held, not 9.75. One figure per GPU, no contradicting formula.
    for pp, m, v, first in ((4, 4, 2, "4, "), (8, 8, 4, "8, ")):
        line = ch05.summary_lines("interleaved", pp, m, v)[2]
        assert f"GPU 0 to {pp - 1}: {first}" in line
        assert "does not apply" in line and "= " not in line.split("(")[1]
    for schedule in ("gpipe", "1f1b", "zb-h1", "1f1b-lazy-w"):
        assert "p v" not in ch05.summary_lines(schedule, 4, 8, 2)[2]


def test_beyond_1f1b_rows_follow_deepseek_v3_table_2() -> None:
    rows = {name: value for name, _, value, _, _ in ch05.beyond_1f1b_rows(8)}
    # F = 1, B = 2, W = 1, F&B = 3: 7 x 3 = 21; 7 x (1 + 2 - 2) = 7; 3 x (3 + 2 - 3) = 6
    assert rows == {"1F1B": 21, "ZB1P (automatic; ZB-H1's bubble)": 7, "DualPipe": 6,
                    "V-ZB / ZB-V (V-shape)": 0}
    acts = {name: a for name, _, _, _, a in ch05.beyond_1f1b_rows(8)}
    assert acts["V-ZB / ZB-V (V-shape)"] == "8 = p"  # 1F1B's memory, no extra
    assert "DualPipe" not in {r[0] for r in ch05.beyond_1f1b_rows(5)}  # needs an even p
    assert "<table>" in ch05.beyond_1f1b_table(8).data


def test_zero_bubble_figure_marks_w_and_the_bubble() -> None:
    fig = ch05.zero_bubble_figure(4, 8)
    top, middle, bottom = fig.axes
    assert top.get_xlim() == (0.0, 33.0)  # 1F1B: 3 x 8 + 3 x 3
    labels = [text.get_text() for text in middle.get_legend().get_texts()]
    assert labels == ["forward", "backward", "weight gradient (W)", "idle (bubble)"]
    assert "idle 3 slots per GPU" in middle.get_title(loc="left")
    assert "peak 4 in flight" in middle.get_title(loc="left")  # p, not "same memory" by fiat
    assert "peak 8 in flight" in bottom.get_title(loc="left")  # m: every W deferred


def test_explorer_offers_the_zero_bubble_schedule() -> None:
    box = ch05.explorer()
    widgets = controls(box)
    widgets["Schedule"].value = "Zero bubble (ZB-H1)"
    assert widgets["Chunks per GPU (v)"].disabled
    widgets["Microbatches (m)"].value = 4
    assert "simulated" in status_of(box)  # m = 4 < p = 5: the formula does not hold
    widgets["Microbatches (m)"].value = 8
    assert "(p-1)(t_F+t_B-t_W)" in status_of(box)


@pytest.mark.parametrize("schedule", sorted(ch05.SPLIT_W))
@pytest.mark.parametrize(("pp", "m"), [(8, 2), (8, 4), (16, 4), (4, 2), (4, 4), (8, 16)])
def test_the_split_w_bubble_is_the_simulated_schedules(schedule: str, pp: int,
                                                        m: int) -> None:
    # Qi et al.'s (p-1)(t_F+t_B-t_W)/(m(t_F+t_B+t_W)) needs m >= p; below it each stage has
    # at most m deferred W passes for the drain and idles longer (p = 8, m = 2: 13 idle
    # slots over 6 busy ones, 216.7 %, where the formula says 7/6 = 116.7 %)
    spans = ch05.stage_spans(schedule, pp, m)
    busy = 3 * m
    idle = max(s.end for ops in spans for s in ops) - busy
    assert float(ch05.bubble_fraction(schedule, pp, m)) == pytest.approx(idle / busy)
    line = ch05.summary_lines(schedule, pp, m, 1)[1]
    assert ("(p-1)(t_F+t_B-t_W)" in line) == (m >= pp)


@pytest.mark.parametrize(("pp", "m"), [(4, 8), (6, 12), (3, 5)])
def test_deferring_every_w_piles_stashes_up_on_every_gpu(pp: int, m: int) -> None:
    # no stage idles before the drain, so each one holds all m microbatches' W stashes
    spans = ch05.stage_spans("1f1b-lazy-w", pp, m)
    assert [ch05.peak_activations(ops) for ops in spans] == [m] * pp
    assert "up to m on every GPU" in ch05.summary_lines("1f1b-lazy-w", pp, m, 1)[2]
