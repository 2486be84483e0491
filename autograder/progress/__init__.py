"""The progress log and what is computed from it.

Every check, hint, solution view, prediction and design choice is one
:class:`~autograder.progress.events.Event`, appended to an SQLite file
(:class:`~autograder.progress.store.ProgressStore`). Mastery levels, day streaks and
the dashboard are pure functions of the list of events (``mastery``, ``streaks``,
``summary``); ``transfer`` moves a log between machines as a text code and
``location`` decides where the file lives. Only the standard library and
``platformdirs`` are used, so importing this package is quick.
"""

from autograder.progress.events import Event
from autograder.progress.location import (
    DriveNotMountedError,
    default_store_path,
    drive_store_path,
    in_colab,
)
from autograder.progress.mastery import LEVELS, exercise_level, levels
from autograder.progress.store import ProgressFileError, ProgressStore
from autograder.progress.streaks import best_streak, current_streak
from autograder.progress.summary import ChapterProgress, ProgressSummary, summarize
from autograder.progress.transfer import ProgressCodeError, export_code, import_code

__all__ = [
    "LEVELS", "ChapterProgress", "DriveNotMountedError", "Event", "ProgressCodeError",
    "ProgressFileError", "ProgressStore", "ProgressSummary", "best_streak",
    "current_streak", "default_store_path", "drive_store_path", "exercise_level",
    "export_code", "import_code", "in_colab", "levels", "summarize",
]
