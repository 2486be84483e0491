"""An answer's trip through the sandbox, as its kind describes it.

In batch grading the learner's code never runs in the grader's process. Each answer kind
says what to ask the sandbox for (:meth:`AnswerKind.requests`, a tuple of the four asks
below, spoken in the learner's own names) and how to read what comes back
(:meth:`AnswerKind.collect`, which gets a :class:`Reply` and returns the answer the kind's
``grade`` takes, or an :class:`Unread` saying why there is none). The grader turns the asks
into sandbox requests, and the sandbox's typed outcomes into what a :class:`Reply` hands
out; it knows no answer kind, and a kind knows nothing of the sandbox's wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class AskValue:
    """The value bound to ``name`` right after the answer cell, as plain data."""

    name: str


@dataclass(frozen=True)
class AskCalls:
    """The learner's function ``name`` (as bound right after the answer cell), called once
    per argument tuple; each call limited to the job's per-call time."""

    name: str
    args_list: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class AskRun:
    """The learner's function ``name`` handed to a runner in the sandbox: the sandbox loads
    ``modules`` (shipped as source by the grader), then calls ``entry`` ("module:function")
    as ``entry(learner_function, job)`` once per plain-data job; the plain results come back."""

    name: str
    modules: tuple[str, ...]
    entry: str
    jobs: tuple[Any, ...]


@dataclass(frozen=True)
class AskSource:
    """The source text of the function ``name`` as the learner's cells define it."""

    name: str


Ask = AskValue | AskCalls | AskRun | AskSource


class Reason(str, Enum):
    """Why an answer could not be read; the grader words it and gives the row a status."""

    UNANSWERED = "unanswered"      # still the placeholder (the kind says what is expected)
    MISSING = "missing"            # the name is not there after the answer cell
    NOT_PLAIN = "not_plain"        # not plain data (a generator, a custom object)
    NOT_FUNCTION = "not_function"  # a function was expected
    FORGED = "forged"              # an object made to pass comparisons
    NO_RESULT = "no_result"        # the job ended before this was answered


@dataclass(frozen=True)
class Unread:
    """No answer to grade: ``reason``, about the learner's ``name``; ``detail`` is the kind's
    or the sandbox's words (what is expected, the type found)."""

    reason: Reason
    name: str
    detail: str = ""


@dataclass(frozen=True)
class RunResult:
    """One job of an :class:`AskRun`: the runner's plain result, or why there is none
    (``failure``: "timeout", "skipped" after an earlier time-out, or "program")."""

    value: Any = None
    failure: str = ""
    message: str = ""


@runtime_checkable
class Recorded(Protocol):
    """A stand-in for the learner's function: answers the asked calls as it did (returns the
    recorded value, raises a look-alike of what it raised)."""

    __name__: str
    instant: bool  # answers from plain data (runs no learner code): called without a limit

    def __call__(self, *args: Any) -> Any: ...

    @property
    def only_none(self) -> bool:
        """True when every recorded call returned None (the untouched stub does)."""


class Reply(Protocol):
    """What the sandbox returned for a kind's asks, looked up by the learner's name."""

    def value(self, name: str) -> Any | Unread:
        """The plain value of an :class:`AskValue` (``None`` for an ``...`` placeholder)."""

    def function(self, name: str) -> Recorded | Any | Unread:
        """For an :class:`AskCalls`: the recorded function, or the plain value bound to
        the name when it is not a function (the kind explains what a function looks like)."""

    def runs(self, name: str) -> Sequence[RunResult] | Unread:
        """For an :class:`AskRun`: one result per job, in order."""

    def source(self, name: str) -> str | None:
        """For an :class:`AskSource`: the function's source text, or None."""
