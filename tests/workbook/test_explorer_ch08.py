"""Chapter 8 explorer: the prediction, where numbers land, the scaler's cost, the figures."""

from __future__ import annotations

import matplotlib
import pytest

from solutions import precision as pr
from workbook.explorers import ch08

matplotlib.use("Agg")


def test_prediction_is_a_quarter() -> None:
    # 65536 -> (overflow) 32768 -> (overflow) 16384; 16384 / 65536 = 1/4.
    assert ch08.PREDICTION.actual() == "a quarter of it"
    assert "a quarter of it" in ch08.PREDICTION.options


def test_scale_ratio_option_rejects_other_ratios() -> None:
    with pytest.raises(ValueError):
        ch08.scale_ratio_option(0.5)


@pytest.mark.parametrize(("value", "fmt", "kind"), [
    (1.0, pr.FP16, "normal"),
    (1e-6, pr.FP16, "subnormal"),      # below 2^-14 = 6.1e-5, above 2^-24 = 6.0e-8
    (3e-8, pr.FP16, "subnormal"),      # above half the smallest subnormal, 2.98e-8
    (1e-9, pr.FP16, "zero"),
    (7e4, pr.FP16, "overflow"),        # above 65504
    (-7e4, pr.FP16, "overflow"),
    (1e-6, pr.BF16, "normal"),         # BF16 goes down to 2^-126
    (500.0, pr.FP8_E4M3, "overflow"),  # above 448
    (500.0, pr.FP8_E5M2, "normal"),
])
def test_classify(value: float, fmt: pr.FloatFormat, kind: str) -> None:
    assert ch08.classify(value, fmt) == kind


def test_significant_bits() -> None:
    assert ch08.significant_bits(1.0, pr.FP16) == 11
    # 1e-6 / 2^-24 = 16.8: the leading bit is bit 4, so 5 bits are left.
    assert ch08.significant_bits(1e-6, pr.FP16) == 5
    assert ch08.significant_bits(1e-9, pr.FP16) == 0


def test_a_value_every_format_stores_has_no_problems() -> None:
    assert ch08.precision_problems(1.0) == []
    # 1e-6 x 2^16 = 0.0655: a normal number even in E4M3 (smallest normal 2^-6 = 0.0156).
    assert ch08.precision_problems(1e-6, 2.0**16) == []


def test_a_small_gradient_without_scaling() -> None:
    assert ch08.precision_problems(1e-6) == [
        "⚠ FP16 stores 1.00e-06 only as a subnormal: 5 significant bits instead of 11.",
        "✘ FP8 E5M2 flushes 1.00e-06 to zero (its smallest subnormal is 1.53e-05).",
        "✘ FP8 E4M3 flushes 1.00e-06 to zero (its smallest subnormal is 1.95e-03).",
    ]


def test_too_large_a_scale_overflows() -> None:
    problems = ch08.precision_problems(1.0, 2.0**17)  # 131072
    assert problems == [
        "✘ FP16 overflows: 1.31e+05 is above its largest value 65504.",
        "✘ FP8 E5M2 overflows: 1.31e+05 is above its largest value 57344.",
        "✘ FP8 E4M3 overflows: 1.31e+05 is above its largest value 448.",
    ]


def test_overflow_pattern() -> None:
    # Burst: steps 1-2; every third step: steps 3 and 6.
    assert ch08.overflow_pattern(6, burst=2, every=3) == [True, True, True, False, False, True]
    assert ch08.overflow_pattern(3) == [False, False, False]


def test_loss_scale_problems() -> None:
    assert ch08.loss_scale_problems([False] * 5) == []
    assert ch08.loss_scale_problems([False, True, False, True, False]) == [
        "✘ 2 of 5 optimizer steps skipped (40%): their updates are lost."]
    # 4 -> 2 -> 1 -> 0.5
    assert ch08.loss_scale_problems([True, True, True], init_scale=4.0) == [
        "✘ 3 of 3 optimizer steps skipped (100%): their updates are lost.",
        "✘ The scale fell below 1 (to 0.5): the loss is now scaled down, and small gradients "
        "underflow sooner.",
    ]


def test_number_lines_draw_two_lines_per_format() -> None:
    (ax,) = ch08.number_lines_figure().axes
    assert len(ax.lines) == 10
    assert len(ax.get_yticks()) == 5
    (ax,) = ch08.number_lines_figure(1e-6).axes
    assert len(ax.lines) == 11


def test_loss_scale_figure_traces_the_scale_and_marks_overflows() -> None:
    (ax,) = ch08.loss_scale_figure([False, True, False, True, False], 65536.0, 2000).axes
    scale_line, overflow_marks = ax.lines
    assert list(scale_line.get_ydata()) == [65536, 65536, 32768, 32768, 16384, 16384]
    assert list(overflow_marks.get_xdata()) == [2, 4]
    assert list(overflow_marks.get_ydata()) == [65536, 32768]  # the scale that overflowed


def test_explorer_reports_and_redraws_when_a_slider_moves() -> None:
    box = ch08.explorer()
    number_status, trace_status = box.status
    assert "⚠ FP16 stores 1.00e-06 only as a subnormal" in number_status.value
    box.controls["loss_scale"].value = 2.0**16
    assert "✘" not in number_status.value and "⚠" not in number_status.value
    # 60 steps, the first 3 overflow: 3 / 60 = 5 %.
    assert "3 of 60 optimizer steps skipped (5%)" in trace_status.value
    box.controls["burst"].value = 0
    assert trace_status.value.endswith(">✔ No overflow: no step skipped.</div>")
    box.controls["every"].value = 7
    assert "8 of 60 optimizer steps skipped" in trace_status.value  # steps 7, 14, ..., 56
