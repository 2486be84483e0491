"""A right choice never gets the advice written for a wrong one, and a wrong one is never
told which option is right.

An option that is right for some numbers and wrong for others (1.6: the lowest ZeRO stage
that fits depends on the model, the GPUs and the budget) carries a confirmation of its own
(``Option.if_right``); a right answer shows that, never the option's wrong-answer feedback.
Feedback to a wrong option says what to compute or what was missed; it never concludes
which option wins nor repeats the right option's text.
"""

from __future__ import annotations

import re
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


CONCLUSION = re.compile(r"\b(?:faster|slower|wins?|is right|the answer is|is the right)\b",
                        re.IGNORECASE)


@pytest.mark.parametrize("record", CHOICES, ids=lambda r: r.id)
def test_feedback_to_a_wrong_option_does_not_name_the_right_one(record: Any) -> None:
    # 2.5 once told a learner who chose plan 2 that "plan 2 is slower": with three options,
    # that is the answer. Feedback says what to compute, not which option wins.
    for params in [dict(record.params), *(record.draw(seed) for seed in range(DRAWS))]:
        options = record.answer_kind.options_for(params)
        right = next(o for o in options if o.key == record.expected(params))
        for option in options:
            if option.key == right.key:
                continue
            verdict = record.grade(option.key, params)
            said = "\n".join([verdict.message, *verdict.details])
            assert not CONCLUSION.search(said), (record.id, option.key, said)
            assert right.text not in said, (record.id, option.key, said)


def test_the_conclusion_search_finds_the_old_wording() -> None:
    assert CONCLUSION.search("The larger micro-batch here is less efficient, so plan 2 is "
                             "slower.")
    assert not CONCLUSION.search("add recomputation's 4/3 and compare the two totals.")
