"""The exercise record: one declarative description read by everything else.

The notebook builder, the checker, the grader, the command line and the mastery
tracker all read these records; nothing about an exercise is written twice.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from autograder.kinds.base import (
    AnswerKind,
    CellNames,
    Feedback,
    Misconception,
    Params,
    Verdict,
)
from autograder.template import fill

# What the learner does: derive a number, trace a process, build a function, debug one,
# design a layout. Not to be confused with the answer kind, which says how an answer is read.
Category = Literal["derive", "trace", "build", "debug", "design"]
CATEGORIES: tuple[str, ...] = ("derive", "trace", "build", "debug", "design")


MAX_VARIANT_DRAWS = 64
RETELL_DRAWS = 16  # draws that may look for a differently worded question after a fresh one


class NoVariantError(ValueError):
    """The exercise has no variant whose answer differs from the printed question's."""


def same_answer(a: Any, b: Any) -> bool:
    """True when two expected answers are the same (numbers to 0.1%, anything else equal)."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-3, abs_tol=1e-300)
    return bool(a == b)


@dataclass(frozen=True, eq=False)
class Exercise:
    """One exercise.

    ``prompt`` and ``explanation`` are ``str.format`` templates over ``params`` (the
    explanation may also use ``{expected}``). ``vary(rng)`` draws a fresh, sensible set
    of params for practice variants and per-student grading. ``reference(params)``
    computes the expected answer by calling into ``solutions``; it is the single source
    of truth for the answer.
    """

    id: str
    chapter: int
    category: Category
    title: str
    prompt: str
    params: Mapping[str, Any]
    vary: Callable[[random.Random], dict[str, Any]]
    answer_kind: AnswerKind
    reference: Callable[[Params], Any]
    hints: tuple[str, ...]
    explanation: str
    sources: tuple[str, ...]
    misconceptions: tuple[Misconception, ...] = ()
    points: int = 1
    # Extra material shown with the prompt (e.g. a table or the code of a debug task).
    notes: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        if self.category not in CATEGORIES:
            raise ValueError(f"exercise {self.id}: category must be one of {CATEGORIES}, "
                             f"not {self.category!r}")

    @property
    def names(self) -> CellNames:
        """The names this exercise's answer cell assigns: ``answer_5_1``, ``bug_line_5_5``."""
        return CellNames.for_exercise(self.id)

    # -- the answer ---------------------------------------------------------------
    def expected(self, params: Params | None = None) -> Any:
        """The right answer for ``params`` (canonical params when omitted)."""
        return self.reference(self.params if params is None else params)

    def draw(self, seed: int | str) -> dict[str, Any]:
        """Params drawn by ``vary`` from ``seed``, whether or not they change the answer."""
        return dict(self.vary(random.Random(f"{self.id}:{seed}")))

    def variant(self, seed: int | str) -> dict[str, Any]:
        """Params for a reproducible fresh variant drawn from ``seed`` whose answer differs
        from the printed one (a "variant" with the same answer could be passed by repeating
        it), and whose question reads differently where a draw soon gives one (a question
        pool's draw that keeps the question and only reorders its options is passed over).
        Functions (and debug fixes) are graded on generated inputs, so any draw is fresh
        for them. NoVariantError when the exercise has no answer-changing variant."""
        rng = random.Random(f"{self.id}:{seed}")
        printed, question = self.expected(), self.render_prompt()
        fresh: dict[str, Any] | None = None
        deadline = MAX_VARIANT_DRAWS
        for draw in range(MAX_VARIANT_DRAWS):
            params = dict(self.vary(rng))
            if not self._is_fresh(params, printed):
                continue
            if self.render_prompt(params) != question:
                return params
            if fresh is None:  # fresh, but worded as printed: look a little further
                fresh, deadline = params, draw + RETELL_DRAWS
            elif draw >= deadline:
                break
        if fresh is not None:
            return fresh
        raise NoVariantError(f"exercise {self.id} has no variant with a different answer: "
                             "its question does not depend on numbers")

    def _is_fresh(self, params: dict[str, Any], printed: Any) -> bool:
        """Does ``params`` ask something the printed question does not?

        A value answer must differ. A value paired with a function (a debug exercise's
        line and fix) must differ in the value or in the code shown. A function alone is
        graded on generated inputs, so any draw is fresh for it."""
        if isinstance(printed, tuple) and printed and callable(printed[-1]):
            kind, expected = self.answer_kind, self.expected(params)
            return (not same_answer(expected[:-1], printed[:-1])
                    or kind.prompt_extra(params) != kind.prompt_extra(self.params))
        if callable(printed) or self.answer_kind.function_spec() is not None:
            return True
        return bool(params) and not same_answer(self.expected(params), printed)

    def personalised(self, seed: str) -> Exercise:
        """This exercise in one student's numbers: params drawn by :meth:`variant` from
        ``seed`` (the printed ones when no draw changes the answer) and the hidden test
        inputs of a function drawn from the same seed. ``seed`` is a keyed hash of the
        student's id (:mod:`autograder.personal`), so the draw cannot be guessed."""
        try:
            params = self.variant(seed)
        except NoVariantError:
            params = dict(self.params)
        kind = self.answer_kind.with_seed(int(hashlib.sha256(
            f"{self.id}:{seed}".encode()).hexdigest()[:15], 16))
        return dataclasses.replace(self, params=params, answer_kind=kind)

    def wrong_answers(self, params: Params | None = None) -> tuple[tuple[Any, str], ...]:
        """The misconceptions evaluated for ``params``: (wrong answer, feedback) pairs, each
        feedback a :class:`Feedback` naming its misconception."""
        p = self.params if params is None else params
        pairs = []
        for m in self.misconceptions:
            try:
                pairs.append((m.answer(p), Feedback(fill(m.feedback, p), m.label)))
            except (ArithmeticError, ValueError):
                continue  # a misconception that makes no sense for these params
        return tuple(pairs)

    def grade(self, answer: Any, params: Params | None = None) -> Verdict:
        """Compare a learner's answer with the reference for ``params``."""
        p = self.params if params is None else params
        return self.answer_kind.grade(answer, self.expected(p), p, self.wrong_answers(p))

    # -- text -----------------------------------------------------------------
    def render_prompt(self, params: Params | None = None) -> str:
        return fill(self.prompt, self.params if params is None else params)

    def render_explanation(self, params: Params | None = None) -> str:
        return fill(self.explanation, self._with_expected(params))

    def render_notes(self, params: Params | None = None) -> str:
        """The notes for ``params``: a template like the prompt (may use ``{expected}``)."""
        return fill(self.notes, self._with_expected(params)) if self.notes else ""

    def render_hint(self, index: int, params: Params | None = None) -> str:
        """Hint ``index`` (0-based) for ``params``."""
        return fill(self.hints[index], self.params if params is None else params)

    def render_extras(self, params: Params | None = None) -> tuple[str, ...]:
        """The answer kind's blocks after the prompt (options, code) for ``params``."""
        return self.answer_kind.prompt_extra(self.params if params is None else params)

    def _with_expected(self, params: Params | None) -> dict[str, Any]:
        p = dict(self.params if params is None else params)
        p.setdefault("expected", self.expected(p))
        return p
