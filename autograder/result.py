"""The result of one check, as the learner sees it: in a notebook and in a terminal.

Status is always given as a symbol *and* a word ("✔ Correct", "✘ Not yet",
"⚠ Could not read your answer"), never by colour alone. The HTML carries
``role="status"`` and ``aria-live="polite"`` so screen readers announce a new result,
and every piece of text (much of it echoes the learner's answer) is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from autograder.kinds.base import Verdict
from autograder.markup import NO_MATH_CLASS, inline_markdown, plain_text
from autograder.units import format_value


@dataclass(frozen=True)
class StatusText:
    """How a status reads: a symbol and words (the meaning), and an accent colour
    (decoration only)."""

    symbol: str
    words: str
    colour: str

    @property
    def line(self) -> str:
        return f"{self.symbol} {self.words}"


# Every status a learner or an instructor sees, in a check and in a gradebook's feedback.
STATUS_TEXT: Mapping[str, StatusText] = {
    "correct": StatusText("✔", "Correct", "#1a7f37"),
    "wrong": StatusText("✘", "Not yet", "#b35900"),
    "invalid": StatusText("⚠", "Could not read your answer", "#6e7781"),
    "unanswered": StatusText("○", "Not answered yet", "#6e7781"),
    "error": StatusText("⚠", "Could not be graded", "#6e7781"),
    "integrity": StatusText("⚠", "Not accepted (integrity)", "#cf222e"),
    "excused": StatusText("–", "Excused", "#6e7781"),
}


def _params_text(params: Mapping[str, Any]) -> str:
    def shown(value: Any) -> str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return format_value(value)
        return str(value)

    return ", ".join(f"{k}={shown(v)}" for k, v in params.items())


@dataclass(frozen=True, repr=False)
class CheckResult:
    """One check of one exercise: the verdict and what to show around it.

    ``hint`` is the next-hint text offered after a wrong answer ("" for none);
    ``params`` are the variant's numbers, or None for the canonical ones;
    ``attempt_counted`` says whether the check was recorded as an attempt;
    ``note`` is a remark about the check itself (e.g. progress not saved);
    ``unanswered`` marks an answer cell still holding its placeholder.
    """

    exercise_id: str
    title: str
    verdict: Verdict
    hint: str
    params: Mapping[str, Any] | None
    attempt_counted: bool
    note: str = ""
    unanswered: bool = False
    variant_prompt: str = ""  # the variant's question in words, shown instead of its params

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def message(self) -> str:
        return self.verdict.message

    @property
    def _status_key(self) -> str:
        return "unanswered" if self.unanswered else self.verdict.status

    @property
    def status_line(self) -> str:
        return STATUS_TEXT[self._status_key].line

    def _variant_words(self) -> str:
        return self.variant_prompt or _params_text(self.params or {})

    def with_note(self, note: str) -> CheckResult:
        """The same result with a remark about the check added."""
        joined = f"{self.note} {note}".strip() if self.note else note
        return replace(self, note=joined)

    # -- plain text ---------------------------------------------------------------------
    def __str__(self) -> str:
        v = self.verdict
        lines = [f"{self.status_line} -- exercise {self.exercise_id}: {self.title}"]
        if self.params:
            lines.append(f"Your variant: {plain_text(self._variant_words())}")
        if v.yours:
            lines.append(f"Yours:    {v.yours}")
        if v.expected:
            lines.append(f"Expected: {v.expected}")
        lines.append(v.message)
        lines += [f"  - {d}" for d in v.details]
        if v.picture:
            lines.append(v.picture)
        if self.hint:
            lines.append(self.hint)
        if self.note:
            lines.append(f"Note: {self.note}")
        return "\n".join(line for line in lines if line)

    def __repr__(self) -> str:
        return str(self)

    # -- HTML ---------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        v = self.verdict
        text = STATUS_TEXT[self._status_key]
        symbol, word, colour = text.symbol, text.words, text.colour
        e = html.escape
        parts = [
            f'<div class="dtw-result dtw-{v.status} {NO_MATH_CLASS}" role="status" '
            'aria-live="polite" '
            f'style="border-left:4px solid {colour};padding:0.4em 0.8em;margin:0.4em 0">',
            f'<p style="margin:0"><strong><span aria-hidden="true">{symbol}</span> {e(word)}'
            f"</strong> <span>exercise {e(self.exercise_id)}: {e(self.title)}</span></p>",
        ]
        if self.params:
            parts.append("<p style=\"margin:0.2em 0\">Your variant: "
                         f"{inline_markdown(self._variant_words())}</p>")
        parts.append(self._comparison_html())
        parts.append(f'<p style="margin:0.2em 0">{e(v.message)}</p>')
        if v.details:
            items = "".join(f"<li>{e(d)}</li>" for d in v.details)
            parts.append(f'<ul style="margin:0.2em 0">{items}</ul>')
        if v.picture:
            # a trace is a grid: it scrolls, never wraps (a front end's word-break would cut
            # its tokens at the edge of a narrow page)
            parts.append('<pre style="margin:0.2em 0;font-size:85%;overflow-x:auto;'
                         'white-space:pre;word-break:normal;overflow-wrap:normal">'
                         f"{e(v.picture)}</pre>")
        if self.hint:
            parts.append(f'<p style="margin:0.2em 0"><em>{e(self.hint)}</em></p>')
        if self.note:
            parts.append(f'<p style="margin:0.2em 0">Note: {e(self.note)}</p>')
        parts.append("</div>")
        return "".join(parts)

    def _comparison_html(self) -> str:
        v = self.verdict
        rows = [(label, text) for label, text in (("Yours", v.yours), ("Expected", v.expected))
                if text]
        if not rows:
            return ""
        cells = "".join(f'<tr><th scope="row" style="text-align:left;padding-right:1em">'
                        f"{label}</th><td><code>{html.escape(text)}</code></td></tr>"
                        for label, text in rows)
        return f'<table style="margin:0.2em 0">{cells}</table>'
