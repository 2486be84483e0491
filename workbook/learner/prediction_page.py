"""Each chapter's prediction lock, reveal and reflection, kept in the design ledger.

The prediction for chapter NN is the ``PREDICTION`` of ``workbook.explorers.chNN``.
Guesses and reflections are events in the progress log. Within one kernel, the widgets
that depend on a guess (the reveal, the explorer's verdicts) register here and are
updated the moment the guess is locked; re-running a cell replaces its registration.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

from autograder.ledger import Ledger, LedgerRow, ReflectionBox
from autograder.prediction import Cover, LiveReveal, Prediction, PredictionLock
from workbook.learner import progress_log
from workbook.outline import CHAPTERS

KEYS = tuple(f"ch{c.number:02d}" for c in CHAPTERS)

# key -> slot -> callback(guess); a slot is one place on the page ("reveal", "explorer").
_listeners: dict[str, dict[str, Callable[[Any], None]]] = {}


def prediction_for(key: str) -> Prediction:
    """The prediction keyed "ch05" (chapter 5); ValueError naming the valid keys."""
    if key not in KEYS:
        raise ValueError(f"no prediction {key!r}; valid keys are {', '.join(KEYS)}")
    prediction: Prediction = importlib.import_module(f"workbook.explorers.{key}").PREDICTION
    return prediction


def _latest(action: str, key: str) -> str | None:
    values = [e.value for e in progress_log.events() if e.action == action and e.exercise_id == key]
    return values[-1] if values else None


def latest_guess(key: str) -> Any:
    """The most recent locked-in guess for ``key``, or None."""
    value = _latest("prediction", key)
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return value


def latest_reflection(key: str) -> str:
    """The learner's latest reflection for ``key`` ("" when none)."""
    return _latest("reflection", key) or ""


def when_locked(key: str, slot: str, callback: Callable[[Any], None]) -> None:
    """Call ``callback(guess)`` once a guess for ``key`` is locked (now, if it already is)."""
    _listeners.setdefault(key, {})[slot] = callback
    guess = latest_guess(key)
    if guess is not None:
        callback(guess)


def _locked(key: str, guess: Any) -> None:
    for callback in list(_listeners.get(key, {}).values()):
        callback(guess)


def prediction_lock(key: str) -> PredictionLock:
    """The lock widget: commit a guess before the explorer and the derivations."""
    prediction = prediction_for(key)

    def record(guess: Any) -> str:
        note = progress_log.record_event("prediction", key, json.dumps(guess))
        return note or "Saved in your design ledger; the explorer and the reveal below are open."

    return PredictionLock(prediction, record, previous=latest_guess(key),
                          on_lock=lambda guess: _locked(key, guess))


def reveal(key: str) -> LiveReveal:
    """How far the locked-in guess was from the computed value; waits for the lock."""
    live = LiveReveal(prediction_for(key), None)
    when_locked(key, "reveal", live.update)
    return live


def cover_until_locked(key: str, *widgets: Any, slot: str = "explorer") -> Any:
    """A box showing ``widgets`` (an explorer's verdicts) only once ``key`` is locked.

    ``slot`` names the place on the page: a second cover in the same slot replaces the
    first (a re-run cell), covers in different slots both open."""
    cover = Cover(*widgets)
    when_locked(key, slot, cover.uncover)
    return cover.box


def reflection(key: str) -> ReflectionBox:
    """The chapter's closing reflection question, saved in the design ledger."""
    prediction = prediction_for(key)

    def save(text: str) -> str:
        note = progress_log.record_event("reflection", key, text)
        return note or "Saved in your design ledger (wb.ledger() shows every chapter)."

    return ReflectionBox(prediction, save, previous=latest_reflection(key))


def ledger() -> Ledger:
    """Every chapter's prediction, the truth and your reflection, in one table."""
    return Ledger([LedgerRow(prediction_for(key), latest_guess(key), latest_reflection(key))
                   for key in KEYS])
