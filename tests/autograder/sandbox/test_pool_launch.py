"""A pool can start its workers' processes early and greet them later (the batch grader
reads the submissions meanwhile); a pool closed before it was greeted leaves no process."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from autograder.sandbox import Job, Limits, ValueRequest, WorkerPool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

LIMITS = Limits(cpu_s=5, wall_s=8, cell_timeout_s=2, call_timeout_s=0.5, memory_mb=256)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_a_launched_pool_runs_jobs_once_started() -> None:
    pool = WorkerPool(2, LIMITS, sandbox="none")
    try:
        pool.launch()
        time.sleep(0.05)  # the caller's own work
        pool.start()
        result = pool.run(Job("j", ("answer = 6 * 7",), (ValueRequest("answer"),)))
    finally:
        pool.close()
    assert result.values["answer"].value == 42


def test_closing_a_launched_pool_before_greeting_leaves_no_worker() -> None:
    pool = WorkerPool(2, LIMITS, sandbox="none")
    pool.launch()
    pids = [worker.process.pid for worker in pool._launched]
    assert len(pids) == 2
    pool.close()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)
