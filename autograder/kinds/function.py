"""Function answers (build exercises): the learner's function against the reference.

Both functions are called on the same inputs: the record's ``edge_cases`` first, then
``n_random`` argument tuples drawn by ``cases(rng)``. The generator is seeded from the
function's name and ``seed``, so every check (and every learner) meets the same cases
and a message about "the first failing input" stays true when the learner re-checks.

Each learner call runs under ``autograder.timelimit`` (``time_limit_s``); after a time-out
the remaining cases are not run (each would likely time out too) and count as failed.
Results compare as numbers when the reference returns a number (ints, floats and numpy
scalars alike), element by element for tuples and lists, and by equality otherwise.
Where the reference raises ValueError (an impossible input), the learner's function
must raise ValueError too (any subclass).
"""

from __future__ import annotations

import copy
import numbers
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from autograder.kinds._common import close, error_text, reference_import, show
from autograder.kinds.base import AnswerKind, CellNames, HiddenInput, Params, Verdict, is_blank
from autograder.kinds.trip import Ask, AskCalls, Reason, Recorded, Reply, Unread
from autograder.timelimit import Outcome, call_unlimited, call_with_time_limit

Args = tuple[Any, ...]
_SHOWN_FAILURES = 3


@dataclass(frozen=True)
class _Case:
    passed: bool
    text: str = ""          # what went wrong, with the call written out
    timed_out: bool = False
    skipped: bool = False   # not run, after an earlier time-out


_IMMUTABLE = frozenset({int, float, complex, str, bool, bytes, type(None)})


def _fresh(args: Args) -> Args:
    """``args`` as a call may receive them: a deep copy, so that a function that changes
    its arguments changes nothing for the next call (arguments that cannot change are
    passed as they are)."""
    if all(type(a) in _IMMUTABLE for a in args):
        return args
    return copy.deepcopy(args)


@dataclass(frozen=True)
class Function(AnswerKind):
    """The learner writes ``function_name`` with ``signature``; the record's reference returns
    the reference function (a callable from ``solutions``).

    The learner's function is called on ``edge_cases`` and on ``n_random`` argument
    tuples drawn by ``cases(rng)``; outputs must match the reference within
    ``rel_tol`` (or ``abs_tol``, for results that should be zero). Where the reference
    raises ValueError (impossible input), the learner's function must raise ValueError
    too. Each call has ``time_limit_s``. ``seed`` picks the (fixed) random cases.
    """

    partial_credit: ClassVar[bool] = True  # the score counts cases or parts

    function_name: str
    signature: str
    cases: Callable[[random.Random], Args]
    edge_cases: tuple[Args, ...] = ()
    n_random: int = 20
    rel_tol: float = 1e-6
    time_limit_s: float = 1.0
    abs_tol: float = 1e-12
    seed: int = 0

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        if not callable(answer):
            return Verdict("invalid", self._not_callable(answer), yours=show(answer))
        cases = self.test_cases()
        # Every call of the learner's function happens before any reference value exists,
        # so no frame the learner's code can walk up to holds one.
        outcomes = self._call_all(answer, cases)
        results = [_Case(False, skipped=True) if outcome is None
                   else self._judge(expected, args, outcome)
                   for args, outcome in zip(cases, outcomes, strict=True)]
        return self._verdict(answer, results)

    def _call_all(self, fn: Callable[..., Any], cases: list[Args]) -> list[Outcome | None]:
        """The learner's function on every case (None: skipped after a time-out)."""
        outcomes: list[Outcome | None] = []
        instant = getattr(fn, "instant", False) is True  # a recorded function: a lookup
        for args in cases:
            if any(o is not None and o.timed_out for o in outcomes):
                outcomes.append(None)
            elif instant:
                outcomes.append(call_unlimited(fn, _fresh(args)))
            else:
                outcomes.append(call_with_time_limit(fn, _fresh(args), self.time_limit_s))
        return outcomes

    def test_cases(self) -> list[Args]:
        """Every argument tuple a check uses, edge cases first (the same on every call)."""
        rng = random.Random(f"{self.function_name}:{self.seed}")
        return [tuple(a) for a in self.edge_cases] + [tuple(self.cases(rng))
                                                      for _ in range(self.n_random)]

    def describe(self) -> str:
        return f"a Python function: def {self.function_name}{self.signature}"

    def placeholder(self, names: CellNames) -> str:
        """The signature and an empty body."""
        return f"def {self.function_name}{self.signature}:\n    # your code here\n    return None"

    def solution_source(self, expected: Any, names: CellNames) -> str:
        return reference_import(expected, self.function_name)

    def value_name(self, names: CellNames) -> str | None:
        return None

    def function_spec(self) -> Function:
        return self

    def with_time_limit(self, limit_s: float) -> Function:
        return replace(self, time_limit_s=limit_s)

    def with_seed(self, seed: int) -> Function:
        return replace(self, seed=seed)

    def requests(self, params: Params, names: CellNames) -> tuple[Ask, ...]:
        """The learner's function, called on every test case."""
        return (AskCalls(self.function_name, tuple(self.test_cases())),)

    def collect(self, reply: Reply, params: Params, names: CellNames) -> Any | Unread:
        function = reply.function(self.function_name)
        if isinstance(function, Recorded) and function.only_none:
            return Unread(Reason.UNANSWERED, self.function_name,
                          f"{self.function_name} still returns None")
        return function

    def is_untouched(self, answer: Any) -> bool:
        """A blank value, or the untouched stub (compares compiled code)."""
        if is_blank(answer):
            return True
        code = getattr(answer, "__code__", None)
        if code is None:
            return False
        namespace: dict[str, Any] = {}
        exec(compile(self.placeholder(CellNames("", "")), "<stub>", "exec"), namespace)
        stub_code = namespace[self.function_name].__code__
        return (code.co_code, code.co_consts, code.co_names) == (
            stub_code.co_code, stub_code.co_consts, stub_code.co_names)

    # -- one case -----------------------------------------------------------------------
    def _judge(self, reference: Callable[..., Any], args: Args, outcome: Outcome) -> _Case:
        try:
            want: Any = reference(*_fresh(args))
            impossible: ValueError | None = None
        except ValueError as exc:  # the reference rejects this input; other errors are bugs
            want, impossible = None, exc
        call = self._call_text  # written out only for a case that fails
        if outcome.timed_out:
            return _Case(False, f"{call(args)} did not finish within {self.time_limit_s:g} s "
                                "(an endless loop?)", timed_out=True)
        if impossible is not None:
            if isinstance(outcome.error, ValueError):
                return _Case(True)
            what = (f"raised {error_text(outcome.error)}" if outcome.error is not None
                    else f"returned {show(outcome.value)}")
            return _Case(False, f"{call(args)} {what}; expected it to raise ValueError, as this "
                                f"input is impossible ({impossible})")
        if outcome.error is not None:
            return _Case(False, f"{call(args)} raised {error_text(outcome.error)}; "
                                f"expected {show(want)}")
        if same(outcome.value, want, self.rel_tol, self.abs_tol):
            return _Case(True)
        return _Case(False, f"{call(args)} returned {show(outcome.value)}; expected {show(want)}")

    def _call_text(self, args: Args) -> str:
        return f"{self.function_name}({', '.join(show(a, 30) for a in args)})"

    # -- the verdict ----------------------------------------------------------------------
    def _verdict(self, fn: Any, results: list[_Case]) -> Verdict:
        total, passed = len(results), sum(r.passed for r in results)
        yours = f"{getattr(fn, '__name__', type(fn).__name__)}: {passed} of {total} cases"
        if passed == total:
            return Verdict("correct", f"Correct: your function matches the reference on all "
                           f"{total} cases.", yours=yours, expected=f"{total} of {total} cases",
                           score=1.0)
        failures = [r.text for r in results if not r.passed and not r.skipped]
        details = [f"{passed} of {total} cases passed."]
        details += [HiddenInput(f"Also: {text}.") for text in failures[1:_SHOWN_FAILURES]]
        skipped = sum(r.skipped for r in results)
        if skipped:
            details.append(f"The other {skipped} cases were not run after the time-out.")
        if any("TypeError" in text for text in failures):
            details.append(f"The function should be: def {self.function_name}{self.signature}")
        return Verdict("wrong", failures[0] + ".", yours=yours, score=passed / total,
                       details=tuple(details))

    def _not_callable(self, answer: Any) -> str:
        example = f"check(..., {self.function_name})"
        if isinstance(answer, str) and answer.strip() == self.function_name:
            return (f"Pass the function itself, e.g. {example} -- its name without quotes "
                    "and without parentheses.")
        if isinstance(answer, (numbers.Number, str, tuple, list)):
            return (f"Pass the function itself, e.g. {example} -- without parentheses. You "
                    f"passed a {type(answer).__name__} ({show(answer, 30)}), perhaps the "
                    "result of calling it.")
        return (f"Pass the function itself, e.g. {example} -- without parentheses; got "
                f"{show(answer, 30)}.")


def same(got: Any, want: Any, rel_tol: float, abs_tol: float = 0.0) -> bool:
    """Whether a returned value matches the reference's, numbers within tolerance."""
    try:
        return _same(got, want, rel_tol, abs_tol)
    except Exception:  # a learner's object whose comparison or conversion misbehaves
        return False


def _same(got: Any, want: Any, rel_tol: float, abs_tol: float) -> bool:
    if hasattr(want, "tolist") and not isinstance(want, (numbers.Real, list, tuple)):
        want = want.tolist()  # a numpy array from the reference
    if isinstance(want, bool) or type(want).__name__ == "bool_":
        return (isinstance(got, bool) or type(got).__name__ == "bool_") and bool(got) == want
    if isinstance(want, numbers.Real):
        if getattr(got, "shape", None) == () and hasattr(got, "item"):
            got = got.item()  # a 0-d numpy array
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return False
        return close(float(got), float(want), rel_tol, abs_tol)
    if isinstance(want, (list, tuple)):
        if hasattr(got, "tolist") and not isinstance(got, (list, tuple)):
            got = got.tolist()
        return (isinstance(got, (list, tuple)) and len(got) == len(want)
                and all(_same(g, w, rel_tol, abs_tol) for g, w in zip(got, want, strict=True)))
    if isinstance(want, Mapping):
        return (isinstance(got, Mapping) and set(got) == set(want)
                and all(_same(got[k], want[k], rel_tol, abs_tol) for k in want))
    return bool(got == want)
