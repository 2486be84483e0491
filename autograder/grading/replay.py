"""A stand-in for the learner's function, built from what the sandbox recorded.

The learner's function ran in the sandbox on every input of ``Function.test_cases()``;
only plain data came back. :class:`Replay` answers the same calls in the grader's process
from those records, so the record's own ``grade`` (the code behind the notebook's check)
judges them: it returns the recorded value, raises ValueError where the learner's
function raised ValueError (or a subclass), another error where it raised anything else,
and :class:`~autograder.timelimit.TimeLimitExceeded` where the call ran out of time.
Nothing learner-made is ever called or unpickled here.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from autograder.grading.integrity import BUILTIN_VALUE_ERRORS
from autograder.sandbox import Outcome, OutcomeType
from autograder.sandbox.protocol import encode_tree
from autograder.timelimit import TimeLimitExceeded


def call_key(args: Sequence[Any]) -> str:
    """The same text for the same arguments, on both sides of the sandbox."""
    return json.dumps(encode_tree(list(args)), sort_keys=True)


class Opaque:
    """A returned value the grader could not read as plain data: equal to nothing."""

    def __init__(self, description: str) -> None:
        self.description = description

    def __repr__(self) -> str:
        return f"<{self.description}>"

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


class NoResult(Exception):
    """The sandbox has no record of this call (the job ended before it)."""


@cache
def _exception_class(name: str, value_error: bool) -> type[Exception]:
    return type(name, (ValueError if value_error else Exception,), {})


def is_value_error(error_type: str, learner_value_errors: Iterable[str] = ()) -> bool:
    """Whether a recorded exception type is ValueError or a subclass of it: a builtin one,
    or a class the learner derived from ValueError in their cells."""
    if error_type in BUILTIN_VALUE_ERRORS:
        return True
    module, _, name = error_type.rpartition(".")
    return module == "__main__" and name in set(learner_value_errors)


def rebuild_error(outcome: Outcome, learner_value_errors: Iterable[str] = ()) -> Exception:
    """An exception that reads like the learner's: same class name, same message."""
    error_type = outcome.type_name or "Exception"
    name = error_type.rpartition(".")[2] or "Exception"
    cls = _exception_class(name, is_value_error(error_type, learner_value_errors))
    return cls(outcome.message) if outcome.message else cls()


class Replay:
    """Answers calls from recorded outcomes. A check calls the cases in the order they were
    recorded, so the next recorded call is tried first (a cheap equality test); any other
    call is found by the JSON of its arguments (a queue per key, so repeated inputs replay
    in the order they ran)."""

    instant = True  # a lookup in plain data: no learner code runs, no time limit is needed

    def __init__(self, name: str, args_list: Sequence[Sequence[Any]],
                 outcomes: Sequence[Outcome], *, skipped_type: str = "",
                 learner_value_errors: Iterable[str] = ()) -> None:
        self.__name__ = name
        self._recorded = list(zip(args_list, outcomes, strict=False))
        self._next = 0
        self._queues: dict[str, deque[int]] | None = None
        self._used: set[int] = set()
        self._skipped_type = skipped_type
        self._value_errors = frozenset(learner_value_errors)

    def _find(self, args: tuple[Any, ...]) -> int | None:
        if self._next < len(self._recorded) and self._next not in self._used:
            try:
                if tuple(self._recorded[self._next][0]) == args:
                    return self._next
            except Exception:  # noqa: BLE001 - a comparison that fails is no match
                pass
        if self._queues is None:
            self._queues = {}
            for index, (recorded, _) in enumerate(self._recorded):
                self._queues.setdefault(call_key(recorded), deque()).append(index)
        queue = self._queues.get(call_key(args), deque())
        while queue and queue[0] in self._used:
            queue.popleft()
        return queue.popleft() if queue else None

    def __call__(self, *args: Any) -> Any:
        index = self._find(args)
        if index is None:
            raise NoResult("the grader has no result for this call")
        self._used.add(index)
        self._next = index + 1
        outcome = self._recorded[index][1]
        found = outcome.type
        if found is OutcomeType.VALUE:
            return outcome.value
        if found is OutcomeType.TIMEOUT or (found is OutcomeType.RAISED and self._skipped_type
                                           and outcome.type_name == self._skipped_type):
            raise TimeLimitExceeded
        if found is OutcomeType.RAISED:
            raise rebuild_error(outcome, self._value_errors)
        if found in (OutcomeType.NOT_PLAIN, OutcomeType.INTEGRITY):
            return Opaque(outcome.message or found.value)
        raise NoResult(outcome.message or "the grader has no result for this call")

    @property
    def only_none(self) -> bool:
        """True when every recorded call returned None (the untouched stub does)."""
        return all(o.type is OutcomeType.VALUE and o.value is None for _, o in self._recorded)
