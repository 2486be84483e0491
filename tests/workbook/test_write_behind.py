"""Progress events are written behind the check, and none is lost on the way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import workbook as wb
from autograder.progress.store import ProgressStore
from workbook.learner import progress_log


def test_a_process_that_exits_right_after_a_check_keeps_the_event(fresh_home: Path) -> None:
    code = "import workbook; workbook.check('0.1', 1.75); workbook.check('0.2', '70 ms')"
    env = {**os.environ, "WORKBOOK_HOME": str(fresh_home)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
    events = ProgressStore(fresh_home / "progress.sqlite3").events()
    assert [(e.exercise_id, e.status) for e in events] == [("0.1", "correct"),
                                                           ("0.2", "correct")]


def test_reads_see_every_event_this_kernel_queued() -> None:
    for _ in range(25):
        wb.check("0.1", 1.75)
    assert sum(e.action == "check" for e in progress_log.events()) == 25


def test_a_failed_write_is_reported_on_the_next_check(monkeypatch: pytest.MonkeyPatch) -> None:
    wb.check("0.1", 1.75)  # opens the store
    store = progress_log.store()

    def broken_append(event: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store, "append", broken_append)
    wb.check("0.1", 1.75)
    progress_log.store()  # waits for the writer
    result = wb.check("0.1", 1.75)
    assert "Progress not saved: disk full" in str(result)


def _count_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(owner, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_check_reads_the_log_once_and_waits_only_for_views(
        monkeypatch: pytest.MonkeyPatch) -> None:
    wb.check("0.1", 1.75)  # opens the store and its writer
    reads = _count_calls(monkeypatch, progress_log.store(), "action_counts")
    flushes = _count_calls(monkeypatch, progress_log._open_log().writer, "flush")
    result = wb.check("0.1", "2 GB")  # wrong: offers a hint and logs the attempt
    assert "hint 1 of" in str(result)
    assert (len(reads), len(flushes)) == (1, 0)  # the earlier check's write is not awaited
    wb.hint("0.1")  # one read for the hint's number, then the view is queued
    wb.check("0.1", "2 GB")
    assert (len(reads), len(flushes)) == (3, 1)  # the queued view is awaited, once
    assert [e.hints_used for e in progress_log.events() if e.action == "check"] == [0, 0, 1]


def test_grading_mode_neither_reads_nor_writes_the_log(monkeypatch: pytest.MonkeyPatch) -> None:
    wb.check("0.1", 1.75)
    reads = _count_calls(monkeypatch, progress_log.store(), "action_counts")
    monkeypatch.setenv("WORKBOOK_GRADING", "1")
    with pytest.raises(AssertionError, match="0.1"):
        wb.check("0.1", "2 GB")
    assert wb.check("0.1", 1.75).passed
    assert reads == []
