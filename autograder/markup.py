"""Inline markdown for HTML outputs and for terminals: prompts and explanations use
**bold**, *italics*, `code`, "- " bullets and "\\$" for a literal dollar, which an HTML widget,
a widget's plain-text label or a terminal does not render by itself."""

from __future__ import annotations

import html
import re

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_CODE = re.compile(r"`([^`]+)`")
_INLINE_MARKDOWN = (
    (_BOLD, r"<strong>\1</strong>"),
    (_ITALIC, r"<em>\1</em>"),
    (_CODE, r"<code>\1</code>"),
)
_BULLET = re.compile(r"^[ \t]*[-*][ \t]+", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}[ \t]+", re.MULTILINE)
_ESCAPED_DOLLAR = re.compile(r"\\\$")

_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


def inline_markdown(text: str) -> str:
    """Escape ``text`` for HTML, then render the inline markdown prompts use (bold,
    italics, code, bullets, escaped dollars), since an HTML widget does not render markdown
    itself. A fenced block (a variant's code listing) is kept as preformatted text."""
    parts, last = [], 0
    for match in _FENCE.finditer(text):
        parts += [_inline(text[last:match.start()]),
                  f"<pre><code>{html.escape(match.group(1).rstrip())}</code></pre>"]
        last = match.end()
    parts.append(_inline(text[last:]))
    return f'<span class="{NO_MATH_CLASS}">' + "".join(parts) + "</span>"


def _inline(text: str) -> str:
    out = html.escape(_ESCAPED_DOLLAR.sub("$", _HEADING.sub("", text)))
    out = _BULLET.sub("\u2022 ", out)
    for pattern, replacement in _INLINE_MARKDOWN:
        out = pattern.sub(replacement, out)
    return out.replace("\n", "<br>")


def plain_text(text: str) -> str:
    """``text`` as a terminal or a plain-text label shows it: the markers of bold,
    italics, code and headings dropped, bullets as "\u2022", "\\$" as "$". A fenced block
    keeps its code as written."""
    parts, last = [], 0
    for match in _FENCE.finditer(text):
        parts += [_plain(text[last:match.start()]), match.group(1).rstrip("\n")]
        last = match.end()
    parts.append(_plain(text[last:]))
    return "".join(parts)


def _plain(text: str) -> str:
    out = _BULLET.sub("\u2022 ", _HEADING.sub("", text))
    for pattern in (_BOLD, _ITALIC, _CODE):
        out = pattern.sub(r"\1", out)
    return _ESCAPED_DOLLAR.sub("$", out)


# Front ends typeset $...$ as LaTeX in markdown and in HTML outputs, so money ("$2 per
# GPU-hour ... $60.6M") would turn into garbled math. Markdown takes a backslash escape;
# HTML is wrapped in the classes MathJax 3 (JupyterLab 4) and MathJax 2 (Colab) skip.
NO_MATH_CLASS = "mathjax_ignore tex2jax_ignore"


def escape_dollars(markdown: str) -> str:
    """Markdown in which every "$" is a literal dollar sign, never a math delimiter."""
    return re.sub(r"(?<!\\)\$", r"\\$", markdown)


def no_math(html_text: str) -> str:
    """HTML that the math typesetter leaves alone."""
    if NO_MATH_CLASS in html_text[:200]:
        return html_text
    return f'<div class="{NO_MATH_CLASS}">{html_text}</div>'
