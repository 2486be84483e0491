"""Enough different numbers for a class: over 400 students' seeds, every exercise of
chapters 0-8 gives at least 50 answers that its own checker tells apart, so two students
rarely share one and copying between them shows.

"Different" is measured with the exercise's own tolerance: two expected values within it
would accept each other, so they count once (values are sorted and a new one counts when it
is outside the tolerance of the last one counted). A choice question counts distinct
scenarios (its params: numbers, question and dealt order), a debug exercise distinct
(buggy line, program shown) pairs. A function to write is graded on hidden inputs drawn
from each student's seed, so it has no single answer to count; the last test checks those
inputs do differ between students.

A few questions cannot reach 50 honestly; their floor and the reason are in ``FEWER``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Choice, Numeric
from autograder.kinds._common import close
from workbook.records import all_challenges, all_exercises

SEEDS = range(400)
FLOOR = 50
#: exercise id -> (floor, why the question cannot give more distinct answers)
FEWER: dict[str, tuple[int, str]] = {
    "0.6": (3, "three buggy programs; the hidden tests change with the seed, the code shown "
               "does not (a bigger pool of programs is the way to more)"),
    "5.5": (3, "three buggy programs, as 0.6"),
    "6.4": (3, "K/V heads per GPU is n_kv / TP or 1 (replicated): besides the printed 1, "
               "real GQA configurations give only 2, 4 and 8"),
    "8.1": (2, "the smallest normal is 2^(1 - bias); the formats taught have three biases "
               "(7, 15, 127), one of which is printed"),
    "8.3": (4, "the memory ratio depends only on the recipe and the optimizer (3 x 3 "
               "combinations, five distinct ratios, one printed); the model size cancels"),
}
RECORDS = [r for r in (*all_exercises(), *all_challenges()) if r.chapter <= 8]


def _is_debug(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and callable(value[-1])


def _is_function(record: Exercise) -> bool:
    return record.answer_kind.function_spec() is not None and not _is_debug(record.expected())


def _numeric_spread(values: list[float], rel_tol: float, abs_tol: float) -> int:
    """How many of ``values`` a checker with this tolerance tells apart (greedy, sorted)."""
    count, last = 0, math.nan
    for value in sorted(values):
        if math.isnan(last) or abs(value - last) > max(rel_tol * max(abs(value), abs(last)),
                                                       abs_tol):
            count, last = count + 1, value
    return count


def spread(record: Exercise) -> int:
    """Distinct answers (or scenarios) over ``SEEDS``, as the module docstring defines."""
    drawn = [record.variant(seed) for seed in SEEDS]
    kind = record.answer_kind
    if _is_debug(record.expected()):
        return len({(repr(record.expected(p)[:-1]), kind.prompt_extra(p)) for p in drawn})
    if isinstance(kind, Choice):
        return len({repr(sorted(p.items())) for p in drawn})
    if isinstance(kind, Numeric):
        return _numeric_spread([float(record.expected(p)) for p in drawn], kind.rel_tol,
                               kind.abs_tol)
    return len({repr(record.expected(p)) for p in drawn})


@pytest.mark.parametrize("record", [r for r in RECORDS if not _is_function(r)],
                         ids=lambda r: r.id)
def test_a_class_of_a_hundred_rarely_shares_an_answer(record: Exercise) -> None:
    floor, why = FEWER.get(record.id, (FLOOR, ""))
    got = spread(record)
    assert got >= floor, f"{record.id}: {got} distinct answers over {len(SEEDS)} seeds, " \
                         f"want >= {floor} {why}"


def test_the_exceptions_are_real_exceptions() -> None:
    """A named exception that reaches the common floor should lose its exception."""
    for record in RECORDS:
        if record.id in FEWER:
            assert spread(record) < FLOOR, f"{record.id} now reaches {FLOOR}: drop it from FEWER"


def test_the_measure_uses_the_tolerance() -> None:
    """Values inside one tolerance count once; values just outside count twice."""
    assert _numeric_spread([100.0, 100.4, 100.9], 0.005, 0.0) == 2
    assert _numeric_spread([100.0, 101.0, 102.0], 0.005, 0.0) == 3
    assert _numeric_spread([3.0, 3.0, 3.4], 0.0, 0.5) == 1


@pytest.mark.parametrize("record", [r for r in RECORDS if _is_function(r)], ids=lambda r: r.id)
def test_a_function_to_write_gets_each_students_own_hidden_inputs(record: Exercise) -> None:
    cases = [repr(record.personalised(f"student-{i}").answer_kind.test_cases())  # type: ignore[attr-defined]
             for i in range(20)]
    assert len(set(cases)) == 20


@pytest.mark.parametrize("record", [r for r in RECORDS if type(r.answer_kind) is Numeric],
                         ids=lambda r: r.id)
def test_no_mistake_is_accepted_anywhere_in_the_wider_ranges(record: Exercise) -> None:
    """Over every seed a class would draw, no misconception lands inside the tolerance
    (tests/records/test_feedback.py checks 60 draws; the ranges here are wide enough that a
    rare combination, e.g. a ratio of 1.001 whose inverse 0.999 is a mistake, must be ruled
    out for all 400)."""
    kind = record.answer_kind
    assert isinstance(kind, Numeric)
    for seed in SEEDS:
        params = record.variant(seed)
        want = float(record.expected(params))
        for wrong, feedback in record.wrong_answers(params):
            value = float(wrong)
            if not close(value, want, 1e-9):
                assert not close(value, want, kind.rel_tol, kind.abs_tol), (
                    record.id, seed, value, want, feedback)
