"""A right choice never gets the advice written for a wrong one.

An option that is right for some numbers and wrong for others (1.6: the lowest ZeRO stage
that fits depends on the model, the GPUs and the budget) carries a confirmation of its own
(``Option.if_right``); a right answer shows that, never the option's wrong-answer feedback.
"""

from __future__ import annotations

from typing import Any

import pytest

from autograder.kinds import Choice
from autograder.kinds.choice import Option
from workbook.records import by_id

DRAWS = 40
CHOICES = [r for r in by_id().values() if isinstance(r.answer_kind, Choice)]


def _right_keys(record: Any) -> dict[str, set[bool]]:
    """Option key -> whether it was right, over the printed numbers and many draws."""
    seen: dict[str, set[bool]] = {}
    for params in [dict(record.params), *(record.draw(seed) for seed in range(DRAWS))]:
        right = record.expected(params)
        for option in record.answer_kind.options:
            seen.setdefault(option.key, set()).add(option.key == right)
    return seen


@pytest.mark.parametrize("record", CHOICES, ids=lambda r: r.id)
def test_an_option_right_only_sometimes_has_its_own_confirmation(record: Any) -> None:
    kind = record.answer_kind
    if all("{" in o.feedback for o in kind.options):
        pytest.skip("dealt per variant: deal() gives the right entry's own feedback")
    both = [key for key, outcomes in _right_keys(record).items() if outcomes == {True, False}]
    missing = [o.key for o in kind.options if o.key in both and not o.if_right]
    assert not missing, f"{record.id}: options {missing} are right for some numbers"


@pytest.mark.parametrize("record", CHOICES, ids=lambda r: r.id)
def test_a_right_answer_shows_no_wrong_answer_feedback(record: Any) -> None:
    for params in [dict(record.params), *(record.draw(seed) for seed in range(DRAWS))]:
        right = record.expected(params)
        verdict = record.grade(right, params)
        assert verdict.passed, (record.id, params)
        option = next(o for o in record.answer_kind.options_for(params) if o.key == right)
        if option.if_right:
            assert option.feedback not in verdict.details or option.feedback == option.if_right


def test_the_confirmation_replaces_the_advice() -> None:
    kind = Choice(options=(Option("A", "x", "Check whether a lower stage fits.", "It fits."),
                           Option("B", "y", "No.")))
    verdict = kind.grade("A", "A", {}, ())
    assert verdict.details == ("It fits.",)
    assert kind.grade("A", "B", {}, ()).message == "Check whether a lower stage fits."
