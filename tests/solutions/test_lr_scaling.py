"""Learning-rate scaling rules, warmup, the warmup + cosine schedule, critical batch."""

from __future__ import annotations

import math

import pytest

from solutions import lr_scaling as lr

# -- scaling rules ----------------------------------------------------------------------


def test_linear_rule_scales_by_the_batch_factor() -> None:
    # 3e-4 x 2048/256 = 3e-4 x 8 = 2.4e-3
    assert lr.linear_scaled_lr(3e-4, 256, 2048) == pytest.approx(2.4e-3)


def test_linear_rule_goyal_resnet() -> None:
    # Goyal et al.: 0.1 per 256 images; batch 8192 -> 0.1 x 32 = 3.2
    assert lr.linear_scaled_lr(0.1, 256, 8192) == pytest.approx(3.2)


def test_sqrt_rule() -> None:
    # 3e-4 x sqrt(8) = 3e-4 x 2.8284271 = 8.4853e-4
    assert lr.sqrt_scaled_lr(3e-4, 256, 2048) == pytest.approx(8.4852814e-4)


def test_sqrt_rule_for_a_square_factor() -> None:
    # 1e-3 x sqrt(1024/256 = 4) = 2e-3
    assert lr.sqrt_scaled_lr(1e-3, 256, 1024) == pytest.approx(2e-3)


def test_shrinking_the_batch_shrinks_the_rate() -> None:
    # 1e-3 x 64/256 = 2.5e-4; sqrt: 1e-3 x 1/2 = 5e-4
    assert lr.linear_scaled_lr(1e-3, 256, 64) == pytest.approx(2.5e-4)
    assert lr.sqrt_scaled_lr(1e-3, 256, 64) == pytest.approx(5e-4)


@pytest.mark.parametrize("args", [(0.0, 256, 512), (-1e-3, 256, 512), (1e-3, 0, 512),
                                  (1e-3, 256, -512), (1e-3, 256, math.inf)])
def test_scaling_rejects_impossible_inputs(args: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError):
        lr.linear_scaled_lr(*args)
    with pytest.raises(ValueError):
        lr.sqrt_scaled_lr(*args)


# -- warmup -----------------------------------------------------------------------------

def test_warmup_heuristic() -> None:
    # (2048 / 256) x 1000 = 8000 steps
    assert lr.warmup_steps_heuristic(256, 2048) == pytest.approx(8000)


def test_warmup_heuristic_custom_rate() -> None:
    # (1024 / 256) x 500 = 2000 steps
    assert lr.warmup_steps_heuristic(256, 1024, steps_per_batch_factor=500) == pytest.approx(2000)


def test_warmup_fraction() -> None:
    # 8000 / 100000 = 0.08
    assert lr.warmup_fraction(8000, 100_000) == pytest.approx(0.08)


def test_warmup_longer_than_run_is_rejected() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        lr.warmup_fraction(200, 100)
    with pytest.raises(ValueError):
        lr.warmup_steps_heuristic(0, 1024)


# -- schedule ---------------------------------------------------------------------------

def test_warmup_ramps_linearly_from_zero() -> None:
    # step 0 -> 0; step 500 of 1000 -> half of 6e-4 = 3e-4
    assert lr.lr_at_step(0, 6e-4, 1000, 10_000) == 0.0
    assert lr.lr_at_step(500, 6e-4, 1000, 10_000) == pytest.approx(3e-4)


def test_peak_at_end_of_warmup() -> None:
    assert lr.lr_at_step(1000, 6e-4, 1000, 10_000) == pytest.approx(6e-4)


def test_cosine_midpoint_is_halfway_between_peak_and_min() -> None:
    # W = 1000, T = 11000: midpoint step 6000, (1 + cos(pi/2))/2 = 1/2
    # 1e-5 + (6e-4 - 1e-5) / 2 = 3.05e-4
    assert lr.lr_at_step(6000, 6e-4, 1000, 11_000, min_lr=1e-5) == pytest.approx(3.05e-4)


def test_cosine_quarter_point() -> None:
    # no warmup, T = 100: step 25 -> (1 + cos(pi/4))/2 = (1 + 0.70710678)/2 = 0.85355339
    assert lr.lr_at_step(25, 1.0, 0, 100) == pytest.approx(0.85355339)


def test_schedule_ends_at_min_and_stays_there() -> None:
    assert lr.lr_at_step(10_000, 6e-4, 1000, 10_000, min_lr=6e-5) == pytest.approx(6e-5)
    assert lr.lr_at_step(12_345, 6e-4, 1000, 10_000, min_lr=6e-5) == pytest.approx(6e-5)


def test_stopping_half_way_through_a_long_cosine_leaves_half_the_peak() -> None:
    # Exercise 3.5: decay over 100k steps but stop at 50k -> 6e-4 x 1/2 = 3e-4
    assert lr.lr_at_step(50_000, 6e-4, 0, 100_000) == pytest.approx(3e-4)


@pytest.mark.parametrize("args", [
    (-1, 6e-4, 100, 1000, 0.0),     # negative step
    (0, 0.0, 100, 1000, 0.0),       # zero peak
    (0, 6e-4, 1000, 1000, 0.0),     # warmup as long as the run
    (0, 6e-4, 100, 0, 0.0),         # no steps
    (0, 6e-4, 100, 1000, 1e-3),     # min above peak
    (0, 6e-4, 100, 1000, -1e-5),    # negative min
])
def test_schedule_rejects_impossible_inputs(args: tuple[int, float, int, int, float]) -> None:
    with pytest.raises(ValueError):
        lr.lr_at_step(*args)


# -- critical batch ---------------------------------------------------------------------

def test_at_the_critical_batch_steps_and_examples_are_both_doubled() -> None:
    # McCandlish et al.: at B = B_crit, S = 2 S_min and E = 2 E_min
    assert lr.steps_over_minimum(4.0, 4.0) == pytest.approx(2.0)
    assert lr.examples_over_minimum(4.0, 4.0) == pytest.approx(2.0)


def test_tradeoff_curve_holds() -> None:
    # (S/Smin - 1)(E/Emin - 1) = (B_crit/B)(B/B_crit) = 1; e.g. B = 3, B_crit = 12: 4 x 0.25
    s = lr.steps_over_minimum(3.0, 12.0)
    e = lr.examples_over_minimum(3.0, 12.0)
    assert (s, e) == pytest.approx((5.0, 1.25))


def test_doubling_far_above_critical_batch() -> None:
    # B = 8 B_crit: steps (1 + 1/16)/(1 + 1/8) = 17/18; tokens (1 + 16)/(1 + 8) = 17/9
    steps, examples = lr.doubling_effect(16.0, 2.0)
    assert steps == pytest.approx(17 / 18)
    assert examples == pytest.approx(17 / 9)


def test_doubling_far_below_critical_batch() -> None:
    # B = B_crit/8: steps (1 + 4)/(1 + 8) = 5/9; tokens (1 + 1/4)/(1 + 1/8) = 10/9
    steps, examples = lr.doubling_effect(0.25, 2.0)
    assert steps == pytest.approx(5 / 9)
    assert examples == pytest.approx(10 / 9)


def test_batch_regime() -> None:
    assert lr.batch_regime(0.5, 2.0) == "below"
    assert lr.batch_regime(2.0, 2.0) == "at"
    assert lr.batch_regime(16.0, 2.0) == "above"
    with pytest.raises(ValueError):
        lr.batch_regime(0.0, 2.0)
    with pytest.raises(ValueError):
        lr.steps_over_minimum(1.0, -2.0)
