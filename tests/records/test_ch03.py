"""Chapter 3 records: canonical answers worked out by hand."""

from __future__ import annotations

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Choice
from workbook.records import ch03

RECORDS = {r.id: r for r in ch03.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_ids_in_order() -> None:
    assert list(RECORDS) == ["3.1", "3.2", "3.3", "3.4", "3.5"]
    assert [r.category for r in RECORDS.values()] == ["derive"] * 3 + ["trace", "trace"]


def test_3_1_linear() -> None:
    # 3e-4 x 2048/256 = 3e-4 x 8 = 2.4e-3
    assert ex("3.1").expected() == pytest.approx(2.4e-3)


def test_3_1_variant() -> None:
    # 1e-3 x 512/128 = 4e-3
    assert ex("3.1").expected(dict(base_lr=1e-3, base_batch=128, new_batch=512)) == (
        pytest.approx(4e-3))


def test_3_2_sqrt() -> None:
    # 3e-4 x sqrt(8) = 3e-4 x 2.828427 = 8.485281e-4
    assert ex("3.2").expected() == pytest.approx(8.485281e-4)


def test_3_2_linear_answer_is_a_misconception() -> None:
    wrong = [w for w, _ in ex("3.2").wrong_answers()]
    assert pytest.approx(2.4e-3) in wrong


def test_3_3_warmup() -> None:
    # (2048/256) x 1000 = 8000 steps
    assert ex("3.3").expected() == pytest.approx(8000)


def test_3_3_fraction_is_a_misconception() -> None:
    # 8000 / 100000 = 0.08
    assert pytest.approx(0.08) in [w for w, _ in ex("3.3").wrong_answers()]


def test_3_4_canonical_is_far_above_critical_batch() -> None:
    # 16M tokens vs B_crit 2M: 8x above -> steps x 17/18, tokens x 17/9 -> option B
    assert ex("3.4").expected() == "B"


def test_3_4_answer_follows_the_batch() -> None:
    # 0.25M vs 2M: 8x below -> steps x 5/9, tokens x 10/9 -> option A
    assert ex("3.4").expected(dict(critical_batch_m=2.0, batch_m=0.25)) == "A"


def test_3_4_variants_use_both_regimes() -> None:
    keys = {ex("3.4").expected(ex("3.4").draw(seed)) for seed in range(60)}
    assert keys == {"A", "B"}


def test_3_5_decay_over_the_new_run() -> None:
    assert ex("3.5").expected() == "A"


@pytest.mark.parametrize("exercise_id", ["3.4", "3.5"])
def test_choices_have_feedback_for_every_option(exercise_id: str) -> None:
    answer = ex(exercise_id).answer_kind
    assert type(answer) is Choice
    assert [o.key for o in answer.options] == ["A", "B", "C", "D"]
    for params in (ex(exercise_id).params, *(ex(exercise_id).draw(s) for s in range(10))):
        assert all(len(o.feedback) > 40 for o in answer.options_for(params))


def test_3_5_variants_are_consistent() -> None:
    for seed in range(20):
        p = ex("3.5").draw(seed)
        assert p["new_peak_lr"] == pytest.approx(p["peak_lr"] * p["factor"])
        assert p["new_total_steps"] * p["factor"] == p["total_steps"]


def test_3_5_pool_answers_worked_by_hand() -> None:
    import math

    for seed in range(60):
        p = ex("3.5").variant(seed)
        right = p["option_" + ex("3.5").expected(p)]
        tb, k = p["new_total_steps"], p["factor"]
        if "decay run" in p["question"]:
            assert right.startswith(f"Over run B's own {tb:,} steps")
        elif "when it stops" in p["question"]:
            # progress 1/k of a cosine: (1 + cos(pi/k))/2 of run B's peak
            assert right.startswith(f"{p['new_peak_lr'] * (1 + math.cos(math.pi / k)) / 2:.2e}")
        else:
            assert right.startswith(f"At step {tb // 2:,}")
