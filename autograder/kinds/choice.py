"""Single-choice answers with feedback for every option (trace and design exercises).

The learner answers with an option's key, in any case and with the punctuation people
type around it ("b", "B", " B) ", "(b)"), or with the option's exact text. Option
numbers are not accepted: keys only, so that "2" never silently means "B".

An option's text and feedback are ``str.format`` templates over the exercise's params,
like its prompt. A variant can therefore change the options themselves: :func:`dealt`
makes options whose text and feedback are all params, and :func:`deal` fills those params
from a question's (text, feedback, right) entries in an order drawn by the variant, so a
pool of questions or a generated scenario has its own right option and feedback per draw.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from autograder.kinds._common import show
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict, misconception_name
from autograder.markup import escape_dollars
from autograder.template import fill

_AROUND_KEY = re.compile(r"^[\s(\[]*(?P<key>.*?)[\s)\].:]*$", re.DOTALL)


@dataclass(frozen=True)
class Option:
    """One option: its key ("A"), its text, what to say to a learner who picks it, and,
    for an option that is right for some numbers and wrong for others, what to say when it
    is the right one (``if_right``; without it the right option's ``feedback`` is shown,
    which must then read as a confirmation)."""

    key: str
    text: str
    feedback: str
    if_right: str = ""


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
        chosen = self.find(answer, params)
        if chosen is None:
            return Verdict("invalid", self._unknown(answer), yours=show(answer))
        right = self.find(expected, params)
        if right is None:
            raise ValueError(f"the reference answer {expected!r} is not one of the option keys")
        yours = f"{chosen.key}: {chosen.text}"
        if chosen == right:
            said = chosen.if_right or chosen.feedback
            details = (said,) if said else ()
            return Verdict("correct", f"Correct: {chosen.key}.", yours=yours, expected=yours,
                           score=1.0, details=details)
        matched = [feedback for key, feedback in misconceptions
                   if self.find(key, params) == chosen]
        extra = tuple(feedback for feedback in matched if feedback != chosen.feedback)
        message = chosen.feedback or f"Not {chosen.key}. Reread the options and try again."
        return Verdict("wrong", message, yours=yours, details=extra,
                       misconceptions=tuple(misconception_name(f) for f in matched))

    def options_for(self, params: Params | None = None) -> tuple[Option, ...]:
        """The options with their text and feedback filled from ``params`` (as written when
        ``params`` is None: options without fields read the same either way)."""
        if params is None:
            return self.options
        return tuple(replace(o, text=fill(o.text, params), feedback=fill(o.feedback, params),
                             if_right=fill(o.if_right, params))
                     for o in self.options)

    def find(self, answer: Any, params: Params | None = None) -> Option | None:
        """The option ``answer`` names (by key or by its exact text), or None."""
        if not isinstance(answer, str) or len(answer) > 500:
            return None
        options = self.options_for(params)
        match = _AROUND_KEY.match(answer)
        key = _fold(match["key"] if match else answer)
        for option in options:
            if _fold(option.key) == key:
                return option
        text = _fold(answer)
        for option in options:
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

    def prompt_extra(self, params: Params | None = None) -> tuple[str, ...]:
        return ("\n".join(f"- **{o.key}.** {escape_dollars(o.text)}"
                          for o in self.options_for(params)),)

    def placeholder(self, names: CellNames) -> str:
        keys = ", ".join(f'"{o.key}"' for o in self.options)
        return f"{names.answer} = None  # one of {keys}"

    def solution_source(self, expected: Any, names: CellNames) -> str:
        return f"{names.answer} = {expected!r}"


# -- options dealt by the variant -------------------------------------------------------

#: one option of a question before it is dealt: (text, feedback, is it the right one)
Entry = tuple[str, str, bool]


def dealt(keys: Sequence[str]) -> tuple[Option, ...]:
    """Options whose text and feedback are the params ``option_<key>`` and
    ``feedback_<key>``, filled per variant by :func:`deal`."""
    return tuple(Option(k, f"{{option_{k}}}", f"{{feedback_{k}}}") for k in keys)


def deal(entries: Sequence[Entry], keys: Sequence[str],
         rng: random.Random | None = None) -> dict[str, str]:
    """The params that put ``entries`` under ``keys`` (shuffled by ``rng``; in order when
    it is None), with ``right`` the key of the one right entry. The texts are final: a
    template field's value is inserted as it is, never filled again."""
    if len(entries) != len(keys):
        raise ValueError(f"need one entry per key: {len(entries)} entries, {len(keys)} keys")
    if sum(1 for *_, right in entries if right) != 1:
        raise ValueError("exactly one entry must be the right one")
    order = list(entries)
    if rng is not None:
        rng.shuffle(order)
    params: dict[str, str] = {}
    for key, (text, feedback, right) in zip(keys, order, strict=True):
        params[f"option_{key}"] = text
        params[f"feedback_{key}"] = feedback
        if right:
            params["right"] = key
    return params
