"""Function answers (build exercises): the learner's function against the reference."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autograder.kinds.base import Params, Verdict

Args = tuple[Any, ...]


@dataclass(frozen=True)
class Function:
    """The learner writes ``function_name`` with ``signature``; the record's reference returns
    the reference function (a callable from ``solutions``).

    The learner's function is called on ``edge_cases`` and on ``n_random`` argument
    tuples drawn by ``cases(rng)``; outputs must match the reference within
    ``rel_tol``. Where the reference raises ValueError (impossible input), the
    learner's function must raise ValueError too. Each call has ``time_limit_s``.
    """

    function_name: str
    signature: str
    cases: Callable[[random.Random], Args]
    edge_cases: tuple[Args, ...] = ()
    n_random: int = 20
    rel_tol: float = 1e-6
    time_limit_s: float = 1.0
    name: str = "function"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        raise NotImplementedError

    def describe(self) -> str:
        return f"a Python function: def {self.function_name}{self.signature}"
