"""Constraint answers (design exercises): any configuration meeting every rule is right.

The learner answers a dict of positive whole numbers keyed by ``fields`` (keys ignore
case; values may be ints, whole floats or digit strings such as "2,048"). Every rule is
evaluated and every violated rule's feedback is listed, so one check shows all that is
left to fix. A configuration meeting some rules scores the fraction it meets, but only
one meeting all of them passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from autograder.kinds._common import Unreadable, show, whole_number
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict, misconception_name
from autograder.template import fill_leniently


@dataclass(frozen=True)
class Rule:
    """One constraint. ``holds(answer, params)`` gets the learner's configuration as a
    dict of ints keyed by the field names. ``feedback`` (a ``str.format`` template over
    the answer and params) explains a violation. An ``advice`` rule is a pointer (say,
    "your largest cost is the bubble"): its feedback follows the broken constraints when it
    fails, but it is never counted, scored or listed as a constraint that holds."""

    name: str
    holds: Callable[[Mapping[str, Any], Params], bool]
    feedback: str
    advice: bool = False  # a pointer shown when it fails, not a constraint: never counted


@dataclass(frozen=True)
class Constraints(AnswerKind):
    """The learner answers a dict with the keys ``fields`` (positive integers); the
    record's reference returns one valid example (shown only in the solution)."""

    partial_credit: ClassVar[bool] = True  # the score counts cases or parts

    fields: tuple[str, ...]
    rules: tuple[Rule, ...]

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        try:
            config = self.read(answer)
        except Unreadable as exc:
            return Verdict("invalid", str(exc), yours=show(answer))
        yours = ", ".join(f"{f}={config[f]}" for f in self.fields)
        values = {**dict(params), **config}
        rules = [rule for rule in self.rules if not rule.advice]
        broken = [fill_leniently(rule.feedback, values) for rule in rules
                  if not self._holds(rule, config, params)]
        if not broken:
            return Verdict("correct", f"Correct: all {len(rules)} constraints hold.",
                           yours=yours, score=1.0,
                           details=tuple(f"✔ {rule.name}" for rule in rules))
        advice = [fill_leniently(rule.feedback, values) for rule in self.rules
                  if rule.advice and not self._holds(rule, config, params)]
        notes = [feedback for wrong, feedback in misconceptions if self._equals(wrong, config)]
        verb = "are" if len(broken) > 1 else "is"
        noun = "constraints" if len(rules) != 1 else "constraint"
        message = (f"Not yet: {len(broken)} of {len(rules)} {noun} {verb} not met."
                   + "".join(" " + note for note in notes))
        held = len(rules) - len(broken)
        return Verdict("wrong", message, yours=yours, score=held / len(rules),
                       details=(*broken, *advice),
                       misconceptions=tuple(misconception_name(n) for n in notes))

    def read(self, answer: Any) -> dict[str, int]:
        """The configuration as ints keyed by ``fields``; Unreadable (a ValueError) if not."""
        if not isinstance(answer, Mapping):
            raise Unreadable(f"Answer with {self._example()} (got {show(answer)}).")
        by_key: dict[str, Any] = {}
        for key, value in answer.items():
            by_key[str(key).strip().casefold()] = value
        fields = {f.casefold(): f for f in self.fields}
        unknown = sorted(k for k in by_key if k not in fields)
        missing = [f for f in self.fields if f.casefold() not in by_key]
        if unknown or missing:
            problems = ([f"missing: {', '.join(missing)}"] if missing else []) + (
                [f"unknown: {', '.join(unknown)}"] if unknown else [])
            raise Unreadable(f"Use exactly the keys {', '.join(self.fields)} "
                              f"({'; '.join(problems)}).")
        return {fields[k]: self._whole(fields[k], v) for k, v in by_key.items()}

    def describe(self) -> str:
        return "a dict with keys " + ", ".join(self.fields)

    def placeholder(self, names: CellNames) -> str:
        return f"{names.answer} = dict(" + ", ".join(f"{f}=None" for f in self.fields) + ")"

    def solution_source(self, expected: Any, names: CellNames) -> str:
        return f"{names.answer} = {dict(expected)!r}"

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _whole(field: str, value: Any) -> int:
        number = whole_number(value)
        if number is None:
            raise Unreadable(f"{field} must be a whole number; got {show(value, 30)}.")
        if number < 1:
            raise Unreadable(f"{field} must be at least 1; got {number}.")
        return number

    @staticmethod
    def _holds(rule: Rule, config: Mapping[str, int], params: Params) -> bool:
        try:
            return bool(rule.holds(config, params))
        except (ArithmeticError, ValueError, LookupError):
            return False  # a rule that cannot even be evaluated for this answer is not met

    def _equals(self, wrong: Any, config: dict[str, int]) -> bool:
        try:
            return self.read(wrong) == config
        except Unreadable:
            return False

    def _example(self) -> str:
        return "a dict such as {" + ", ".join(f"{f!r}: ..." for f in self.fields) + "}"
