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


def _escaped_one_by_one(text: str, keep_newlines: bool) -> str:
    """The definition, character by character (what the fast paths must equal)."""
    import unicodedata

    out = []
    for char in text:
        if (keep_newlines and char == "\n") or char == " " or unicodedata.category(char) \
                not in ("Cc", "Cs", "Cf", "Zl", "Zp"):
            out.append(char)
        elif 0xDC80 <= ord(char) <= 0xDCFF:
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        else:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(
                char, f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"))
    return "".join(out)


def test_visible_equals_its_definition_on_random_text() -> None:
    import random

    rng = random.Random(7)
    alphabet = ["a", " ", "\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\xa0", "\xad",
                "\u2028", "\u2029", "\u202e", "\ufeff", "\udcff", "\ud800", "é", "学", "\U0001f600"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        for keep in (False, True):
            assert visible(text, keep_newlines=keep) == _escaped_one_by_one(text, keep), text


@pytest.mark.parametrize("cell", [" =1+2", "   @SUM(A1)", "\u00a0=HYPERLINK(\"x\")",
                                  "\u3000-1", "\n=1", " \u2003+cmd"])
def test_csv_cells_with_leading_whitespace_are_never_formulas(cell: str) -> None:
    written = for_csv(cell)
    assert written.startswith("'"), written
    # What a spreadsheet sees once it trims the cell: the quote first, never the formula.
    assert written.strip()[0] == "'"


@pytest.mark.parametrize("char", ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069",
                                  "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",
                                  "\u2028", "\u2029", "\u061c", "\u200e", "\u200f"])
def test_json_escapes_bidi_and_zero_width_characters(char: str) -> None:
    tree = {f"stu{char}dent": [f"a{char}b", {"k": char}]}
    text = json.dumps(for_json(tree), ensure_ascii=False)
    assert char not in text
    escape = f"\\u{ord(char):04x}" if ord(char) >= 0x100 else f"\\x{ord(char):02x}"
    assert json.loads(text) == {f"stu{escape}dent": [f"a{escape}b", {"k": escape}]}


def test_json_keeps_visible_text_raw() -> None:
    tree = {"Zoë 学生": ["\U0001f600 ok", "tab\tand\nnewline"]}
    assert for_json(tree) == tree
