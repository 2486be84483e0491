"""Ordering answers: put the given items in the right order (design exercises).

The learner answers with a list or tuple of the items (case and spacing do not matter,
and an unambiguous leading word is enough: "TP" for "TP (tensor parallel)"), or of their
1-based numbers in ``items``; text such as "TP -> PP -> CP -> DP", "TP, PP, CP, DP",
"TP PP CP DP" or a list written as text ("['TP', 'PP', 'CP', 'DP']") is split for them.
The answer must use every item exactly once. A wrong order earns
partial credit (the fraction of items in place) but is not a pass.
"""

from __future__ import annotations

import ast
import numbers
import re
from dataclasses import dataclass
from typing import Any

from autograder.kinds._common import Unreadable, show
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict, misconception_name


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


_QUOTES = "'\"`‘’“”"


def _split(text: str, n_items: int) -> list[Any]:
    """The entries of an order written as text: a Python list or tuple ("['TP', 'CP']"),
    items between arrows, commas or semicolons ("TP -> CP", "TP, CP"), or separated by
    spaces alone when that gives one entry per item ("TP CP PP DP"); quotes around an
    entry are dropped."""
    stripped = text.strip()
    if stripped[:1] in "[(" and len(stripped) < 2000:
        try:
            parsed = ast.literal_eval(stripped)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            parsed = None
        if isinstance(parsed, (list, tuple)):
            return list(parsed)
        stripped = stripped.strip("[]()")
    for separator in ("->", "→", ">", ",", ";"):
        if separator in stripped:
            return [part.strip().strip(_QUOTES).strip() for part in stripped.split(separator)]
    words = [word.strip(_QUOTES) for word in stripped.split()]
    if len(words) == n_items:
        return words
    return [stripped.strip(_QUOTES)]


@dataclass(frozen=True)
class Ordering(AnswerKind):
    """The learner orders ``items``; the record's reference returns the right order.

    ``first_label``/``last_label`` name the ends ("innermost", "outermost").
    """

    items: tuple[str, ...]
    first_label: str = "first"
    last_label: str = "last"

    def grade(
        self, answer: Any, expected: Any, params: Params,
        misconceptions: tuple[tuple[Any, str], ...],
    ) -> Verdict:
        try:
            order = self.resolve(answer)
        except Unreadable as exc:
            return Verdict("invalid", str(exc), yours=show(answer))
        right = self.resolve(expected)  # a record bug raises here, loudly
        yours = self._show(order)
        if order == right:
            return Verdict("correct", "Correct.", yours=yours, expected=yours, score=1.0)
        in_place = [i for i in range(len(order)) if order[i] == right[i]]
        first_wrong = next(i for i in range(len(order)) if order[i] != right[i])
        known = self._misconception(order, misconceptions)
        message = known or (
            f"Not yet: {len(in_place)} of {len(order)} in the right place. The first wrong "
            f"position is {self._position(first_wrong)}: {self.items[order[first_wrong]]} "
            "does not belong there.")
        details = (f"In the right place: positions {', '.join(str(i + 1) for i in in_place)}."
                   if in_place else "No item is in its right place yet.",)
        return Verdict("wrong", message, yours=yours, score=len(in_place) / len(order),
                       details=details,
                       misconceptions=(misconception_name(known),) if known else ())

    def resolve(self, answer: Any) -> tuple[int, ...]:
        """The answer as 0-based indexes into ``items``; Unreadable (a ValueError) if it
        is not an ordering of all the items."""
        if isinstance(answer, str):
            answer = _split(answer, len(self.items))
            if len(answer) < len(self.items):
                raise Unreadable(
                    f"Give all {len(self.items)} items in your order, separated by commas or "
                    f"arrows, or as a list: the items are {self._listing()} (got "
                    f"{show(', '.join(map(str, answer)))}).")
        if not isinstance(answer, (list, tuple)):
            raise Unreadable(f"Answer with a list of the items, {self.describe()}, e.g. "
                              f"{list(self.items)!r} in your order (got {show(answer)}).")
        if len(answer) > 2 * len(self.items):
            raise Unreadable(f"Give each of the {len(self.items)} items once; your list has "
                              f"{len(answer)} entries.")
        indexes = [self._index(entry) for entry in answer]
        return self._check_permutation(indexes)

    def _index(self, entry: Any) -> int:
        if isinstance(entry, numbers.Integral) and not isinstance(entry, bool):
            if 1 <= int(entry) <= len(self.items):
                return int(entry) - 1
            raise Unreadable(f"{int(entry)} is not an item number: use 1 to {len(self.items)}.")
        if not isinstance(entry, str) or len(entry) > 200:
            raise Unreadable(f"{show(entry)} is not one of the items: {self._listing()}.")
        wanted = _fold(entry)
        exact = [i for i, item in enumerate(self.items) if _fold(item) == wanted]
        if exact:
            return exact[0]
        leading = [i for i, item in enumerate(self.items)
                   if wanted and re.match(re.escape(wanted) + r"(?![A-Za-z0-9])", _fold(item))]
        if len(leading) == 1:
            return leading[0]
        if wanted.isdecimal() and 1 <= int(wanted) <= len(self.items):  # not "¹": int() fails
            return int(wanted) - 1
        raise Unreadable(f"{show(entry)} is not one of the items: {self._listing()}.")

    def _check_permutation(self, indexes: list[int]) -> tuple[int, ...]:
        twice = sorted({i for i in indexes if indexes.count(i) > 1})
        missing = [i for i in range(len(self.items)) if i not in indexes]
        problems = []
        if twice:
            problems.append("listed more than once: " + ", ".join(self.items[i] for i in twice))
        if missing:
            problems.append("missing: " + ", ".join(self.items[i] for i in missing))
        if problems:
            raise Unreadable(f"Use every item exactly once ({'; '.join(problems)}).")
        return tuple(indexes)

    def _misconception(self, order: tuple[int, ...],
                       misconceptions: tuple[tuple[Any, str], ...]) -> str:
        for wrong, feedback in misconceptions:
            try:
                if self.resolve(wrong) == order:
                    return feedback
            except Unreadable:
                continue
        return ""

    def _position(self, index: int) -> str:
        label = {0: self.first_label, len(self.items) - 1: self.last_label}.get(index)
        return f"{index + 1} ({label})" if label else str(index + 1)

    def _listing(self) -> str:
        return ", ".join(self.items)

    def _show(self, order: tuple[int, ...]) -> str:
        return " -> ".join(self.items[i] for i in order)

    def describe(self) -> str:
        return f"a list of all {len(self.items)} items, {self.first_label} to {self.last_label}"

    def prompt_extra(self, params: Params | None = None) -> tuple[str, ...]:
        return ("Items: " + ", ".join(f"`{item}`" for item in self.items),)

    def placeholder(self, names: CellNames) -> str:
        return (f"{names.answer} = None  # a list of all {len(self.items)} items, "
                f"{self.first_label} first")

    def solution_source(self, expected: Any, names: CellNames) -> str:
        return f"{names.answer} = {list(expected)!r}"
