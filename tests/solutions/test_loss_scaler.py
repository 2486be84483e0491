"""Dynamic loss scaling with GradScaler semantics."""

from __future__ import annotations

import pytest

from solutions import loss_scaler as ls


def test_trace_of_the_workbook_example() -> None:
    # 65536: ok -> tracker 1; overflow -> 32768, 0, skipped; ok -> 1; overflow -> 16384; ok -> 1
    assert ls.loss_scale_trace([False, True, False, True, False]) == [
        (65536.0, 1, False), (32768.0, 0, True), (32768.0, 1, False),
        (16384.0, 0, True), (16384.0, 1, False)]


def test_growth_exactly_at_the_interval() -> None:
    # growth_interval 2: two clean steps -> 4 x 2 = 8, tracker back to 0 (the PyTorch test case)
    assert ls.loss_scale_trace([False, False], 4.0, 2) == [(4.0, 1, False), (8.0, 0, False)]


def test_overflow_resets_the_tracker() -> None:
    # 1024, interval 3: ok(1) ok(2) overflow(512, 0) ok(1) ok(2) ok(1024, 0)
    assert ls.loss_scale_trace([False, False, True, False, False, False], 1024.0, 3) == [
        (1024.0, 1, False), (1024.0, 2, False), (512.0, 0, True),
        (512.0, 1, False), (512.0, 2, False), (1024.0, 0, False)]


def test_custom_factors() -> None:
    # growth 4, backoff 0.25: 16 -> overflow 4 -> ok, ok (interval 2) -> 16
    rows = ls.loss_scale_trace([True, False, False], 16.0, 2, growth_factor=4.0,
                               backoff_factor=0.25)
    assert [r[0] for r in rows] == [4.0, 4.0, 16.0]


def test_dynamic_loss_scale_defaults() -> None:
    assert ls.dynamic_loss_scale([]) == 65536.0  # nothing happens
    assert ls.dynamic_loss_scale([False] * 1999) == 65536.0  # one step short
    assert ls.dynamic_loss_scale([False] * 2000) == 131072.0  # 65536 x 2
    assert ls.dynamic_loss_scale([False] * 4000) == 262144.0  # 65536 x 4
    assert ls.dynamic_loss_scale([False, True, False, True, False]) == 16384.0  # 2^16 / 4


def test_dynamic_loss_scale_other_settings() -> None:
    assert ls.dynamic_loss_scale([True, True, True], 8.0) == 1.0  # 8 / 2 / 2 / 2
    assert ls.dynamic_loss_scale([False] * 3, 1.0, 1) == 8.0  # doubles every step
    assert ls.dynamic_loss_scale([True], 3.0, 5) == 1.5  # not a power of two
    # 1999 clean steps, an overflow (32768, reset), then 2000 clean steps -> 65536
    assert ls.dynamic_loss_scale([False] * 1999 + [True] + [False] * 2000) == 65536.0


@pytest.mark.parametrize("args", [([], 0.0, 2000), ([False], -1.0, 2000), ([False], 1.0, 0),
                                  ([False], 1.0, 2.5)])
def test_dynamic_loss_scale_rejects_impossible_settings(args: tuple) -> None:
    with pytest.raises(ValueError):
        ls.dynamic_loss_scale(*args)


def test_scaler_rejects_bad_factors() -> None:
    with pytest.raises(ValueError):
        ls.LossScaler(growth_factor=1.0)
    with pytest.raises(ValueError):
        ls.LossScaler(backoff_factor=1.0)


def test_scale_never_grows_past_fp32() -> None:
    # 2^127 x 2 = 2^128 > FP32 max (about 3.4e38): PyTorch keeps the old scale
    assert ls.dynamic_loss_scale([False], 2.0**127, 1) == 2.0**127
    assert ls.dynamic_loss_scale([False], 2.0**126, 1) == 2.0**127


def test_skipped_steps() -> None:
    assert ls.skipped_steps([False, True, True, False]) == 2
