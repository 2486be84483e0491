"""Chapter 1 explorer: the prediction, memory per stage, the figures and the widget."""

from __future__ import annotations

import pytest

from workbook.explorers import ch01


def test_prediction_is_the_stage_three_memory() -> None:
    assert ch01.PREDICTION.unit == "GB"
    assert ch01.PREDICTION.actual() == pytest.approx(1.625)  # 16/128 bytes x 13e9 / 1e9


def test_layers_of_stage_two() -> None:
    # 7B on 8 GPUs: weights 2 x 7 = 14, gradients 2/8 x 7 = 1.75, optimizer 12/8 x 7 = 10.5
    assert ch01.stage_layers_gb(7.0, 2, 8, 5.0) == pytest.approx((14.0, 1.75, 10.5, 5.0))


def test_totals_for_exercise_one_six() -> None:
    # 30B on 8 GPUs: 16, 4 + 12/8, 2 + 14/8, 16/8 bytes = 480, 165, 112.5, 60 GB, + 20 GB
    assert ch01.stage_totals_gb(30.0, 8, 20.0) == pytest.approx([500.0, 185.0, 132.5, 80.0])


def test_out_of_memory_in_words() -> None:
    messages = ch01.memory_messages(30.0, 8, 20.0, 84.0)
    assert messages == [
        "✘ no ZeRO (plain DP): out of memory, 500 GB needed, 84 GB available",
        "✘ ZeRO-1: out of memory, 185 GB needed, 84 GB available",
        "✘ ZeRO-2: out of memory, 132 GB needed, 84 GB available",
    ]


def test_nothing_fits() -> None:
    # 175B on 8 GPUs: even stage 3 needs 16/8 x 175 = 350 GB + 20 GB
    messages = ch01.memory_messages(175.0, 8, 20.0, 80.0)
    assert len(messages) == 5
    assert "ZeRO-3: out of memory, 370 GB needed" in messages[3]
    assert messages[4].startswith("✘ No ZeRO stage fits")


def test_no_message_when_everything_fits() -> None:
    # 1.3B without ZeRO: 16 x 1.3 = 20.8 GB + 10 GB of activations, under 80 GB
    assert ch01.memory_messages(1.3, 8, 10.0, 80.0) == []


def test_summary_names_the_lowest_stage_and_the_traffic() -> None:
    lines = ch01.memory_summary(30.0, 8, 20.0, 84.0)
    assert lines[0] == "✔ Lowest stage that fits: ZeRO-3, 80.0 of 84 GB."
    # FP16 gradients of 30B = 60 GB: 2 x 7/8 x 60 = 105 GB; 3 x 7/8 x 60 = 157.5 GB
    assert "105 GB for no ZeRO" in lines[1] and "158 GB for ZeRO-3" in lines[1]


def test_bars_figure() -> None:
    fig = ch01.memory_bars_figure(7.0, 64, 0.0, 80.0)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert len(ax.containers) == 4  # weights, gradients, optimizer, activations
    assert len(ax.patches) == 16  # 4 layers x 4 stages
    assert len(ax.lines) == 1  # the budget
    verdicts = [t.get_text() for t in ax.texts]
    assert sum("✘ out of memory" in v for v in verdicts) == 1  # only 112 GB exceeds 80 GB
    assert sum("✔ fits" in v for v in verdicts) == 3


def test_curves_and_dashboard() -> None:
    fig = ch01.memory_vs_gpus_figure(7.0, 0.0, 80.0, 64)
    assert len(fig.axes[0].lines) == 6  # 4 stages, budget, N marker
    assert len(ch01.dashboard_figure(7.0, 8, 0.0, 80.0).axes) == 2


def test_explorer_redraws_when_a_slider_moves() -> None:
    box = ch01.explorer()
    assert set(box.controls) == {"n_params_b", "n_gpus", "activations_gb", "budget_gb"}
    # the default 34B on 8 GPUs: plain DP (544 GB), ZeRO-1 (34 x 5.5 = 187 GB) and ZeRO-2
    # (34 x 3.75 = 127.5 GB) are over 80 GB; ZeRO-3 (34 x 2 = 68 GB) fits
    assert box.status.value.count("out of memory") == 3
    assert "Lowest stage that fits: ZeRO-3, 68.0 of 80 GB" in box.status.value
    box.controls["n_params_b"].value = 175.0
    assert "No ZeRO stage fits" in box.status.value
    box.controls["n_gpus"].value = 1024  # stage 3: 16/1024 x 175 = 2.7 GB
    assert "Lowest stage that fits: ZeRO-3" in box.status.value
    assert len(box.state["figure"].axes) == 2
