"""Reading a learner's number: "1.75 GB", "1750 MB", "70 ms", "6.25%", "$618", "2,048 steps".

``read_quantity(answer, unit)`` converts what the learner typed (a number, or text with
an optional unit) into the exercise's ``unit`` and says how it read it;
``parse_quantity`` returns the value only. A bare number is taken to be in the
exercise's unit already. Anything else that cannot be read (the wrong kind of unit, an
unreadable string, None, NaN, a list ...) raises ``UnitError`` with a message saying
what was expected; no other exception ever escapes, whatever the input.
"""

from __future__ import annotations

import decimal
import math
import numbers
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from autograder.unit_table import (
    BANDWIDTH,
    COMPUTE,
    COMPUTE_RATE,
    COUNT_PREFIX,
    ENERGY,
    MONEY,
    OTHER_DIMENSIONS,
    POWER,
    RATIO,
    SCALES,
    SIZE,
    TIME,
    Unit,
    count_unit,
    lookup,
    target_unit,
)

_MAX_TEXT = 120  # longer text is not a number; also keeps every regex cheap


class UnitError(ValueError):
    """The answer could not be read as a number in the expected unit."""


@dataclass(frozen=True)
class Reading:
    """A learner's number, converted into the exercise's unit."""

    value: float
    text: str          # what the learner wrote, tidied ("1750 MB")
    written_unit: str  # the unit part as written ("MB"), "" for a bare number
    note: str = ""     # how an ambiguous unit was read, e.g. "read 'gb' as GB"


# -- numbers -------------------------------------------------------------------------
_DIGITS = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:_\d+)*)"
_MANTISSA = rf"(?:{_DIGITS}(?:\.\d*)?|\.\d+)"
_TIMES = r"\s*(?:x|×|\*|·)\s*"
_NUMBER = re.compile(
    rf"(?P<sign>[+-]?)\s*(?P<mant>{_MANTISSA})(?:[eE](?P<exp>[+-]?\d{{1,5}}))?"
    rf"(?:{_TIMES}10\s*(?:\^|\*\*)\s*(?P<exp10>[+-]?\d{{1,5}})"
    rf"|{_TIMES}10(?P<sup>[⁺⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]{{1,5}})"
    r"|\s*(?:\^|\*\*)\s*(?P<pow>[+-]?\d{1,5})"
    rf"|\s*/\s*(?P<den>{_MANTISSA}))?",
    flags=re.ASCII,  # \d and \s: ASCII digits and spaces only
)
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_SPACES = str.maketrans({"\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2212": "-",
                         "\t": " "})
_SCALE = re.compile(r"(?P<scale>thousand|million|billion|trillion|mn|bn|tn|[kKMBT])"
                    r"(?:\s+|(?=[^A-Za-z])|$)(?P<tail>.*)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9 ./\-]{0,39}")
_PER_SECOND = re.compile(r"\s*(?:/|\bper\b)\s*(?:s|sec|second)$")

_EXAMPLES = {SIZE: 1.75, TIME: 70, BANDWIDTH: 50, MONEY: 618, COMPUTE: 440,
             COMPUTE_RATE: 989, POWER: 700, ENERGY: 21}
_PHRASES = {SIZE: "a size", TIME: "a time", BANDWIDTH: "a bandwidth",
            MONEY: "an amount of money", COMPUTE: "an amount of compute",
            COMPUTE_RATE: "a compute rate", POWER: "a power", ENERGY: "an energy"}


def _number(text: str) -> tuple[float, str]:
    """The number at the start of ``text`` and the rest; UnitError if there is none."""
    m = _NUMBER.match(text)
    if m is None:
        raise UnitError("could not find a number in it")
    mant = m["mant"].replace(",", "").replace("_", "")
    exp = int(m["exp"] or 0) + int(m["exp10"] or (m["sup"] or "0").translate(_SUPERSCRIPTS))
    value = float(f"{mant}e{exp}")  # float() of text rounds exactly, so repr(x) reads back as x
    if m["pow"] is not None:
        try:
            value = math.pow(value, int(m["pow"]))
        except (OverflowError, ValueError, ZeroDivisionError):
            raise UnitError("that power is too large") from None
    if m["den"] is not None:
        den = float(m["den"].replace(",", "").replace("_", ""))
        if den == 0:
            raise UnitError("it divides by zero")
        value /= den
    if not math.isfinite(value):
        raise UnitError("that number is too large")
    return (-value if m["sign"] == "-" else value), text[m.end():]


def _tidy_unit(rest: str) -> str:
    rest = " ".join(rest.split()).rstrip(".").strip()
    rest = _PER_SECOND.sub("/s", rest)
    return re.sub(r"\s*/\s*", "/", rest)


# -- units ---------------------------------------------------------------------------
Meaning = tuple[Unit, float, bool]  # (unit, scale such as 1e9 for "B", matched only lowercased)


def _meanings(rest: str) -> list[Meaning]:
    """Every way to read the unit text ``rest`` ("GB", "7B params", "steps")."""
    units, folded = lookup(rest)
    out: list[Meaning] = [(u, 1.0, folded) for u in units]
    m = _SCALE.fullmatch(rest)
    if m is not None:
        scale, tail = SCALES[m["scale"]], m["tail"].strip()
        if tail == "":
            out.append((Unit(RATIO, 1.0, ""), scale, False))
        else:
            tail_units, tail_folded = lookup(tail)
            out += [(u, scale, tail_folded) for u in tail_units]
            if not tail_units and _WORD.fullmatch(tail):
                out.append((count_unit(tail), scale, False))
    if not units and _WORD.fullmatch(rest):
        out.append((count_unit(rest), 1.0, False))
    return out


def _money(rest: str) -> list[Meaning]:
    """After a dollar sign only a scale or a money word may follow ("$1.06M", "$618 USD")."""
    if rest == "":
        return [(Unit(MONEY, 1.0, "$"), 1.0, False)]
    out: list[Meaning] = []
    for unit, scale, folded in _meanings(rest):
        if unit.family == MONEY:
            out.append((unit, scale, folded))
        elif unit.family == RATIO and unit.symbol == "":
            out.append((Unit(MONEY, 1.0, "$"), scale, False))
    return out


def _convert(value: float, meaning: Meaning, target: Unit) -> float | None:
    unit, scale, _ = meaning
    if unit.family == RATIO and unit.symbol == "":
        return value * scale  # "2k": a bare number with a scale, in the target's unit
    if unit.family == target.family:  # one ratio of factors, so GB to GB is exact
        return value * scale * (unit.factor / target.factor)
    if unit.family.startswith(COUNT_PREFIX) and target.family == RATIO and target.factor == 1:
        return value * scale  # "8 GPUs" where a plain number is asked
    return None


def _note(rest: str, chosen: Meaning, meanings: list[Meaning]) -> str:
    same_family = {m[0].factor for m in meanings if m[0].family == chosen[0].family}
    if chosen[2] and len(same_family) > 1:
        return f"read '{rest}' as {chosen[0].symbol}"
    return ""


# -- describing ------------------------------------------------------------------------
def _phrase(unit: Unit) -> str:
    if unit.family.startswith(COUNT_PREFIX):
        return f"a number of {unit.symbol}"
    if unit.family == RATIO:
        return "a percentage" if unit.symbol == "%" else "a plain number"
    if unit.family in OTHER_DIMENSIONS:
        return ("an " if unit.family[0] in "aeiou" else "a ") + unit.family
    return _PHRASES.get(unit.family, "a number")


def expectation(unit: str) -> str:
    """What a reader of ``unit`` accepts, in words: "a size: a number in GB, or text with
    its unit such as '<number> GB'". No example number: an example could be the very
    answer the learner is looking for."""
    target = target_unit(unit)
    if target.family.startswith(COUNT_PREFIX):
        return f"a number of {unit.strip()}, with or without the word '{unit.strip()}'"
    if target.family == RATIO:
        if target.symbol == "%":
            return "a percentage: a number, or text such as '<number>%'"
        return f"{_phrase(target)}"
    if target.family == MONEY:
        return f"{_phrase(target)}: a number of dollars, or text such as '$<number>'"
    return f"{_phrase(target)}: a number in {unit}, or text with its unit such as " \
           f"'<number> {unit}'"


def _shown(text: str, limit: int = 40) -> str:
    return "'" + (text if len(text) <= limit else text[: limit - 3] + "...") + "'"


# -- reading ---------------------------------------------------------------------------
def ascii_digits(text: str) -> str:
    """``text`` with every decimal digit of any script ("٣", "５") as an ASCII digit. Other
    number characters (superscripts, fractions, Roman numerals) stay as they are and are
    refused by the reader with a message, except a superscript power of ten ("10⁵")."""
    if text.isascii():
        return text
    return "".join(str(unicodedata.decimal(ch)) if unicodedata.category(ch) == "Nd" else ch
                   for ch in text)


def _read_text(raw: str, unit: str) -> Reading:
    want = expectation(unit)
    text = " ".join(ascii_digits(raw).translate(_SPACES).split())
    if len(text) > _MAX_TEXT:
        raise UnitError(f"expected {want}; got {len(text)} characters of text")
    if text == "":
        raise UnitError(f"expected {want}; got an empty string")
    body = text.lstrip("~≈=").strip()
    money = re.match(r"([+-]?)\s*(?:US)?\$\s*", body)
    if money is not None:
        body = money.group(1) + body[money.end():]
    try:
        value, rest = _number(body)
    except UnitError as exc:
        raise UnitError(f"expected {want}; could not read {_shown(text)}: {exc}") from None
    rest = _tidy_unit(rest)
    if re.match(r",\d", rest):
        raise UnitError(f"expected {want}; could not read {_shown(text)}: write decimals with a "
                        "point ('1.5') and use commas only between groups of three digits "
                        "('2,048')")
    meanings = _money(rest) if money is not None else (_meanings(rest) if rest else [])
    if not meanings and money is None and rest == "":
        return Reading(value, text, "")
    return _choose(value, text, rest, meanings, unit, want)


def _choose(value: float, text: str, rest: str, meanings: list[Meaning], unit: str,
            want: str) -> Reading:
    target = target_unit(unit)
    for meaning in meanings:
        converted = _convert(value, meaning, target)
        if converted is not None and not math.isfinite(converted):
            raise UnitError(f"expected {want}; {_shown(text)} is too large")
        if converted is not None:
            return Reading(converted, text, rest or "$", _note(rest, meaning, meanings))
    words_only = all(m[0].family.startswith(COUNT_PREFIX) for m in meanings)
    if not meanings or (words_only and not target.family.startswith(COUNT_PREFIX)):
        raise UnitError(f"expected {want}; did not recognise the unit {_shown(rest)} in "
                        f"{_shown(text)}")
    raise UnitError(f"expected {want}; got {_shown(text)}, which is {_phrase(meanings[0][0])}")


def _read_object(answer: Any, unit: str) -> Reading:
    want = expectation(unit)
    if answer is None:
        raise UnitError(f"expected {want}; got nothing (None)")
    if isinstance(answer, bool) or type(answer).__name__ == "bool_":
        raise UnitError(f"expected {want}; got {answer!r}, which is a yes/no value")
    if isinstance(answer, (list, tuple, dict, set, frozenset)):
        raise UnitError(f"expected {want}; got a {type(answer).__name__}: give one number")
    if isinstance(answer, complex):
        raise UnitError(f"expected {want}; got a complex number")
    if getattr(answer, "shape", None) == () and hasattr(answer, "item"):
        answer = answer.item()  # a 0-d numpy array
    if isinstance(answer, bool) or not isinstance(answer, (numbers.Real, decimal.Decimal)):
        raise UnitError(f"expected {want}; got a {type(answer).__name__}")
    try:
        value = float(answer)
    except (OverflowError, ValueError, ArithmeticError):
        raise UnitError(f"expected {want}; {answer!r} is not a finite number") from None
    if math.isnan(value):
        raise UnitError(f"expected {want}; got nan, which is not a number")
    if not math.isfinite(value):
        raise UnitError(f"expected {want}; got {value}, which is not a finite number")
    return Reading(value, format_value(value), "")


def read_quantity(answer: Any, unit: str) -> Reading:
    """Read ``answer`` as a number in ``unit``; UnitError (only) if that is impossible."""
    if isinstance(answer, str):
        return _read_text(str.__str__(answer), unit)
    try:
        return _read_object(answer, unit)
    except UnitError:
        raise
    except Exception as exc:  # a learner's object whose __float__ or attributes misbehave
        raise UnitError(f"expected {expectation(unit)}; could not read a "
                        f"{type(answer).__name__} ({type(exc).__name__})") from None


def parse_quantity(answer: Any, unit: str) -> float:
    """The value of ``answer`` in ``unit`` ("1750 MB" in "GB" is 1.75); UnitError if unreadable."""
    return read_quantity(answer, unit).value


# -- showing -----------------------------------------------------------------------------
def format_value(value: float) -> str:
    """A number as a person writes it: 2048, 1,061,672 (commas from 10,000 up), 0.0024."""
    if not math.isfinite(value):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        n = int(value)
        return f"{n:,}" if abs(n) >= 10_000 else str(n)
    size = abs(value)
    if size < 1e-3 or size >= 1e9:
        return f"{value:.4g}"
    decimals = max(0, 5 - math.floor(math.log10(size)))
    text = f"{value:,.{decimals}f}" if size >= 10_000 else f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_rounded(value: float, unit: str = "", significant: int = 3) -> str:
    """A computed quantity as a readout shows it: ``significant`` figures, then written as
    :func:`format_quantity` writes it ("117 MB", "0.324%", "$2,185", "7730 ms")."""
    if not math.isfinite(value) or value == 0:
        return format_quantity(value, unit)
    return format_quantity(float(f"{value:.{significant}g}"), unit)


def format_quantity(value: float, unit: str) -> str:
    """A value with its unit: "1.75 GB", "6.25%", "$618", "2x", "0.75"."""
    number = format_value(value)
    if unit in ("$", "USD"):
        return f"-${number[1:]}" if number.startswith("-") else f"${number}"
    if unit in ("%", "x", ""):
        return number + unit
    return f"{number} {unit}"
