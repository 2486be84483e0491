"""Floating-point format facts and mixed-precision memory."""

from __future__ import annotations

import pytest

from solutions import precision as pr


def test_biases() -> None:
    # 2^(e-1) - 1
    assert pr.FP32.bias == 127
    assert pr.FP16.bias == 15
    assert pr.BF16.bias == 127
    assert pr.FP8_E4M3.bias == 7
    assert pr.FP8_E5M2.bias == 15


def test_widths() -> None:
    assert [f.bits for f in (pr.FP32, pr.FP16, pr.BF16, pr.FP8_E4M3, pr.FP8_E5M2)] == [
        32, 16, 16, 8, 8]


def test_fp16_range() -> None:
    assert pr.FP16.max_normal == 65504.0  # (2 - 2^-10) x 2^15
    assert pr.FP16.min_normal == pytest.approx(6.103515625e-5)  # 2^-14 = 1/16384
    assert pr.FP16.min_subnormal == pytest.approx(5.9604644775390625e-8)  # 2^-24
    assert pr.fp16_min_normal() == pytest.approx(6.1035e-5, rel=1e-4)


def test_fp32_and_bf16_range() -> None:
    assert pr.FP32.max_normal == pytest.approx(3.4028234663852886e38)  # (2 - 2^-23) x 2^127
    assert pr.FP32.min_normal == pytest.approx(1.1754943508222875e-38)  # 2^-126
    assert pr.FP32.min_subnormal == pytest.approx(1.401298464324817e-45)  # 2^-149
    assert pr.BF16.max_normal == pytest.approx(3.3895313892515355e38)  # (2 - 2^-7) x 2^127
    assert pr.BF16.min_normal == pr.FP32.min_normal  # same 8-bit exponent
    assert pr.BF16.min_subnormal == pytest.approx(9.183549615799121e-41)  # 2^-133


def test_fp8_e4m3_is_the_special_case() -> None:
    # No infinities: top exponent 15 - 7 = 8 usable, mantissa 110 -> 1.75 x 2^8 = 448
    assert pr.FP8_E4M3.max_normal == 448.0
    assert pr.FP8_E4M3.min_normal == 0.015625  # 2^-6
    assert pr.FP8_E4M3.min_subnormal == 0.001953125  # 2^-9
    # With IEEE-style specials the same bits would top out at 1.875 x 2^7 = 240
    ieee_e4m3 = pr.FloatFormat("E4M3 IEEE-style", 4, 3, ieee_specials=True)
    assert ieee_e4m3.max_normal == 240.0


def test_fp8_e5m2() -> None:
    assert pr.FP8_E5M2.max_normal == 57344.0  # 1.75 x 2^15
    assert pr.FP8_E5M2.min_normal == pytest.approx(6.103515625e-5)  # 2^-14
    assert pr.FP8_E5M2.min_subnormal == pytest.approx(1.52587890625e-5)  # 2^-16


def test_precision_and_range() -> None:
    assert pr.FP16.epsilon == 2.0**-10  # 0.0009765625
    assert pr.BF16.epsilon == 0.0078125  # 2^-7
    # log2(448 / 2^-9) = log2(229,376) = 17.807; log2(57344 / 2^-16) = 31.807
    assert pr.FP8_E4M3.dynamic_range_binades == pytest.approx(17.8074, rel=1e-4)
    assert pr.FP8_E5M2.dynamic_range_binades == pytest.approx(31.8074, rel=1e-4)


def test_format_lookup() -> None:
    assert pr.format_by_name("BF16") is pr.BF16
    with pytest.raises(ValueError):
        pr.format_by_name("FP12")
    with pytest.raises(ValueError):
        pr.FloatFormat("bad", 0, 3)


def test_bytes_per_param() -> None:
    assert pr.mixed_precision_adam_bytes_per_param() == 16.0  # 2 + 2 + 4 + 4 + 4
    assert pr.fp32_adam_bytes_per_param() == 16.0  # 4 + 4 + 4 + 4
    assert pr.mixed_to_fp32_state_ratio() == 1.0
    assert pr.training_bytes_per_param(2, 2, 0, 0) == 4.0
    with pytest.raises(ValueError):
        pr.training_bytes_per_param(-2, 2, 4, 8)


def test_activation_memory_fp16_vs_fp8() -> None:
    # 2 x 4 x 4096 x 8192 x 80 = 21,474,836,480 elements
    n = pr.stored_activation_elements(4, 4096, 8192, 80)
    assert n == 21_474_836_480
    assert pr.activation_gb(n, 2.0) == pytest.approx(42.94967296)  # x 2 bytes
    assert pr.activation_gb(n, 1.0) == pytest.approx(21.47483648)  # x 1 byte
    assert pr.fp8_activation_saving_gb(4, 4096, 8192, 80) == pytest.approx(21.47483648)
    with pytest.raises(ValueError):
        pr.stored_activation_elements(0, 4096, 8192, 80)
