"""Chapter 1 records: canonical answers worked out by hand."""

from __future__ import annotations

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Choice
from workbook.records import ch01

RECORDS = {r.id: r for r in ch01.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_ids_in_order() -> None:
    assert list(RECORDS) == ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6"]


def test_1_1_no_zero() -> None:
    assert ex("1.1").expected() == pytest.approx(112.0)  # 16 x 7


def test_1_1_gib_misreading_is_a_misconception() -> None:
    # 112e9 / 2^30 = 104.31 GiB
    assert any(w == pytest.approx(104.31, rel=1e-4) for w, _ in ex("1.1").wrong_answers())


def test_1_2_stage_one() -> None:
    assert ex("1.2").expected() == pytest.approx(29.3125)  # (4 + 12/64) x 7 = 4.1875 x 7


def test_1_3_stage_two() -> None:
    assert ex("1.3").expected() == pytest.approx(15.53125)  # (2 + 14/64) x 7 = 2.21875 x 7


def test_1_4_stage_three() -> None:
    assert ex("1.4").expected() == pytest.approx(1.75)  # 16/64 x 7


def test_1_2_to_1_4_match_zero_figure_one() -> None:
    # ZeRO Figure 1: 7.5B on 64 GPUs -> 31.4, 16.6, 1.9 GB
    p = {"n_params_b": 7.5, "n_gpus": 64}
    got = [ex(i).expected(p) for i in ("1.2", "1.3", "1.4")]
    assert got == pytest.approx([31.40625, 16.640625, 1.875])


def test_1_5_zero3_communication() -> None:
    # 3 x 14 GB x 63/64 = 41.34375 GB (not 42)
    assert ex("1.5").expected() == pytest.approx(41.34375)


def test_1_5_dp_volume_is_a_misconception() -> None:
    # 2 x 14 x 63/64 = 27.5625 GB
    assert any(w == pytest.approx(27.5625) for w, _ in ex("1.5").wrong_answers())


def test_1_6_stage_three_with_explicit_budget() -> None:
    # stage 3: 30 x 16/8 = 60 GB + 20 GB = 80 GB <= 84 GB; stage 2: 112.5 + 20 > 84
    assert ex("1.6").expected() == "D"


def test_1_6_other_answers() -> None:
    base = dict(ex("1.6").params)
    # 78 GB usable: 80 GB does not fit -> none
    assert ex("1.6").expected({**base, "budget_gb": 78.0}) == "E"
    # 7B on 64 GPUs, 12 GB activations, 76 GB: stage 1 = 29.3 + 12 = 41.3 GB fits
    assert ex("1.6").expected({**base, "n_params_b": 7.0, "n_gpus": 64,
                               "activations_gb": 12.0, "budget_gb": 76.0}) == "B"
    # 13B on 16 GPUs, 8 GB, 38 GB: stage 1 = 13 x 4.75 = 61.75; stage 2 = 13 x 2.875 =
    # 37.375 + 8 = 45.4 > 38; stage 3 = 13 x 1 = 13 + 8 = 21 -> D
    assert ex("1.6").expected({**base, "n_params_b": 13.0, "n_gpus": 16,
                               "activations_gb": 8.0, "budget_gb": 38.0}) == "D"
    # 13B on 64 GPUs, 8 GB, 38 GB: stage 1 = 13 x 4.1875 = 54.4; stage 2 = 13 x 2.21875 =
    # 28.84 + 8 = 36.8 <= 38 -> C
    assert ex("1.6").expected({**base, "n_params_b": 13.0, "n_gpus": 64,
                               "activations_gb": 8.0, "budget_gb": 38.0}) == "C"


def test_1_6_stage_zero_never_fits_in_variants() -> None:
    # option A's feedback says stage 0 is far over budget; the variants must keep that true
    answers = {ex("1.6").expected(ex("1.6").draw(s)) for s in range(200)}
    assert "A" not in answers
    assert len(answers) >= 3


def test_1_6_has_five_options() -> None:
    answer = ex("1.6").answer_kind
    assert type(answer) is Choice
    assert [o.key for o in answer.options] == ["A", "B", "C", "D", "E"]
