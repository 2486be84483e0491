"""Advice about a slip of a factor 1,000 fits the exercise's unit.

A unit prefix is suggested only for a unit that takes one (GB and MB, ms and s), and the
example unit offered is one the exercise accepts; a count of steps, a plain number, a
duration in days or an amount of dollars is told to check its scale instead, never to
type "MB".
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from autograder.kinds import Numeric
from autograder.unit_table import COUNT_PREFIX, MONEY, RATIO, target_unit
from autograder.units import UnitError, parse_quantity
from workbook.records import all_challenges, all_exercises

NUMERIC = [r for r in (*all_exercises(), *all_challenges()) if type(r.answer_kind) is Numeric]
EXAMPLE = re.compile(r"'<number> ([^']+)'")


def _advice(record: Any, factor: float) -> str:
    verdict = record.grade(float(record.expected()) * factor)
    return "" if verdict.passed else verdict.message


@pytest.mark.parametrize("record", NUMERIC, ids=lambda r: r.id)
def test_advice_for_a_factor_of_1000_fits_the_unit(record: Any) -> None:
    unit = record.answer_kind.unit
    target = target_unit(unit)
    prefixless = (target.family in (MONEY, RATIO) or target.family.startswith(COUNT_PREFIX)
                  or (target.family == "time" and target.factor >= 60))
    for factor in (1e3, 1e-3):
        advice = _advice(record, factor)
        if not advice or "check" not in advice:
            continue  # a misconception of the exercise's own explains it
        if prefixless:
            assert "unit prefix" not in advice, (record.id, advice)
        for example in EXAMPLE.findall(advice):
            try:
                parse_quantity(f"1 {example}", unit)
            except UnitError:
                pytest.fail(f"{record.id} ({unit}): the example '{example}' is not accepted")


def test_the_old_advice_is_caught() -> None:
    steps = next(r for r in NUMERIC if r.answer_kind.unit == "steps")
    with pytest.raises(UnitError):
        parse_quantity("1 MB", steps.answer_kind.unit)
    assert "unit prefix" not in _advice(steps, 1e3)
