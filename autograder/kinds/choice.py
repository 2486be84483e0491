"""Single-choice answers with feedback for every option (trace and design exercises)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autograder.kinds.base import Params, Verdict


@dataclass(frozen=True)
class Option:
    """One option: its key ("A"), its text, and what to say to a learner who picks it."""

    key: str
    text: str
    feedback: str


@dataclass(frozen=True)
class Choice:
    """Exactly one option is right; the record's reference returns its key."""

    options: tuple[Option, ...]
    name: str = "choice"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        raise NotImplementedError

    def describe(self) -> str:
        return "the key of one option: " + ", ".join(o.key for o in self.options)
