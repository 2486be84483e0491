"""The progress log and what is computed from it.

Every check, hint, solution view, prediction and design choice is one
:class:`~autograder.progress.events.Event`, appended to an SQLite file
(:class:`~autograder.progress.store.ProgressStore`). Mastery levels, day streaks and
the dashboard are pure functions of the list of events (``mastery``, ``streaks``,
``summary``); ``transfer`` moves a log between machines as a text code and
``location`` decides where the file lives. Only the standard library and
``platformdirs`` are used, so importing this package is quick.
"""

import importlib
from typing import Any

# name -> submodule; loaded on first use so that writing an event (the check path) does
# not also import the mastery, summary and transfer code.
_EXPORTS = {
    "Event": "events", "DriveNotMountedError": "location", "default_log_path": "location",
    "drive_store_path": "location", "in_colab": "location", "LEVELS": "mastery",
    "exercise_level": "mastery", "levels": "mastery", "ProgressFileError": "store",
    "ProgressStore": "store", "best_streak": "streaks", "current_streak": "streaks",
    "ChapterProgress": "summary", "ProgressSummary": "summary", "summarize": "summary",
    "ProgressCodeError": "transfer", "export_code": "transfer", "import_code": "transfer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module = importlib.import_module(f"autograder.progress.{_EXPORTS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'autograder.progress' has no attribute {name!r}")
