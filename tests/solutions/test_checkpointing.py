"""Checkpoint size, write time, Young's and Daly's intervals, waste and crash cost."""

from __future__ import annotations

import math

import pytest

from solutions import checkpointing as ck


def test_components_of_a_70b_checkpoint() -> None:
    parts = ck.checkpoint_components_gb(70e9)
    assert parts["weights"] == pytest.approx(140.0)  # 70e9 x 2 bytes
    assert parts["master_weights"] == pytest.approx(280.0)  # 70e9 x 4 bytes
    assert parts["optimizer_states"] == pytest.approx(560.0)  # 70e9 x (4 + 4) bytes


def test_checkpoint_size_gb() -> None:
    # 70e9 x 14 bytes = 980e9 bytes, plus 8 bytes
    assert ck.checkpoint_size_gb(70e9, extra_bytes=8) == pytest.approx(980.000000008, rel=1e-12)
    # master weights and moments only: 7e9 x 12 = 84 GB
    assert ck.checkpoint_size_gb(7e9, weight_bytes=0) == pytest.approx(84.0)
    with pytest.raises(ValueError):
        ck.checkpoint_size_gb(0)
    with pytest.raises(ValueError):
        ck.checkpoint_size_gb(70e9, extra_bytes=-1)


def test_write_time() -> None:
    assert ck.checkpoint_write_time_s(980.0, 10.0) == pytest.approx(98.0)  # 980 / 10
    with pytest.raises(ValueError):
        ck.checkpoint_write_time_s(980.0, 0.0)


def test_young_interval() -> None:
    # sqrt(2 x 98 x 86,400) = sqrt(16,934,400) = 4115.143 s
    assert ck.young_interval_s(98.0, 86_400.0) == pytest.approx(4115.1428, rel=1e-6)
    # sqrt(2 x 50 x 10,000) = sqrt(1e6) = 1000 s
    assert ck.young_interval_s(50.0, 10_000.0) == pytest.approx(1000.0)
    with pytest.raises(ValueError):
        ck.young_interval_s(0.0, 86_400.0)
    with pytest.raises(ValueError):
        ck.young_interval_s(98.0, -1.0)


def test_daly_interval() -> None:
    # C = 50, M = 10,000: C / 2M = 0.0025, sqrt = 0.05
    # 1000 x (1 + 0.05/3 + 0.0025/9) - 50 = 1000 x 1.0169444 - 50 = 966.9444 s
    assert ck.daly_interval_s(50.0, 10_000.0) == pytest.approx(966.94444, rel=1e-6)
    # C >= 2M: checkpoint every MTBF
    assert ck.daly_interval_s(300.0, 100.0) == 100.0


def test_expected_waste_fraction() -> None:
    # tau = 1000, C = 50, M = 10,000: 50/1000 + 500/10,000 = 0.05 + 0.05 = 0.1
    assert ck.expected_waste_fraction(1000.0, 50.0, 10_000.0) == pytest.approx(0.1)
    # with 100 s recovery: + 100/10,000 = 0.11
    assert ck.expected_waste_fraction(1000.0, 50.0, 10_000.0, 100.0) == pytest.approx(0.11)
    with pytest.raises(ValueError):
        ck.expected_waste_fraction(0.0, 50.0, 10_000.0)


def test_young_interval_minimises_the_waste() -> None:
    # Away from tau* = 1000 s the waste grows on either side.
    best = ck.expected_waste_fraction(1000.0, 50.0, 10_000.0)
    assert ck.expected_waste_fraction(900.0, 50.0, 10_000.0) > best
    assert ck.expected_waste_fraction(1100.0, 50.0, 10_000.0) > best


def test_optimal_checkpoint_interval() -> None:
    # 4115.1428 s / 60 = 68.5857 min; waste = sqrt(2 x 98 / 86,400) = sqrt(0.00226852) = 4.7629 %
    interval_min, waste_percent = ck.optimal_checkpoint_interval(24.0, 98.0)
    assert interval_min == pytest.approx(68.5857, rel=1e-5)
    assert waste_percent == pytest.approx(4.76290, rel=1e-5)
    # M = 1 h = 3600 s, C = 1 s: tau = sqrt(7200) = 84.853 s = 1.41421 min;
    # waste = sqrt(2 / 3600) = 0.0235702 -> 2.35702 %
    interval_min, waste_percent = ck.optimal_checkpoint_interval(1.0, 1.0)
    assert interval_min == pytest.approx(math.sqrt(2), rel=1e-9)
    assert waste_percent == pytest.approx(2.357023, rel=1e-6)


@pytest.mark.parametrize("args", [(0.0, 98.0), (24.0, 0.0), (-1.0, 98.0), (24.0, -5.0)])
def test_optimal_checkpoint_interval_rejects_impossible_input(
        args: tuple[float, float]) -> None:
    with pytest.raises(ValueError):
        ck.optimal_checkpoint_interval(*args)


def test_cost_per_crash() -> None:
    # 68 / 2 + 2 = 36 min = 0.6 h; 512 x $2 x 0.6 = $614.40
    assert ck.lost_minutes_per_crash(68.0, 2.0) == pytest.approx(36.0)
    assert ck.cost_per_crash_usd(512, 2.0, 68.0, 2.0) == pytest.approx(614.4)
    # no recovery: 30 min = 0.5 h; 100 x $3 x 0.5 = $150
    assert ck.cost_per_crash_usd(100, 3.0, 60.0) == pytest.approx(150.0)
    with pytest.raises(ValueError):
        ck.cost_per_crash_usd(0, 2.0, 68.0)
    with pytest.raises(ValueError):
        ck.cost_per_crash_usd(512, 2.0, 68.0, -1.0)
