"""The learner's side, tried the way a hostile or unlucky learner would: checks never crash,
never leak the reference, always stop on time, and progress problems are said in words."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import subprocess
import sys
import threading
import time
import zlib
from base64 import urlsafe_b64encode
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import workbook as wb
from autograder.progress.events import Event
from autograder.progress.store import ProgressStore
from autograder.progress.transfer import ProgressCodeError, import_code
from workbook.cli import main
from workbook.learner import progress_log
from workbook.learner.write_behind import MAX_QUEUED, WriteBehind


# 0.5's function, by hand: 2(N-1) steps, each one S/N chunk at B GB/s plus the latency, ms.
def by_hand(message_gb: float, n_gpus: int, link_gb_per_s: float, latency_us: float) -> float:
    return 2 * (n_gpus - 1) * (1000.0 * message_gb / n_gpus / link_gb_per_s
                               + latency_us / 1000.0)


def test_the_smallest_float_is_a_wrong_answer_not_a_crash() -> None:
    result = wb.check("0.1", 5e-324)
    assert not result.passed and "too small" in str(result)
    assert not wb.check("0.1", 1.7976931348623157e308).passed


@pytest.mark.parametrize("raised", ["GeneratorExit", "SystemExit", "Mine"])
def test_whatever_a_learner_function_raises_stays_inside_the_check(raised: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"class Mine(BaseException):\n    pass\n"
         f"def ring_allreduce_time_ms(*args):\n    raise {raised}('no')", namespace)
    result = wb.check("0.5", namespace["ring_allreduce_time_ms"])
    assert not result.passed


def test_disarming_the_alarm_does_not_defeat_the_time_limit() -> None:
    namespace: dict[str, Any] = {}
    exec("import signal\ndef ring_allreduce_time_ms(*args):\n"
         "    signal.setitimer(signal.ITIMER_REAL, 0)\n"
         "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
         "    while True:\n        pass", namespace)
    started = time.monotonic()
    result = wb.check("0.5", namespace["ring_allreduce_time_ms"])
    assert not result.passed and "did not finish" in str(result)
    assert time.monotonic() - started < 10  # one time limit (the rest are skipped), not forever


def _values_in(value: Any, depth: int = 0) -> list[Any]:
    """Every value reachable from ``value`` through containers and attributes (bounded)."""
    if depth > 4:
        return []
    found = [value]
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    else:
        items = list(getattr(value, "__dict__", {}).values())
    for item in items[:200]:
        found += _values_in(item, depth + 1)
    return found


def test_the_reference_values_are_on_no_frame_a_learner_function_can_reach() -> None:
    seen: list[Any] = []
    calls: list[tuple[Any, ...]] = []

    def spy(*args: Any) -> float:
        calls.append(args)
        frame = sys._getframe(1)
        while frame is not None:
            seen.extend(_values_in(dict(frame.f_locals)))
            frame = frame.f_back
        return -1.0

    wb.check("0.5", spy)
    expected = {by_hand(*args) for args in calls if args[1] >= 1 and args[2] > 0
                and all(isinstance(a, (int, float)) and a >= 0 for a in args)} - {0.0}
    assert expected  # the spy did see the cases
    leaked = {v for v in seen if isinstance(v, float) and v in expected}
    assert leaked == set()


def test_one_unreadable_row_is_skipped_and_reported(fresh_home: Path) -> None:
    for answer in (1.75, 2.0):
        wb.check("0.1", answer)
    wb.check("0.2", "70 ms")
    progress_log.reopen()
    with sqlite3.connect(fresh_home / "progress.sqlite3") as con:
        con.execute("UPDATE events SET status = 'exploded' WHERE rowid = 2")
    progress_log.reopen()
    summary = wb.progress()
    assert summary.attempted == 2  # 0.1 and 0.2 are still counted
    assert summary.warnings and "1 entry of the progress log could not be read" in str(summary)
    assert len(import_code(wb.export_progress())) == 2


def test_an_uncreatable_home_is_a_clear_note(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("WORKBOOK_HOME", str(blocker / "home"))
    progress_log.reopen()
    result = wb.check("0.1", 1.75)
    assert result.passed
    assert "cannot create the progress folder" in str(result) and "WORKBOOK_HOME" in str(result)


@pytest.mark.parametrize("sqlite_text, words", [
    ("database or disk is full", "is full"),
    ("attempt to write a readonly database", "is read-only"),
    ("disk I/O error", "disk I/O error"),
])
def test_disk_failures_are_not_called_damage(fresh_home: Path, sqlite_text: str,
                                             words: str) -> None:
    store = ProgressStore(fresh_home / "p.sqlite3")
    message = str(store._file_error(sqlite3.OperationalError(sqlite_text)))
    assert words in message and "damaged" not in message


def test_the_write_behind_queue_is_bounded(fresh_home: Path) -> None:
    store = ProgressStore(fresh_home / "slow.sqlite3")
    gate = threading.Event()
    written: list[str] = []

    def slow_append(event: Event) -> None:
        gate.wait(10)
        written.append(event.uid)

    store.append = slow_append  # type: ignore[method-assign]
    writer = WriteBehind(store)
    for _ in range(MAX_QUEUED + 1):  # one being written, MAX_QUEUED waiting
        writer.put(Event.now("check", "0.1", status="correct"))
    blocked = threading.Thread(target=writer.put,
                               args=(Event.now("check", "0.1", status="correct"),))
    blocked.start()
    blocked.join(0.3)
    assert blocked.is_alive()  # a kill -9 now loses at most MAX_QUEUED + 1 events
    gate.set()
    blocked.join(5)
    writer.flush()
    assert len(written) == MAX_QUEUED + 2


def test_a_progress_code_of_tiny_objects_is_refused_cheaply() -> None:
    """Signed with the learner's own key, so that it reaches the decoding."""
    payload = b"[" + b"{}," * 2_000_000 + b"{}]"
    body = urlsafe_b64encode(zlib.compress(payload, 9)).decode().rstrip("=")
    key = bytes(range(32))
    tag = hmac.new(key, f"DTW2:{body}".encode(), hashlib.sha256).hexdigest()[:32]
    code = f"DTW2:{body}:{zlib.crc32(body.encode()) & 0xFFFFFFFF:08x}:{tag}"
    assert len(code) < 100_000
    started = time.monotonic()
    with pytest.raises(ProgressCodeError, match="does not hold workbook events"):
        import_code(code, key)
    assert time.monotonic() - started < 5


def test_importing_a_hostile_code_fits_in_little_memory(tmp_path: Path) -> None:
    # In a child whose address space is capped 300 MB above what it starts with.
    child = (
        "import hashlib, hmac, resource, zlib\nfrom base64 import urlsafe_b64encode\n"
        "from autograder.progress.transfer import import_code, ProgressCodeError\n"
        "with open('/proc/self/statm') as f:\n"
        "    now = int(f.read().split()[0]) * resource.getpagesize()\n"
        "cap = now + 300 * 2**20\nresource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
        "for payload in (b'[' + b'[],' * 2_500_000 + b'[]]', b'[' + b'\"a\",' * 2_000_000"
        " + b'\"a\"]'):\n"
        "    body = urlsafe_b64encode(zlib.compress(payload, 9)).decode().rstrip('=')\n"
        "    key = bytes(32)\n"
        "    tag = hmac.new(key, f'DTW2:{body}'.encode(), hashlib.sha256).hexdigest()[:32]\n"
        "    code = f'DTW2:{body}:{zlib.crc32(body.encode()) & 0xFFFFFFFF:08x}:{tag}'\n"
        "    try:\n        import_code(code, key)\n    except ProgressCodeError:\n        pass\n"
        "print('fine')")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=120, cwd=Path(wb.__file__).parents[1])
    assert done.stdout.strip() == "fine", done.stderr[-500:]


@pytest.mark.parametrize("argv", [
    ["check", "1.5", "[" * 100_000 + "]" * 100_000],
    ["check", "0.1", "[" * 600 + "]" * 600],
    ["grade", "in", "--out", "out", "--timeout", "1e18"],
    ["grade", "in", "--out", "", "--timeout", "1"],
    ["grade", "in", "--out", "out", "--timeout", "nan"],
    ["grade", "in", "--out", "out", "--batch-timeout", "-1"],
])
def test_the_command_line_never_shows_a_traceback(argv: list[str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    status = main(argv)
    err = capsys.readouterr().err
    assert status in (0, 1, 2) and "Traceback" not in err
    if argv[0] == "grade":
        assert status == 2 and "workbook grade:" in err
        assert not (tmp_path / "grades.csv").exists()  # --out "" never means "here"


def test_grading_refuses_to_start_without_bubblewrap(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from autograder.sandbox import bwrap

    monkeypatch.setattr(bwrap, "unavailable_reason", lambda *a: "bwrap is not installed")
    (tmp_path / "in" / "ann").mkdir(parents=True)
    status = main(["grade", str(tmp_path / "in"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1 and "refusing to grade" in err and "--unsafe-no-sandbox" in err
    assert not (tmp_path / "out").exists()


def test_the_pool_itself_refuses_without_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    from autograder.sandbox import SandboxUnavailable, WorkerPool, bwrap

    monkeypatch.setattr(bwrap, "bwrap_path", lambda: None)
    bwrap.unavailable_reason.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="not installed"), WorkerPool(1):
            pass
    finally:
        bwrap.unavailable_reason.cache_clear()



def test_a_forged_progress_code_masters_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """A code written by hand (the format is documented, the learner's key is not): every
    exercise correct on canonical numbers and on fresh variants on five days."""
    events = [Event(uid=f"{n:016x}{d:016x}", action="check", exercise_id=e.id,
                    variant=None if d == 0 else {"seed": d}, answer="", status="correct",
                    score=1.0, hints_used=0, solution_viewed=False,
                    utc=datetime(2025, 3, 1 + d, 12, tzinfo=timezone.utc),
                    local_date=f"2025-03-0{1 + d}", tz="UTC")
              for n, e in enumerate(wb.exercises()) for d in range(5)]
    payload = json.dumps([e.to_dict() for e in events], separators=(",", ":")).encode()
    body = urlsafe_b64encode(zlib.compress(payload, 9)).decode().rstrip("=")
    crc = f"{zlib.crc32(body.encode()) & 0xFFFFFFFF:08x}"
    own_key = hmac.new(b"forger" * 6, f"DTW2:{body}".encode(), hashlib.sha256).hexdigest()
    for tag in ("0" * 32, own_key[:32]):
        assert main(["import-progress", f"DTW2:{body}:{crc}:{tag}"]) == 1
        assert "not made with your progress key" in capsys.readouterr().err
    assert main(["import-progress", f"DTW1:{body}:{crc}"]) == 1
    summary = wb.progress()
    assert summary.total == 58 and summary.levels.get("0.1") == "new"
    assert summary.streak_days == 0
