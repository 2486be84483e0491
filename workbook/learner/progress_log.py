"""The learner's progress log, from a notebook: events written behind each check, read back.

Opening the log can fail (a corrupt file, one written by a newer version, a read-only
home). Checking must still work then: the failure is reported once as a note on the
result, and the file is left untouched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autograder.progress.events import Event
from autograder.progress.location import default_log_path
from autograder.progress.store import ProgressFileError, ProgressStore
from workbook.learner.write_behind import WriteBehind

if TYPE_CHECKING:
    from autograder.kinds.base import Verdict
    from autograder.progress.summary import ProgressSummary

_COUNTED_VIEWS = ("hint", "solution")


@dataclass(frozen=True)
class Seen:
    """What the learner has seen of one exercise so far: how many hints, and whether the
    worked solution."""

    hints: int = 0
    solution: bool = False


class _OpenLog:
    """The open store for this kernel (with its background writer), or the reason it
    could not be opened."""

    def __init__(self) -> None:
        self.store: ProgressStore | None = None
        # A hint or solution view is queued: counts read for a check must wait for it
        # (and only then; a check never waits for the previous check's write).
        self.views_queued = False
        self.writer: WriteBehind | None = None
        self.error = ""
        self.path: Path | None = None
        try:
            self.path = default_log_path()
            self.store = ProgressStore(self.path)
        except (ProgressFileError, OSError) as exc:
            self.error = str(exc)
        else:
            self.writer = WriteBehind(self.store)

    def readable(self) -> ProgressStore | None:
        """The store, after this kernel's queued events have reached it."""
        if self.writer is not None:
            self.writer.flush()
        return self.store


@lru_cache(maxsize=1)
def _open_log() -> _OpenLog:
    return _OpenLog()


def reopen() -> None:
    """Forget the open store (after WORKBOOK_HOME changes, or in tests)."""
    if _open_log.cache_info().currsize:
        store_now = _open_log().readable()
        if store_now is not None:
            store_now.close()
    _open_log.cache_clear()


def store() -> ProgressStore:
    """The open progress store; ProgressFileError explains why it cannot be used."""
    log = _open_log()
    found = log.readable()
    if found is None:
        raise ProgressFileError(log.error)
    return found


def describe_answer(answer: Any) -> str:
    """The learner's answer as text for the log (functions by name); the event cuts it to
    :data:`autograder.progress.events.MAX_ANSWER_CHARS`."""
    if callable(answer):
        return f"<function {getattr(answer, '__name__', '?')}>"
    try:
        text = repr(answer)
    except Exception:  # a learner object with a broken __repr__
        text = f"<{type(answer).__name__}>"
    return text


def _append(event: Event) -> str:
    """Queue the event for writing; returns a note about any failure seen so far."""
    log = _open_log()
    if log.store is None or log.writer is None:
        return f"Progress not saved: {log.error}"
    if event.action in _COUNTED_VIEWS:
        log.views_queued = True
    log.writer.put(event)
    return " ".join(dict.fromkeys(log.writer.take_errors()))


def record_check(exercise_id: str, params: dict[str, Any] | None, answer: Any,
                 verdict: Verdict, seen_before: Seen) -> str:
    """Log one check, with what the learner had seen before it (read by the caller with
    :func:`seen`); returns a note for the learner when it could not be saved."""
    event = Event.now(
        "check", exercise_id, variant=params, answer=describe_answer(answer),
        status="correct" if verdict.passed else "wrong", score=verdict.score,
        hints_used=seen_before.hints, solution_viewed=seen_before.solution,
    )
    return _append(event)


def record_event(action: str, key: str, value: Any = "") -> str:
    """Log a hint or solution view, a prediction or a design choice."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return _append(Event.now(action, key, value=text))


def events() -> list[Event]:
    found = _open_log().readable()
    if found is None:
        return []
    try:
        return found.events()
    except (ProgressFileError, OSError):
        return []


def warnings() -> tuple[str, ...]:
    """Why the progress shown may be incomplete: the log could not be opened or read, or
    some of its rows could not be read (and were skipped)."""
    log = _open_log()
    if log.store is None:
        return (f"Progress is not being saved: {log.error}",) if log.error else ()
    try:
        log.readable()
        log.store.events()
    except (ProgressFileError, OSError) as exc:
        return (f"The progress log could not be read: {exc}",)
    skipped = log.store.unreadable
    if not skipped:
        return ()
    return (f"{len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} of the progress log "
            f"could not be read and {'was' if len(skipped) == 1 else 'were'} skipped: "
            f"{skipped[0]}",)


def _action_counts(exercise_id: str) -> dict[str, int]:
    """Hint and solution counts: only a queued hint or solution view is waited for, so
    a check does not wait for the previous check's write."""
    log = _open_log()
    if log.writer is not None and log.views_queued:
        log.views_queued = False
        log.writer.flush()
    found = log.store
    if found is None:
        return {}
    try:
        return found.action_counts(exercise_id)
    except (ProgressFileError, OSError):
        return {}


def seen(exercise_id: str) -> Seen:
    """What the learner has seen of the exercise, read from the log in one query."""
    counts = _action_counts(exercise_id)
    return Seen(hints=counts.get("hint", 0), solution=counts.get("solution", 0) > 0)


def summary(today: date | None = None) -> ProgressSummary:
    """Mastery and streaks computed from the whole log."""
    from autograder.progress.summary import summarize
    from workbook.outline import CHAPTERS
    from workbook.records import all_challenges, all_exercises, all_labs

    records = all_exercises()
    chapters = [(c.number, c.title, [r.id for r in records if r.chapter == c.number])
                for c in CHAPTERS]
    extra = sorted((*all_challenges(), *all_labs()),
                   key=lambda r: tuple(int(part) for part in r.id.split(".")))
    beyond = [(r.id, r.title) for r in extra]
    return summarize(events(), chapters, today or date.today(), beyond, warnings())
