"""Ordering answers: put the given items in the right order (design exercises)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autograder.kinds.base import Params, Verdict


@dataclass(frozen=True)
class Ordering:
    """The learner orders ``items``; the record's reference returns the right order.

    ``first_label``/``last_label`` name the ends ("innermost", "outermost").
    """

    items: tuple[str, ...]
    first_label: str = "first"
    last_label: str = "last"
    name: str = "ordering"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        raise NotImplementedError

    def describe(self) -> str:
        return f"a list of all {len(self.items)} items, {self.first_label} to {self.last_label}"
