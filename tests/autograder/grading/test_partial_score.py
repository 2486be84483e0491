"""A gradebook row keeps the fraction of the points partial credit would give: the
verdict's score where the answer kind grades in parts or cases, else all or nothing."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any, cast

import pytest

from autograder.exercise import Exercise
from autograder.grading.compare import _score
from autograder.kinds import (
    Choice,
    Constraints,
    Debug,
    Function,
    Lab,
    Numeric,
    Ordering,
    Trace,
)
from autograder.kinds.base import AnswerKind, Verdict
from autograder.kinds.named_numbers import NamedNumbers


def _record(kind: AnswerKind | type[AnswerKind]) -> Exercise:
    return cast(Exercise, SimpleNamespace(answer_kind=kind))


@pytest.mark.parametrize("kind", [Function, Debug, NamedNumbers, Constraints, Trace, Lab])
def test_kinds_graded_in_parts_or_cases_offer_partial_credit(kind: type[AnswerKind]) -> None:
    assert kind.partial_credit is True


@pytest.mark.parametrize("kind", [Choice, Numeric, Ordering])
def test_single_answers_and_orders_stay_all_or_nothing(kind: type[AnswerKind]) -> None:
    assert kind.partial_credit is False


def test_a_failing_function_keeps_the_fraction_of_cases_it_passed() -> None:
    def cases(rng: random.Random) -> tuple[Any, ...]:
        return (rng.randint(1, 9),)

    kind = Function("double", "(x)", cases, edge_cases=((0,), (1,), (2,)), n_random=1)

    def halfway(x: int) -> int:
        return 2 * x if x < 2 else 0  # right on 0 and 1 only

    verdict = kind.grade(halfway, lambda x: 2 * x, {}, ())
    assert verdict.status == "wrong"
    assert _score(_record(kind), verdict) == pytest.approx(2 / 4)


def test_a_pass_is_one_and_an_all_or_nothing_wrong_answer_is_zero() -> None:
    near = Verdict("wrong", "close", score=0.9)
    assert _score(_record(Numeric), near) == 0.0
    assert _score(_record(Ordering), Verdict("wrong", "two in place", score=0.5)) == 0.0
    assert _score(_record(Numeric), Verdict("correct", "yes", score=1.0)) == 1.0
    assert _score(_record(Function), Verdict("correct", "yes")) == 1.0  # a pass, whatever


def test_a_score_outside_zero_to_one_is_clamped() -> None:
    assert _score(_record(Constraints), Verdict("wrong", "x", score=1.5)) == 1.0
    assert _score(_record(Constraints), Verdict("wrong", "x", score=-0.2)) == 0.0
