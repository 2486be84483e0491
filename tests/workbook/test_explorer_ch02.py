"""Chapter 2 explorer: the prediction, the step plan, the timeline and the widget."""

from __future__ import annotations

import pytest

from workbook.explorers import ch02


def test_prediction_is_the_communication_share() -> None:
    assert ch02.PREDICTION.unit == "%"
    # 50 / (128 x 120 + 50) = 50 / 15410
    assert ch02.PREDICTION.actual() == pytest.approx(100 * 50 / 15410)  # 0.3245 %


def test_step_plan_of_the_chapter() -> None:
    plan = ch02.step_plan(2048, 4, 8, 120.0, 50.0)
    assert plan.accum_steps == 64  # 2048 / (4 x 8)
    assert plan.step_ms() == pytest.approx(7730.0)  # 64 x 120 + 50
    assert plan.step_ms(True) == pytest.approx(10880.0)  # 64 x (120 + 50)
    assert plan.comm_pct(True) == pytest.approx(100 * 3200 / 10880)  # 29.4 %


def test_checkpointing_adds_a_third() -> None:
    plan = ch02.step_plan(2048, 4, 8, 120.0, 50.0, checkpointing=True)
    assert plan.micro_batch_ms == pytest.approx(160.0)  # 120 x 4/3
    assert plan.recompute_ms == pytest.approx(40.0)


def test_no_message_for_a_sound_configuration() -> None:
    assert ch02.accumulation_messages(2048, 4, 8, 120.0, 50.0) == []


def test_target_that_does_not_divide() -> None:
    # 2000 / 32 = 62.5, rounded up to 63 steps: 63 x 32 = 2016 sequences
    messages = ch02.accumulation_messages(2000, 4, 8, 120.0, 50.0)
    assert messages == ["✘ 2,000 is not a multiple of micro-batch x GPUs = 32: 63 steps give "
                        "an effective batch of 2,016. DeepSpeed would reject this "
                        "configuration."]


def test_target_below_one_step_and_too_much_communication() -> None:
    # 4 x 8 = 32 sequences per step > 16; one step: 50 / (120 + 50) = 29.4 % communication
    messages = ch02.accumulation_messages(16, 4, 8, 120.0, 50.0)
    assert len(messages) == 2
    assert "32 sequences, more than the target of 16" in messages[0]
    assert messages[1].startswith("✘ Communication is 29.4% of the step, above the 10% target")


def test_communication_share_alone() -> None:
    # 256 / 32 = 8 steps: 200 / (8 x 120 + 200) = 17.2 %
    messages = ch02.accumulation_messages(256, 4, 8, 120.0, 200.0)
    assert len(messages) == 1
    assert messages[0].startswith("✘ Communication is 17.2% of the step")


def test_summary_lines() -> None:
    lines = ch02.accumulation_summary(2048, 4, 8, 120.0, 50.0, 0.0, True)
    assert lines[0] == "64 accumulation steps of 4 x 8 GPUs: effective batch 2,048 sequences."
    assert "saves 3150 ms" in lines[2]  # 63 x 50
    assert "takes 160 ms instead of 120 ms" in lines[3]


def test_timeline_figure_rows_and_blocks() -> None:
    fig = ch02.timeline_figure(8, 120.0, 50.0)
    assert len(fig.axes) == 1
    collections = fig.axes[0].collections
    assert len(collections) == 6  # 2 rows x (compute, AllReduce, optimizer)
    blocks = sorted(len(c.get_paths()) for c in collections)
    assert blocks == [1, 1, 1, 8, 8, 8]  # 8 micro-batches per row, 8 AllReduces in one row


def test_timeline_with_checkpointing_and_merged_blocks() -> None:
    assert len(ch02.timeline_figure(8, 120.0, 50.0, checkpointing=True).axes[0].collections) == 8
    merged = ch02.timeline_figure(1000, 120.0, 50.0)
    assert "drawn merged" in merged.axes[0].get_title()
    assert max(len(c.get_paths()) for c in merged.axes[0].collections) == 1


def test_explorer_redraws_when_a_slider_moves() -> None:
    box = ch02.explorer()
    assert "effective batch 1,024" in box.status.value  # not exercise 2.1's 2,048
    assert "✘" not in box.status.value
    # 16 GPUs: 1024 / (3 x 16) = 21.3 -> 22 steps, 22 x 48 = 1,056 sequences
    box.controls["micro_batch"].value = 3
    assert "not a multiple" in box.status.value and "1,056" in box.status.value
    box.controls["checkpointing"].value = "on"  # 200 ms x 4/3
    assert "takes 267 ms instead of 200 ms" in box.status.value
    assert len(box.state["figure"].axes[0].collections) == 8
