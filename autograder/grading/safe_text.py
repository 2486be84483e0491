"""Text from submissions made safe for where it goes: terminal, CSV, JSON, HTML, file names.

Student folder names, file names and messages echo what a submission contains, so any of
them may hold a lone surrogate (``raise ValueError("\\udcff")``; a Latin-1 or otherwise
undecodable file name, which Python keeps as surrogates), control characters (ANSI escape
sequences, newlines, bidirectional overrides) or a spreadsheet formula. Every writer runs
its strings through one function here, so one student's text can neither break the file
that holds everyone's grades nor act on the instructor's terminal or spreadsheet.

* :func:`visible` keeps the text readable and makes it plain: an undecodable byte becomes
  ``\\xNN``, a lone surrogate ``\\udNNN``, a control character its escape (``\\n``,
  ``\\x1b``, ``\\u202e``). The result always encodes as UTF-8.
* :func:`for_csv` also neutralises formulas as OWASP recommends: a cell starting with
  ``=``, ``+``, ``-``, ``@``, tab or carriage return gets a leading single quote, and so
  does one whose first such character comes after leading spaces (a spreadsheet trims
  them and reads `` =1+2`` as a formula too).
* :func:`for_json` writes surrogates, bidirectional controls, zero-width and other format
  characters, and line or paragraph separators as escapes (JSON escapes control
  characters itself): a viewer of the file shows each as what it is, never as an
  invisible reordering of the text around it.
"""

from __future__ import annotations

import unicodedata
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cs", "Cf", "Zl", "Zp") and char != " "


def _invisible(char: str) -> bool:
    """Not shown as itself by a JSON viewer: a surrogate, a format character (bidi
    overrides and isolates, zero-width space and joiners, the byte-order mark) or a line
    or paragraph separator. Control characters are JSON's own to escape."""
    return unicodedata.category(char) in ("Cs", "Cf", "Zl", "Zp")


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every undecodable, control or format character written as an escape."""
    if not isinstance(text, str):
        text = str(text)
    if text.isprintable():
        return text
    if keep_newlines:  # feedback and pictures: many lines, each as a rule printable
        return "\n".join(visible(line) for line in text.split("\n"))
    return "".join(_escape(c) if _unsafe(c) else c for c in text)


def for_csv(value: Any) -> Any:
    """A CSV cell: numbers as they are, text visible and never a formula."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = visible(str(value), keep_newlines=True)
    return "'" + text if text.lstrip().startswith(FORMULA_STARTS) else text


def for_json(tree: Any) -> Any:
    """A JSON tree whose strings (keys too) all encode as UTF-8."""
    if isinstance(tree, str):
        return tree if tree.isprintable() else "".join(
            _escape(c) if _invisible(c) else c for c in tree)
    if isinstance(tree, dict):
        return {for_json(str(key)): for_json(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [for_json(item) for item in tree]
    return tree


def file_bytes(text: str) -> bytes:
    """A name's bytes for hashing, whatever surrogates it holds."""
    return text.encode("utf-8", "surrogatepass")
