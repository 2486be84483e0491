"""What every answer kind shares: the verdict it returns and the misconception record.

An answer kind knows how to parse and compare one *shape* of answer (a number with a
unit, a choice, an ordering, ...). It knows nothing about any particular exercise: the
exercise record hands it the expected answer, the parameters and the misconceptions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Status = Literal["correct", "wrong", "invalid"]
Params = Mapping[str, Any]


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one answer with the expected one.

    ``status`` is ``"invalid"`` when the answer could not be read at all (wrong type,
    unparseable, wrong unit family); such an answer does not count as an attempt.
    ``yours`` and ``expected`` are short display strings ("1.75 GB"); ``expected`` is
    empty when showing it would give the answer away (e.g. a wrong choice).
    ``score`` is the fraction of the points earned, 0.0 to 1.0. ``picture`` is an optional
    fixed-width text drawing of the learner's own work (a lab's trace), shown as is.
    """

    status: Status
    message: str
    yours: str = ""
    expected: str = ""
    score: float = 0.0
    details: tuple[str, ...] = field(default_factory=tuple)
    picture: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    @property
    def counts_as_attempt(self) -> bool:
        return self.status != "invalid"


@dataclass(frozen=True)
class Misconception:
    """A known wrong answer and what to tell the learner who gives it.

    ``answer`` computes the wrong answer from the exercise parameters, in the record's
    unit (for a numeric exercise) or as the wrong option key (for a choice).
    ``feedback`` may use ``str.format`` fields from the parameters.
    """

    answer: Callable[[Params], Any]
    feedback: str


class AnswerKind(Protocol):
    """The interface every answer kind implements."""

    @property
    def name(self) -> str:
        """A short name used in notebooks and the grader: "numeric", "choice", ..."""
        ...

    def grade(
        self,
        answer: Any,
        expected: Any,
        params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        """Compare ``answer`` with ``expected``.

        ``misconceptions`` holds (wrong answer, feedback text) pairs already evaluated
        for ``params``. Must never raise on any learner input: bad input is a Verdict
        with status ``"invalid"`` and a message that says what was expected.
        """
        ...

    def describe(self) -> str:
        """One line telling the learner what form the answer takes."""
        ...
