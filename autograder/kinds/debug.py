"""Debug answers: name the buggy line, then supply the fixed function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autograder.kinds.base import Params, Verdict
from autograder.kinds.function import Function


@dataclass(frozen=True)
class Debug:
    """``code`` is a short buggy Python function shown with line numbers (1-based).

    The record's reference returns ``(bug_line, fixed_function)``. The learner answers
    ``(line, fixed_function)``; a bare line number checks the line only (and is not yet
    a pass). ``fix`` says how the fixed function is tested, as for a build exercise.
    """

    code: str
    fix: Function
    name: str = "debug"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        raise NotImplementedError

    def describe(self) -> str:
        return f"(line number, fixed function {self.fix.function_name})"
