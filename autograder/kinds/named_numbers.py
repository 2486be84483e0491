"""Several named numbers, each with its own unit, answered together as a dict.

For a question whose answer is a small breakdown ("the memory per GPU: weights, gradients,
optimizer state", "compute time and communication time per step") rather than one number.
The learner answers a dict keyed by the names (keys ignore case and surrounding spaces);
each value is read and compared exactly as a :class:`~autograder.kinds.numeric.Numeric`
answer in its own unit ("1750 MB" for 1.75 GB), with the same explanations of a miss.
The answer passes when every value does; a partly right answer scores the fraction right
and names each value still wrong.

A misconception's answer is a dict holding some of the names; its feedback is given for
a value that matches the wrong value of that name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from autograder.kinds._common import show
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict
from autograder.kinds.numeric import Numeric
from autograder.units import format_value


@dataclass(frozen=True)
class NamedNumbers(AnswerKind):
    """``fields`` are (name, unit) pairs in the order they are asked for; the record's
    reference returns a dict of the expected numbers keyed by the names. Every value is
    accepted within ``rel_tol`` (relative) or ``abs_tol`` (in its own unit)."""

    partial_credit: ClassVar[bool] = True  # the score counts cases or parts

    fields: tuple[tuple[str, str], ...]
    rel_tol: float = 0.01
    abs_tol: float = 0.0

    def __post_init__(self) -> None:
        names = [name for name, _ in self.fields]
        if not names or len(set(names)) != len(names) or not all(
                n.isidentifier() for n in names):
            raise ValueError("NamedNumbers needs distinct field names that are Python "
                             f"identifiers, got {names!r}")

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        values = self._read(answer)
        if isinstance(values, str):
            return Verdict("invalid", values, yours=show(answer))
        verdicts = {name: self._number(unit).grade(
            values[name], expected[name], params, self._wrong_values(name, misconceptions))
            for name, unit in self.fields}
        unreadable = [f"{name}: {v.message}" for name, v in verdicts.items()
                      if v.status == "invalid"]
        if unreadable:
            return Verdict("invalid", " ".join(unreadable), yours=show(answer))
        yours = ", ".join(f"{name} = {v.yours}" for name, v in verdicts.items())
        wrong = [name for name, v in verdicts.items() if not v.passed]
        if not wrong:
            notes = tuple(f"{name}: {d}" for name, v in verdicts.items() for d in v.details)
            expected_text = ", ".join(f"{name} = {v.expected}" for name, v in verdicts.items())
            return Verdict("correct", f"Correct: all {len(verdicts)} values.", yours=yours,
                           expected=expected_text, score=1.0, details=notes)
        right = len(verdicts) - len(wrong)
        return Verdict("wrong", f"Not yet: {right} of {len(verdicts)} values are right "
                       f"(still wrong: {', '.join(wrong)}).", yours=yours,
                       score=right / len(verdicts),
                       details=tuple(f"{name}: {verdicts[name].message}" for name in wrong),
                       misconceptions=tuple(dict.fromkeys(
                           m for name in wrong for m in verdicts[name].misconceptions)))

    def describe(self) -> str:
        return "a dict of numbers: " + ", ".join(
            f"{name} (in {unit})" if unit else name for name, unit in self.fields)

    def placeholder(self, names: CellNames) -> str:
        keys = ", ".join(f"{name}=None" for name, _ in self.fields)
        units = ", ".join(f"{name} in {unit}" for name, unit in self.fields if unit)
        return f"{names.answer} = dict({keys})" + (f"  # {units}" if units else "")

    def solution_source(self, expected: Any, names: CellNames) -> str:
        values = ", ".join(f"{name}={format_value(expected[name]).replace(',', '_')}"
                           for name, _ in self.fields)
        return f"{names.answer} = dict({values})"

    # -- helpers ------------------------------------------------------------------------
    def _number(self, unit: str) -> Numeric:
        return Numeric(unit=unit, rel_tol=self.rel_tol, abs_tol=self.abs_tol)

    def _read(self, answer: Any) -> dict[str, Any] | str:
        """The answer's values keyed by the field names, or what is wrong with it."""
        example = "dict(" + ", ".join(f"{name}=..." for name, _ in self.fields) + ")"
        if not isinstance(answer, Mapping):
            return f"Answer with {example} (got {show(answer)})."
        by_key = {str(key).strip().casefold(): value for key, value in answer.items()}
        names = {name.casefold(): name for name, _ in self.fields}
        missing = [name for name, _ in self.fields if name.casefold() not in by_key]
        unknown = sorted(key for key in by_key if key not in names)
        if missing or unknown:
            problems = ([f"missing: {', '.join(missing)}"] if missing else []) + (
                [f"unknown: {', '.join(unknown)}"] if unknown else [])
            return f"Use exactly the keys of {example} ({'; '.join(problems)})."
        return {names[key]: value for key, value in by_key.items()}

    @staticmethod
    def _wrong_values(name: str, misconceptions: tuple[tuple[Any, str], ...],
                      ) -> tuple[tuple[Any, str], ...]:
        return tuple((wrong[name], feedback) for wrong, feedback in misconceptions
                     if isinstance(wrong, Mapping) and name in wrong)
