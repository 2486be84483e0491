"""Progress for learners: the dashboard, predictions, and moving progress between machines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbook.learner import progress_log

if TYPE_CHECKING:
    from autograder.progress.summary import ProgressSummary


def progress() -> ProgressSummary:
    """Mastery per exercise and chapter, the day streak and the best streak."""
    return progress_log.summary()


def export_progress() -> str:
    """A short text code holding the whole progress log (paste it into import_progress),
    signed with your progress key: it imports where that key is in use."""
    from autograder.progress.transfer import export_code

    return export_code(progress_log.events())


def import_progress(code: str) -> int:
    """Merge a code from export_progress(); returns how many new events were added.

    Importing the same code twice adds nothing the second time. A code imports only where
    the progress key that signed it is in use (see progress_key).
    """
    from autograder.progress.transfer import import_code

    return progress_log.store().merge(import_code(code))


def progress_key() -> str:
    """Your progress key, which signs your progress codes. To carry progress to another
    machine (or a new Colab session), use it there once with use_progress_key."""
    from autograder.progress.location import data_folder
    from autograder.progress.signing import key_text, load_key

    return key_text(load_key(data_folder()))


def use_progress_key(key: str) -> str:
    """Sign and import codes with ``key`` (from progress_key on your other machine) from
    now on; returns where it is kept. The log itself is unchanged."""
    from autograder.progress.location import data_folder
    from autograder.progress.signing import use_key

    return str(use_key(data_folder(), key))


def use_drive(mount: str = "/content/drive") -> str:
    """In Google Colab, keep progress on Google Drive (survives runtime resets).

    Mount Drive first: ``from google.colab import drive; drive.mount('/content/drive')``.
    Returns the path now in use.
    """
    import os

    from autograder.progress.location import drive_store_path

    path = drive_store_path(mount)
    os.environ["WORKBOOK_HOME"] = str(path.parent)
    progress_log.reopen()
    return str(path)


def predict(key: str, value: Any) -> str:
    """Record a prediction (or a design choice) in the design ledger before the reveal."""
    note = progress_log.record_event("prediction", key, value)
    return note or f"Prediction for {key} recorded: {value!r}."


def predictions(key: str) -> list[str]:
    """Every prediction recorded under ``key``, oldest first, as stored text."""
    return [e.value for e in progress_log.events()
            if e.action == "prediction" and e.exercise_id == key]
