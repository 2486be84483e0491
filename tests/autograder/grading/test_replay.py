"""The replayed function: the record's own grade judges recorded outcomes as it would the
learner's function itself."""

from __future__ import annotations

from typing import Any

import pytest

from autograder.grading.replay import Opaque, Replay, call_key, is_value_error, rebuild_error
from autograder.kinds import Function
from autograder.sandbox import Outcome

SPEC = Function(function_name="double", signature="(x)", cases=lambda rng: (1.0,),
                edge_cases=((3.0,), (-1.0,), (0.0,)), n_random=0, time_limit_s=0.5)
ARGS = SPEC.test_cases()  # [(3.0,), (-1.0,), (0.0,)]


def double(x: float) -> float:
    if x < 0:
        raise ValueError("x must be >= 0")
    return 2 * x


def grade(outcomes: list[Outcome], **options: Any):
    return SPEC.grade(Replay("double", ARGS, outcomes, **options), double, {}, ())


def test_recorded_values_pass_as_the_function_would() -> None:
    verdict = grade([Outcome("value", 6.0), Outcome("raised", message="no",
                                                    type_name="ValueError"),
                     Outcome("value", 0)])
    assert verdict.passed
    assert verdict.yours == "double: 3 of 3 cases"


def test_a_wrong_value_reads_like_the_real_failure() -> None:
    verdict = grade([Outcome("value", 7.0), Outcome("raised", message="no",
                                                    type_name="ValueError"),
                     Outcome("value", 0.0)])
    assert verdict.message == "double(3.0) returned 7.0; expected 6.0."


def test_only_value_errors_count_for_impossible_inputs() -> None:
    verdict = grade([Outcome("value", 6.0), Outcome("raised", message="'x'",
                                                    type_name="KeyError"),
                     Outcome("value", 0.0)])
    assert verdict.message == ("double(-1.0) raised KeyError: 'x'; expected it to raise "
                               "ValueError, as this input is impossible (x must be >= 0).")


def test_a_learner_subclass_of_value_error_counts() -> None:
    outcomes = [Outcome("value", 6.0), Outcome("raised", message="no",
                                               type_name="__main__.Bad"),
                Outcome("value", 0.0)]
    assert not grade(outcomes).passed
    assert grade(outcomes, learner_value_errors={"Bad"}).passed
    assert is_value_error("UnicodeDecodeError") and not is_value_error("KeyError")


def test_a_timeout_stops_the_remaining_cases() -> None:
    verdict = grade([Outcome("timeout"), Outcome("raised", message="skipped",
                                                 type_name="__wb_x_rt.Skipped"),
                     Outcome("value", 0.0)], skipped_type="__wb_x_rt.Skipped")
    assert verdict.message == "double(3.0) did not finish within 0.5 s (an endless loop?)."
    assert "The other 2 cases were not run after the time-out." in verdict.details


def test_values_the_sandbox_could_not_read_equal_nothing() -> None:
    verdict = grade([Outcome("not_plain", message="not plain data: generator")] * 3)
    assert verdict.message == "double(3.0) returned <not plain data: generator>; expected 6.0."
    assert Opaque("x") != Opaque("x")


def test_repeated_inputs_replay_in_order() -> None:
    replay = Replay("f", [(1,), (1,)], [Outcome("value", 1), Outcome("value", 2)])
    assert (replay(1), replay(1)) == (1, 2)
    with pytest.raises(Exception, match="no result for this call"):
        replay(1)


def test_tuples_and_lists_are_the_same_call() -> None:
    assert call_key(((1, 2), 3.0)) == call_key([[1, 2], 3.0])
    assert call_key((float("nan"),)) == '[{"$float": "nan"}]'


def test_a_rebuilt_error_keeps_the_name_and_message() -> None:
    error = rebuild_error(Outcome("raised", message="division by zero",
                                  type_name="ZeroDivisionError"))
    assert (type(error).__name__, str(error)) == ("ZeroDivisionError", "division by zero")
    assert not isinstance(error, ValueError)
