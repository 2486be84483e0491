"""The prediction lock locks: nothing about the answer shows before a guess is locked, and
everything that waits for it updates the moment it is locked, in the same kernel."""

from __future__ import annotations

import importlib
from typing import Any

import matplotlib
import pytest

from autograder.prediction import COVERED, WAITING, PredictionLock, Reveal

predictions = importlib.import_module("workbook.learner.prediction_page")

matplotlib.use("Agg")

KEYS = predictions.KEYS


def _choose(lock: Any, guess: str) -> None:
    lock.input.value = guess
    lock.button.click()


def _wrong_guess(prediction: Any) -> Any:
    if prediction.is_choice:
        return next(o for o in prediction.options if o != prediction.actual())
    return str(prediction.actual() * 3)


@pytest.mark.parametrize("key", KEYS)
def test_reveal_before_the_lock_shows_no_answer(key: str) -> None:
    prediction = predictions.prediction_for(key)
    live = predictions.reveal(key)
    shown = live.html.value
    assert WAITING.split(";")[0] in str(live)
    assert prediction.explanation[:40] not in shown
    if prediction.is_choice:
        assert all(option not in shown for option in prediction.options)


@pytest.mark.parametrize("key", KEYS)
def test_locking_updates_the_reveal_and_uncovers_the_verdicts_at_once(key: str) -> None:
    prediction = predictions.prediction_for(key)
    box = importlib.import_module(f"workbook.explorers.{key}").explorer()
    reveal = predictions.reveal(key)
    covers = _covers(box)
    assert covers and all(COVERED in c.children[0].value for c in covers)
    assert all(c.children[1].layout.display == "none" for c in covers)

    lock = predictions.prediction_lock(key)
    guess = _wrong_guess(prediction)
    _choose(lock, guess)
    assert lock.button.disabled and lock.input.disabled
    assert "revealed" in reveal.html.value  # no re-run needed
    assert all(c.children[0].layout.display == "none" for c in covers)
    assert all(c.children[1].layout.display is None for c in covers)
    if prediction.is_choice:  # feedback written for the option chosen, not a generic line
        assert prediction.feedback[guess][:30] in reveal.html.value.replace("&#x27;", "'")


def _covers(widget: Any) -> list[Any]:
    """Every cover box below ``widget``: a VBox whose first child is the lock note."""
    found = []
    for child in getattr(widget, "children", ()):
        first = getattr(child, "children", (None,))[0] if getattr(child, "children", ()) else None
        if first is not None and COVERED in str(getattr(first, "value", "")):
            found.append(child)
        found.extend(_covers(child))
    return found


@pytest.mark.parametrize("key", KEYS)
def test_every_option_has_its_own_feedback_and_every_chapter_a_reflection(key: str) -> None:
    prediction = predictions.prediction_for(key)
    assert prediction.reflection.endswith("?")
    if prediction.is_choice:
        assert set(prediction.feedback) == set(prediction.options)
        assert len(set(prediction.feedback.values())) == len(prediction.options)


def test_reveal_numbers_are_rounded_and_carry_units() -> None:
    # ch02's true value is 50 / 15,410 = 0.32446...%; ch06's is 100.663296 MB.
    text = str(Reveal(predictions.prediction_for("ch02"), 0.5))
    assert "0.324%" in text and "0.32446" not in text
    text = str(Reveal(predictions.prediction_for("ch06"), 60.0))
    assert "101 MB" in text and "100.6633" not in text


def test_a_guess_that_cannot_be_read_is_not_locked() -> None:
    lock = predictions.prediction_lock("ch01")
    _choose(lock, "lots")
    assert not lock.button.disabled and "Could not read" in lock.status.value
    assert predictions.latest_guess("ch01") is None


def test_a_lock_that_cannot_save_says_so_and_stays_open() -> None:
    prediction = predictions.prediction_for("ch01")

    def full_disk(guess: Any) -> str:
        raise OSError(28, "No space left on device")

    lock = PredictionLock(prediction, full_disk)
    _choose(lock, _wrong_guess(prediction))
    assert not lock.button.disabled
    assert "could not be saved" in lock.status.value and "No space left" in lock.status.value


def test_a_failure_after_the_lock_is_said_beside_the_lock() -> None:
    prediction = predictions.prediction_for("ch01")

    def broken_reveal(guess: Any) -> None:
        raise KeyError("reveal")

    lock = PredictionLock(prediction, lambda guess: "Saved.", on_lock=broken_reveal)
    _choose(lock, _wrong_guess(prediction))
    assert lock.button.disabled and "Locked in" in lock.status.value
    assert "KeyError" in lock.status.value


def test_ledger_lists_prediction_truth_and_reflection() -> None:
    _choose(predictions.prediction_lock("ch05"), "about a quarter")
    box = predictions.reflection("ch05")
    box.text.value = "  "
    box.button.click()
    assert "empty reflection is not saved" in box.status.value
    box.text.value = "More microbatches shrink the bubble but need memory."
    box.button.click()
    rows = {row.prediction.key: row.cells() for row in predictions.ledger().rows}
    assert rows["ch05"] == ("ch05", "\u201cabout a quarter\u201d", "\u201cabout half\u201d",
                            "not it", "More microbatches shrink the bubble but need memory.")
    assert rows["ch00"][1] == "not yet" and "once a guess is locked" in rows["ch00"][2]
    assert "((" not in str(predictions.ledger())  # no doubled brackets in the text form
    html = predictions.ledger()._repr_html_()
    assert "<table>" in html and "More microbatches" in html
    assert predictions.reflection("ch05").text.value.startswith("More microbatches")


def test_nearest_option_by_difference_and_by_ratio() -> None:
    from autograder.prediction import nearest_option

    shares = {"small": 0.05, "half": 0.5, "most": 0.9}
    assert nearest_option(0.3, shares) == "half"  # 0.2 from half, 0.25 from small
    factors = {"2x": 2.0, "3x": 3.0, "8x": 8.0}
    # sqrt(8) = 2.83: nearer 3 by ratio (3/2.83 = 1.06 against 2.83/2 = 1.41)
    assert nearest_option(8**0.5, factors, log_scale=True) == "3x"
    # 5: by difference nearer 3 (2 against 3); by ratio nearer 8 (1.6 against 1.67)
    assert nearest_option(5.0, factors) == "3x"
    assert nearest_option(5.0, factors, log_scale=True) == "8x"
    with pytest.raises(ValueError):
        nearest_option(1.0, {})
