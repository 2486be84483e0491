"""Trace answers: a table of steps, each checked, the first wrong step named.

The learner answers with a list holding one row per step. With one column a row is a
single value (a one-element list or tuple also works); with several it is a tuple or
list in ``columns`` order, or a dict keyed by the column names. Numeric cells are read
with ``autograder.units`` (so "64 GB" or "2^16" work) and compared within ``rel_tol``;
yes/no cells accept True/False or "yes"/"no"; text cells ignore case and spacing.

A table of the wrong length, or a cell that cannot be read, is "invalid" (not an
attempt): the message names the expected number of rows or the unreadable cell.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from autograder.kinds._common import Unreadable, close, show
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict, misconception_name
from autograder.units import UnitError, read_quantity

_YES = frozenset({"yes", "y", "true", "t", "1"})
_NO = frozenset({"no", "n", "false", "f", "0", "none", "-"})
Row = tuple[Any, ...]



@dataclass(frozen=True)
class Trace(AnswerKind):
    """One row per step; the record's reference returns the list of expected rows.

    With one column a row is a single value; with several it is a tuple in
    ``columns`` order. Values are compared within ``rel_tol`` (or ``abs_tol``).
    ``column_units`` optionally gives each column its own unit (else ``unit`` applies
    to every numeric column). ``explain_step(step, params)`` optionally says what should
    happen at a 1-based step ("scale should halve on an overflow"); it is shown when
    that step is the first one wrong.
    """

    partial_credit: ClassVar[bool] = True  # the score counts cases or parts

    columns: tuple[str, ...]
    step_label: str = "step"
    unit: str = ""
    rel_tol: float = 1e-9
    abs_tol: float = 0.0
    column_units: tuple[str, ...] = ()
    explain_step: Callable[[int, Params], str] | None = None

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        want = [self._row(row, i) for i, row in enumerate(expected)]  # record bug: raises
        try:
            rows = self._rows(answer, len(want))
            same = [self._same_row(row, good, i)
                    for i, (row, good) in enumerate(zip(rows, want, strict=True))]
        except Unreadable as exc:
            return Verdict("invalid", str(exc), yours=show(answer))
        yours = self._show(rows)
        if all(all(flags) for flags in same):
            return Verdict("correct", f"Correct: all {len(want)} {self.step_label}s.",
                           yours=yours, expected=yours, score=1.0)
        first = next(i for i, flags in enumerate(same) if not all(flags))
        known = self._misconception(rows[first], want[first], first, misconceptions)
        message = known or self._explain(first, rows[first], same[first], params)
        right = sum(all(flags) for flags in same)
        details = (f"{right} of {len(want)} {self.step_label}s match.",)
        return Verdict("wrong", message, yours=yours, score=right / len(want), details=details,
                       misconceptions=(misconception_name(known),) if known else ())

    def describe(self) -> str:
        return f"a list with one entry per {self.step_label}: " + ", ".join(self.columns)

    def placeholder(self, names: CellNames) -> str:
        return f"{names.answer} = None  # {self.describe()}"

    def solution_source(self, expected: Any, names: CellNames) -> str:
        value = list(expected) if isinstance(expected, tuple) else expected
        return f"{names.answer} = {value!r}"

    # -- reading -----------------------------------------------------------------------
    def _rows(self, answer: Any, count: int) -> list[Row]:
        if hasattr(answer, "tolist") and not isinstance(answer, (list, tuple)):
            answer = answer.tolist()  # a numpy array
        if not isinstance(answer, (list, tuple)):
            raise Unreadable(f"Answer with a list holding one row per {self.step_label} "
                              f"({', '.join(self.columns)}); got {show(answer)}.")
        if len(answer) != count:
            raise Unreadable(f"Expected {count} rows, one per {self.step_label}; your list "
                              f"has {len(answer)}.")
        return [self._row(row, i) for i, row in enumerate(answer)]

    def _row(self, row: Any, index: int) -> Row:
        n = len(self.columns)
        if isinstance(row, Mapping):
            keys = {str(k).strip().casefold(): v for k, v in row.items()}
            unknown = sorted(set(keys) - {c.casefold() for c in self.columns})
            missing = [c for c in self.columns if c.casefold() not in keys]
            if unknown or missing:
                raise Unreadable(f"{self._where(index)}: use the keys {', '.join(self.columns)}"
                                  f" (missing: {', '.join(missing) or 'none'}; unknown: "
                                  f"{', '.join(unknown) or 'none'}).")
            return tuple(keys[c.casefold()] for c in self.columns)
        if isinstance(row, (list, tuple)):
            if len(row) != n:
                raise Unreadable(f"{self._where(index)}: expected {n} value(s) "
                                  f"({', '.join(self.columns)}); got {len(row)}.")
            return tuple(row)
        if n == 1:
            return (row,)
        raise Unreadable(f"{self._where(index)}: expected {n} values "
                          f"({', '.join(self.columns)}), e.g. a tuple; got {show(row)}.")

    # -- comparing ----------------------------------------------------------------------
    def _same_row(self, row: Row, want: Row, index: int) -> list[bool]:
        return [self._same_cell(cell, good, index, col)
                for col, (cell, good) in enumerate(zip(row, want, strict=True))]

    def _same_cell(self, cell: Any, want: Any, index: int, col: int) -> bool:
        if isinstance(want, bool):
            return self._yes_no(cell, index, col) == want
        if isinstance(want, numbers.Real):
            unit = self.column_units[col] if self.column_units else self.unit
            try:
                value = read_quantity(cell, unit).value
            except UnitError as exc:
                raise Unreadable(f"{self._where(index, col)}: {exc}.") from None
            return close(value, float(want), self.rel_tol, self.abs_tol)
        if isinstance(want, str):
            return isinstance(cell, str) and " ".join(cell.split()).casefold() == " ".join(
                want.split()).casefold()
        try:
            return bool(cell == want)
        except Exception:  # a learner's object with an odd __eq__
            return False

    def _yes_no(self, cell: Any, index: int, col: int) -> bool:
        if isinstance(cell, bool) or type(cell).__name__ == "bool_":
            return bool(cell)
        if isinstance(cell, numbers.Real) and float(cell) in (0.0, 1.0):
            return float(cell) == 1.0
        if isinstance(cell, str) and cell.strip().casefold() in _YES | _NO:
            return cell.strip().casefold() in _YES
        raise Unreadable(f"{self._where(index, col)}: answer yes or no (True or False); got "
                          f"{show(cell)}.")

    # -- explaining ---------------------------------------------------------------------
    def _misconception(self, row: Row, want: Row, index: int,
                       misconceptions: tuple[tuple[Any, str], ...]) -> str:
        for wrong_rows, feedback in misconceptions:
            try:
                wrong = self._row(list(wrong_rows)[index], index)
                if (not all(self._same_row(wrong, want, index))
                        and all(self._same_row(row, wrong, index))):
                    return feedback
            except (Unreadable, IndexError, TypeError):
                continue
        return ""

    def _explain(self, index: int, row: Row, flags: list[bool], params: Params) -> str:
        wrong = [c for c, ok in enumerate(flags) if not ok]
        wrote = ", ".join(self._cell_text(row, c) for c in wrong)
        why = ""
        if self.explain_step is not None:
            try:
                why = self.explain_step(index + 1, params)
            except (ArithmeticError, LookupError, ValueError):
                why = ""
        if not why:
            names = " and ".join(self.columns[c] for c in wrong)
            why = f"{names} {'is' if len(wrong) == 1 else 'are'} not right"
        return f"{self.step_label} {index + 1}: {why}; you wrote {wrote}."

    def _cell_text(self, row: Row, col: int) -> str:
        cell = row[col]
        text = " ".join(cell.split()) if isinstance(cell, str) else show(cell)
        return text if len(self.columns) == 1 else f"{self.columns[col]} = {text}"

    def _where(self, index: int, col: int | None = None) -> str:
        place = f"{self.step_label} {index + 1}"
        return place if col is None or len(self.columns) == 1 else f"{place}, {self.columns[col]}"

    def _show(self, rows: list[Row]) -> str:
        text = "; ".join(", ".join(show(c, 20) for c in row) for row in rows)
        return text if len(text) <= 120 else text[:117] + "..."
