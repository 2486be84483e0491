"""Prediction locks: commit a guess before the explorer and derivations, compare it later.

Committing to a number before seeing the answer is what makes the reveal stick, so
nothing about the answer is on the page until a guess is locked: the reveal says "lock in
a guess first" and the explorer's verdicts stay covered. The moment the guess is locked,
every reveal and cover registered for that prediction updates (no re-run needed). The
lock records the guess through a callback (the caller decides where: the workbook keeps
it in the progress log as the "design ledger").
"""

from __future__ import annotations

import html
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autograder.units import format_rounded, format_value

WAITING = ("Lock in a guess in the \u201cPredict first\u201d cell above; the answer appears "
           "here the moment you do.")
COVERED = "The verdicts appear once you lock in your prediction above."


@dataclass(frozen=True)
class Prediction:
    """One prediction question. Exactly one of ``unit``-number or ``options`` is used:
    with ``options`` the guess is one of them; otherwise it is a number in ``unit``.
    ``actual()`` computes the true value (from ``solutions``). ``feedback`` maps each
    option to what choosing it shows about the learner's model; ``reflection`` is the
    question asked at the end of the chapter. ``measure()`` is the number behind a choice
    ("about an hour" is 53.7 min), in ``measure_unit``: nothing before the lock may print
    it either."""

    key: str
    question: str
    actual: Callable[[], Any]
    unit: str = ""
    options: tuple[str, ...] = ()
    explanation: str = ""
    feedback: Mapping[str, str] = field(default_factory=dict)
    reflection: str = ""
    measure: Callable[[], float] | None = None
    measure_unit: str = ""

    @property
    def is_choice(self) -> bool:
        return bool(self.options)


def nearest_option(value: float, options: Mapping[str, float], log_scale: bool = False) -> str:
    """The option whose number is nearest to ``value``: the answer of a multiple-choice
    prediction computed from a formula ("about 3x" for sqrt(8) = 2.83). Compared by ratio
    with ``log_scale`` (factors: 8x is as far from 2.83x as 1x is), else by difference."""
    if not options:
        raise ValueError("nearest_option needs at least one option")

    def distance(label: str) -> float:
        if log_scale:
            if value <= 0 or options[label] <= 0:
                raise ValueError("log_scale compares positive numbers only")
            return abs(math.log(value / options[label]))
        return abs(value - options[label])

    return min(options, key=distance)


def parse_guess(prediction: Prediction, text: Any) -> Any:
    """The guess as a number in the prediction's unit (or an option); ValueError if unreadable."""
    if prediction.is_choice:
        value = str(text).strip() if text is not None else ""
        if value not in prediction.options:
            raise ValueError("choose one of the options first")
        return value
    from autograder.units import UnitError, parse_quantity

    try:
        return parse_quantity(text, prediction.unit)
    except UnitError as exc:
        raise ValueError(str(exc)) from None


def shown(prediction: Prediction, value: Any) -> str:
    """A guess or an actual value as the learner reads it: an option, or "1.75 GB"."""
    if prediction.is_choice or isinstance(value, str):
        return f"\u201c{value}\u201d"
    return format_rounded(float(value), prediction.unit)  # 3 significant figures


def _ratio_words(guess: float, actual: float) -> str:
    ratio = guess / actual
    if 0.9 <= ratio <= 1.1:
        return "within 10%: well judged"
    if ratio > 1:
        return f"{format_value(round(ratio, 1))} times too high"
    return f"{format_value(round(1 / ratio, 1))} times too low" if ratio > 0 else "the wrong sign"


def comparison(prediction: Prediction, guess: Any) -> str:
    """A sentence comparing the guess with the actual value, and what that guess suggests."""
    actual = prediction.actual()
    yours, truth = shown(prediction, guess), shown(prediction, actual)
    if prediction.is_choice:
        verdict = "right" if guess == actual else "not it"
        note = prediction.feedback.get(str(guess), "")
        return f"You predicted {yours}; the answer is {truth} ({verdict}). {note}".rstrip()
    if actual == 0 or not math.isfinite(float(guess)):
        return f"You predicted {yours}; the computed value is {truth}."
    return (f"You predicted {yours}; the computed value is {truth} "
            f"({_ratio_words(float(guess), float(actual))}).")


def truth_text(prediction: Prediction) -> str:
    """The true answer, as shown in the ledger."""
    return shown(prediction, prediction.actual())


@dataclass
class Reveal:
    """The reveal shown later in the chapter; renders in a notebook and a terminal.

    With no guess locked it shows only an invitation to lock one: never the answer.
    """

    prediction: Prediction
    guess: Any  # None when nothing was locked in

    def __str__(self) -> str:
        if self.guess is None:
            return WAITING
        return comparison(self.prediction, self.guess) + " " + self.prediction.explanation

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if self.guess is None:
            return f'<div role="status" class="dtw-reveal"><em>{html.escape(WAITING)}</em></div>'
        return (f'<div role="status" class="dtw-reveal"><strong>Your prediction, revealed.'
                f"</strong> {html.escape(str(self))}</div>")


class LiveReveal:
    """A reveal that redraws itself when the guess is locked (``update``)."""

    def __init__(self, prediction: Prediction, guess: Any) -> None:
        import ipywidgets as w

        self.reveal = Reveal(prediction, guess)
        self.html = w.HTML(self.reveal._repr_html_())

    def update(self, guess: Any) -> None:
        self.reveal = Reveal(self.reveal.prediction, guess)
        self.html.value = self.reveal._repr_html_()

    def __str__(self) -> str:
        return str(self.reveal)

    __repr__ = __str__

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.html)


class Cover:
    """Hides widgets (an explorer's verdicts) behind a note until ``uncover`` is called."""

    def __init__(self, *widgets: Any) -> None:
        import ipywidgets as w

        self.widgets = widgets
        self.note = w.HTML(f'<p class="dtw-covered"><em>{html.escape(COVERED)}</em></p>')
        self.box = w.VBox([self.note, *widgets])
        for widget in widgets:
            widget.layout.display = "none"

    @property
    def covered(self) -> bool:
        return bool(self.note.layout.display != "none")

    def uncover(self, _guess: Any = None) -> None:
        self.note.layout.display = "none"
        for widget in self.widgets:
            widget.layout.display = None


class PredictionLock:
    """A question, an input, and a "Lock in" button; the input is disabled once locked.

    ``record(guess)`` stores the guess and returns a note; ``on_lock(guess)`` is called
    after it, so that reveals and covers elsewhere on the page update at once.
    """

    def __init__(self, prediction: Prediction, record: Callable[[Any], str],
                 previous: Any = None, on_lock: Callable[[Any], None] | None = None) -> None:
        import ipywidgets as w

        self.prediction = prediction
        self._record = record
        self._on_lock = on_lock
        wide = w.Layout(width="auto", max_width="100%")
        if prediction.is_choice:
            self.input: Any = w.RadioButtons(options=list(prediction.options), value=None,
                                             layout=wide)
        else:
            self.input = w.Text(placeholder=f"your guess in {prediction.unit}".strip(),
                                description="Your guess:", style={"description_width": "initial"})
            with warnings.catch_warnings():  # on_submit: the Enter key, in ipywidgets 7 and 8
                warnings.simplefilter("ignore", DeprecationWarning)
                self.input.on_submit(lambda _: self.lock())
        self.button = w.Button(description="Lock in my prediction", layout=wide,
                               button_style="primary")
        self.status = w.HTML()
        self.button.on_click(lambda _: self.lock())
        question = w.HTML(f"<p><strong>Predict first.</strong> {html.escape(prediction.question)}"
                          "</p>")
        self.box = w.VBox([question, self.input, self.button, self.status],
                          layout=w.Layout(width="100%"))
        if previous is not None:
            self._locked(f"Locked in earlier: {shown(prediction, previous)}. Scroll on to test it.")

    def lock(self) -> None:
        if self.button.disabled:
            return
        try:
            guess = parse_guess(self.prediction, self.input.value)
        except ValueError as exc:
            self.status.value = f"<p>⚠ Could not read the guess: {html.escape(str(exc))}</p>"
            return
        # a failure is said on the page, never sent to the front end's log console
        try:
            note = self._record(guess)
        except Exception as exc:
            self.status.value = f"<p>⚠ The prediction could not be saved: {_error(exc)}</p>"
            return
        self._locked(f"Locked in: {shown(self.prediction, guess)}. {note}")
        if self._on_lock is not None:
            try:
                self._on_lock(guess)
            except Exception as exc:
                self.status.value += f"<p>⚠ What follows the lock failed: {_error(exc)}</p>"

    def _locked(self, message: str) -> None:
        self.input.disabled = True
        self.button.disabled = True
        self.status.value = f'<p role="status">{html.escape(message)}</p>'

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)


def _error(exc: Exception) -> str:
    return html.escape(f"{type(exc).__name__}: {exc}")
