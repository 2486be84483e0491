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


_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


def inline_markdown(text: str) -> str:
    """Escape ``text`` for HTML, then render the inline markdown prompts use (bold,
    italics, code), since an HTML widget does not render markdown itself. A fenced block
    (a variant's code listing) is kept as preformatted text."""
    parts, last = [], 0
    for match in _FENCE.finditer(text):
        parts += [_inline(text[last:match.start()]),
                  f"<pre><code>{html.escape(match.group(1).rstrip())}</code></pre>"]
        last = match.end()
    parts.append(_inline(text[last:]))
    return f'<span class="{NO_MATH_CLASS}">' + "".join(parts) + "</span>"


def _inline(text: str) -> str:
    out = html.escape(text)
    for pattern, replacement in _INLINE_MARKDOWN:
        out = pattern.sub(replacement, out)
    return out.replace("\n", "<br>")


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
