"""Chapter 2 records: canonical answers worked out by hand."""

from __future__ import annotations

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Function
from workbook.records import ch02

RECORDS = {r.id: r for r in ch02.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_ids_in_order() -> None:
    assert list(RECORDS) == ["2.1", "2.2", "2.3", "2.4", "2.5"]


def test_2_1_steps() -> None:
    assert ex("2.1").expected() == 64  # 2048 / (4 x 8)


def test_2_1_variants_divide_evenly() -> None:
    for seed in range(50):
        p = ex("2.1").draw(seed)
        assert p["target_batch"] % (p["micro_batch"] * p["dp_degree"]) == 0


def test_2_2_saved() -> None:
    assert ex("2.2").expected() == pytest.approx(3150.0)  # (64 - 1) x 50 ms


def test_2_3_throughput() -> None:
    # 64 x 120 + 50 = 7730 ms; 2048 / 7.730 s = 264.94 seq/s
    assert ex("2.3").expected() == pytest.approx(264.94, rel=1e-4)


def test_2_3_per_gpu_is_a_misconception() -> None:
    # 264.94 / 8 = 33.12 seq/s
    assert any(w == pytest.approx(33.12, rel=1e-3) for w, _ in ex("2.3").wrong_answers())


def test_2_4_reference_rounds_up() -> None:
    fn = ex("2.4").expected()
    assert fn.__name__ == "accumulation_plan"
    assert fn(1000, 4, 8) == (32, 1024)   # 31.25 -> 32 steps of 4 x 8 = 32 sequences
    assert fn(2048, 4, 8) == (64, 2048)
    assert fn(16, 4, 8) == (1, 32)        # one step already gives 32 >= 16


def test_2_4_edge_cases() -> None:
    answer = ex("2.4").answer_kind
    assert type(answer) is Function
    fn = ex("2.4").expected()
    assert (1000, 4, 8) in answer.edge_cases   # not divisible
    errors = 0
    for args in answer.edge_cases:
        try:
            fn(*args)
        except ValueError:
            errors += 1
    assert errors == 4  # zero target, zero micro-batch, zero GPUs, negative target


def test_2_5_plan_one_wins() -> None:
    # plan 1: 2048/(8 x 8) = 32 x 200 = 6400 ms; plan 2: 2048/(16 x 8) = 16 x 380 x 4/3
    # = 8106.7 ms
    assert ex("2.5").expected() == "A"


def test_2_5_flips_when_large_micro_batch_is_much_more_efficient() -> None:
    # plan 2 with 280 ms: 16 x 280 x 4/3 = 5973.3 ms < 6400 ms; the options are dealt so
    # that the right key names plan 2
    from workbook.records.ch02 import _scenario_2_5

    params = _scenario_2_5(2048, 8, 8, 200.0, 280.0)
    assert params["plan2_ms"] < params["plan1_ms"] == 6400
    assert params["option_" + ex("2.5").expected(params)].startswith("Plan 2")
    # plan 2 with 300 ms: 16 x 300 x 4/3 = 6400 ms exactly: no single right plan
    with pytest.raises(ValueError, match="different speed"):
        _scenario_2_5(2048, 8, 8, 200.0, 300.0)


def test_2_5_variants_name_the_faster_plan_by_hand() -> None:
    # each variant's right option is the plan with the smaller steps x time, recomputed here
    winners = set()
    for seed in range(100):
        p = ex("2.5").variant(seed)
        plan1 = p["target_batch"] / (p["small_micro"] * p["dp_degree"]) * p["small_ms"]
        plan2 = p["target_batch"] / (p["large_micro"] * p["dp_degree"]) * p["large_ms"] * 4 / 3
        right = p["option_" + ex("2.5").expected(p)]
        assert right.startswith("Plan 1" if plan1 < plan2 else "Plan 2")
        winners.add(plan1 < plan2)
    assert winners == {True, False}
