"""The spoken prediction asks the lock's own question.

Each chapter's "predict" narration is the lock's question read aloud: every number of the
lock's question and of its options is spoken (in words, as the scripts are written for the
ear, or as written), and no second question whose answer the page never asks is added.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from narration.scripts import segment
from workbook.learner.prediction_page import prediction_for
from workbook.outline import CHAPTERS

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def spoken(n: int) -> str:
    """``n`` (below a million) as the scripts say it: 2048 is "two thousand and forty-eight"."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else "-" + ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + spoken(rest))
    rest = n % 1000
    head = spoken(n // 1000) + " thousand"
    if rest == 0:
        return head
    return head + (" and " if rest < 100 else " ") + spoken(rest)


# a number not glued to a word ("FP16", "H100", "1F1B"); "13B", "8x" and "5%" count
NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*)(?=[Bx%]?(?![\w.]\w))")


def numbers(text: str) -> set[int]:
    return {int(token.replace(",", "")) for token in NUMBER.findall(text)}


def said(n: int, narration: str) -> bool:
    text = narration.lower()
    forms = {spoken(n), f"{n:,}", str(n)} | ({"a hundred"} if n == 100 else set()) \
        | ({"a thousand"} if n == 1000 else set())
    return any(re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text) for f in forms)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_the_spoken_prediction_asks_the_locks_numbers(chapter: Any) -> None:
    number = chapter.number
    prediction = prediction_for(f"ch{number:02d}")
    narration = segment(f"ch{number:02d}/predict").text
    asked = numbers(prediction.question) | {n for o in prediction.options for n in numbers(o)}
    missing = sorted(n for n in asked if not said(n, narration))
    assert not missing, f"ch{number:02d}/predict never says {missing}"


def test_numbers_are_spoken_as_the_scripts_write_them() -> None:
    assert spoken(2048) == "two thousand and forty-eight"
    assert spoken(16384) == "sixteen thousand three hundred and eighty-four"
    assert spoken(120) == "one hundred and twenty" and spoken(53248).startswith("fifty-three")
    assert numbers("FP16 on 8 H100s, 1F1B, 13B and 2,048 at 5% or 8x") == {8, 13, 2048, 5}
    assert said(1000, "a ring of a thousand GPUs") and not said(12, "twenty-four layers")
