"""From process facts and an untrusted report to a status, a message and complete outcomes.

Wait statuses are built by hand as the kernel encodes them: a normal exit with code c is
``c << 8``; death by signal s is ``s``.
"""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from autograder.sandbox.classify import Observed, describe_job, read_report
from autograder.sandbox.protocol import CallRequest, Job, Limits, ProtocolError, ValueRequest
from autograder.sandbox.runner import REPORT_MARKER

LIMITS = Limits(cpu_s=3, memory_mb=100, output_bytes=50, wall_s=5, cell_timeout_s=2)
JOB = Job("j", ["x = 1"], [ValueRequest("x"), CallRequest("f", [(1,), (2,)])])


def report(**changes: Any) -> bytes:
    tree: dict[str, Any] = {
        "cell_errors": [], "values": {"x": {"type": "value", "value": 1}},
        "calls": {"f": [{"type": "value", "value": 2}, {"type": "value", "value": 4}]},
        "sources": {}, "memory_error": False, "timed_out": [], "exit_calls": [],
        "output_overflow": False, "stdout_tail": "hello\n",
    }
    tree.update(changes)
    return REPORT_MARKER + json.dumps(tree).encode()


def observe(data: bytes = b"", wait_status: int = 0, stopped: str | None = None,
            cpu_s: float = 0.1, output_tail: str = "") -> Observed:
    return Observed(data, output_tail, stopped, wait_status, cpu_s, 0.2)


def test_a_clean_run_is_ok_with_every_answer() -> None:
    result = describe_job(JOB, LIMITS, observe(report()))
    assert (result.status, result.message) == ("ok", "")
    assert result.values["x"].value == 1
    assert [o.value for o in result.calls["f"]] == [2, 4]
    assert result.stdout_tail == "hello\n"


def test_garbage_before_the_last_marker_is_ignored() -> None:
    sprayed = b"garbage" + REPORT_MARKER + b"{not json" + report()
    assert describe_job(JOB, LIMITS, observe(sprayed)).status == "ok"


def test_wall_clock_stop_is_a_timeout_and_requests_are_unavailable() -> None:
    result = describe_job(JOB, LIMITS, observe(b"", signal.SIGKILL, stopped="wall"))
    assert result.status == "timeout" and "wall-clock limit of 5 s" in result.message
    assert result.values["x"].type == "unavailable"
    assert result.values["x"].message.startswith("not answered: stopped at the wall-clock")
    assert [o.type for o in result.calls["f"]] == ["unavailable"]


@pytest.mark.parametrize("signum, cpu_s", [(signal.SIGXCPU, 3.0), (signal.SIGKILL, 4.0)])
def test_cpu_limit_signals_are_timeouts(signum: int, cpu_s: float) -> None:
    # SIGXCPU comes at the soft limit (3 s); SIGKILL at the hard limit (3 + 1 = 4 s).
    result = describe_job(JOB, LIMITS, observe(b"", signum, cpu_s=cpu_s))
    assert result.status == "timeout" and "CPU-time limit of 3 s" in result.message


def test_a_sigkill_without_cpu_exhaustion_is_a_crash() -> None:
    result = describe_job(JOB, LIMITS, observe(b"", signal.SIGKILL, cpu_s=0.01))
    assert result.status == "crashed" and "SIGKILL" in result.message


def test_a_segfault_names_the_usual_cause() -> None:
    result = describe_job(JOB, LIMITS, observe(b"", signal.SIGSEGV))
    assert result.status == "crashed" and "recursion" in result.message


def test_exit_codes() -> None:
    exited = describe_job(JOB, LIMITS, observe(b"", 3 << 8))
    assert exited.status == "exited" and "exit status 3" in exited.message
    silent = describe_job(JOB, LIMITS, observe(b"", 0))
    assert silent.status == "exited" and "exit status 0" in silent.message
    assert describe_job(JOB, LIMITS, observe(b"", 121 << 8)).status == "memory"
    interfered = describe_job(JOB, LIMITS, observe(b"", 122 << 8))
    assert interfered.status == "crashed" and "interfered" in interfered.message
    unconfined = describe_job(JOB, LIMITS, observe(b"", 123 << 8))
    assert unconfined.status == "crashed" and "nothing was run" in unconfined.message


def test_fd_level_output_flood_keeps_the_answers_already_reported() -> None:
    seen = observe(report(), signal.SIGKILL, stopped="output", output_tail="xxxx")
    result = describe_job(JOB, LIMITS, seen)
    assert result.status == "output_limit" and "more than 50 bytes" in result.message
    assert result.values["x"].value == 1
    assert result.stdout_tail == "hello\nxxxx"


def test_report_flags_most_serious_first_and_all_mentioned() -> None:
    flagged = report(memory_error=True, output_overflow=True, timed_out=[1],
                     exit_calls=["cell 2 called sys.exit(0)"])
    result = describe_job(JOB, LIMITS, observe(flagged))
    assert result.status == "memory"
    for words in ("out of memory", "more than 50 characters", "cell 1 ran longer than 2 s",
                  "sys.exit(0)"):
        assert words in result.message
    assert describe_job(JOB, LIMITS, observe(report(timed_out=[0]))).status == "timeout"
    exits = report(exit_calls=["cell 0 called sys.exit(1)"])
    assert describe_job(JOB, LIMITS, observe(exits)).status == "exited"


@pytest.mark.parametrize("bad", [
    REPORT_MARKER + b"[1, 2]",
    REPORT_MARKER + b'{"values": NaN}',
    report(values={"x": {"type": "value"}}),
    report(memory_error="yes"),
    report(calls={"f": {"type": "value", "value": 1}}),
    report(cell_errors=[{"cell": 0, "error_type": 1, "message": "m", "line": None}]),
])
def test_malformed_reports_crash_the_job_with_a_message(bad: bytes) -> None:
    result = describe_job(JOB, LIMITS, observe(bad))
    assert result.status == "crashed" and "malformed report" in result.message
    assert result.values["x"].type == "unavailable"


def test_read_report_rejects_json_constants() -> None:
    with pytest.raises(ProtocolError, match="NaN"):
        read_report(b'{"x": NaN}')


def test_answers_nobody_asked_for_are_dropped_and_missing_ones_filled() -> None:
    extra = report(values={"x": {"type": "value", "value": 1},
                           "planted": {"type": "value", "value": 99}}, calls={})
    result = describe_job(JOB, LIMITS, observe(extra))
    assert set(result.values) == {"x"}
    assert [o.type for o in result.calls["f"]] == ["unavailable"]
