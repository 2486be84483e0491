"""Templates show numbers the way feedback does, and one formatter writes them all."""

from __future__ import annotations

import pytest

from autograder.template import fill, fill_leniently
from autograder.units import format_value


@pytest.mark.parametrize(("value", "text"), [
    # written out by hand: commas from 10,000 up, whole floats without ".0", large and
    # tiny floats in scientific notation only beyond 10^9 and below 10^-3
    (2048, "2048"), (16384, "16,384"), (1.0, "1"), (12_345_678.9, "12,345,679"),
    (0.0625, "0.0625"), (3.8e25, "3.8e+25"), (6.1e-5, "6.1e-05"), (True, "True"),
    ("BF16", "BF16"),
])
def test_fields_without_a_spec_read_as_people_write_them(value: object, text: str) -> None:
    assert fill("{x}", {"x": value}) == text


def test_prompt_and_feedback_agree_on_a_large_float() -> None:
    # A prompt once showed 1.235e+07 where the verdict for the same number said 12,345,679.
    assert fill("{n} tokens", {"n": 12_345_678.9}) == f"{format_value(12_345_678.9)} tokens"


def test_an_explicit_spec_is_honoured() -> None:
    assert fill("{n:,} GPUs, {f:.1%}", {"n": 16384, "f": 0.384}) == "16,384 GPUs, 38.4%"


def test_a_record_naming_an_unknown_field_is_an_error() -> None:
    with pytest.raises(KeyError):
        fill("{missing}", {})


def test_feedback_with_an_unknown_field_is_shown_as_written() -> None:
    assert fill_leniently("needs {tp} x {cp}", {"tp": 8}) == "needs {tp} x {cp}"
