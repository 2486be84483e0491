"""The SQLite event log: round trips, merging, concurrent writers, bad files left alone."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.progress import store as store_module
from autograder.progress.events import Event
from autograder.progress.store import ProgressFileError, ProgressStore

REPO_ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2025, 3, 1, 12, tzinfo=timezone.utc)


def event(n: int, *, minutes: float | None = None, **overrides) -> Event:
    fields = dict(
        uid=f"{n:032x}", action="check", exercise_id=f"{n % 7}.1", variant=None,
        answer=f"{n} GB", status="correct" if n % 2 else "wrong", score=float(n % 2),
        hints_used=n % 3, solution_viewed=n % 5 == 0,
        utc=T0 + timedelta(minutes=n if minutes is None else minutes),
        local_date="2025-03-01", tz="Europe/Paris",
    )
    fields.update(overrides)
    return Event(**fields)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file in ``folder`` with its bytes, to prove nothing was written."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_append_and_read_back(tmp_path: Path) -> None:
    log = ProgressStore(tmp_path / "progress.sqlite3")
    written = [
        event(1, variant={"N": 64, "M_GB": 0.5}),
        event(2, action="hint", status="", score=0.0),
        event(3, action="choice", exercise_id="ch05/design", status="", score=0.0,
              value='{"tp": 8, "pp": 4}'),
        event(4, answer="é" * 3000),
    ]
    for e in written:
        log.append(e)
    again = ProgressStore(tmp_path / "progress.sqlite3")  # a second kernel opening it
    assert again.events() == written
    assert len(again) == 4
    assert again.events()[3].answer == "é" * 2000


def test_events_come_back_in_utc_order_then_in_writing_order(tmp_path: Path) -> None:
    log = ProgressStore(tmp_path / "p.sqlite3")
    late, early = event(1, minutes=90), event(2, minutes=-30)
    # Same instant, written in the order 4 then 3: writing order breaks the tie.
    tie_a, tie_b = event(4, minutes=10), event(3, minutes=10)
    # A microsecond-less time must still sort before one 1 us later.
    whole = event(5, utc=T0 + timedelta(minutes=20))
    micro = event(6, utc=T0 + timedelta(minutes=20, microseconds=1))
    for e in (late, micro, early, tie_a, tie_b, whole):
        log.append(e)
    assert [e.uid for e in log.events()] == [e.uid for e in
                                             (early, tie_a, tie_b, whole, micro, late)]


def test_a_duplicate_uid_is_refused_on_append(tmp_path: Path) -> None:
    log = ProgressStore(tmp_path / "p.sqlite3")
    log.append(event(1))
    with pytest.raises(ValueError, match="already in the log"):
        log.append(event(1, answer="something else"))
    assert len(log) == 1


def test_merge_adds_only_new_uids(tmp_path: Path) -> None:
    log = ProgressStore(tmp_path / "p.sqlite3")
    log.append(event(1))
    log.append(event(2))
    assert log.merge([event(2), event(3), event(4)]) == 2  # 2 is already there
    assert log.merge([event(3), event(4)]) == 0
    assert log.merge([]) == 0
    assert sorted(e.uid for e in log.events()) == [f"{n:032x}" for n in (1, 2, 3, 4)]


def test_new_file_records_schema_version_and_app(tmp_path: Path) -> None:
    path = tmp_path / "deeper" / "folder" / "p.sqlite3"
    ProgressStore(path)
    with sqlite3.connect(path) as con:
        meta = dict(con.execute("SELECT key, value FROM meta"))
    con.close()
    assert meta["schema_version"] == "1"
    assert meta["app"] == "distributed-training-workbook"


def test_an_empty_file_becomes_a_log(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite3"
    path.touch()
    log = ProgressStore(path)
    log.append(event(1))
    assert len(log) == 1


def test_random_bytes_are_reported_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "progress.sqlite3"
    path.write_bytes(random.Random(0).randbytes(8192))
    before = snapshot(tmp_path)
    with pytest.raises(ProgressFileError) as info:
        ProgressStore(path)
    message = str(info.value)
    assert str(path) in message
    assert "not an SQLite database" in message and "has not been changed" in message
    assert "Rename or move it aside" in message
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("damaged", ["all but the header page", "the last two pages"])
def test_damaged_pages_are_reported_and_left_untouched(tmp_path: Path, damaged: str) -> None:
    path = tmp_path / "progress.sqlite3"
    ProgressStore(path).merge(event(n) for n in range(300))
    data = bytearray(path.read_bytes())
    page = 4096  # SQLite's default page size
    start = page if damaged == "all but the header page" else len(data) - 2 * page
    data[start:] = random.Random(1).randbytes(len(data) - start)
    path.write_bytes(bytes(data))
    before = snapshot(tmp_path)
    with pytest.raises(ProgressFileError, match="is damaged") as info:
        ProgressStore(path).events()
    assert str(path) in str(info.value)
    assert snapshot(tmp_path) == before


def test_a_newer_schema_is_reported_and_never_written(tmp_path: Path) -> None:
    path = tmp_path / "progress.sqlite3"
    ProgressStore(path).append(event(1))
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.close()
    before, mtime = snapshot(tmp_path), path.stat().st_mtime_ns
    with pytest.raises(ProgressFileError) as info:
        ProgressStore(path)
    message = str(info.value)
    assert str(path) in message
    assert "written by a newer version of the workbook (schema 2)" in message
    assert "Upgrade" in message
    assert snapshot(tmp_path) == before and path.stat().st_mtime_ns == mtime


def test_another_sqlite_database_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    con = sqlite3.connect(path)
    with con:
        con.execute("CREATE TABLE notes (body TEXT)")
    con.close()
    before = snapshot(tmp_path)
    with pytest.raises(ProgressFileError, match="not a workbook progress log"):
        ProgressStore(path)
    assert snapshot(tmp_path) == before


def test_a_folder_is_not_a_log(tmp_path: Path) -> None:
    with pytest.raises(ProgressFileError, match="is a folder"):
        ProgressStore(tmp_path)


def test_a_writer_that_never_lets_go_gives_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.sqlite3"
    log = ProgressStore(path)
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program holds the write lock
    try:
        with pytest.raises(ProgressFileError, match="is busy"):
            log.append(event(1))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    log.append(event(1))  # once the lock is released, writing works again
    assert len(log) == 1


WRITER = """
import sys, time
from pathlib import Path
from autograder.progress.events import Event
from autograder.progress.store import ProgressStore

path, go, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
log = ProgressStore(path)
while not go.exists():  # start both writers at the same moment
    time.sleep(0.005)
for i in range(200):
    log.append(Event.now("check", f"{name}.{i % 10}", answer=str(i), status="correct",
                         score=1.0, tz="UTC"))
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path, go = tmp_path / "shared.sqlite3", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(go), name],
                                cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True)
               for name in ("a", "b")]
    time.sleep(0.5)  # let both open the (not yet existing) file first
    go.touch()
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    logged = ProgressStore(path).events()
    # 2 writers x 200 appends each = 400 events, every uid distinct.
    assert len(logged) == 400
    assert len({e.uid for e in logged}) == 400
    for name in ("a", "b"):
        answers = sorted(int(e.answer) for e in logged if e.exercise_id.startswith(name + "."))
        assert answers == list(range(200))
