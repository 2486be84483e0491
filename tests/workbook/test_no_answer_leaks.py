"""No message, example or placeholder ever shows an exercise's expected answer.

Swept over every exercise: the answer cell's placeholder, the card's placeholder, the
kind's description, every message for an answer that cannot be read or has the wrong
unit, and the prompt and notes. The expected value is looked for as a number token, read
the way a learner would read it (commas, a unit or a dollar sign around it).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from autograder.exercise import same_answer
from autograder.kinds import Numeric
from autograder.units import format_quantity
from workbook import widgets
from workbook.records import all_challenges, all_exercises

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)
# Answers that cannot be read, or are in another family of units than the one asked.
UNREADABLE = ("abc", "", "70 ms", "1.75 GB", "5 GPUs", "12 parsecs", "$5", "40%")
NUMERIC = [r for r in all_exercises() + all_challenges() if type(r.answer_kind) is Numeric]


def numbers_in(text: str) -> list[float]:
    return [float(t.replace(",", "")) for t in NUMBER.findall(text) if t.strip("-,")]


def leaks(text: str, expected: float) -> list[float]:
    """Numbers in ``text`` equal to ``expected`` (to 0.1%)."""
    return [n for n in numbers_in(text) if same_answer(n, expected)]


def _card_placeholder(record: Any) -> str:
    card = widgets.widget(record.id)
    return str(card.input.submit_box.placeholder)


def _messages(record: Any) -> list[str]:
    texts = []
    for answer in UNREADABLE:
        verdict = record.grade(answer)
        if verdict.status == "invalid":
            texts.append(verdict.message)
    return texts


@pytest.mark.parametrize("record", NUMERIC, ids=lambda r: r.id)
def test_no_example_or_message_equals_the_answer(record: Any) -> None:
    expected = float(record.expected())
    texts = {
        "answer cell": record.answer_kind.placeholder(record.names),
        "card placeholder": _card_placeholder(record),
        "description": record.answer_kind.describe(),
        **{f"message for an unreadable answer {i}": m for i, m in enumerate(_messages(record))},
    }
    found = {where: leaks(text, expected) for where, text in texts.items()}
    assert not any(found.values()), f"{record.id}: answer {expected} shown in {found}"


@pytest.mark.parametrize("record", NUMERIC, ids=lambda r: r.id)
def test_the_prompt_and_notes_do_not_state_the_answer(record: Any) -> None:
    expected = float(record.expected())
    text = f"{record.render_prompt()}\n{record.notes}"
    shown = format_quantity(expected, record.answer_kind.unit)
    assert not leaks(text, expected), (record.id, shown)


def test_the_sweep_finds_a_leak_when_there_is_one() -> None:
    # The messages this sweep replaced: 0.1's answer is 1.75 GB, 0.2's 70 ms.
    assert leaks("Expected a size such as '1.75 GB'; got '70 ms'", 1.75) == [1.75]
    assert leaks("a time such as '70 ms'", 70.0) == [70.0]
    assert leaks("16,384 x 77 x 24 x $2 = $60.6M", 60.6) == [60.6]
    assert not leaks("a number in GB, or text such as '<number> GB'", 1.75)
