"""The design ledger: each chapter's prediction, the truth, and the learner's reflection.

A prediction is only half of the habit; the other half is looking back. Each chapter ends
with one reflection question (``ReflectionBox``), and ``Ledger`` lays every prediction,
the true answer and the reflection side by side, in a notebook or a terminal. This module
knows no store: the caller passes the guesses and reflections in.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from autograder.prediction import Prediction, comparison, shown, truth_text

NOT_YET = "not yet"


@dataclass(frozen=True)
class LedgerRow:
    """One chapter's line of the ledger."""

    prediction: Prediction
    guess: Any  # None when no guess was locked in
    reflection: str  # "" when not written yet

    @property
    def verdict(self) -> str:
        if self.guess is None:
            return NOT_YET
        text = comparison(self.prediction, self.guess)
        return text[text.find("(") + 1:text.find(")")] if "(" in text else text

    def cells(self) -> tuple[str, str, str, str, str]:
        guess = NOT_YET if self.guess is None else shown(self.prediction, self.guess)
        truth = (truth_text(self.prediction) if self.guess is not None
                 else "shown once a guess is locked")
        return (self.prediction.key, guess, truth, self.verdict, self.reflection or NOT_YET)


@dataclass(frozen=True)
class Ledger:
    """Every chapter's row; renders as a table."""

    rows: Sequence[LedgerRow]

    HEADINGS = ("Chapter", "Your prediction", "The truth", "Verdict", "Your reflection")

    def __str__(self) -> str:
        lines = ["Design ledger: your predictions, the truth, your reflections"]
        for row in self.rows:
            key, guess, truth, verdict, reflection = row.cells()
            lines.append(f"{key}: predicted {guess}; truth {truth}; verdict {verdict}. "
                         f"Reflection: {reflection}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in self.HEADINGS)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row.cells())
                       + "</tr>" for row in self.rows)
        return (f'<div class="dtw-ledger"><strong>Design ledger</strong>'
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


class ReflectionBox:
    """One reflection question, a text area and a Save button; ``save(text)`` stores it."""

    def __init__(self, prediction: Prediction, save: Callable[[str], str],
                 previous: str = "") -> None:
        import ipywidgets as w

        self.prediction = prediction
        self._save = save
        self.text = w.Textarea(value=previous, placeholder="a sentence or two in your words",
                               layout=w.Layout(width="100%", height="5em"))
        self.button = w.Button(description="Save my reflection", layout=w.Layout(width="auto"))
        self.status = w.HTML()
        self.button.on_click(lambda _: self.save())
        question = w.HTML(f"<p><strong>Reflect.</strong> "
                          f"{html.escape(prediction.reflection)}</p>")
        self.box = w.VBox([question, self.text, self.button, self.status],
                          layout=w.Layout(width="100%"))
        if previous:
            self.status.value = "<p>Saved earlier; edit and save again to replace it.</p>"

    def save(self) -> None:
        text = self.text.value.strip()
        if not text:
            self.status.value = "<p>⚠ Write a sentence first: an empty reflection is not saved.</p>"
            return
        note = self._save(text)
        self.status.value = f'<p role="status">✔ {html.escape(note)}</p>'

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)
