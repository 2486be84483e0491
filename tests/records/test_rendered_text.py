"""Every prompt, note, hint, explanation, choice option and misconception feedback reads as
finished prose,
for the printed numbers and for 20 practice variants of every exercise.

Rejected: a placeholder left unfilled ("{m}"), a formula half filled in ("(16-1)/(m x 2)":
numbers of this variant next to a one-letter symbol), the same result stated twice in a
row ("... = 128. In the paper this is ... = 128"), and "nan", "None" or "inf" in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from autograder.exercise import Exercise
from autograder.template import _Friendly
from autograder.template import fill as render
from autograder.units import format_value
from workbook.records import all_challenges, all_exercises

RECORDS = (*all_exercises(), *all_challenges())
SEEDS: tuple[int | None, ...] = (None, *range(20))  # None: the printed numbers

_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*(?:[^{}]*)\}")
_BAD_WORD = re.compile(r"\b(?:nan|NaN|None|inf|Infinity)\b")
_NUMBER = r"\d[\d,]*(?:\.\d+)?§?(?:e[-+]?\d+)?[A-Za-z]*§?"
_OPERAND = rf"\(*(?:{_NUMBER}|[A-Za-z_]\w*)\)*"
_EXPRESSION = re.compile(rf"{_OPERAND}(?:\s*(?:[-+*/×]|\sx\s)\s*{_OPERAND})+")
_RESULT = re.compile(r"(?:=|\bis\b|\bare\b)\s*\$?(\d[\d,]*(?:\.\d+)?)(?![\d.,]*\d)")
# Texts where a symbol beside a number is meant (checked by hand, reason given).
_QUOTED_WORDS = {
    "8.2": "the prompt quotes GradScaler's own words 'inf' and 'NaN'",
}


class _MarkingFormatter(_Friendly):
    """Fills a template as the records do, marking each filled-in value with a trailing §."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return f"{super().format_field(value, format_spec)}§"


def marked(template: str, params: Mapping[str, Any]) -> str:
    return _MarkingFormatter().vformat(template, (), dict(params))


def half_filled(text: str) -> list[str]:
    """Expressions holding a filled-in value (marked §) *and* a bare one-letter symbol."""
    found = []
    for match in _EXPRESSION.finditer(text):
        expression = match.group(0)
        if "§" not in expression:
            continue
        bare = re.sub(_NUMBER, "", expression.replace("§", ""))
        if [t for t in re.findall(r"[A-Za-z_]\w*", bare) if len(t) == 1 and t != "x"]:
            found.append(expression.replace("§", ""))
    return found


def repeated_results(text: str) -> list[str]:
    """A result ("= 128", "is 112") stated twice within one or two adjacent sentences."""
    sentences = re.split(r"(?<=[.!?])\s+", text)
    repeated: list[str] = []
    for first, second in zip(sentences, [*sentences[1:], ""], strict=True):
        seen: set[str] = set()
        pair = f"{first} {second}"
        for match in _RESULT.finditer(pair):
            if match.group(0).startswith("=") and re.search(
                    r"(?:^|[,;:(]|\s)[A-Za-z_]\w*\s*$", pair[:match.start()]):
                continue  # "s = 8192" names a value; only results count
            figure = match.group(1).rstrip(",")
            significant = len(re.sub(r"\D", "", figure)) >= 3 or "." in figure
            if significant and figure in seen and figure not in repeated:
                repeated.append(figure)
            seen.add(figure)
    return repeated


def texts(record: Exercise, params: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(where, the text as shown, the same text with filled-in values marked)."""
    templates = [("prompt", record.prompt)]
    if record.notes and "```" not in record.notes:
        templates.append(("notes", record.notes))
    templates += [(f"hint {n}", hint) for n, hint in enumerate(record.hints, start=1)]
    for where, template in templates:
        yield where, render(template, params), marked(template, params)
    full = dict(params)
    expected = record.expected(params)
    full.setdefault("expected", format_value(expected)
                    if isinstance(expected, (int, float)) else expected)
    yield "explanation", record.render_explanation(params), marked(record.explanation, full)
    options_for = getattr(record.answer_kind, "options_for", None)  # filled per variant
    for option in options_for(params) if options_for else ():
        yield f"option {option.key}", f"{option.text} {option.feedback}", option.feedback
    for n, m in enumerate(record.misconceptions, start=1):
        try:
            m.answer(params)
        except (ArithmeticError, ValueError):
            continue  # not shown for these numbers
        yield (f"misconception {n}", render(m.feedback, params), marked(m.feedback, params))


def problems(record: Exercise, params: Mapping[str, Any]) -> list[str]:
    found = []
    for where, text, with_marks in texts(record, params):
        if _PLACEHOLDER.search(text):
            found.append(f"{where}: unfilled {_PLACEHOLDER.findall(text)}")
        if _BAD_WORD.search(text) and record.id not in _QUOTED_WORDS:
            found.append(f"{where}: {_BAD_WORD.findall(text)} in {text!r}")
        if half := half_filled(with_marks):
            found.append(f"{where}: half-filled formula {half}")
        if again := repeated_results(text):
            found.append(f"{where}: the same result twice {again}")
    return found


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_text_reads_as_finished_prose(record: Exercise) -> None:
    for seed in SEEDS:
        params = dict(record.params) if seed is None else record.draw(seed)
        assert not problems(record, params), (record.id, seed, problems(record, params))


def test_the_checks_catch_what_they_should() -> None:
    params = {"pp": 16, "v": 2, "m": 16}
    assert half_filled(marked("(p-1)/(m v) = ({pp}-1)/(m x {v}) = 46.9%", params))
    assert not half_filled(marked("(p-1)/(m v) = ({pp}-1)/({m} x {v}) = 46.9%", params))
    assert not half_filled(marked("16/N bytes for {pp} GPUs", params))
    assert repeated_results("DP = 16,384 / 128 = 128. In the paper this is 16,384 / 128 = 128.")
    assert not repeated_results("DP = 128. For 128K context CP = 16.")
    assert not repeated_results("sequence length s = 8192, d = 8192.")
    assert repeated_results("16 x 7 = 112 GB on every GPU. For 7B that is 112 GB.")
    assert _PLACEHOLDER.search("bubble (p-1)/{m}") and _BAD_WORD.search("got nan GB")
