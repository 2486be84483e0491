"""Chapter 8 records: canonical answers worked out by hand."""

from __future__ import annotations

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Choice, Function, Trace
from workbook.records import ch08

RECORDS = {r.id: r for r in ch08.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_records_in_order() -> None:
    assert list(RECORDS) == ["8.1", "8.2", "8.3", "8.4", "8.5", "8.6"]
    assert [r.category for r in ch08.EXERCISES] == [
        "derive", "trace", "derive", "trace", "derive", "build"]


def test_8_1_fp16_min_normal() -> None:
    assert ex("8.1").expected() == pytest.approx(6.1035e-5, rel=1e-4)  # 2^-14 = 1/16384
    # a BF16 variant: 2^(1 - 127) = 2^-126 = 1.1755e-38
    params = dict(format_name="BF16", exponent_bits=8, bias=127)
    assert ex("8.1").expected(params) == pytest.approx(1.1755e-38, rel=1e-4)


def test_8_1_forgetting_the_power_of_ten_is_a_misconception() -> None:
    assert any(w == pytest.approx(6.1035, rel=1e-4) for w, _ in ex("8.1").wrong_answers())


def test_8_2_trace_rows() -> None:
    assert type(ex("8.2").answer_kind) is Trace
    # W = 2: overflow halves and skips; two clean steps double; overflow halves again
    assert ex("8.2").expected() == [
        (32768.0, 0, True), (32768.0, 1, False), (65536.0, 0, False),
        (32768.0, 0, True), (32768.0, 1, False)]
    # the seed's numbers (W = 2000, overflows at steps 2 and 4) end at a quarter: 16384
    seed = dict(overflows=(False, True, False, True, False), init_scale=65536.0,
                growth_interval=2000)
    assert ex("8.2").expected(seed)[-1] == (16384.0, 1, False)


def test_8_2_trace_with_growth() -> None:
    params = dict(overflows=(False, False, True, False), init_scale=1024.0, growth_interval=2)
    # ok -> 1; ok -> 2 = W: 2048, 0; overflow -> 1024, 0; ok -> 1
    assert ex("8.2").expected(params) == [
        (1024.0, 1, False), (2048.0, 0, False), (1024.0, 0, True), (1024.0, 1, False)]


def test_8_3_ratio() -> None:
    assert ex("8.3").expected() == 1.0  # (2+2+4+4+4) / (4+4+4+4) = 16 / 16


def test_8_3_variants_by_hand() -> None:
    from workbook.records.ch08 import _scenario_8_3

    # FP32 gradient accumulation with Adam: (2+4+4+4+4)/16 = 18/16; with plain SGD (2+4+4)/8
    assert ex("8.3").expected(_scenario_8_3(1, 0, 7)) == pytest.approx(1.125)
    assert ex("8.3").expected(_scenario_8_3(1, 2, 7)) == pytest.approx(1.25)
    # pure BF16 with SGD momentum: (2+2+2)/(4+4+4)
    assert ex("8.3").expected(_scenario_8_3(2, 1, 7)) == pytest.approx(0.5)
    assert {round(ex("8.3").expected(ex("8.3").variant(s)), 4) for s in range(50)} == {
        1.125, 1.1667, 1.25, 0.5}


def test_8_4_pool_gap_questions_by_hand() -> None:
    # the gap above 1 is 2^-mantissa bits: E4M3 1/8, E5M2 1/4, FP16 2^-10, BF16 2^-7
    seen = set()
    for seed in range(80):
        p = ex("8.4").variant(seed)
        right = p["option_" + ex("8.4").expected(p)]
        for name, gap in (("E4M3", "2^-3 "), ("E5M2", "2^-2 "), ("FP16 (", "2^-10 "),
                          ("BF16 (", "2^-7 ")):
            if "gap between 1" in p["question"] and name in p["question"]:
                assert right.startswith(gap)
                seen.add(name)
        if "store every tensor in FP8 E4M3" in p["question"]:
            assert right.startswith("Fine-grained scaling")
            seen.add("blocks")
    assert len(seen) == 5


def test_8_4_choice() -> None:
    answer = ex("8.4").answer_kind
    assert type(answer) is Choice
    assert ex("8.4").expected() == "C"
    assert len(answer.options) == 5


def test_8_5_gb_saved() -> None:
    # 2 x 4 x 4096 x 8192 x 80 = 21,474,836,480 elements x (2 - 1) B = 21.47 GB
    assert ex("8.5").expected() == pytest.approx(21.47483648)
    # a frequent slip, 172 GB, is eight times that
    assert any(w == pytest.approx(171.79869184) for w, _ in ex("8.5").wrong_answers())


def test_8_6_reference_on_the_edge_cases() -> None:
    fn = ex("8.6").expected()
    answer = ex("8.6").answer_kind
    assert type(answer) is Function
    assert answer.function_name == fn.__name__ == "dynamic_loss_scale"
    assert fn([]) == 65536.0
    assert fn([False] * 2000) == 131072.0  # growth exactly at the interval
    assert fn([False, False, True, False, False], 1024.0, 2) == 2048.0
    assert fn([True], 3.0, 5) == 1.5
    with pytest.raises(ValueError):
        fn([], 0.0, 2000)
