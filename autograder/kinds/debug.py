"""Debug answers: name the buggy line, then supply the fixed function.

Accepted answers: ``(line, fixed_function)``, a bare line number (an int, or text such
as "6" or "line 6"), or a dict ``{"line": 6, "fix": fixed_function}``. Lines are
numbered from 1 as ``lines`` splits ``code``, the same numbering the notebook shows.

Grading runs in two stages. A wrong line scores 0 and says so; a misconception whose
answer is a line number tells the learner what that line does right. The right line
alone scores 0.5 and asks for the fix. The right line with a fixed function is graded
as a build exercise: correct only if the fix passes every case; a failing fix scores
0.5 plus half the fraction of cases it passes.

A debug exercise can show a different buggy program per variant: ``programs`` holds
further listings of the same function (another line, another bug of the same kind), and
a variant's ``program`` param picks one (0, or no such param, is ``code``). Every listing
is fixed by the same function, so the fix is graded the same way; the record's reference
names the buggy line for the params' program.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from autograder.kinds._common import Unreadable, reference_import, show, whole_number
from autograder.kinds.base import (
    AnswerKind,
    CellNames,
    Params,
    Verdict,
    is_blank,
    misconception_name,
)
from autograder.kinds.function import Function
from autograder.kinds.trip import Ask, AskValue, Reason, Reply, Unread

_LINE = re.compile(r"\s*(?:line|l)?\s*#?\s*(\d{1,4})\s*", re.IGNORECASE | re.ASCII)
_FIX_KEYS = ("fix", "fixed", "fn", "function")
_HINT = ("Work the function through by hand with small, easy numbers and "
         "compare each line with the formula it should compute: the bug is the first line "
         "whose value disagrees.")



@dataclass(frozen=True)
class Debug(AnswerKind):
    """``code`` is a short buggy Python function shown with line numbers (1-based).

    The record's reference returns ``(bug_line, fixed_function)``. The learner answers
    ``(line, fixed_function)``; a bare line number checks the line only (and is not yet
    a pass). ``fix`` says how the fixed function is tested, as for a build exercise.
    """

    partial_credit: ClassVar[bool] = True  # the score counts cases or parts

    code: str
    fix: Function
    programs: tuple[str, ...] = ()

    @property
    def lines(self) -> tuple[str, ...]:
        """The code's lines; line n of the listing is ``lines[n - 1]``."""
        return self.lines_for(None)

    def code_for(self, params: Params | None) -> str:
        """The listing a variant shows: ``programs[program - 1]``, or ``code`` for 0."""
        index = 0 if params is None else params.get("program", 0)
        listings = (self.code, *self.programs)
        if not isinstance(index, int) or not 0 <= index < len(listings):
            raise ValueError(f"program must be an index from 0 to {len(listings) - 1}, "
                             f"got {index!r}")
        return listings[index]

    def lines_for(self, params: Params | None) -> tuple[str, ...]:
        """The lines of the listing ``params`` picks; line n is ``[n - 1]``."""
        return tuple(self.code_for(params).rstrip("\n").split("\n"))

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        bug_line, fixed_reference = expected
        lines = self.lines_for(params)
        try:
            line, fixed = self._read(answer, lines)
        except Unreadable as exc:
            return Verdict("invalid", str(exc), yours=show(answer))
        yours = f"line {line}" + ("" if fixed is None else " + fixed function")
        if line != bug_line:
            return self._wrong_line(lines[line - 1], line, fixed, yours, misconceptions)
        if fixed is None:
            return Verdict("wrong", f"Right line. Now write the fixed function "
                           f"{self.fix.function_name} and check (line, {self.fix.function_name}"
                           ").", yours=yours, score=0.5)
        verdict = self.fix.grade(fixed, fixed_reference, params, ())
        if verdict.status == "invalid":
            return Verdict("invalid", "Right line. " + verdict.message, yours=yours)
        if verdict.passed:
            return Verdict("correct", f"Correct: line {line} is the bug, and your fix matches "
                           "the reference on every case.", yours=yours, expected=yours,
                           score=1.0, details=verdict.details)
        return Verdict("wrong", "Right line, but the fixed function is not right yet: "
                       + verdict.message, yours=yours, score=0.5 + 0.5 * verdict.score,
                       details=verdict.details)

    def describe(self) -> str:
        return f"(line number, fixed function {self.fix.function_name})"

    def prompt_extra(self, params: Params | None = None) -> tuple[str, ...]:
        numbered = "\n".join(f"{i + 1:>2} | {line}"
                             for i, line in enumerate(self.lines_for(params)))
        return (f"```text\n{numbered}\n```",)

    def placeholder(self, names: CellNames) -> str:
        return self.placeholder_for(names, None)

    def placeholder_for(self, names: CellNames, params: Params | None = None) -> str:
        """The bug line to name, then the program the prompt shows for ``params``: the
        learner fixes the very listing whose line numbers they read."""
        return (f"{names.bug_line} = None  # the number of the buggy line\n\n"
                f"# Fix the function below (it starts as the buggy version):\n"
                + self.code_for(params).rstrip("\n"))

    def solution_source(self, expected: Any, names: CellNames) -> str:
        line, fixed = expected
        return f"{names.bug_line} = {line}\n" + reference_import(fixed, self.fix.function_name)

    def value_name(self, names: CellNames) -> str | None:
        return names.bug_line

    def function_spec(self) -> Function:
        return self.fix

    def with_time_limit(self, limit_s: float) -> Debug:
        return replace(self, fix=self.fix.with_time_limit(limit_s))

    def with_seed(self, seed: int) -> Debug:
        return replace(self, fix=self.fix.with_seed(seed))

    def requests(self, params: Params, names: CellNames) -> tuple[Ask, ...]:
        """The bug line's value and the fixed function's calls."""
        return (AskValue(names.bug_line),) + self.fix.requests(params, names)

    def collect(self, reply: Reply, params: Params, names: CellNames) -> Any | Unread:
        line = reply.value(names.bug_line)
        if isinstance(line, Unread):
            return line
        if self.is_untouched(line):
            return Unread(Reason.UNANSWERED, names.bug_line, f"expected {self.describe()}")
        fixed = self.fix.collect(reply, params, names)
        return fixed if isinstance(fixed, Unread) else (line, fixed)

    def is_untouched(self, answer: Any) -> bool:
        """A blank value, or (line, function) whose line is still None."""
        if type(answer) in (list, tuple) and len(answer) == 2:
            return answer[0] is None
        return is_blank(answer)

    # -- reading --------------------------------------------------------------------------
    def _read(self, answer: Any, lines: tuple[str, ...]) -> tuple[int, Any]:
        if isinstance(answer, Mapping):
            keys = {str(k).strip().casefold(): v for k, v in answer.items()}
            if "line" not in keys:
                raise Unreadable(self._usage("the dict has no 'line' key"))
            fixed = next((keys[k] for k in _FIX_KEYS if k in keys), None)
            return self._line(keys["line"], lines), fixed
        if isinstance(answer, (tuple, list)):
            if len(answer) not in (1, 2):
                raise Unreadable(self._usage(f"got {len(answer)} values"))
            return self._line(answer[0], lines), (answer[1] if len(answer) == 2 else None)
        if callable(answer):
            raise Unreadable(self._usage("the line number is missing"))
        return self._line(answer, lines), None

    def _line(self, value: Any, lines: tuple[str, ...]) -> int:
        line = whole_number(value, _LINE)
        if line is None:
            raise Unreadable(self._usage(f"could not read {show(value, 30)} as a line number"))
        if not 1 <= line <= len(lines):
            raise Unreadable(f"The code has {len(lines)} lines: give a line number from "
                             f"1 to {len(lines)} (got {line}).")
        return line

    def _usage(self, problem: str) -> str:
        name = self.fix.function_name
        return (f"Answer with the line number, e.g. 3, or with (3, {name}) once you have "
                f"written the fixed {name}; {problem}.")

    # -- explaining -----------------------------------------------------------------------
    def _wrong_line(self, text: str, line: int, fixed: Any, yours: str,
                    misconceptions: tuple[tuple[Any, str], ...]) -> Verdict:
        code = text.strip()
        notes = [feedback for wrong, feedback in misconceptions if wrong == line]
        message = f"Line {line} is not where the bug is" + (f" ({code})." if code else ".")
        if notes:
            message += " " + " ".join(notes)
        details = [_HINT]
        if fixed is not None:
            details.append("Your fixed function was not checked yet: find the line first.")
        return Verdict("wrong", message, yours=yours, details=tuple(details),
                       misconceptions=tuple(misconception_name(n) for n in notes))
