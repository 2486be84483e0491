"""Numeric answers: tolerance, units, misconceptions, generic slips, unreadable input."""

from __future__ import annotations

import pytest

from autograder.kinds import Numeric

GB = Numeric(unit="GB", rel_tol=0.01)
NO_MISCONCEPTIONS: tuple[tuple[object, str], ...] = ()


def grade(kind: Numeric, answer: object, expected: float,
          misconceptions: tuple[tuple[object, str], ...] = NO_MISCONCEPTIONS):
    return kind.grade(answer, expected, {}, misconceptions)


@pytest.mark.parametrize("answer", [1.75, "1.75", "1.75 GB", "1750 MB", "1.63 GiB", 1.76])
def test_right_answers_in_any_unit(answer: object) -> None:
    # 1.63 GiB = 1.63 * 2^30 B = 1.7502 GB; 1.76 is 0.57% from 1.75 (tolerance 1%).
    verdict = grade(GB, answer, 1.75)
    assert verdict.status == "correct"
    assert verdict.score == 1.0
    assert verdict.expected == "1.75 GB"


def test_yours_shows_the_conversion() -> None:
    assert grade(GB, "1750 MB", 1.75).yours == "1750 MB = 1.75 GB"
    assert grade(GB, 1.75, 1.75).yours == "1.75 GB"


def test_within_tolerance_but_not_exact_mentions_the_exact_value() -> None:
    verdict = grade(GB, 1.76, 1.75)
    assert any("exact value is 1.75 GB" in d for d in verdict.details)


def test_just_outside_tolerance_is_wrong_and_says_close() -> None:
    # 1.78 is 1.7% above 1.75: outside 1%, inside 5 x 1%.
    verdict = grade(GB, 1.78, 1.75)
    assert verdict.status == "wrong"
    assert verdict.score == 0.0
    assert "Close" in verdict.message and "±1%" in verdict.message
    assert verdict.expected == ""  # a wrong answer does not give the answer away


def test_abs_tol() -> None:
    kind = Numeric(unit="ms", rel_tol=0.0, abs_tol=0.5)
    assert grade(kind, "70.4 ms", 70.0).passed
    assert not grade(kind, "70.6 ms", 70.0).passed


def test_misconception_feedback_wins() -> None:
    # 2 * 1 GB = 2 GB: forgetting the (N-1)/N factor for N = 8.
    misconceptions = ((2.0, "You dropped the (N-1)/N factor."),)
    verdict = grade(GB, "2 GB", 1.75, misconceptions)
    assert verdict.status == "wrong"
    assert verdict.message == "You dropped the (N-1)/N factor."


def test_misconception_equal_to_the_answer_is_ignored() -> None:
    verdict = grade(GB, 1.75, 1.75, ((1.75, "never shown"),))
    assert verdict.passed


def test_unusable_misconception_values_are_skipped() -> None:
    verdict = grade(GB, 3.0, 1.75, (("not a number", "x"), (float("nan"), "y")))
    assert verdict.status == "wrong"
    assert verdict.message not in ("x", "y")


@pytest.mark.parametrize(("kind", "answer", "expected", "words"), [
    (GB, 1750, 1.75, ["too large", "unit prefix"]),                 # MB typed as GB
    (Numeric(unit="ms"), 0.07, 70.0, ["too small", "unit prefix"]),  # seconds typed as ms
    (GB, 1.6298, 1.75, ["too small", "GiB"]),                         # 1.75e9 / 2^30
    (Numeric(unit="GB/s"), 400, 50.0, ["too large", "bits"]),        # 400 Gb/s typed as GB/s
    (Numeric(unit=""), 77.8, 0.778, ["too large", "percentage"]),
    (Numeric(unit="h"), 90, 1.5, ["too large", "hours vs minutes"]),  # minutes typed as hours
    (Numeric(unit="days"), 36, 1.5, ["too large", "days vs hours"]),  # hours typed as days
    (GB, 3.5, 1.75, ["too large", "counted twice"]),
    (GB, 0.875, 1.75, ["too small", "left out"]),
    (GB, -1.75, 1.75, ["sign is wrong"]),
])
def test_generic_slips(kind: Numeric, answer: object, expected: float, words: list[str]) -> None:
    verdict = grade(kind, answer, expected)
    assert verdict.status == "wrong"
    for word in words:
        assert word in verdict.message
    # the cause and the direction, never the factor: "2 times too small" plus the wrong
    # number would be the answer
    assert "times too" not in verdict.message
    assert not any(f in verdict.message for f in ("1,000", "1.074", " 2 ", " 60 ", " 24 "))


def test_binary_slip_only_for_sizes() -> None:
    # 70 / 1.0737 = 65.19 ms is not a GiB slip: times have no binary prefixes.
    verdict = grade(Numeric(unit="ms"), 65.19, 70.0)
    assert "GiB" not in verdict.message


@pytest.mark.parametrize(("answer", "words"), [
    (2.0, ["too large", "less than 50%"]),          # 2.0 / 1.75 = 1.14
    (5.0, ["too large", "between 1.5 and 10"]),     # 2.86x
    (100.0, ["too large", "more than a factor of 10"]),
    (1.0, ["too small", "between 1.5 and 10"]),     # 1.75x too small
])
def test_plain_misses_say_the_direction(answer: float, words: list[str]) -> None:
    verdict = grade(GB, answer, 1.75)
    for word in words:
        assert word in verdict.message


def test_percent_exercise_accepts_a_fraction_with_a_note() -> None:
    # 0.0625 = 6.25 / 100: a bare number in a "%" exercise, read as a fraction.
    verdict = grade(Numeric(unit="%"), "0.0625", 6.25)
    assert verdict.passed
    assert "fraction" in verdict.details[0]
    assert verdict.yours == "0.0625 = 6.25%"


def test_percent_written_explicitly_is_taken_at_its_word() -> None:
    verdict = grade(Numeric(unit="%"), "0.0625%", 6.25)
    assert verdict.status == "wrong"
    assert "too small" in verdict.message and "100 times" not in verdict.message


def test_percent_exercise_accepts_the_percentage() -> None:
    assert grade(Numeric(unit="%"), "6.25%", 6.25).passed
    assert grade(Numeric(unit="%"), 6.25, 6.25).passed


@pytest.mark.parametrize("answer", ["70 ms", "abc", None, True, [1.75], float("nan"), ""])
def test_unreadable_answers_are_invalid_with_the_parser_message(answer: object) -> None:
    verdict = grade(GB, answer, 1.75)
    assert verdict.status == "invalid"
    assert not verdict.counts_as_attempt
    assert verdict.message.startswith("Expected a size: a number in GB")
    assert "1.75" not in verdict.message  # never the answer as an example


def test_wrong_family_message() -> None:
    verdict = grade(GB, "70 ms", 1.75)
    assert verdict.message == ("Expected a size: a number in GB, or text with its unit such as "
                               "'<number> GB'; got '70 ms', which is a time.")


def test_ambiguous_unit_note_is_passed_on() -> None:
    verdict = grade(GB, "1.75 gb", 1.75)
    assert verdict.passed
    assert "Read 'gb' as GB." in verdict.details


def test_counting_unit_and_zero_expected() -> None:
    steps = Numeric(unit="steps", rel_tol=0.0)
    assert grade(steps, "64 steps", 64).passed
    assert not grade(steps, 63, 64).passed
    zero = Numeric(unit="GB")
    assert grade(zero, 0, 0.0).passed
    assert grade(zero, 0.1, 0.0).status == "wrong"


def test_money() -> None:
    dollars = Numeric(unit="$", rel_tol=0.01)
    # 16,384 GPUs * 0.7 kW * 77 days * 24 h * $0.05/kWh = $1,059,717 (to the dollar)
    assert grade(dollars, "$1.06M", 1_059_717.0).passed
    assert grade(dollars, "1,059,717 dollars", 1_059_717.0).yours == (
        "1,059,717 dollars = $1,059,717")


def test_describe() -> None:
    assert GB.describe() == "a number in GB"
    assert Numeric(unit="").describe() == "a number"


def test_binary_slip_matches_the_exercise_prefix() -> None:
    # 100 MB = 10^8 B = 10^8 / 2^20 MiB = 95.367 MiB, typed as MB.
    verdict = grade(Numeric(unit="MB"), 95.367, 100.0)
    assert "MiB and MB" in verdict.message
    assert "too small" in verdict.message
