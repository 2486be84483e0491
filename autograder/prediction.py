"""Prediction locks: commit a guess before the explorer and derivations, compare it later.

Committing to a number before seeing the answer is what makes the reveal stick. The
lock records the guess through a callback (the caller decides where: the workbook keeps
it in the progress log as the "design ledger"), and ``reveal`` shows how far off it was.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Prediction:
    """One prediction question. Exactly one of ``unit``-number or ``options`` is used:
    with ``options`` the guess is one of them; otherwise it is a number in ``unit``.
    ``actual()`` computes the true value (from ``solutions``)."""

    key: str
    question: str
    actual: Callable[[], Any]
    unit: str = ""
    options: tuple[str, ...] = ()
    explanation: str = ""

    @property
    def is_choice(self) -> bool:
        return bool(self.options)


def parse_guess(prediction: Prediction, text: Any) -> Any:
    """The guess as a number in the prediction's unit (or an option); ValueError if unreadable."""
    if prediction.is_choice:
        value = str(text).strip()
        if value not in prediction.options:
            raise ValueError(f"choose one of: {', '.join(prediction.options)}")
        return value
    from autograder.units import UnitError, parse_quantity

    try:
        return parse_quantity(text, prediction.unit)
    except UnitError as exc:
        raise ValueError(str(exc)) from None


def comparison(prediction: Prediction, guess: Any) -> str:
    """A sentence comparing the guess with the actual value (plain text)."""
    actual = prediction.actual()
    if prediction.is_choice:
        verdict = "right" if guess == actual else "not it"
        return f"You predicted {guess!r}; the answer is {actual!r} ({verdict})."
    unit = f" {prediction.unit}" if prediction.unit else ""
    if actual == 0 or not math.isfinite(float(guess)):
        return f"You predicted {guess:g}{unit}; the computed value is {actual:g}{unit}."
    ratio = float(guess) / float(actual)
    if 0.9 <= ratio <= 1.1:
        how = "within 10%: well judged"
    elif ratio > 1:
        how = f"{ratio:.1f}x too high"
    else:
        how = f"{1 / ratio:.1f}x too low" if ratio > 0 else "the wrong sign"
    return f"You predicted {guess:g}{unit}; the computed value is {actual:.4g}{unit} ({how})."


@dataclass
class Reveal:
    """The reveal shown later in the chapter; renders in a notebook and a terminal."""

    prediction: Prediction
    guess: Any  # None when nothing was locked in

    def __str__(self) -> str:
        if self.guess is None:
            return (f"No prediction locked in for {self.prediction.key}. "
                    f"The answer: {self.prediction.actual()!r}. {self.prediction.explanation}")
        return comparison(self.prediction, self.guess) + " " + self.prediction.explanation

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return (f'<div role="status"><strong>Your prediction, revealed.</strong> '
                f"{html.escape(str(self))}</div>")


class PredictionLock:
    """A question, an input, and a "Lock in" button; the input is disabled once locked."""

    def __init__(self, prediction: Prediction, record: Callable[[Any], str],
                 previous: Any = None) -> None:
        import ipywidgets as w

        self.prediction = prediction
        self._record = record
        if prediction.is_choice:
            self.input: Any = w.RadioButtons(options=list(prediction.options), value=None)
        else:
            self.input = w.Text(placeholder=f"your guess in {prediction.unit}".strip(),
                                description="Guess:")
        self.button = w.Button(description="Lock in my prediction")
        self.status = w.HTML()
        self.button.on_click(lambda _: self.lock())
        question = w.HTML(f"<p><strong>Predict first.</strong> {html.escape(prediction.question)}"
                          "</p>")
        self.box = w.VBox([question, self.input, self.button, self.status])
        if previous is not None:
            self._locked(f"Locked in earlier: {previous!r}. Scroll on to test it.")

    def lock(self) -> None:
        try:
            guess = parse_guess(self.prediction, self.input.value)
        except ValueError as exc:
            self.status.value = f"<p>⚠ Could not read the guess: {html.escape(str(exc))}</p>"
            return
        note = self._record(guess)
        self._locked(f"🔒 Locked in: {guess!r}. {note}")

    def _locked(self, message: str) -> None:
        self.input.disabled = True
        self.button.disabled = True
        self.status.value = f'<p role="status">{html.escape(message)}</p>'

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)
