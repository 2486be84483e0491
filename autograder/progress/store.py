"""The progress log on disk: an append-only table of events in an SQLite file.

Why SQLite: it ships with Python, a single file is easy to back up or move, and it
makes each write an all-or-nothing transaction, so a kernel killed mid-write leaves
the log as it was before that write. Two notebooks open at once (two kernels) are two
writers: each write takes SQLite's write lock first (``BEGIN IMMEDIATE``) and a busy
timeout makes the other writer wait for the lock instead of failing.

The default rollback journal is used rather than WAL mode because WAL needs shared
memory between processes, which network and FUSE file systems such as a mounted Google
Drive do not provide (https://www.sqlite.org/wal.html, "WAL does not work over a
network filesystem").

The file is never overwritten, repaired or deleted by this code. A file that is not a
workbook log, is damaged, or was written by a newer version of the workbook raises
:class:`ProgressFileError` before anything is written, and the message says what to do.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from autograder.progress.events import FIELDS, Event, utc_text, variant_text
from autograder.progress.location import APP_NAME, ProgressFolderError, make_folder

#: The version of the table layout this code reads and writes.
SCHEMA_VERSION = 1
#: Seconds a writer waits for another writer to finish before giving up.
BUSY_TIMEOUT_S = 30.0
#: Every SQLite 3 database file starts with these 16 bytes (sqlite.org/fileformat.html).
SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
)""",
    """
CREATE TABLE IF NOT EXISTS events (
    id              INTEGER PRIMARY KEY,  -- the rowid: insertion order breaks ties in utc
    uid             TEXT NOT NULL UNIQUE, -- de-duplicates events when logs are merged
    action          TEXT NOT NULL,
    exercise_id     TEXT NOT NULL,
    variant         TEXT,                 -- JSON object; NULL means the canonical numbers
    answer          TEXT NOT NULL,
    status          TEXT NOT NULL,
    score           REAL NOT NULL,
    hints_used      INTEGER NOT NULL,
    solution_viewed INTEGER NOT NULL,
    utc             TEXT NOT NULL,        -- fixed-width ISO 8601, so text order = time order
    local_date      TEXT NOT NULL,
    tz              TEXT NOT NULL,
    value           TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS events_by_time ON events (utc, id)",
    "CREATE INDEX IF NOT EXISTS events_by_exercise ON events (exercise_id, action)",
)

_COLUMNS = ", ".join(FIELDS)
_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES ({', '.join('?' * len(FIELDS))})"
_INSERT_NEW = _INSERT.replace("INSERT", "INSERT OR IGNORE", 1)
_SELECT = f"SELECT {_COLUMNS} FROM events ORDER BY utc, id"

_LEAVE_IT = (
    "The file has not been changed. Rename or move it aside to start a new log (the "
    "workbook then creates a fresh one), or restore a backup; progress you exported as a "
    "code can be imported into the new log."
)


class ProgressFileError(Exception):
    """The progress file cannot be used; the message names the file and what to do."""


class ProgressStore:
    """The append-only event log in the SQLite file at ``path``.

    Opening checks the file (creating it, and its folder, if missing) and raises
    :class:`ProgressFileError` if it cannot be used. One connection is kept open per
    process and reused (opening one costs milliseconds, a check should not); it holds no
    lock between calls (autocommit, each write its own ``BEGIN IMMEDIATE`` transaction),
    so a store object is safe to keep in a long-lived kernel beside other kernels.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._shared: sqlite3.Connection | None = None
        self._shared_pid = 0
        self._shared_lock = threading.RLock()  # one thread at a time on the kept connection
        if self.path.is_dir():
            raise ProgressFileError(f"{self.path} is a folder; the progress log must be a file "
                                    "path such as .../progress.sqlite3")
        self.unreadable: list[str] = []  # rows skipped by the last events(), why each
        try:
            make_folder(self.path.parent)
        except ProgressFolderError as err:
            raise ProgressFileError(str(err)) from None
        if not self._holds_tables():
            self._create_tables()

    def __repr__(self) -> str:
        return f"ProgressStore({str(self.path)!r})"

    # -- writing ----------------------------------------------------------------
    def append(self, event: Event) -> None:
        """Add one event in its own transaction; ValueError if its uid is already logged."""
        try:
            self._insert(_INSERT, [event])
        except sqlite3.IntegrityError as err:
            raise ValueError(f"an event with uid {event.uid} is already in the log") from err

    def merge(self, events: Iterable[Event]) -> int:
        """Add the events whose uid is not yet logged, in one transaction; return how many."""
        return self._insert(_INSERT_NEW, list(events))

    # -- reading ----------------------------------------------------------------
    def events(self) -> list[Event]:
        """Every readable event, oldest first (by UTC time, then by order of writing). A
        row that cannot be read is skipped, and described in ``unreadable``: one bad row
        must not hide all the others."""
        with self._connect() as con:
            rows = con.execute(_SELECT).fetchall()
        found, self.unreadable = [], []
        for row in rows:
            try:
                found.append(self._event_from_row(row))
            except ProgressFileError as err:
                self.unreadable.append(str(err))
        return found

    def action_counts(self, exercise_id: str) -> dict[str, int]:
        """How many events of each action are logged for ``exercise_id``."""
        with self._connect() as con:
            rows = con.execute("SELECT action, COUNT(*) FROM events WHERE exercise_id = ? "
                               "GROUP BY action", (exercise_id,)).fetchall()
        return {str(action): int(count) for action, count in rows}

    def close(self) -> None:
        """Close the kept connection (reopened on the next call)."""
        with self._shared_lock:
            if self._shared is not None:
                self._shared.close()
                self._shared = None

    def __len__(self) -> int:
        with self._connect() as con:
            (count,) = con.execute("SELECT COUNT(*) FROM events").fetchone()
        return int(count)

    # -- internals --------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            return sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as err:
            raise self._file_error(err) from err

    @contextmanager
    def _connect(self, *, query_only: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode; SQLite errors become file errors.

        Inspection (``query_only``) gets its own short connection that refuses every
        write: it must never change a file that may turn out to be damaged or newer than
        this code. Everything else reuses this process's kept connection (a forked child
        opens its own: SQLite connections must not cross a fork).
        """
        if query_only:
            con = self._open()
            try:
                con.execute("PRAGMA query_only = ON")
                yield con
            except sqlite3.DatabaseError as err:
                raise self._file_error(err) from err
            finally:
                con.close()
            return
        with self._shared_lock:
            if self._shared is None or self._shared_pid != os.getpid():
                self._shared, self._shared_pid = self._open(), os.getpid()
            try:
                yield self._shared
            except sqlite3.IntegrityError:
                raise  # a duplicate uid: the caller turns it into a clear message
            except sqlite3.DatabaseError as err:
                self.close()
                raise self._file_error(err) from err

    def _insert(self, statement: str, events: Sequence[Event]) -> int:
        rows = [_row(event) for event in events]
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")  # take the write lock now, waiting if needed
            try:
                before = con.total_changes
                con.executemany(statement, rows)
                added = con.total_changes - before
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
        return added

    def _holds_tables(self) -> bool:
        """Check an existing file; False when it is absent or an empty database."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return False
        self._check_header()
        with self._connect(query_only=True) as con:
            tables = {name for (name,) in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables:
                return False
            if not {"meta", "events"} <= tables:
                raise self._foreign_error()
            self._check_meta(dict(con.execute("SELECT key, value FROM meta").fetchall()))
            problems = [row[0] for row in con.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise self._damaged_error("; ".join(str(p) for p in problems[:3]))
        return True

    def _check_header(self) -> None:
        with open(self.path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
        if header != SQLITE_HEADER:
            raise ProgressFileError(
                f"{self.path} is not a workbook progress log: it is not an SQLite database "
                f"(it may be damaged, or another file saved under this name). {_LEAVE_IT}")

    def _check_meta(self, meta: dict[str, Any]) -> None:
        if meta.get("app") != APP_NAME:
            raise self._foreign_error()
        try:
            version = int(meta["schema_version"])
        except (KeyError, TypeError, ValueError):
            raise self._damaged_error("its schema_version entry is missing or unreadable") \
                from None
        if version > SCHEMA_VERSION:
            raise ProgressFileError(
                f"{self.path} was written by a newer version of the workbook (schema "
                f"{version}); this version reads schema {SCHEMA_VERSION}. Upgrade the "
                "workbook (pip install --upgrade distributed-training-workbook) to keep "
                "using this log. The file has not been changed.")
        if version < 1:
            raise self._damaged_error(f"its schema_version is {version}")

    def _create_tables(self) -> None:
        """Lay out a new log. Idempotent, so two kernels creating it at once is fine."""
        created = utc_text(datetime.now(timezone.utc))
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA:
                    con.execute(statement)
                con.executemany(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                    [("schema_version", str(SCHEMA_VERSION)), ("app", APP_NAME),
                     ("created_utc", created)])
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise

    def _event_from_row(self, row: Sequence[Any]) -> Event:
        data = dict(zip(FIELDS, row, strict=True))
        try:
            data["variant"] = None if data["variant"] is None else json.loads(data["variant"])
            data["solution_viewed"] = bool(data["solution_viewed"])
            return Event.from_dict(data)
        except (ValueError, TypeError) as err:
            raise self._damaged_error(f"event {data.get('uid')!r} is unreadable: {err}") \
                from err

    def _file_error(self, err: sqlite3.Error) -> ProgressFileError:
        text = str(err)
        if "locked" in text or "busy" in text:
            return ProgressFileError(
                f"{self.path} is busy: another program kept it locked for more than "
                f"{BUSY_TIMEOUT_S:.0f} s. Close other notebooks using the workbook and try "
                "again.")
        if "full" in text:
            return ProgressFileError(
                f"the disk holding {self.path} is full: the event was not saved. Free some "
                "space; the log itself is intact.")
        if "readonly" in text or "read-only" in text:
            return ProgressFileError(
                f"{self.path} is read-only: the event was not saved. Set WORKBOOK_HOME to a "
                "folder you may write to.")
        if "disk I/O error" in text:
            return ProgressFileError(
                f"the disk failed while writing {self.path} (disk I/O error): the event was "
                "not saved. The log was left as it was.")
        if "unable to open" in text:
            return ProgressFileError(
                f"cannot open the progress log {self.path} ({text}). Check that its folder "
                "exists and that you may write to it, or set WORKBOOK_HOME to another folder.")
        return self._damaged_error(text)

    def _damaged_error(self, detail: str) -> ProgressFileError:
        return ProgressFileError(
            f"the progress log {self.path} is damaged and cannot be read ({detail}). "
            f"{_LEAVE_IT}")

    def _foreign_error(self) -> ProgressFileError:
        return ProgressFileError(
            f"{self.path} is an SQLite database but not a workbook progress log. Choose "
            "another path (or set WORKBOOK_HOME to another folder). The file has not been "
            "changed.")


def _row(event: Event) -> tuple[Any, ...]:
    """An event as the values of one table row, in FIELDS order."""
    data = event.to_dict()
    data["variant"] = variant_text(event.variant)
    data["solution_viewed"] = int(event.solution_viewed)
    data["utc"] = utc_text(event.utc)
    return tuple(data[name] for name in FIELDS)
