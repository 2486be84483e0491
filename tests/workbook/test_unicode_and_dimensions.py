"""Every Unicode number character is read or refused with a message, never a crash; a unit
of another dimension is refused by name, on every numeric exercise.

Decimal digits of any script (Arabic-Indic "١٥", fullwidth "１５") are digits and are read;
superscripts, fractions and Roman numerals ("¹5", "½", "Ⅻ") are not numbers a learner
types as an answer and get a message saying what was expected.
"""

from __future__ import annotations

import sys
import unicodedata
from typing import Any

import pytest

from autograder.kinds import Numeric
from autograder.unit_table import OTHER_DIMENSIONS
from autograder.units import UnitError, ascii_digits, parse_quantity
from workbook.records import all_challenges, all_exercises, all_labs

RECORDS = [*all_exercises(), *all_challenges(), *all_labs()]
NUMERIC = [r for r in RECORDS if type(r.answer_kind) is Numeric]
#: every character Unicode calls a number: decimal digits, other digits, letter numbers
NUMBER_CHARACTERS = [chr(c) for c in range(sys.maxunicode + 1)
                     if unicodedata.category(chr(c)) in ("Nd", "No", "Nl")]
#: one of each kind of number character, from several scripts
SAMPLE = ("¹", "²", "⁵", "₃", "½", "⅓", "Ⅻ", "ⅻ", "①", "⑩", "٣", "۵", "५", "৩", "５", "𝟓",
          "〇", "零", "߃", "᠕", "𐒡", "🄂")


def _forms(character: str) -> list[str]:
    return [character, f"{character}5", f"5{character}", f"1,{character}", f"{character} GB",
            f"[{character}, 1, 2]"]


def test_every_number_character_is_read_or_refused_by_the_unit_reader() -> None:
    for character in NUMBER_CHARACTERS:
        for text in (character, f"{character}5", f"5{character}", f"0.{character}"):
            try:
                parse_quantity(text, "GB")
            except UnitError:
                pass  # refused with a message: fine


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_number_characters_never_crash_a_check(record: Any) -> None:
    for character in SAMPLE:
        for text in _forms(character):
            verdict = record.grade(text)  # any exception fails the test
            assert verdict.status in ("correct", "wrong", "invalid", "partial"), verdict.status
            if verdict.status == "invalid":
                assert verdict.message.strip()


def test_decimal_digits_of_any_script_are_digits() -> None:
    assert ascii_digits("١٥ GB") == "15 GB"
    assert parse_quantity("１.７５ GB", "GB") == pytest.approx(1.75)
    assert parse_quantity("۱۷۵۰ MB", "GB") == pytest.approx(1.75)
    for text in ("¹5", "½", "Ⅻ", "①"):
        with pytest.raises(UnitError, match="could not"):
            parse_quantity(text, "")
    assert parse_quantity("2×10⁵", "") == 2e5  # a superscript power of ten is still read


@pytest.mark.parametrize("record", NUMERIC, ids=lambda r: r.id)
def test_a_unit_of_another_dimension_is_refused(record: Any) -> None:
    expected = float(record.expected())
    for family, words in OTHER_DIMENSIONS.items():
        verdict = record.grade(f"{expected:.6g} {words[0]}")
        assert verdict.status == "invalid", (record.id, words[0], verdict.message)
        assert family in verdict.message


def test_a_learning_rate_in_kilograms_is_refused() -> None:
    with pytest.raises(UnitError, match="which is a mass"):
        parse_quantity("0.0024 kg", "")
    assert parse_quantity("128 GPUs", "") == 128  # a counting word is still fine
