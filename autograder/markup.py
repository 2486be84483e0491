"""Inline markdown for HTML outputs: prompts and explanations use **bold**, *italics* and
`code`, which an HTML widget or a result block does not render by itself."""

from __future__ import annotations

import html
import re

_INLINE_MARKDOWN = (
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"<em>\1</em>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
)


def inline_markdown(text: str) -> str:
    """Escape ``text`` for HTML, then render the inline markdown prompts use (bold,
    italics, code), since an HTML widget does not render markdown itself."""
    out = html.escape(text)
    for pattern, replacement in _INLINE_MARKDOWN:
        out = pattern.sub(replacement, out)
    return out.replace("\n", "<br>")
