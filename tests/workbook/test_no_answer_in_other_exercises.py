"""No exercise's text prints another exercise's answer.

A learner reads every prompt and its notes on the page, and a hint, a solution or the
feedback to a wrong answer of one exercise before answering another. None of them may
state another exercise's answer in any unit, rounding or notation (the page leak test's
search). A question that builds on an earlier answer says "your answer to 7.1" instead.
The one exception: an answer that contains another (9.10's layout holds 9.1's
data-parallel degree, and its memory the weights per GPU of 9.3), in 9.10's own solution.
"""

from __future__ import annotations

from typing import Any

import page_text as pt
import pytest
import test_page_shows_no_answer as page_test

from autograder.kinds import Numeric
from autograder.unit_table import target_unit
from workbook.records import all_challenges, all_exercises

RECORDS = [*all_exercises(), *all_challenges()]
#: exercise -> the exercises whose answers its own answer contains
CONTAINS = {"9.10": {"9.1", "9.3"}}


def texts_of(record: Any) -> dict[str, str]:
    """Everything a learner can read of ``record`` before or while answering it."""
    found = {"prompt": record.render_prompt(), "notes": record.render_notes(),
             "explanation": record.render_explanation(), **{
                 f"hint {i + 1}": record.render_hint(i) for i in range(len(record.hints))}}
    found.update({f"feedback {k + 1}": feedback
                  for k, (_, feedback) in enumerate(record.wrong_answers())})
    return found


@pytest.mark.parametrize("chapter", sorted({r.chapter for r in RECORDS}))
def test_no_text_prints_another_exercises_answer(chapter: int) -> None:
    answers = page_test.answers_of(chapter)
    found = []
    for record in (r for r in RECORDS if r.chapter == chapter):
        others = {k: v for k, v in answers.items()
                  if k != record.id and k not in CONTAINS.get(record.id, set())}
        for where, text in texts_of(record).items():
            for exercise_id, lines in page_test.leaks([pt.prose(text)], others).items():
                found.append(f"{exercise_id}'s answer in {record.id}'s {where}: {lines[0]}")
    assert not found, "\n".join(found)


def test_the_search_finds_a_chained_number() -> None:
    value, unit = 98.0, "s"
    forms, family = pt.answer_forms(value, unit), target_unit(unit).family
    assert pt.found_in("one checkpoint takes C = 98 s", forms, family, (value, unit)) == ["98"]
    assert type(next(r for r in RECORDS if r.id == "7.2").answer_kind) is Numeric


@pytest.mark.parametrize("chapter", sorted({r.chapter for r in RECORDS}))
def test_no_hint_states_its_own_answer(chapter: int) -> None:
    # a hint leads to the answer; the last rung still leaves the arithmetic to the learner
    answers = page_test.answers_of(chapter)
    found = []
    for record in (r for r in RECORDS if r.chapter == chapter and r.id in answers):
        hints = [pt.prose(record.render_hint(i)) for i in range(len(record.hints))]
        for lines in page_test.leaks(hints, {record.id: answers[record.id]}).values():
            found.append(f"{record.id}: {lines[0]}")
    assert not found, "\n".join(found)
