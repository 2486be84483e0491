"""What every answer kind shares: the verdict, the misconception record and the base class.

An answer kind knows everything about one *shape* of answer (a number with a unit, a
choice, an ordering, ...): how to grade it, how to describe it, what its notebook answer
cell starts with, what the instructor's solution cell says, what a check passes, what
counts as untouched, and what batch grading asks the sandbox for and how it reads the
reply (:mod:`autograder.kinds.trip`). It
knows nothing about any particular exercise: the exercise record hands it the expected
answer, the parameters, the misconceptions and the names its cells assign.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from autograder.cell_metadata import exercise_slug
from autograder.kinds.trip import Ask, AskValue, Reason, Reply, Unread

Status = Literal["correct", "wrong", "invalid"]
Params = Mapping[str, Any]


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one answer with the expected one.

    ``status`` is ``"invalid"`` when the answer could not be read at all (wrong type,
    unparseable, wrong unit family); such an answer does not count as an attempt.
    ``yours`` and ``expected`` are short display strings ("1.75 GB"); ``expected`` is
    empty when showing it would give the answer away (e.g. a wrong choice).
    ``score`` is the fraction of the points earned, 0.0 to 1.0. A detail that is a
    :class:`HiddenInput` names a test input beyond the first failing one. ``picture`` is
    an optional fixed-width text drawing of the learner's own work (a lab's trace).
    ``ungraded`` (with status ``"invalid"``): the grader itself could not judge the answer
    (a lab's simulated cluster did not start), no fault of the learner's; a batch grader
    gives the row ``error``, never ``wrong``. ``misconceptions`` names each known
    mistake of the exercise that explains a wrong answer (:func:`misconception_name`).
    """

    status: Status
    message: str
    yours: str = ""
    expected: str = ""
    score: float = 0.0
    details: tuple[str, ...] = field(default_factory=tuple)
    picture: str = ""
    ungraded: bool = False
    misconceptions: tuple[str, ...] = ()

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
    name: str = ""

    @property
    def label(self) -> str:
        """A short name that stays the same in every variant: ``name`` if given, else the
        feedback's first clause (fields written as their names), at most ten words."""
        return self.name or _first_clause(self.feedback)


_CLAUSE_END = re.compile(r"[;:.?!](?:\s|$)|\s--\s|,\s")
_LABEL_WORDS = 10


def _first_clause(text: str) -> str:
    plain = re.sub(r"\{(\w+)[^{}]*\}", r"\1", " ".join(text.split()))
    words = _CLAUSE_END.split(plain, maxsplit=1)[0].split()
    if len(words) <= _LABEL_WORDS:
        return " ".join(words)
    cut = " ".join(words[:_LABEL_WORDS])
    if cut.count("(") > cut.count(")"):  # never end inside a parenthesis
        cut = cut[:cut.rindex("(")].rstrip()
    return cut + "…"


class Feedback(str):
    """A misconception's feedback for one variant, as :meth:`Exercise.wrong_answers` hands
    it to a kind: the text, carrying the misconception's :attr:`Misconception.label`."""

    name: str

    def __new__(cls, text: str, name: str) -> Feedback:
        made = super().__new__(cls, text)
        made.name = name
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return (Feedback, (str(self), self.name))


def misconception_name(feedback: str) -> str:
    """The name of the misconception whose ``feedback`` a kind matched: the record's label
    for a :class:`Feedback`, else the text's own first clause."""
    return feedback.name if isinstance(feedback, Feedback) else _first_clause(feedback)


class HiddenInput(str):
    """A verdict detail that shows a test input the learner's own check did not lead with.

    The notebook shows it (the learner ran the check); the grader's feedback files leave
    it out, so a class's feedback never lists the hidden test cases."""

    __slots__ = ()


class FunctionSpec(Protocol):
    """The function a learner writes, as the course outside the kinds reads it: its name,
    and the seed its hidden test inputs are drawn from. :class:`~autograder.kinds.Function`
    is one; declared here so that this module needs none of the kinds built on it."""

    @property
    def function_name(self) -> str: ...

    @property
    def seed(self) -> int: ...


@dataclass(frozen=True)
class CellNames:
    """The names an exercise's generated answer cell assigns."""

    answer: str     # the variable a value answer is assigned to: answer_5_1
    bug_line: str   # the line a debug answer names: bug_line_5_5

    @classmethod
    def for_exercise(cls, exercise_id: str) -> CellNames:
        slug = exercise_slug(exercise_id)
        return cls(answer=f"answer_{slug}", bug_line=f"bug_line_{slug}")


def is_blank(answer: Any) -> bool:
    """True for an untouched value: None, ..., or a dict/list/tuple of Nones."""
    if answer is None or answer is Ellipsis:
        return True
    if type(answer) is dict:
        return all(value is None for value in answer.values())
    if type(answer) in (list, tuple):
        return len(answer) > 0 and all(value is None for value in answer)
    return False


class AnswerKind(ABC):
    """The base of every answer kind: four abstract methods and defaults for the rest.

    A learner's answer is a *value* assigned to ``value_name`` (a number, a key, a list,
    a dict), a *function* (``function_spec`` says which), or both: then the check passes
    ``(value, function)``. The grader fetches each part from the sandbox the same way.

    ``partial_credit`` is True for a kind whose verdict ``score`` counts parts or cases
    (a function's test cases, the names of a dict, the constraints met): a term that turns
    partial credit on gives that fraction of the points. For the others a score is only a
    hint at how close the answer came, and the points stay all or nothing.
    """

    partial_credit: ClassVar[bool] = False

    @abstractmethod
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

    @abstractmethod
    def describe(self) -> str:
        """What form the answer takes, to finish "Answer with ...": "a number in GB"."""

    @abstractmethod
    def placeholder(self, names: CellNames) -> str:
        """The source a learner's answer cell starts with; it must run without error."""

    def placeholder_for(self, names: CellNames, params: Params | None = None) -> str:
        """The answer cell's starting source for the variant ``params`` picks (the printed
        one for None): :meth:`placeholder` unless a kind's cell shows the variant's own
        material (a debug exercise starts from the program its prompt shows)."""
        return self.placeholder(names)

    @abstractmethod
    def solution_source(self, expected: Any, names: CellNames) -> str:
        """The instructor's solution for the answer cell, given the reference answer."""

    def prompt_extra(self, params: Params | None = None) -> tuple[str, ...]:
        """Markdown blocks shown after the prompt (the options, the items, the code), for
        ``params`` where a kind's blocks depend on them (a variant's options or program)."""
        return ()

    def value_name(self, names: CellNames) -> str | None:
        """The variable holding the value part of the answer; None for a function only."""
        return names.answer

    def function_spec(self) -> FunctionSpec | None:
        """The function the learner writes (the grader calls it on its test cases)."""
        return None

    def answer_from_file(self, source: str, filename: str) -> object | None:
        """What ``workbook check ID FILE.py`` checks when the file must not be run in the
        checking process (a lab's ranks run apart); None: run the file and take
        :meth:`check_argument` from it."""
        return None

    def check_argument(self, names: CellNames) -> str:
        """The expression a notebook's check cell passes: the value, the function or both."""
        value, spec = self.value_name(names), self.function_spec()
        if spec is None:
            return value or ""
        return spec.function_name if value is None else f"({value}, {spec.function_name})"

    def is_untouched(self, answer: Any) -> bool:
        """True when ``answer`` is still what the answer cell started with."""
        return is_blank(answer)

    # -- the trip through the sandbox (see autograder.kinds.trip) ---------------------------
    def requests(self, params: Params, names: CellNames) -> tuple[Ask, ...]:
        """What batch grading asks the sandbox for, in the learner's names: by default the
        value the answer cell assigns."""
        return (AskValue(names.answer),)

    def collect(self, reply: Reply, params: Params, names: CellNames) -> Any | Unread:
        """The answer ``grade`` takes, read from what the sandbox returned for
        :meth:`requests`; or why there is none."""
        value = reply.value(names.answer)
        if isinstance(value, Unread):
            return value
        if self.is_untouched(value):
            return Unread(Reason.UNANSWERED, names.answer, f"expected {self.describe()}")
        return value

    def with_time_limit(self, limit_s: float) -> AnswerKind:
        """This kind with each call of the learner's function limited to ``limit_s``."""
        return self

    def with_seed(self, seed: int) -> AnswerKind:
        """This kind drawing its hidden test inputs from ``seed`` (one student's own); a
        kind without generated inputs is unchanged."""
        return self
