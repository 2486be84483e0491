"""From what the worker observed to a JobResult: status, message and one outcome per request.

Two sources, trusted differently. The *process facts* (how the job process ended, its CPU
time, whether the worker had to stop it) come from the kernel and the worker. The *report*
(cell errors, values, call outputs) was written by a process that ran learner code, so it
is parsed as untrusted JSON and validated field by field. A process fact always decides
the status when there is one; the report decides it only for a process that ended
normally. Whatever valid answers the report holds are kept even when the status is bad
(e.g. output beyond the limit written through fd 1 after the answers were computed).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from typing import Any

from autograder.sandbox.protocol import (
    CallRequest,
    CellError,
    Job,
    JobResult,
    JobStatus,
    Limits,
    Outcome,
    OutcomeType,
    ProtocolError,
    ValueRequest,
    read_wire,
)
from autograder.sandbox.runner import (
    EXIT_INTERNAL,
    EXIT_NO_MEMORY,
    EXIT_SETUP,
    REPORT_MARKER,
    TAIL_CHARS,
)


@dataclass(frozen=True)
class Observed:
    """Facts the worker collected about one job process."""

    report: bytes             # everything read from the report pipe
    output_tail: str          # what reached fds 1/2 below Python's sys.stdout
    stopped: str | None       # "wall", "output", "report_size", "memory": the worker killed it
    wait_status: int
    cpu_s: float
    wall_s: float


@dataclass
class Report:
    """The job process's report, validated."""

    cell_errors: tuple[CellError, ...] = ()
    values: dict[str, Outcome] = field(default_factory=dict)
    calls: dict[str, tuple[Outcome, ...]] = field(default_factory=dict)
    sources: dict[str, Outcome] = field(default_factory=dict)
    memory_error: bool = False
    timed_out: tuple[int, ...] = ()
    exit_calls: tuple[str, ...] = ()
    output_overflow: bool = False
    stdout_tail: str = ""


def _reject_constant(name: str) -> Any:
    raise ProtocolError(f"{name} is not allowed in a report")


def _typed(tree: dict[str, Any], key: str, expected: type) -> Any:
    value = tree.get(key)
    if type(value) is not expected:
        raise ProtocolError(f"report field {key!r} must be {expected.__name__}")
    return value


def _outcomes(tree: dict[str, Any], key: str) -> dict[str, Outcome]:
    return {str(name): Outcome.from_wire(o) for name, o in _typed(tree, key, dict).items()}


def report_text(data: bytes) -> bytes:
    """The report proper: what follows the last marker (empty when there is none)."""
    _, marker, after = data.rpartition(REPORT_MARKER)
    return after if marker else b""


def read_report(text: bytes) -> Report:
    """Parse and validate a report; raises ProtocolError (or ValueError) if malformed."""
    tree = read_wire(text.decode("ascii"))
    if type(tree) is not dict:
        raise ProtocolError("the report must be a JSON object")
    calls = {str(name): tuple(Outcome.from_wire(o) for o in _listed(outcomes))
             for name, outcomes in _typed(tree, "calls", dict).items()}
    timed_out = tuple(_typed(tree, "timed_out", list))
    exit_calls = tuple(_typed(tree, "exit_calls", list))
    if not all(type(i) is int for i in timed_out) or not all(type(s) is str for s in exit_calls):
        raise ProtocolError("bad timed_out or exit_calls")
    return Report(
        cell_errors=tuple(CellError.from_wire(e) for e in _typed(tree, "cell_errors", list)),
        values=_outcomes(tree, "values"), calls=calls, sources=_outcomes(tree, "sources"),
        memory_error=_typed(tree, "memory_error", bool), timed_out=timed_out,
        exit_calls=exit_calls, output_overflow=_typed(tree, "output_overflow", bool),
        stdout_tail=_typed(tree, "stdout_tail", str),
    )


def _listed(value: Any) -> list[Any]:
    if type(value) is not list:
        raise ProtocolError("call outcomes must be a list")
    return value


def _signal_status(signum: int, cpu_s: float, limits: Limits) -> tuple[str, str]:
    cpu_limit = max(1, int(-(-limits.cpu_s // 1)))  # the whole seconds RLIMIT_CPU was given
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_s >= cpu_limit - 0.1):
        return "timeout", f"stopped at the CPU-time limit of {cpu_limit} s"
    if signum == signal.SIGSEGV:
        return "crashed", ("the process crashed (SIGSEGV); the usual cause is very deep "
                           "recursion after raising sys.setrecursionlimit")
    return "crashed", f"the process was killed by {signal.Signals(signum).name}"


def process_status(seen: Observed, limits: Limits, problem: str | None) -> tuple[str, str] | None:
    """The status the process facts dictate, or None when the report should decide."""
    if seen.stopped == "wall":
        return "timeout", f"stopped at the wall-clock limit of {limits.wall_s:g} s"
    if seen.stopped == "output":
        return "output_limit", (f"wrote more than {limits.output_bytes} bytes to standard "
                                "output/error; the process was stopped")
    if seen.stopped == "memory":
        return "memory", (f"ran out of memory (its processes together held more than "
                          f"{limits.memory_mb} MB; the job was stopped)")
    if seen.stopped == "report_size":
        return "crashed", "the results were too large to send back"
    if os.WIFSIGNALED(seen.wait_status):
        return _signal_status(os.WTERMSIG(seen.wait_status), seen.cpu_s, limits)
    code = os.WEXITSTATUS(seen.wait_status)
    if code == EXIT_NO_MEMORY:
        return "memory", _memory_message(limits)
    if code == EXIT_SETUP:
        return "crashed", "the sandbox could not confine the job process; nothing was run"
    if code == EXIT_INTERNAL:
        return "crashed", ("the sandboxed process could not send its results "
                           "(the code may have interfered with the sandbox)")
    if code != 0 or not report_text(seen.report):
        return "exited", (f"the code ended the process (exit status {code}, os._exit or "
                          "similar) before its results were sent")
    if problem is not None:
        return "crashed", f"the sandboxed process sent a malformed report ({problem})"
    return None


def _memory_message(limits: Limits) -> str:
    return f"ran out of memory (the limit is {limits.memory_mb} MB above the interpreter's own)"


def report_status(report: Report, limits: Limits) -> tuple[str, str]:
    """Status of a normally ended job: the most serious flag wins, all are mentioned."""
    flags: list[tuple[str, str]] = []
    if report.memory_error:
        flags.append(("memory", _memory_message(limits)))
    if report.output_overflow:
        flags.append(("output_limit", f"printed more than {limits.output_bytes} characters; "
                                      "printing was stopped"))
    if report.timed_out:
        cells = ", ".join(str(cell) for cell in report.timed_out)
        flags.append(("timeout", f"cell {cells} ran longer than {limits.cell_timeout_s:g} s "
                                 "and was interrupted"))
    if report.exit_calls:
        flags.append(("exited", "; ".join(report.exit_calls) + " (later cells still ran)"))
    if not flags:
        return "ok", ""
    return flags[0][0], "; ".join(message for _, message in flags)


def _complete(job: Job, report: Report, message: str) -> Report:
    """Give every request an outcome: ``unavailable`` where the report has none."""
    missing = Outcome(OutcomeType.UNAVAILABLE, message=f"not answered: {message or 'no result'}")
    for request in job.requests:
        if isinstance(request, ValueRequest):
            report.values.setdefault(request.name, missing)
        elif isinstance(request, CallRequest):
            report.calls.setdefault(request.name, (missing,))
        else:
            report.sources.setdefault(request.name, missing)
    wanted = {request.name for request in job.requests}
    report.values = {n: o for n, o in report.values.items() if n in wanted}
    report.calls = {n: o for n, o in report.calls.items() if n in wanted}
    report.sources = {n: o for n, o in report.sources.items() if n in wanted}
    return report


def describe_job(job: Job, limits: Limits, seen: Observed) -> JobResult:
    """Combine the process facts and the report into the job's result."""
    report, problem = Report(), None
    if report_text(seen.report):
        try:
            report = read_report(report_text(seen.report))
        except (ValueError, RecursionError, MemoryError) as error:  # ProtocolError: a ValueError
            problem = str(error)[:200]
    status, message = process_status(seen, limits, problem) or report_status(report, limits)
    report = _complete(job, report, message)
    return JobResult(
        job_id=job.job_id, status=JobStatus(status), cell_errors=report.cell_errors,
        values=report.values, calls=report.calls, sources=report.sources,
        stdout_tail=(report.stdout_tail + seen.output_tail)[-TAIL_CHARS:], message=message,
        wall_s=round(seen.wall_s, 4), cpu_s=round(seen.cpu_s, 4),
    )
