"""Chapter 7 explorer: the prediction, the waste model, the failure messages and the figures."""

from __future__ import annotations

import matplotlib
import pytest

from workbook.explorers import ch07

matplotlib.use("Agg")


def test_prediction_is_roughly_every_hour() -> None:
    # sqrt(2 x 98 s x 86,400 s) = sqrt(16,934,400) = 4115.2 s = 68.6 min.
    assert ch07.PREDICTION.options == ch07.BUCKETS
    assert ch07.PREDICTION.actual() == "roughly every hour"


@pytest.mark.parametrize(("minutes", "bucket"), [
    (5.0, "every few minutes"), (19.9, "every few minutes"), (20.0, "roughly every hour"),
    (68.6, "roughly every hour"), (120.0, "every few hours"), (300.0, "every few hours"),
])
def test_interval_buckets(minutes: float, bucket: str) -> None:
    assert ch07.interval_bucket(minutes) == bucket


def test_waste_at_young_is_sqrt_2c_over_m() -> None:
    young_min = 4115.1671 / 60
    # sqrt(2 x 98 / 86,400) = sqrt(0.00226852) = 0.0476290 -> 4.7629 %.
    assert ch07.waste_percent(young_min, 98.0, 24.0) == pytest.approx(4.7629, rel=1e-4)
    # A 2-minute restart adds 2 / 1440 = 0.13889 %.
    assert ch07.waste_percent(young_min, 98.0, 24.0, 2.0) == pytest.approx(4.9018, rel=1e-4)


def test_waste_away_from_the_optimum() -> None:
    # 98 / 1200 + (10 + 2) / 1440 = 0.0816667 + 0.0083333 = 0.09 -> 9 %.
    assert ch07.waste_percent(20.0, 98.0, 24.0, 2.0) == pytest.approx(9.0)


def test_a_sound_plan_has_no_problems() -> None:
    assert ch07.checkpoint_problems(98.0, 24.0, 60.0, 2.0, 10.0) == []


def test_an_interval_shorter_than_a_write() -> None:
    assert ch07.checkpoint_problems(98.0, 24.0, 1.0) == [
        "✘ The interval (1 min) is no longer than one checkpoint write (1.63 min): writing "
        "alone would take at least half of the wall-clock time."]


def test_an_interval_longer_than_the_mtbf() -> None:
    assert ch07.checkpoint_problems(98.0, 24.0, 1500.0) == [
        "✘ The interval (25 h) is as long as the MTBF (24 h) or longer: most intervals end "
        "in a failure before their checkpoint is written."]


def test_a_write_too_long_for_youngs_formula() -> None:
    # C = 3600 s, M = 7200 s: Young sqrt(2 x 3600 x 7200) = 7200 s; Daly with C / 2M = 0.25:
    # 7200 x (1 + 0.5 / 3 + 0.25 / 9) - 3600 = 8600 - 3600 = 5000 s = 83.3 min; gap 2200 / 5000.
    (problem,) = ch07.checkpoint_problems(3600.0, 2.0, 100.0)
    assert "Young's interval (120 min) is off by 44%" in problem
    assert "Daly's higher-order estimate is 83.3 min" in problem


def test_waste_above_the_target() -> None:
    assert ch07.checkpoint_problems(98.0, 24.0, 20.0, 2.0, 5.0) == [
        "✘ Expected waste 9% at your interval (restarts included) is above your 5 % "
        "target."]


def test_waste_curve_has_three_curves_and_the_markers() -> None:
    (ax,) = ch07.waste_curve_figure(98.0, 24.0).axes
    assert len(ax.lines) == 4  # writing, lost work, total, Young's interval
    (ax,) = ch07.waste_curve_figure(98.0, 24.0, 2.0, chosen_min=20.0).axes
    assert len(ax.lines) == 5
    labels = [line.get_label() for line in ax.lines]
    assert "Young: 68.6 min, 4.9% waste" in labels
    assert "yours: 20 min, 9% waste" in labels


def test_checkpoint_size_figure_stacks_three_parts_per_model() -> None:
    (ax,) = ch07.checkpoint_size_figure((7.0, 70.0, 405.0)).axes
    assert len(ax.patches) == 9
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["98 GB", "980 GB", "5670 GB"]  # 14 bytes x 7e9, 70e9, 405e9


def test_explorer_reports_and_redraws_when_a_slider_moves() -> None:
    box = ch07.explorer()
    status = box.status.value
    # not the exercises' 980 GB at 10 GB/s: nothing on it answers 7.1 to 7.4
    assert "2000 GB at 20 GB/s = 100 s" in status
    assert "interval: 49 min" in status  # sqrt(2 x 100 s x 43,200 s) = 2,939 s = 48.99 min
    # (60 / 2 + 2) min on 2048 GPUs at $2: 2048 x 2 x 32 / 60 = $2,184.53.
    assert "$2180" in status
    box.controls["mtbf_h"].value = 2.0
    # 100 / 3600 + (1800 + 120) / 7200 = 0.0278 + 0.2667 = 29.4 %.
    assert "✘ Expected waste 29.4%" in box.status.value
    box.controls["interval_min"].value = 1.0
    assert "no longer than one checkpoint write" in box.status.value
