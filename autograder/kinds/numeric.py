"""Numeric answers with a unit and a tolerance (derive exercises)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autograder.kinds.base import Params, Verdict


@dataclass(frozen=True)
class Numeric:
    """A number in ``unit``, accepted within ``rel_tol`` (relative) or ``abs_tol``.

    ``unit`` is the unit the expected value is expressed in: "GB", "MB", "GiB", "ms",
    "s", "min", "h", "days", "%", "GB/s", "$", "TFLOPS", "PF-days", or a counting word
    such as "steps", "GPUs", "layers", "seq/s" or "" (a pure number). Learners may
    answer in any unit of the same family ("1750 MB" for 1.75 GB).
    """

    unit: str
    rel_tol: float = 0.01
    abs_tol: float = 0.0
    name: str = "numeric"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        raise NotImplementedError

    def describe(self) -> str:
        return f"a number in {self.unit}" if self.unit else "a number"
