"""Ordering answers: items or 1-based numbers, permutation checks, partial credit."""

from __future__ import annotations

import pytest

from autograder.kinds import Ordering

KIND = Ordering(items=("TP", "PP", "DP", "CP"), first_label="innermost",
                last_label="outermost")
RIGHT = ["TP", "PP", "CP", "DP"]


def grade(answer: object, misconceptions: tuple[tuple[object, str], ...] = ()):
    return KIND.grade(answer, RIGHT, {}, misconceptions)


@pytest.mark.parametrize("answer", [
    ["TP", "PP", "CP", "DP"], ("tp", " pp ", "Cp", "DP"), [1, 2, 4, 3], ["TP", 2, "CP", 3],
    "TP -> PP -> CP -> DP", "TP, PP, CP, DP", "tp → pp → cp → dp",
])
def test_right_order_in_any_form(answer: object) -> None:
    verdict = grade(answer)
    assert verdict.status == "correct"
    assert verdict.score == 1.0
    assert verdict.yours == "TP -> PP -> CP -> DP"


def test_leading_word_is_enough_when_unambiguous() -> None:
    kind = Ordering(items=("TP (tensor)", "PP (pipeline)", "DP (data)"))
    verdict = kind.grade(["tp", "pp", "dp"], ["TP (tensor)", "PP (pipeline)", "DP (data)"],
                         {}, ())
    assert verdict.passed


def test_wrong_order_names_the_first_wrong_position_with_partial_credit() -> None:
    # TP, PP right (positions 1, 2); DP and CP swapped: 2 of 4 in place.
    verdict = grade(["TP", "PP", "DP", "CP"])
    assert verdict.status == "wrong"
    assert verdict.score == 0.5
    assert "2 of 4 in the right place" in verdict.message
    assert "position is 3: DP does not belong there" in verdict.message
    assert verdict.details == ("In the right place: positions 1, 2.",)
    assert verdict.expected == ""


def test_ends_are_labelled() -> None:
    verdict = grade(["DP", "PP", "CP", "TP"])
    assert "position is 1 (innermost)" in verdict.message
    assert verdict.score == 0.5  # PP and CP in place


def test_nothing_in_place() -> None:
    verdict = grade(["DP", "CP", "TP", "PP"])
    assert verdict.score == 0.0
    assert verdict.details == ("No item is in its right place yet.",)


def test_misconception_feedback() -> None:
    feedback = "DP tolerates the slowest links: its AllReduce overlaps the backward pass."
    verdict = grade(["DP", "TP", "PP", "CP"], misconceptions=((["DP", "TP", "PP", "CP"],
                                                              feedback),))
    assert verdict.message == feedback


@pytest.mark.parametrize(("answer", "words"), [
    (["TP", "PP", "CP"], ["missing: DP"]),
    (["TP", "TP", "CP", "DP"], ["more than once: TP", "missing: PP"]),
    (["TP", "PP", "CP", "EP"], ["'EP' is not one of the items: TP, PP, DP, CP"]),
    ([1, 2, 3, 5], ["5 is not an item number: use 1 to 4"]),
    ([0, 1, 2, 3], ["0 is not an item number"]),
    ([True, 2, 3, 4], ["True is not one of the items"]),
    (42, ["Answer with a list of the items"]),
    (None, ["Answer with a list of the items"]),
    (["TP"] * 100, ["your list has 100 entries"]),
])
def test_malformed_answers_are_invalid(answer: object, words: list[str]) -> None:
    verdict = grade(answer)
    assert verdict.status == "invalid"
    for word in words:
        assert word in verdict.message


def test_describe() -> None:
    assert KIND.describe() == "a list of all 4 items, innermost to outermost"
