"""Trace answers: a table of steps, each checked, the first wrong step named."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autograder.kinds.base import Params, Verdict


@dataclass(frozen=True)
class Trace:
    """One row per step; the record's reference returns the list of expected rows.

    With one column a row is a single value; with several it is a tuple in
    ``columns`` order. Values are compared within ``rel_tol``.
    """

    columns: tuple[str, ...]
    step_label: str = "step"
    unit: str = ""
    rel_tol: float = 1e-9
    name: str = "trace"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        raise NotImplementedError

    def describe(self) -> str:
        return f"a list with one entry per {self.step_label}: " + ", ".join(self.columns)
