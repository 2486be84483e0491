"""Constraint answers (design exercises): any configuration meeting every rule is right."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from autograder.kinds.base import Params, Verdict


@dataclass(frozen=True)
class Rule:
    """One constraint. ``holds(answer, params)`` gets the learner's configuration as a
    dict of ints keyed by the field names. ``feedback`` (a ``str.format`` template over
    the answer and params) explains a violation."""

    name: str
    holds: Callable[[Mapping[str, Any], Params], bool]
    feedback: str


@dataclass(frozen=True)
class Constraints:
    """The learner answers a dict with the keys ``fields`` (positive integers); the
    record's reference returns one valid example (shown only in the solution)."""

    fields: tuple[str, ...]
    rules: tuple[Rule, ...]
    name: str = "constraints"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        raise NotImplementedError

    def describe(self) -> str:
        return "a dict with keys " + ", ".join(self.fields)
