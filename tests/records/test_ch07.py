"""Chapter 7 records: canonical answers worked out by hand."""

from __future__ import annotations

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Function
from workbook.records import ch07

RECORDS = {r.id: r for r in ch07.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_records_in_order() -> None:
    assert list(RECORDS) == ["7.1", "7.2", "7.3", "7.4", "7.5"]
    assert [r.category for r in ch07.EXERCISES] == ["derive"] * 4 + ["build"]


def test_7_1_checkpoint_gb() -> None:
    # 70e9 x (2 + 4 + 4 + 4) B = 980e9 B, + 8 B
    assert ex("7.1").expected() == pytest.approx(980.0)


def test_7_2_write_seconds() -> None:
    assert ex("7.2").expected() == pytest.approx(98.0)  # 980 GB / 10 GB/s


def test_7_3_young_minutes() -> None:
    # sqrt(2 x 98 s x 86,400 s) = sqrt(16,934,400) = 4115.14 s = 68.586 min
    assert ex("7.3").expected() == pytest.approx(68.5857, rel=1e-5)


def test_7_4_dollars_per_crash() -> None:
    # the interval is 7.3's answer: (68.5857 / 2 + 2) min = 36.2929 min = 0.604881 h;
    # 0.604881 x 512 x $2 = $619.40
    assert ex("7.4").expected() == pytest.approx(619.398, rel=1e-5)
    assert ex("7.4").expected({**ex("7.4").params, "interval_min": 68}) == pytest.approx(614.4)


def test_7_5_reference_and_edge_cases() -> None:
    fn = ex("7.5").expected()
    assert fn.__name__ == "optimal_checkpoint_interval"
    interval_min, waste_percent = fn(24.0, 98.0)
    assert interval_min == pytest.approx(68.5857, rel=1e-5)
    # sqrt(2 x 98 / 86,400) = 0.047629 -> 4.7629 %
    assert waste_percent == pytest.approx(4.7629, rel=1e-4)
    answer = ex("7.5").answer_kind
    assert type(answer) is Function
    assert answer.function_name == "optimal_checkpoint_interval"
    raising = 0
    for args in answer.edge_cases:
        try:
            fn(*args)
        except ValueError:
            raising += 1
    assert raising == 4  # zero or negative MTBF or checkpoint time
