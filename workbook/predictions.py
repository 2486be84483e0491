"""Each chapter's prediction lock and reveal, kept in the progress log's design ledger.

The prediction for chapter NN is the ``PREDICTION`` of ``workbook.explorers.chNN``.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from autograder.prediction import Prediction, PredictionLock, Reveal
from workbook import journal
from workbook.outline import CHAPTERS


def prediction_for(key: str) -> Prediction:
    """The prediction keyed "ch05" (chapter 5); ValueError naming the valid keys."""
    valid = [f"ch{c.number:02d}" for c in CHAPTERS]
    if key not in valid:
        raise ValueError(f"no prediction {key!r}; valid keys are {', '.join(valid)}")
    prediction: Prediction = importlib.import_module(f"workbook.explorers.{key}").PREDICTION
    return prediction


def latest_guess(key: str) -> Any:
    """The most recent locked-in guess for ``key``, or None."""
    values = [e.value for e in journal.events() if e.action == "prediction"
              and e.exercise_id == key]
    if not values:
        return None
    try:
        return json.loads(values[-1])
    except ValueError:
        return values[-1]


def prediction_lock(key: str) -> PredictionLock:
    """The lock widget: commit a guess before the explorer and the derivations."""
    prediction = prediction_for(key)

    def record(guess: Any) -> str:
        note = journal.record_event("prediction", key, json.dumps(guess))
        return note or "Saved in your design ledger."

    return PredictionLock(prediction, record, previous=latest_guess(key))


def reveal(key: str) -> Reveal:
    """How far the locked-in guess was from the computed value."""
    return Reveal(prediction_for(key), latest_guess(key))
