"""Chapter 3 explorer: the prediction, the schedules, the failure messages and the widget."""

from __future__ import annotations

from typing import Any

import matplotlib
import pytest

from workbook.explorers import ch03

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

def test_prediction_is_about_three() -> None:
    # k = 2048 / 256 = 8; sqrt(8) = 2.83, nearer 3 than 2 (and far from 8)
    assert ch03.PREDICTION.actual() == "about 3x"
    assert ch03.PREDICTION.actual() in ch03.PREDICTION.options


# -- schedules ----------------------------------------------------------------------------

def test_peak_rates() -> None:
    assert ch03.peak_lr("linear", 3e-4, 256, 2048) == pytest.approx(2.4e-3)  # 3e-4 x 8
    assert ch03.peak_lr("sqrt", 3e-4, 256, 2048) == pytest.approx(8.4853e-4, rel=1e-4)
    assert ch03.peak_lr("none", 3e-4, 256, 2048) == 3e-4
    with pytest.raises(ValueError):
        ch03.peak_lr("cubic", 3e-4, 256, 2048)


def test_schedule_peaks_at_the_warmup_and_ends_at_zero() -> None:
    steps, rates = ch03.schedule("linear", 3e-4, 256, 2048, 8000, 100_000)
    assert steps[0] == 0 and steps[-1] == 100_000 and 8000 in steps
    assert rates[0] == 0.0
    assert rates[steps.index(8000)] == pytest.approx(2.4e-3)
    assert rates[-1] == pytest.approx(0.0, abs=1e-12)


def test_decay_over_the_base_run() -> None:
    # same tokens at an 8x smaller batch: 8 x 100,000 steps
    assert ch03.decay_steps("base", 256, 2048, 100_000, 8000) == 800_000
    assert ch03.decay_steps("run", 256, 2048, 100_000, 8000) == 100_000


# -- failure states in words ---------------------------------------------------------------

def test_good_schedule_has_no_message() -> None:
    assert ch03.lr_messages(256, 2048, 8000, 100_000) == []


def test_short_warmup_against_the_course_heuristic() -> None:
    # k = 8: heuristic 8 x 1000 = 8,000 steps
    (message,) = ch03.lr_messages(256, 2048, 2000, 100_000)
    assert message.startswith("⚠ A warmup of 2,000 steps")
    assert "8000 steps for k = 8" in message


def test_warmup_as_long_as_the_run() -> None:
    assert ch03.lr_messages(256, 2048, 100_000, 100_000) == [
        "✘ The warmup (100,000 steps) is as long as the whole run (100,000 steps): the rate "
        "never reaches its peak, let alone decays."]


def test_keeping_the_base_rate_is_flagged() -> None:
    (message,) = ch03.lr_messages(256, 2048, 8000, 100_000, rule="none")
    assert "grows 8-fold" in message


def test_cosine_over_the_wrong_horizon() -> None:
    # decays over 800,000 steps, stops at 100,000: 0.5 x (1 + cos(pi x 92,000 / 792,000))
    # = 0.5 x (1 + cos(0.3649)) = 0.5 x 1.9341 = 0.967 of the peak
    (message,) = ch03.lr_messages(256, 2048, 8000, 100_000, decay="base")
    assert "800,000 steps" in message and "97% of its peak" in message
    # a batch that shrank 8x: the base run is 100,000 / 8 = 12,500 steps
    (message,) = ch03.lr_messages(2048, 256, 100, 100_000, decay="base")
    assert "minimum at step 12,500" in message and "last 87,500 steps" in message


# -- figures ------------------------------------------------------------------------------

def test_lr_schedule_figure_draws_three_rules() -> None:
    fig = ch03.lr_schedule_figure()
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 3
    assert [line.get_linewidth() for line in ax.get_lines()] == [2.8, 1.3, 1.3]  # linear bold
    assert max(ax.get_lines()[0].get_ydata()) == pytest.approx(2.4e-3)


def test_critical_batch_figure_draws_steps_and_tokens() -> None:
    fig = ch03.critical_batch_figure()
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 2
    # at B = B_crit both costs are twice their minimum
    ratios = list(ax.get_lines()[0].get_xdata())
    at_crit = ratios.index(1.0)
    assert ax.get_lines()[0].get_ydata()[at_crit] == 2.0
    assert ax.get_lines()[1].get_ydata()[at_crit] == 2.0
    # B = 8 B_crit: doubling gives steps x (1 + 1/16)/(1 + 1/8) = 0.94, tokens x 17/9 = 1.89
    assert any("steps x 0.94, tokens x 1.89" in t.get_text() for t in ax.texts)


# -- the explorer ---------------------------------------------------------------------------

def test_explorer_reports_and_redraws(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[tuple[Any, ...]] = []
    real = ch03.lr_schedule_figure

    def spy(*args: Any) -> Any:
        drawn.append(args)
        return real(*args)

    monkeypatch.setattr(ch03, "lr_schedule_figure", spy)
    box = ch03.explorer()
    widgets = controls(box)
    assert len(drawn) == 1
    assert "✔" in status_of(box)

    widgets["Warmup steps"].value = 1000
    assert drawn[-1][3] == 1000
    assert "⚠ A warmup of 1,000 steps" in status_of(box)

    widgets["Cosine decays over"].value = "the base-batch run's steps (k x more)"
    assert drawn[-1][-1] == "base"
    assert "1,600,000 steps" in status_of(box)  # k = 4096 / 256 = 16 x 100,000

    count = len(drawn)
    widgets["Total steps"].value = 5000
    widgets["Warmup steps"].value = 5000
    assert "✘ The warmup (5,000 steps)" in status_of(box)
    assert len(drawn) == count + 1  # drawn for total = 5000, not for the impossible warmup
