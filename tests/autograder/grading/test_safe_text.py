"""Text from submissions, made safe for each place it goes (expected forms written by hand)."""

from __future__ import annotations

import json

import pytest

from autograder.grading.safe_text import for_csv, for_json, visible


@pytest.mark.parametrize("text, shown", [
    ("plain name", "plain name"),
    ("M\udcfcller", "M\\xfcller"),            # Latin-1 byte kept by surrogateescape
    ("lone \ud800 high", "lone \\ud800 high"),  # a lone surrogate from an exception
    ("\x1b[31mred", "\\x1b[31mred"),
    ("two\nlines\r", "two\\nlines\\r"),
    ("abc\u202edcba", "abc\\u202edcba"),        # right-to-left override
    ("Zoë 学生", "Zoë 学生"),
])
def test_visible_keeps_text_readable_and_plain(text: str, shown: str) -> None:
    assert visible(text) == shown
    shown.encode("utf-8")  # always encodable


@pytest.mark.parametrize("cell, written", [
    ("=1+2", "'=1+2"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "\\t=1"), ("\r=1", "\\r=1"), ("a=1", "a=1"), (3, 3), ("", ""),
])
def test_csv_cells_are_never_formulas(cell: object, written: object) -> None:
    assert for_csv(cell) == written


def test_json_trees_always_encode() -> None:
    tree = {"M\udcfcller": ["x\udcff", {"k": "\x1b ok"}], "n": 1}
    text = json.dumps(for_json(tree), ensure_ascii=False)
    text.encode("utf-8")
    assert json.loads(text) == {"M\\xfcller": ["x\\xff", {"k": "\x1b ok"}], "n": 1}
