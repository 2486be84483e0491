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
from autograder.units import UnitError, format_quantity, parse_quantity
from workbook.learner import widgets
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


QUANTITY = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*([A-Za-z$%]+(?:/s)?)")


def quantity_leaks(text: str, expected: float, unit: str) -> list[str]:
    """Quantities with a unit in ``text`` ("1750 MB") equal to ``expected`` in ``unit``.
    Bare numbers ("8 times too large") are not quantities and are not compared; neither
    is anything for an answer without a unit."""
    found: list[str] = []
    if not unit:
        return found
    for number, word in QUANTITY.findall(text):
        try:
            value = parse_quantity(f"{number} {word}", unit)
        except UnitError:
            continue
        if same_answer(value, expected):
            found.append(f"{number} {word}")
    return found


def test_the_quantity_sweep_finds_the_old_example() -> None:
    # The x1000 slip once suggested "e.g. '1750 MB'": 0.1's answer, 1.75 GB.
    assert quantity_leaks("type the unit you worked in, e.g. '1750 MB'", 1.75, "GB")
    assert not quantity_leaks("your answer is 8 times too large", 8.0, "")


# Wrong answers a learner makes by a slip: unit prefixes, bits, percent, time units, a
# factor of two, binary prefixes, or just a miss. Their feedback must not show the answer.
SLIP_FACTORS = (1e3, 1e-3, 1e6, 8.0, 0.125, 100.0, 0.01, 60.0, 2.0, 0.5,
                2**30 / 1e9, 1e9 / 2**30, 1.3, 0.7)


@pytest.mark.parametrize("record", NUMERIC, ids=lambda r: r.id)
def test_feedback_on_a_slip_does_not_show_the_answer(record: Any) -> None:
    expected = float(record.expected())
    found = {}
    for factor in SLIP_FACTORS:
        verdict = record.grade(expected * factor)
        if verdict.passed:
            continue  # inside the tolerance (a factor close to 1 for a loose exercise)
        text = "\n".join([verdict.message, *verdict.details])
        if quantity_leaks(text, expected, record.answer_kind.unit):
            found[factor] = text
    assert not found, f"{record.id}: the answer {expected} appears in {found}"


FACTOR_WORDS = re.compile(r"\d[\d,.^]*\s*(?:times|x|×)\s+(?:too|more|less|smaller|larger)\b",
                          re.IGNORECASE)


@pytest.mark.parametrize("record", NUMERIC, ids=lambda r: r.id)
def test_feedback_never_says_by_what_factor_the_answer_is_off(record: Any) -> None:
    # "2 times too small" and the learner's own number give the answer by one multiplication;
    # feedback names the direction and the likely cause only.
    expected = float(record.expected())
    found = {}
    for factor in (*SLIP_FACTORS, 3.0, 1 / 3, 4.0, 0.25, 10.0, 0.1):
        verdict = record.grade(expected * factor)
        text = "\n".join([verdict.message, *verdict.details])
        if not verdict.passed and FACTOR_WORDS.search(text):
            found[factor] = text
    assert not found, f"{record.id}: {found}"


def test_the_factor_sweep_finds_the_old_wording() -> None:
    assert FACTOR_WORDS.search("Not yet: your answer is 2 times too small -- check")
    assert FACTOR_WORDS.search("your answer is 1,000 times too large")
    assert not FACTOR_WORDS.search("Not yet: your answer is too small -- check the unit prefix")
