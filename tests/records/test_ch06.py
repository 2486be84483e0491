"""Chapter 6 records: canonical answers worked out by hand."""

from __future__ import annotations

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Numeric
from workbook.records import ch06

RECORDS = {r.id: r for r in ch06.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_records_in_order() -> None:
    assert list(RECORDS) == ["6.1", "6.2", "6.3", "6.4", "6.5"]
    assert [r.category for r in ch06.EXERCISES] == ["derive"] * 3 + ["trace", "derive"]


def test_6_1_columns_per_gpu() -> None:
    assert ex("6.1").expected() == 1024  # 8192 / 8


def test_6_2_mb_per_allreduce_per_gpu() -> None:
    # tensor: 1 x 4096 x 8192 x 2 B = 67,108,864 B = 67.108864 MB
    # ring: 2 x 7/8 x 67.108864 = 117.440512 MB (not the 56 of a halved MiB figure)
    assert ex("6.2").expected() == pytest.approx(117.440512)


def test_6_2_misconceptions_include_the_halved_mib_answer() -> None:
    wrong = [w for w, _ in ex("6.2").wrong_answers()]
    # 117.440512e6 B / 2^20 = 112 MiB; halved = 56
    assert any(w == pytest.approx(56.0) for w in wrong)
    assert any(w == pytest.approx(112.0) for w in wrong)


def test_6_2_tensor_size_is_no_misconception_at_tp_2() -> None:
    # TP 2: 2 x 1/2 x S = S, so "the tensor size" is the right answer there.
    params = dict(tp=2, d_model=4096, seq_len=2048, micro_batch=1)
    expected = ex("6.2").expected(params)
    assert expected == pytest.approx(16.777216)  # 2048 x 4096 x 2 B
    assert all(w != pytest.approx(expected) for w, _ in ex("6.2").wrong_answers(params))


def test_6_3_weight_gb_per_gpu() -> None:
    # 12 x 8192^2 = 805,306,368 params x 80 layers x 2 B = 128.849 GB; / 8 = 16.106 GB
    assert ex("6.3").expected() == pytest.approx(16.10612736)


def test_6_4_kv_heads_per_gpu() -> None:
    assert type(ex("6.4").answer_kind) is Numeric
    assert ex("6.4").expected() == 1  # 8 KV heads / TP 8
    # TP 16 > 8 KV heads: each GPU still holds one, replicated on 2 GPUs
    assert ex("6.4").expected(dict(n_heads=64, n_kv_heads=8, tp=16)) == 1
    # TP 2: 8 / 2 = 4
    assert ex("6.4").expected(dict(n_heads=64, n_kv_heads=8, tp=2)) == 4


def test_6_4_fractional_head_is_a_misconception_only_when_tp_exceeds_kv() -> None:
    wrong = [w for w, _ in ex("6.4").wrong_answers(dict(n_heads=64, n_kv_heads=8, tp=16))]
    assert 0.5 in wrong  # 8 / 16
    assert 1 not in [w for w, _ in ex("6.4").wrong_answers()]


def test_6_5_overhead_percent() -> None:
    # 80 layers x 4 AllReduces x 0.26 ms = 83.2 ms; 83.2 / 300 = 27.733 %
    assert ex("6.5").expected() == pytest.approx(27.733333)
