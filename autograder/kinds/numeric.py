"""Numeric answers with a unit and a tolerance (derive exercises).

The learner may answer in any unit of the right family ("1750 MB" for 1.75 GB); see
``autograder.units``. A wrong answer is explained, most specific first: a known
misconception of the exercise, then a generic slip recognised from the ratio of the
answer to the expected value (a unit prefix, GiB for GB, bits for bytes, a percentage
for a fraction, minutes for hours, a doubled or halved result), then how far off it is.

Decisions:
* A wrong answer does not show the expected value (``Verdict.expected`` stays empty):
  the learner is told the direction and rough size of the miss, so a retry still
  requires the derivation. A correct answer shows the exact value.
* For a "%" exercise a bare number that equals the expected percentage divided by 100
  (0.0625 for 6.25%) is accepted, with a note that it was read as a fraction: "0.0625"
  has no other sensible reading there. Writing "0.0625%" is taken at its word (wrong).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from autograder.kinds._common import close, show
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict, misconception_name
from autograder.unit_table import (
    BANDWIDTH,
    COMPUTE,
    COMPUTE_RATE,
    COUNT_PREFIX,
    ENERGY,
    MONEY,
    POWER,
    RATIO,
    SIZE,
    TIME,
    target_unit,
)
from autograder.units import Reading, UnitError, format_quantity, format_value, read_quantity

_BYTES = frozenset({SIZE, BANDWIDTH})
_ANY: frozenset[str] = frozenset()
#: families whose units take decimal prefixes (GB and MB, ms and s); a counting word, a
#: plain number and dollars have none
_PREFIXED = frozenset({SIZE, BANDWIDTH, TIME, COMPUTE, COMPUTE_RATE, POWER, ENERGY})
COUNT = "count"  # stands for every counting word's family ("count:step") in _SLIPS
#: a unit of the same family to show as an example of typing one's own unit
_OTHER_UNIT = {SIZE: ("MB", "GB"), BANDWIDTH: ("MB/s", "GB/s"), TIME: ("ms", "s"),
               COMPUTE: ("TFLOP", "PFLOP"), COMPUTE_RATE: ("TFLOPS", "PFLOPS"),
               POWER: ("kW", "MW"), ENERGY: ("kWh", "MWh")}

# (factor, families it applies to (empty: all), what to say). Checked in this order.
_SLIPS: tuple[tuple[float, frozenset[str], str], ...] = (
    (1e3, _PREFIXED, "check the unit prefix (kilo, mega, giga; milli, micro) -- you may also "
                     "type the unit you worked in, such as '<number> {other}'"),
    (1e3, frozenset({MONEY}), "check the scale: plain dollars, thousands or millions -- you "
                              "may also write '$<number>k' or '$<number>M'"),
    (1e3, frozenset({RATIO, COUNT}), "check the scale of each number you multiplied or "
                                     "divided (thousands, millions, billions)"),
    (1e6, _ANY, "check the unit prefixes: two steps of 1,000 apart"),
    (1e9, _ANY, "check the unit prefixes: three steps of 1,000 apart (bytes vs GB?)"),
    (1e12, _ANY, "check the unit prefixes: four steps of 1,000 apart"),
    (8.0, _BYTES, "bits vs bytes? 1 byte = 8 bits, and links are quoted in bits per second "
                  "(Gb/s), memory in bytes (GB/s)"),
    (100.0, frozenset({RATIO}), "a fraction and a percentage differ by 100 (0.5 = 50%)"),
    (60.0, frozenset({TIME}), "minutes vs seconds, or hours vs minutes?"),
    (3600.0, frozenset({TIME}), "hours vs seconds?"),
    (24.0, frozenset({TIME}), "days vs hours?"),
    (2.0, _ANY, "check for a factor counted twice or left out"),
)


_BINARY_NAMES = ("KiB and KB", "MiB and MB", "GiB and GB", "TiB and TB", "PiB and PB")


def _binary_slip(factor: float) -> tuple[float, str] | None:
    """Binary vs decimal prefix at the exercise's own scale: GB <-> GiB is 2^30 / 10^9."""
    for k, names in enumerate(_BINARY_NAMES, start=1):
        if factor in (10.0 ** (3 * k), 2.0 ** (10 * k)):
            ratio = 2.0 ** (10 * k) / 10.0 ** (3 * k)
            return ratio, (f"check {names}: 1 GB = 10^9 bytes, 1 GiB = 2^30 bytes; type the "
                           "unit you used, such as '<number> GiB', and it is converted")
    return None


def _slips(unit: str) -> list[tuple[float, str]]:
    """The slips worth checking for an exercise in ``unit``, with what to say (a unit
    prefix only where the unit takes one, with another unit of its own family as the
    example)."""
    target = target_unit(unit)
    family = COUNT if target.family.startswith(COUNT_PREFIX) else target.family
    # which advice a factor of 1,000 gets: minutes, hours and days take no prefix
    scale = COUNT if family == TIME and target.factor >= 60 else family
    first, second = _OTHER_UNIT.get(family, ("", ""))
    other = second if target.symbol == first else first
    found = [(factor, why.replace("{other}", other)) for factor, families, why in _SLIPS
             if not families or (scale if factor == 1e3 else family) in families]
    binary = _binary_slip(target.factor) if target.family in _BYTES else None
    if binary is not None:
        found.insert(4, binary)  # after the powers of 1,000
    return found


@dataclass(frozen=True)
class Numeric(AnswerKind):
    """A number in ``unit``, accepted within ``rel_tol`` (relative) or ``abs_tol``.

    ``unit`` is the unit the expected value is expressed in: "GB", "MB", "GiB", "ms",
    "s", "min", "h", "days", "%", "GB/s", "$", "TFLOPS", "PF-days", or a counting word
    such as "steps", "GPUs", "layers", "seq/s" or "" (a pure number). Learners may
    answer in any unit of the same family ("1750 MB" for 1.75 GB).
    """

    unit: str
    rel_tol: float = 0.01
    abs_tol: float = 0.0

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        try:
            reading = read_quantity(answer, self.unit)
        except UnitError as exc:
            message = str(exc)
            return Verdict("invalid", message[:1].upper() + message[1:] + ".",
                           yours=show(answer))
        want = float(expected)
        notes = (reading.note[:1].upper() + reading.note[1:] + ".",) if reading.note else ()
        if self._close(reading.value, want):
            return self._correct(reading, want, notes)
        if self._fraction_for_percent(reading, want):
            return self._correct_fraction(reading, want)
        found = self._misconceptions(reading.value, want, misconceptions)
        message = (self._misconception(found) or self._slip(reading.value, want)
                   or self._miss(reading.value, want))
        return Verdict("wrong", message, yours=self._yours(reading), details=notes,
                       misconceptions=tuple(misconception_name(f) for f in found))

    def describe(self) -> str:
        return f"a number in {self.unit}" if self.unit else "a number"

    def placeholder(self, names: CellNames) -> str:
        if not self.unit:
            return f"{names.answer} = None  # your answer: a plain number"
        return (f"{names.answer} = None  # your answer in {self.unit}: a number, or text with "
                f'a unit like "<number> {self.unit}"')

    def solution_source(self, expected: Any, names: CellNames) -> str:
        return f"{names.answer} = {format_value(expected).replace(',', '_')}"

    # -- outcomes -----------------------------------------------------------------------
    def _correct(self, reading: Reading, want: float, notes: tuple[str, ...]) -> Verdict:
        expected = format_quantity(want, self.unit)
        details = notes
        if not close(reading.value, want, 1e-9):
            details += (f"The exact value is {expected}; yours is within the tolerance "
                        f"({self._tolerance()}).",)
        return Verdict("correct", "Correct.", yours=self._yours(reading), expected=expected,
                       score=1.0, details=details)

    def _correct_fraction(self, reading: Reading, want: float) -> Verdict:
        as_percent = format_quantity(reading.value * 100, "%")
        note = (f"Read {format_value(reading.value)} as a fraction, i.e. {as_percent}. "
                f"Write '{as_percent}' to say so explicitly.")
        return Verdict("correct", "Correct.", yours=f"{reading.text} = {as_percent}",
                       expected=format_quantity(want, "%"), score=1.0, details=(note,))

    def _fraction_for_percent(self, reading: Reading, want: float) -> bool:
        return (target_unit(self.unit).symbol == "%" and reading.written_unit == ""
                and self._close(reading.value * 100, want))

    # -- explaining a wrong answer ----------------------------------------------------------
    def _misconceptions(self, value: float, want: float,
                        misconceptions: tuple[tuple[Any, str], ...]) -> list[str]:
        """The feedback of every misconception that gives ``value``, all of them.

        Two different mistakes can lead to the same number for some inputs; picking one
        would tell half the learners about a mistake they did not make.
        """
        found: list[str] = []
        for wrong, feedback in misconceptions:
            try:
                wrong_value = float(wrong)
            except (TypeError, ValueError, OverflowError):
                continue
            if not math.isfinite(wrong_value) or self._close(wrong_value, want):
                continue  # for these numbers the misconception gives the right answer
            if self._close(value, wrong_value) and feedback not in found:
                found.append(feedback)
        return found

    @staticmethod
    def _misconception(found: list[str]) -> str:
        """One message for the misconceptions found: the feedback, or all of them numbered."""
        if len(found) < 2:
            return "".join(found)
        listed = " ".join(f"({n}) {text}" for n, text in enumerate(found, start=1))
        count = {2: "Two", 3: "Three"}.get(len(found), str(len(found)))
        return (f"{count} different mistakes lead to this number with these inputs; "
                f"check which one you made. {listed}")

    def _slip(self, value: float, want: float) -> str:
        if want == 0:
            return ""
        for factor, why in _slips(self.unit):
            for scaled, word in ((want * factor, "large"), (want / factor, "small")):
                # a slip only if the answer is nearer the slipped value than the right one
                if self._close(value, scaled) and abs(value - scaled) < abs(value - want):
                    # the direction and the likely cause, never the exact factor: with the
                    # factor the learner could rescale a wrong number into the answer
                    return f"Not yet: your answer is too {word} -- {why}."
        if self._close(-value, want):
            return "Not yet: the size is right but the sign is wrong."
        return ""

    def _miss(self, value: float, want: float) -> str:
        if want == 0 or value == 0 or (value < 0) != (want < 0):
            return "Not yet. Work through the derivation again step by step."
        band = max(self.rel_tol * abs(want), self.abs_tol)
        if abs(value - want) <= 5 * band:
            return (f"Close, but outside the tolerance ({self._tolerance()}): keep more digits "
                    "in the intermediate results.")
        word = "large" if abs(value) > abs(want) else "small"
        ratio = abs(value) / abs(want)  # may underflow to 0 (5e-324) or overflow to inf
        ratio = max(ratio, 1 / ratio) if 0 < ratio < math.inf else math.inf
        if ratio < 1.5:
            how = "by less than 50%"
        elif ratio < 10:
            how = "by a factor between 1.5 and 10"
        else:
            how = "by more than a factor of 10: check the units and powers of ten"
        return f"Not yet: your answer is too {word}, {how}."

    # -- helpers ----------------------------------------------------------------------------
    def _close(self, value: float, want: float) -> bool:
        return close(value, want, self.rel_tol, self.abs_tol)

    def _tolerance(self) -> str:
        parts = []
        if self.rel_tol:
            parts.append(f"±{format_value(self.rel_tol * 100)}%")
        if self.abs_tol:
            parts.append(f"±{format_quantity(self.abs_tol, self.unit)}")
        return " or ".join(parts) or "exact"

    def _yours(self, reading: Reading) -> str:
        converted = format_quantity(reading.value, self.unit)
        unit = reading.written_unit
        if unit == "" or unit == self.unit or reading.text == converted:
            return converted
        return f"{reading.text} = {converted}"
