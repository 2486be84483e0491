"""Debug answers: the line first, then the fixed function."""

from __future__ import annotations

import random
from typing import Any

import pytest

from autograder.kinds import Debug, Function

CODE = """def allreduce_time_s(m_gb, n, bw_gbs):
    data_per_gpu = 2 * m_gb * (n - 1) / n
    steps = 2 * (n - 1)
    per_step_gb = m_gb / n
    per_step_s = per_step_gb / bw_gbs
    total_s = 2 * steps * per_step_s
    return total_s
"""


def fixed_reference(m_gb: float, n: int, bw_gbs: float) -> float:
    # 2(N-1) steps of M/N GB each at bw_gbs.
    return 2 * (n - 1) * (m_gb / n) / bw_gbs


def draw(rng: random.Random) -> tuple[Any, ...]:
    return (rng.choice([1.0, 2.0, 4.0]), rng.choice([2, 8, 16]), rng.choice([50.0, 100.0]))


FIX = Function(function_name="allreduce_time_s", signature="(m_gb, n, bw_gbs)", cases=draw,
               edge_cases=((2.0, 8, 50.0),), n_random=6)
KIND = Debug(code=CODE, fix=FIX)
EXPECTED = (6, fixed_reference)  # line 6 counts both phases twice


def grade(answer: object, misconceptions: tuple[tuple[object, str], ...] = ()):
    return KIND.grade(answer, EXPECTED, {}, misconceptions)


def good_fix(m_gb: float, n: int, bw_gbs: float) -> float:
    steps = 2 * (n - 1)
    return steps * (m_gb / n) / bw_gbs


def still_buggy(m_gb: float, n: int, bw_gbs: float) -> float:
    return 2 * good_fix(m_gb, n, bw_gbs)


def test_lines_are_numbered_from_one() -> None:
    assert len(KIND.lines) == 7
    assert KIND.lines[5].strip() == "total_s = 2 * steps * per_step_s"


@pytest.mark.parametrize("answer", [(6, good_fix), [6, good_fix], {"line": 6, "fix": good_fix},
                                    {"Line": "6", "fn": good_fix}, ("line 6", good_fix)])
def test_right_line_and_fix(answer: object) -> None:
    verdict = grade(answer)
    assert verdict.status == "correct"
    assert verdict.score == 1.0


@pytest.mark.parametrize("answer", [6, "6", "line 6", "L6", 6.0, (6,), (6, None),
                                    {"line": 6}])
def test_right_line_alone_is_half_way(answer: object) -> None:
    verdict = grade(answer)
    assert verdict.status == "wrong"
    assert verdict.score == 0.5
    assert verdict.message.startswith("Right line. Now write the fixed function "
                                      "allreduce_time_s")


def test_right_line_with_a_wrong_fix() -> None:
    verdict = grade((6, still_buggy))
    assert verdict.status == "wrong"
    # every case fails, so the score stays at the line's half
    assert verdict.score == 0.5
    assert verdict.message.startswith("Right line, but the fixed function is not right yet: "
                                      "allreduce_time_s(2.0, 8, 50.0) returned 0.14; "
                                      "expected 0.07")


def test_right_line_with_something_not_callable() -> None:
    verdict = grade((6, 0.07))
    assert verdict.status == "invalid"
    assert verdict.message.startswith("Right line. Pass the function itself")


def test_wrong_line_says_so_and_hints() -> None:
    verdict = grade(3)
    assert verdict.status == "wrong"
    assert verdict.score == 0.0
    assert verdict.message == ("Line 3 is not where the bug is (steps = 2 * (n - 1)).")
    assert "small, easy numbers" in verdict.details[0]


def test_wrong_line_misconception_says_what_the_line_does_right() -> None:
    note = "Line 3 is right: 2(N-1) steps already cover both phases."
    verdict = grade((3, good_fix), misconceptions=((3, note),))
    assert verdict.message.endswith(note)
    assert "Your fixed function was not checked yet: find the line first." in verdict.details


@pytest.mark.parametrize(("answer", "words"), [
    (0, ["give a line number from 1 to 7 (got 0)"]),
    (8, ["from 1 to 7 (got 8)"]),
    ("six", ["could not read 'six' as a line number"]),
    (True, ["could not read True"]),
    (6.5, ["could not read 6.5"]),
    (None, ["could not read None"]),
    (good_fix, ["the line number is missing"]),
    ((6, good_fix, 1), ["got 3 values"]),
    ({"fix": good_fix}, ["no 'line' key"]),
])
def test_malformed_answers_are_invalid(answer: object, words: list[str]) -> None:
    verdict = grade(answer)
    assert verdict.status == "invalid"
    for word in words:
        assert word in verdict.message


def test_describe() -> None:
    assert KIND.describe() == "(line number, fixed function allreduce_time_s)"
