"""A wrong answer of the right type for every exercise, as an answer cell's source.

``wrong_source(record, params, starting, pick)`` writes what a learner who made a mistake hands
in for ``record`` in the numbers ``params``: a known misconception where the record has
one for these numbers, else a perturbed expected value (a number 37 % off, a flipped
yes/no, another option, a reversed order, a configuration of ones, a debug listing left as
shown with another line named, a function returning a constant, a lab program from the
cheat corpus that runs but does not do the algorithm). ``starting`` is the answer cell as
released (a debug exercise's listing is taken from it); ``pick`` chooses among the wrong
options or lines, so that a class covers many of them.

Numbers are chosen to be none of the expected answer's printed forms (1.75 GB is also
1750 MB), so that a page that shows them does not look like it shows the answer.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Choice, Constraints, Debug, Function, Lab, Numeric, Ordering, Trace
from autograder.kinds.named_numbers import NamedNumbers

PERTURB = 1.37
LAB_PROGRAMS = {"0.7": "ring-root", "1.7": "zero-first-layer-only", "5.8": "pipe-gpipe",
                "6.6": "tp-no-communication"}


def _corpus() -> Any:
    name = "lab_corpus_for_pages"
    if name not in sys.modules:
        path = Path(__file__).parents[1] / "solutions" / "lab_corpus.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _prefix_forms(value: float) -> list[float]:
    return [value * 10.0 ** (3 * k) for k in range(-4, 5)] + [value * 100, value / 100]


def _far_from_forms(wrong: float, expected: float) -> bool:
    """Not within 5 % of ``expected`` in any prefix or percentage form."""
    return all(abs(wrong - form) > 0.05 * abs(form) for form in _prefix_forms(expected)
               if form != 0)


def wrong_number(expected: float, known: list[Any]) -> float:
    """A misconception's value when it is none of the answer's forms, else 37 % off."""
    for value in known:
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value) and _far_from_forms(float(value), expected):
            return float(value)
    return expected * PERTURB if expected else 1.37


def _value(record: Exercise, params: Any, pick: int) -> Any:
    kind, expected = record.answer_kind, record.expected(params)
    known = [answer for answer, _ in record.wrong_answers(params)]
    if isinstance(kind, Numeric):
        return wrong_number(float(expected), known)
    if isinstance(kind, NamedNumbers):
        return {name: wrong_number(float(expected[name]), []) for name, _ in kind.fields}
    if isinstance(kind, Choice):
        keys = [o.key for o in kind.options]
        wrong = [k for k in keys if k != expected]
        mistaken = [k for k in known if isinstance(k, str) and k in wrong]
        return [*mistaken, *(k for k in wrong if k not in mistaken)][pick % len(wrong)]
    if isinstance(kind, Ordering):
        order = list(expected)
        return order[::-1] if order[::-1] != order else order[1:] + order[:1]
    if isinstance(kind, Constraints):
        return {name: 1 for name in kind.fields}
    if isinstance(kind, Trace):
        return _wrong_rows(expected, known)
    raise TypeError(f"{record.id}: no wrong value for {type(kind).__name__}")


def _wrong_rows(expected: Any, known: list[Any]) -> list[Any]:
    if known:
        return [list(row) if isinstance(row, tuple) else row for row in known[0]]
    rows = [list(row) if isinstance(row, tuple) else [row] for row in expected]
    first = rows[0]
    for i, cell in enumerate(first):
        if isinstance(cell, bool):
            first[i] = not cell
        elif isinstance(cell, (int, float)):
            first[i] = wrong_number(float(cell), [])
    return [tuple(r) if len(r) > 1 else r[0] for r in rows]


def _debug(record: Exercise, params: Any, starting: str, pick: int) -> str:
    kind = record.answer_kind
    assert isinstance(kind, Debug)
    bug = record.expected(params)[0]
    lines = len(kind.lines_for(params))
    named = [k for k, _ in record.wrong_answers(params) if isinstance(k, int) and k != bug]
    others = [n for n in range(lines, 0, -1) if n != bug and n not in named]
    line = [*named, *others][pick % (len(named) + len(others))]
    assert re.search(r"= None\b", starting), starting
    return re.sub(r"= None\b", f"= {line}", starting, count=1)


def wrong_source(record: Exercise, params: Any, starting: str, pick: int = 0) -> str:
    """The answer cell of a learner who got ``record`` wrong in the numbers ``params``."""
    kind = record.answer_kind
    if isinstance(kind, Debug):
        return _debug(record, params, starting, pick)
    if isinstance(kind, Lab):
        return str(_corpus().CHEATS[LAB_PROGRAMS[record.id]][1])
    if isinstance(kind, Function):
        head = kind.placeholder(record.names).split("\n")[0]
        return f"{head}\n    return 1.0"
    return f"{record.names.answer} = {_value(record, params, pick)!r}"
