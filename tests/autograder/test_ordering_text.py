"""An order typed as text is read however a learner writes it.

Commas, arrows, semicolons, spaces alone, a list written as text, quotes around items:
each reads as the same order. Text that names fewer items than the exercise has says so
and lists the items, instead of calling the whole text an unknown item.
"""

from __future__ import annotations

import pytest

from autograder.kinds import Ordering

KIND = Ordering(items=("PP", "DP", "TP", "CP"), first_label="innermost",
                last_label="outermost")
RIGHT = ("TP", "CP", "PP", "DP")


@pytest.mark.parametrize("text", [
    "TP, CP, PP, DP", "TP -> CP -> PP -> DP", "TP CP PP DP", "tp > cp > pp > dp",
    '["TP", "CP", "PP", "DP"]', "('TP','CP','PP','DP')", "[TP, CP, PP, DP]",
    "'TP', 'CP', 'PP', 'DP'", "TP; CP; PP; DP", " TP  CP  PP  DP ", "3, 4, 1, 2",
])
def test_every_way_of_writing_the_order_reads_the_same(text: str) -> None:
    assert KIND.grade(text, RIGHT, {}, ()).status == "correct", text


@pytest.mark.parametrize("text", ["TP CP PP", "TPCPPPDP", "TP"])
def test_too_few_items_says_so(text: str) -> None:
    verdict = KIND.grade(text, RIGHT, {}, ())
    assert verdict.status == "invalid"
    assert "Give all 4 items" in verdict.message and "PP, DP, TP, CP" in verdict.message


def test_a_wrong_order_typed_with_spaces_is_graded() -> None:
    verdict = KIND.grade("TP PP CP DP", RIGHT, {}, ())
    assert verdict.status == "wrong" and verdict.score == 0.5
