"""Partial and fractional points in the gradebook. Each row keeps the fraction of the
points partial credit would give (the verdict's score where the answer kind grades in
parts or cases, else all or nothing); points a term's policies made fractional, and
excused rows, go through every output: the gradebook rows, the JSON, the totals, the
Canvas import and the feedback page."""

from __future__ import annotations

import csv
import io
import random
from types import SimpleNamespace
from typing import Any, cast

import pytest

from autograder.exercise import Exercise
from autograder.grading.compare import _score
from autograder.grading.feedback import render_page
from autograder.grading.model import Batch, ExerciseResult, NotebookResult
from autograder.grading.report import batch_json, csv_text, points_text, points_value
from autograder.grading.totals import Handed, totals
from autograder.grading.totals import csv_text as totals_csv
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
from workbook.instructor.lms_canvas import import_text


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


# --- fractional points and excused rows in every output ---------------------------------

LATE = ExerciseResult("0.1", "Ring volume", "derive", 2.7, 3, "correct", "Correct.",
                      policy="late 1 day: -10 %")
PARTIAL = ExerciseResult("0.2", "Write ring", "build", 0.5, 2, "wrong", "3 of 12 cases.",
                         score=0.25, policy="partial credit: 0.5 of 2 points")
EXCUSED = ExerciseResult("0.3", "Trace", "trace", 0, 4, "excused", "Not yet.",
                         policy="override: excused - joined late")
ANN = NotebookResult("ann", "ann/ch00.ipynb", 0, "Ring", (LATE, PARTIAL, EXCUSED))
BATCH = Batch((ANN,))


@pytest.mark.parametrize(("points", "text"), [
    (3, "3"), (3.0, "3"), (2.7, "2.7"), (2.70, "2.7"), (0.333333, "0.33"), (1.004, "1"),
    (0.1 + 0.2, "0.3"), (-0.0, "0"), (12.5, "12.5")])
def test_points_are_written_with_at_most_two_decimals_and_no_trailing_zeros(
        points: float, text: str) -> None:
    assert points_text(points) == text


def test_whole_points_stay_ints_so_an_unadjusted_gradebook_reads_as_before() -> None:
    assert type(points_value(3)) is int and type(points_value(3.0)) is int
    assert type(points_value(2.7)) is float


def test_an_excused_row_counts_zero_of_zero_and_keeps_what_the_exercise_is_worth() -> None:
    assert EXCUSED.counted_max == 0 and EXCUSED.max_points == 4
    assert ANN.max_points == 3 + 2  # 0.3 is left out
    assert ANN.points == 3.2  # 2.7 + 0.5, added without a binary tail


def test_gradebook_rows_carry_fractional_points_and_what_the_policies_did() -> None:
    rows = list(csv.DictReader(io.StringIO(csv_text(BATCH))))
    assert [(r["points"], r["max_points"], r["status"], r["policy"]) for r in rows] == [
        ("2.7", "3", "correct", "late 1 day: -10 %"),
        ("0.5", "2", "wrong", "partial credit: 0.5 of 2 points"),
        ("0", "0", "excused", "override: excused - joined late")]
    tree = batch_json(BATCH)
    assert tree["summary"]["points"] == 3.2 and tree["summary"]["max_points"] == 5
    notebook = tree["notebooks"][0]
    assert notebook["points"] == 3.2 and notebook["max_points"] == 5
    assert [e["points"] for e in notebook["exercises"]] == [2.7, 0.5, 0]
    assert notebook["exercises"][1]["score"] == 0.25
    assert notebook["exercises"][2]["policy"] == "override: excused - joined late"
    # read back, an excused row still knows what the exercise is worth
    assert (notebook["exercises"][2]["status"], notebook["exercises"][2]["max_points"]) == (
        "excused", 4)


def test_totals_add_fractional_points_and_leave_excused_exercises_out_of_the_maximum() -> None:
    rows = totals(BATCH, {0: 9}, ["ann", "bob"], {"ann": Handed("2026-03-02T10:00:00+00:00")},
                  {})
    assert [(t.student, t.points, t.max_points) for t in rows] == [("ann", 3.2, 5),
                                                                   ("bob", 0, 9)]
    assert rows[0].percent == 64.0
    written = list(csv.DictReader(io.StringIO(totals_csv(rows))))
    assert [(r["points"], r["max_points"]) for r in written] == [("3.2", "5"), ("0", "9")]
    canvas = list(csv.reader(io.StringIO(import_text(
        [(t.student, t.points) for t in rows], {"ann": "501"}, {}, "Ch 0", 5))))
    assert canvas[2] == ["", "501", "ann", "", "", "3.2"]


def test_the_feedback_page_shows_fractional_points_and_the_adjustment() -> None:
    page = render_page(ANN)
    assert "Points: 3.2 of 5" in page
    assert "· 2.7 of 3 points" in page and "· 0.5 of 2 points" in page
    assert "· 0 of 0 points" in page
    assert "<dt>Adjusted</dt><dd>late 1 day: -10 %</dd>" in page
    assert "Excused" in page
