"""Write progress events behind the learner's back, so a check never waits for the disk.

Each event is still written in its own durable SQLite transaction, by one background
thread per kernel, usually within milliseconds of the check. Reads flush the queue first
(so this kernel always sees its own events), the queue is flushed when the kernel exits,
and a write that fails is reported on the learner's next check instead of being lost
silently. At most :data:`MAX_QUEUED` events wait at any time (a check beyond that waits
for the disk), so a kernel killed outright (``kill -9``) loses at most ``MAX_QUEUED + 1``
events: those queued and the one being written.
"""

from __future__ import annotations

import atexit
import queue
import threading

from autograder.progress.events import Event
from autograder.progress.store import ProgressFileError, ProgressStore

_FLUSH_TIMEOUT_S = 10.0
MAX_QUEUED = 4  # events waiting for the disk; what a kernel killed outright can lose


class WriteBehind:
    """A queue of events and the daemon thread that appends them to ``store``."""

    def __init__(self, store: ProgressStore) -> None:
        self.store = store
        # An Event to write, or a threading.Event to set once everything before it is done.
        # Bounded: in a tight loop of checks the writer keeps pace instead of falling behind.
        self._queue: queue.Queue[Event | threading.Event] = queue.Queue(maxsize=MAX_QUEUED)
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="workbook-progress-writer",
                                        daemon=True)
        self._thread.start()
        atexit.register(self.flush)

    def put(self, event: Event) -> None:
        try:
            self._queue.put(event, timeout=_FLUSH_TIMEOUT_S)
        except queue.Full:  # the disk has not taken a write for seconds
            with self._lock:
                self._errors.append(f"Progress not saved: the disk did not accept a write "
                                    f"for {_FLUSH_TIMEOUT_S:.0f} s")

    def flush(self) -> None:
        """Wait until every event queued so far is written (or has failed)."""
        if self._thread.is_alive():
            done = threading.Event()
            try:
                self._queue.put(done, timeout=_FLUSH_TIMEOUT_S)
            except queue.Full:
                return
            done.wait(_FLUSH_TIMEOUT_S)

    def take_errors(self) -> list[str]:
        """Failures since the last call, as messages for the learner."""
        with self._lock:
            errors, self._errors = self._errors, []
        return errors

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                self.store.append(item)
            except (ProgressFileError, OSError, ValueError) as exc:
                with self._lock:
                    self._errors.append(f"Progress not saved: {exc}")
