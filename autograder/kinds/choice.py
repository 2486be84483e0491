"""Single-choice answers with feedback for every option (trace and design exercises).

The learner answers with an option's key, in any case and with the punctuation people
type around it ("b", "B", " B) ", "(b)"), or with the option's exact text. Option
numbers are not accepted: keys only, so that "2" never silently means "B".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from autograder.kinds._common import show
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict
from autograder.markup import escape_dollars

_AROUND_KEY = re.compile(r"^[\s(\[]*(?P<key>.*?)[\s)\].:]*$", re.DOTALL)


@dataclass(frozen=True)
class Option:
    """One option: its key ("A"), its text, and what to say to a learner who picks it."""

    key: str
    text: str
    feedback: str


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class Choice(AnswerKind):
    """Exactly one option is right; the record's reference returns its key."""

    options: tuple[Option, ...]

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        chosen = self.find(answer)
        if chosen is None:
            return Verdict("invalid", self._unknown(answer), yours=show(answer))
        right = self.find(expected)
        if right is None:
            raise ValueError(f"the reference answer {expected!r} is not one of the option keys")
        yours = f"{chosen.key}: {chosen.text}"
        if chosen is right:
            details = (chosen.feedback,) if chosen.feedback else ()
            return Verdict("correct", f"Correct: {chosen.key}.", yours=yours, expected=yours,
                           score=1.0, details=details)
        extra = tuple(feedback for key, feedback in misconceptions
                      if self.find(key) is chosen and feedback != chosen.feedback)
        message = chosen.feedback or f"Not {chosen.key}. Reread the options and try again."
        return Verdict("wrong", message, yours=yours, details=extra)

    def find(self, answer: Any) -> Option | None:
        """The option ``answer`` names (by key or by its exact text), or None."""
        if not isinstance(answer, str) or len(answer) > 500:
            return None
        match = _AROUND_KEY.match(answer)
        key = _fold(match["key"] if match else answer)
        for option in self.options:
            if _fold(option.key) == key:
                return option
        text = _fold(answer)
        for option in self.options:
            if _fold(option.text) == text:
                return option
        return None

    def _unknown(self, answer: Any) -> str:
        keys = ", ".join(repr(o.key) for o in self.options)
        if isinstance(answer, str):
            return f"{show(answer)} is not one of the options: answer with one of {keys}."
        return (f"Answer with the key of one option as text, one of {keys} "
                f"(got {show(answer)}).")

    def describe(self) -> str:
        return "the key of one option: " + ", ".join(o.key for o in self.options)

    def prompt_extra(self) -> tuple[str, ...]:
        return ("\n".join(f"- **{o.key}.** {escape_dollars(o.text)}" for o in self.options),)

    def placeholder(self, names: CellNames) -> str:
        keys = ", ".join(f'"{o.key}"' for o in self.options)
        return f"{names.answer} = None  # one of {keys}"

    def solution_source(self, expected: Any, names: CellNames) -> str:
        return f"{names.answer} = {expected!r}"
