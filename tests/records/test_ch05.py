"""Chapter 5 records: canonical answers worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Debug
from workbook.records import ch05

RECORDS = {r.id: r for r in ch05.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_ids_in_order() -> None:
    assert list(RECORDS) == ["5.1", "5.2", "5.3", "5.4", "5.5", "5.6"]
    assert [r.category for r in RECORDS.values()] == [
        "derive", "derive", "derive", "derive", "debug", "trace"]


def test_5_1_bubble_over_compute() -> None:
    # (4-1)/12 = 25 %
    assert ex("5.1").expected() == pytest.approx(25.0)


def test_5_1_over_total_is_a_misconception() -> None:
    # 3/15 = 20 %
    assert pytest.approx(20.0) in [w for w, _ in ex("5.1").wrong_answers()]


def test_5_2_first_stage_holds_p() -> None:
    # stage 0 holds p = 4 microbatches x 2 GB = 8 GB
    assert ex("5.2").expected() == pytest.approx(8.0)


def test_5_2_later_stage() -> None:
    # stage 5 of 8 holds 8 - 5 = 3 microbatches x 1.5 GB = 4.5 GB
    params = dict(pp=8, m=16, stage=5, activation_gb=1.5)
    assert ex("5.2").expected(params) == pytest.approx(4.5)


def test_5_2_misconceptions() -> None:
    # p - 1 = 3 x 2 = 6 GB (warm-up only); GPipe 12 x 2 = 24 GB
    wrong = [w for w, _ in ex("5.2").wrong_answers()]
    assert wrong == [pytest.approx(6.0), pytest.approx(24.0)]


def test_5_3_interleaved() -> None:
    # 3 / (12 x 4) = 6.25 %
    assert ex("5.3").expected() == pytest.approx(6.25)


def test_5_4_p2p_volume() -> None:
    # (16 - 1) boundaries x 12 microbatches x (0.5 + 0.5) GB = 180 GB
    assert ex("5.4").expected() == pytest.approx(180.0)


def _run(code: str, *args: Any) -> Any:
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 - the exercise's own, fixed source
    return namespace["bubble_over_compute"](*args)


def test_5_5_buggy_code_gives_the_total_time_share() -> None:
    answer = ex("5.5").answer_kind
    assert type(answer) is Debug
    # buggy: 3 / (3 + 12) = 0.2
    assert _run(answer.code, 4, 12) == pytest.approx(0.2)


def test_5_5_fixing_the_named_line_gives_the_promised_value() -> None:
    answer = ex("5.5").answer_kind
    assert type(answer) is Debug
    line, fixed = ex("5.5").expected()
    assert line == 6
    lines = answer.code.strip("\n").split("\n")
    assert lines[line - 1].strip().startswith("return")
    lines[line - 1] = "    return bubble_slots / compute_slots"
    patched = "\n".join(lines) + "\n"
    # 3 / 12 = 0.25; interleaved 3 / 48 = 0.0625
    assert _run(patched, 4, 12) == pytest.approx(0.25) == fixed(4, 12)
    assert _run(patched, 4, 12, 4) == pytest.approx(0.0625) == fixed(4, 12, 4)


def test_5_6_strictly_below() -> None:
    # 7 / 0.05 = 140 gives exactly 5 %; 141 is the first below
    assert ex("5.6").expected() == 141


def test_5_6_variant() -> None:
    # 15 / 0.02 = 750 exactly -> 751
    assert ex("5.6").expected(dict(pp=16, target_pct=2)) == 751


def test_5_6_misconceptions() -> None:
    # 140 (not strict), 8/0.05 = 160 -> 161 (p instead of p-1), 7 x 95/5 = 133 -> 134 (over total)
    wrong = [w for w, _ in ex("5.6").wrong_answers()]
    assert wrong == [pytest.approx(140.0), 161, 134]
