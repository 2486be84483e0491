"""Reading learners' numbers: every accepted spelling, every refusal, and fuzzing."""

from __future__ import annotations

import decimal
import fractions
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograder.units import (
    UnitError,
    expectation,
    format_quantity,
    format_value,
    parse_quantity,
    read_quantity,
)

UNITS = ["GB", "MB", "GiB", "ms", "s", "min", "h", "days", "%", "GB/s", "$", "TFLOPS",
         "PF-days", "steps", "GPUs", "seq/s", ""]


@pytest.mark.parametrize(("answer", "unit", "value"), [
    (1.75, "GB", 1.75),
    ("1.75", "GB", 1.75),
    ("1.75 GB", "GB", 1.75),
    ("1750 MB", "GB", 1.75),            # 1750 * 10^6 B = 1.75 * 10^9 B
    ("2 TB", "GB", 2000.0),             # 2 * 10^12 B / 10^9
    ("1 GiB", "GB", 1.073741824),       # 2^30 B / 10^9
    ("1024 MiB", "GiB", 1.0),           # 1024 * 2^20 = 2^30
    ("70 ms", "ms", 70.0),
    ("0.07 s", "ms", 70.0),             # 0.07 s * 1000 ms/s
    ("65.6ms", "ms", 65.6),
    ("70000 us", "ms", 70.0),
    ("70000 µs", "ms", 70.0),
    ("2 h", "min", 120.0),
    ("90 min", "h", 1.5),
    ("1.5 days", "h", 36.0),            # 1.5 * 24
    ("6.25%", "%", 6.25),
    ("6.25 %", "%", 6.25),
    ("77.8%", "", 0.778),               # a percentage where a plain number is asked
    ("2.4e-3", "", 0.0024),
    ("2.4E-3", "", 0.0024),
    ("2,048", "", 2048.0),
    ("1,061,672", "", 1061672.0),
    ("2_048", "", 2048.0),
    ("1.2 x 10^-3", "", 0.0012),
    ("1.2 × 10^-3", "", 0.0012),
    ("1.2*10**-3", "", 0.0012),
    ("6.1 × 10⁻⁵", "", 6.1e-5),
    ("2^14", "", 16384.0),
    ("7/8", "", 0.875),
    ("-3", "", -3.0),
    ("−3", "", -3.0),                   # a Unicode minus sign
    ("~70 ms", "ms", 70.0),
    ("$618", "$", 618.0),
    ("618 dollars", "$", 618.0),
    ("618 USD", "$", 618.0),
    ("$1.06M", "$", 1.06e6),
    ("$1,061,672", "$", 1061672.0),
    ("3.5 GB/s", "GB/s", 3.5),
    ("400 Gb/s", "GB/s", 50.0),         # bits: 400 / 8
    ("400 Gbps", "GB/s", 50.0),
    ("50 GB per second", "GB/s", 50.0),
    ("989 TFLOPS", "TFLOPS", 989.0),
    ("0.989 PFLOPS", "TFLOPS", 989.0),
    ("8.64e19 FLOPs", "PF-days", 1.0),  # 10^15 FLOP/s * 86,400 s
    ("64", "steps", 64.0),
    ("64 steps", "steps", 64.0),
    ("1 step", "steps", 1.0),
    ("64 Steps", "steps", 64.0),
    ("2k steps", "steps", 2000.0),
    ("7B params", "params", 7e9),
    ("15.6T tokens", "tokens", 15.6e12),
    ("1.5 million", "", 1.5e6),
    ("8 GPUs", "", 8.0),                # a counting word where a plain number is asked
    ("2x", "", 2.0),
    ("11,468.8 kW", "MW", 11.4688),
])
def test_reads_every_spelling(answer: object, unit: str, value: float) -> None:
    assert parse_quantity(answer, unit) == pytest.approx(value, rel=1e-12)


def test_lowercase_gb_is_read_as_gigabytes_with_a_note() -> None:
    reading = read_quantity("1.75 gb", "GB")
    assert reading.value == pytest.approx(1.75)
    assert reading.note == "read 'gb' as GB"
    assert read_quantity("1.75 GB", "GB").note == ""


def test_reading_reports_the_written_unit() -> None:
    assert read_quantity("1750 MB", "GB").written_unit == "MB"
    assert read_quantity("1750", "GB").written_unit == ""
    assert read_quantity(1750, "GB").written_unit == ""


def test_flops_spelling_is_resolved_by_the_unit_asked_for() -> None:
    # "TFLOPs" is used for both counts and rates; the exercise's unit decides.
    assert parse_quantity("989 TFLOPs", "TFLOPS") == 989.0
    assert parse_quantity("2 TFLOPS", "FLOPs") == 2e12


@pytest.mark.parametrize(("answer", "unit", "words"), [
    ("70 ms", "GB", ["expected a size: a number in GB", "'70 ms'", "which is a time"]),
    ("1.75 GB", "ms", ["expected a time: a number in ms", "which is a size"]),
    ("64 GPUs", "steps", ["a number of steps, with or without the word 'steps'",
                          "a number of GPUs"]),
    ("3 parsecs", "GB", ["did not recognise the unit 'parsecs'"]),
    ("abc", "GB", ["could not read 'abc'"]),
    ("1,5", "GB", ["write decimals with a point"]),
    ("", "ms", ["empty"]),
    ("nan", "", ["could not read"]),
    ("inf", "", ["could not read"]),
    ("1e999", "", ["too large"]),
    ("7/0", "", ["divides by zero"]),
    ("$5 GB", "$", ["did not recognise the unit 'GB'"]),
    ("1e305 TB", "MB", ["too large"]),  # 10^311 MB overflows a float
    (None, "GB", ["got nothing (None)"]),
    (True, "", ["yes/no"]),
    (float("nan"), "", ["not a number"]),
    (float("inf"), "", ["not a finite number"]),
    ([1.75], "GB", ["a list", "give one number"]),
    ({"value": 1}, "GB", ["a dict"]),
    (1 + 2j, "", ["complex"]),
    (10**400, "", ["not a finite number"]),
    (b"1.75", "GB", ["a bytes"]),
    ("1" * 200, "", ["characters"]),
])
def test_refuses_with_a_message_saying_what_was_expected(answer: object, unit: str,
                                                         words: list[str]) -> None:
    with pytest.raises(UnitError) as info:
        read_quantity(answer, unit)
    for word in words:
        assert word in str(info.value)


def test_unit_error_is_a_value_error() -> None:
    assert issubclass(UnitError, ValueError)


def test_numeric_types_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    assert parse_quantity(np.float32(0.5), "") == 0.5
    assert parse_quantity(np.int64(7), "") == 7.0
    assert parse_quantity(np.array(2.5), "") == 2.5
    assert parse_quantity(fractions.Fraction(7, 8), "") == 0.875
    assert parse_quantity(decimal.Decimal("1.25"), "") == 1.25
    with pytest.raises(UnitError):
        parse_quantity(np.bool_(True), "")


class _BrokenFloat(float):
    def __float__(self) -> float:
        raise RuntimeError("broken")


def test_a_misbehaving_object_gives_a_unit_error() -> None:
    with pytest.raises(UnitError):
        read_quantity(_BrokenFloat(1.0), "GB")


@pytest.mark.parametrize(("unit", "text"), [
    ("GB", "a size: a number in GB, or text with its unit such as '<number> GB'"),
    ("%", "a percentage: a number, or text such as '<number>%'"),
    ("", "a plain number"),
    ("$", "an amount of money: a number of dollars, or text such as '$<number>'"),
    ("steps", "a number of steps, with or without the word 'steps'"),
])
def test_expectation(unit: str, text: str) -> None:
    # No example number: it could be the very answer a learner is looking for.
    assert expectation(unit) == text
    assert not re.search(r"\d", text)


@pytest.mark.parametrize(("value", "text"), [
    (2048, "2048"), (1061672.0, "1,061,672"), (1.75, "1.75"), (0.07, "0.07"),
    (140.00000000000003, "140"), (0.0024, "0.0024"), (6.1e-5, "6.1e-05"),
    (3.8e25, "3.8e+25"), (12345.678, "12,345.7"), (-0.5, "-0.5"),
])
def test_format_value(value: float, text: str) -> None:
    assert format_value(value) == text


@pytest.mark.parametrize(("value", "unit", "text"), [
    (1.75, "GB", "1.75 GB"), (6.25, "%", "6.25%"), (618, "$", "$618"), (-5, "$", "-$5"),
    (0.75, "", "0.75"), (2, "x", "2x"), (64, "steps", "64 steps"),
])
def test_format_quantity(value: float, unit: str, text: str) -> None:
    assert format_quantity(value, unit) == text


# -- fuzzing ---------------------------------------------------------------------------
def _only_unit_errors(answer: object, unit: str) -> None:
    try:
        value = parse_quantity(answer, unit)
    except UnitError:
        return
    assert isinstance(value, float) and math.isfinite(value)


@given(st.text(max_size=60), st.sampled_from(UNITS))
def test_fuzz_text(text: str, unit: str) -> None:
    _only_unit_errors(text, unit)


_NUMBERISH = st.text(alphabet="0123456789.,_eE+-x×*^/ $%µkKMBTGiBbsmhinday·⁻⁰¹²³", max_size=30)


@given(_NUMBERISH, st.sampled_from(UNITS))
def test_fuzz_number_like_text(text: str, unit: str) -> None:
    _only_unit_errors(text, unit)


_OBJECTS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.complex_numbers(),
    st.decimals(), st.fractions(), st.binary(), st.text(),
    st.lists(st.integers(), max_size=3), st.tuples(st.floats()),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(object), st.just(Ellipsis), st.just(len), st.sets(st.integers(), max_size=2),
)


@given(_OBJECTS, st.sampled_from(UNITS))
def test_fuzz_arbitrary_objects(answer: object, unit: str) -> None:
    _only_unit_errors(answer, unit)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_round_trip_of_float_text(x: float) -> None:
    assert parse_quantity(repr(x), "") == x
    assert parse_quantity(f"{x!r} GB", "GB") == x
    assert parse_quantity(x, "ms") == x


@given(st.integers(min_value=-10**15, max_value=10**15))
def test_round_trip_of_grouped_integers(n: int) -> None:
    assert parse_quantity(f"{n:,}", "steps") == n
    assert parse_quantity(f"{n} steps", "steps") == n
