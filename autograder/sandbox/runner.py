"""The job process: run a learner's cells, answer the requests, send one JSON report.

This is the code of the forked child, after :func:`autograder.sandbox.limits.confine_job`.
Cells run in order in one fresh namespace whose ``__builtins__`` is the builtins module,
as in a notebook. A failing cell is recorded (exception type, message, line within the
cell; no traceback and no grader paths) and the next cell runs. A cell running longer
than ``cell_timeout_s`` is interrupted by SIGALRM; a cell that swallows the interruption
meets the CPU limit or the worker's wall clock instead.

The learner's ``sys.stdout``/``sys.stderr`` is a :class:`BoundedOutput`; fds 1 and 2 are a
pipe the worker counts, so output written below Python's level is bounded too. The report
goes out on a private fd that learner code is never told about. Everything used after
learner code runs was captured at import time (see :mod:`autograder.sandbox.plain`), and
builtins are restored from a pristine copy before each conversion.

What this cannot stop: code that deliberately digs the sandbox's own modules out of memory
can forge its own report. A forged report is still only plain data, compared by the grader
against ``solutions`` in the grader's process, so forging earns exactly what writing the
right answer would; it cannot reach other jobs, the worker or the grader.
"""

from __future__ import annotations

import _signal as _c_signal
import builtins
import errno
import inspect
import io
import mmap
import os
import signal
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, cast

from autograder.sandbox import plain
from autograder.sandbox.protocol import CallRequest, Job, Limits, ValueRequest

TAIL_CHARS = 4000
# Exit statuses of the job process that the worker reads as the sandbox's, not the learner's.
EXIT_NO_MEMORY = 121  # the report itself could not be built for lack of memory
EXIT_INTERNAL = 122  # the job process could not build or send its report
EXIT_SETUP = 123  # confinement failed (privileges, rlimits, scratch directory)
# The report starts after the last occurrence of this line on the report pipe, so bytes
# that learner code sprays into every fd it can find come before it and are ignored.
REPORT_MARKER = b"\n--- sandbox report ---\n"
# Address space held back from learner code (RLIMIT_AS counts mappings, not touched pages,
# so an untouched anonymous map reserves it for free); released when memory runs out so
# that the report can still be built.
RESERVE_BYTES = 8 << 20
_RESERVE: list[mmap.mmap] = []

# Captured at import, before any learner code runs in this process.
_os_write = os.write
_os_exit = os._exit
_getpid = os.getpid
_setitimer = signal.setitimer
_signal = _c_signal.signal  # the C function itself: signal.signal adds enum conversions
_setrecursionlimit = sys.setrecursionlimit
_RECURSION_LIMIT = sys.getrecursionlimit()
_getblock = inspect.getblock
_FunctionType = types.FunctionType
_compile = compile
_exec = exec
_isinstance = isinstance
_type = type
_str = str
_len = len
_enumerate = enumerate
_exception_str = BaseException.__str__
_dict_get = dict.get
_MISSING = object()


def _release_reserve() -> None:
    while _RESERVE:
        _RESERVE.pop().close()


class TimeLimitExceeded(BaseException):
    """Raised in learner code when a cell or call overruns (BaseException: not swallowed by
    ``except Exception``)."""


class OutputLimitExceeded(BaseException):
    """Raised in learner code by print() once the output budget is spent."""


class BoundedOutput(io.TextIOBase):
    """A text stream that keeps the last ``TAIL_CHARS`` characters and counts the rest."""

    def __init__(self, limit_chars: int) -> None:
        super().__init__()
        self.limit_chars = limit_chars
        self.count = 0
        self.tail = ""
        self.overflowed = False

    def write(self, text: str) -> int:
        if _type(text) is not str:
            raise TypeError("write() argument must be str")
        if self.overflowed:
            raise OutputLimitExceeded(f"output exceeded {self.limit_chars} characters")
        self.count += _len(text)
        if self.count > self.limit_chars:
            self.overflowed = True
            raise OutputLimitExceeded(f"output exceeded {self.limit_chars} characters")
        self.tail = (self.tail + text[-TAIL_CHARS:])[-TAIL_CHARS:]
        return _len(text)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


@dataclass
class Report:
    """What the job process sends back (``classify.read_report`` reads it on the other side)."""

    cell_errors: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    calls: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, Any] = field(default_factory=dict)
    memory_error: bool = False
    timed_out: list[int] = field(default_factory=list)
    exit_calls: list[str] = field(default_factory=list)

    def to_tree(self, output: BoundedOutput) -> dict[str, Any]:
        return {
            "cell_errors": self.cell_errors, "values": self.values, "calls": self.calls,
            "sources": self.sources, "memory_error": self.memory_error,
            "timed_out": self.timed_out, "exit_calls": self.exit_calls,
            "output_overflow": output.overflowed, "stdout_tail": output.tail,
        }


def _on_alarm(signum: int, frame: Any) -> None:
    raise TimeLimitExceeded("time limit")


def _arm(seconds: float) -> None:
    _signal(signal.SIGALRM, _on_alarm)
    _setitimer(signal.ITIMER_REAL, seconds)


def _disarm() -> None:
    _setitimer(signal.ITIMER_REAL, 0)


def _error_name(cls: type) -> str:
    """The exception's class name as a learner should see it."""
    if cls is TimeLimitExceeded or cls is OutputLimitExceeded:
        return cls.__name__  # not "autograder.sandbox.runner...": no grader internals
    return plain.type_name(cls)


def _text(error: BaseException) -> str:
    """An exception's message. A builtin exception class formats itself (its __str__ is
    C code); a learner's class is read with BaseException's own __str__, since its own
    may lie or loop."""
    try:
        if _isinstance(error, SyntaxError):
            message = cast(SyntaxError, error).msg
            return message[:500] if _type(message) is str else "invalid syntax"
        if _type(error).__module__ == "builtins":
            return _str(error)[:500]
        return _str(_exception_str(error))[:500]
    except BaseException:  # noqa: B036 - a hostile message must not end the job
        return "<message could not be read>"


def _line_in(error: BaseException, filename: str) -> int | None:
    """The last line of ``filename`` (a cell) in the traceback, or a SyntaxError's line."""
    if _isinstance(error, SyntaxError):
        lineno = cast(SyntaxError, error).lineno
        return lineno if _type(lineno) is int else None
    line = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _note_special(report: Report, index: int, error: BaseException, limits: Limits) -> str:
    """Flag errors that change the job's status; return the message to record."""
    if _isinstance(error, MemoryError) or (
            _isinstance(error, OSError) and cast(OSError, error).errno == errno.ENOMEM):
        _release_reserve()
        report.memory_error = True
    elif _type(error) is TimeLimitExceeded:
        report.timed_out.append(index)
        return f"cell ran longer than {limits.cell_timeout_s:g} s and was interrupted"
    elif _isinstance(error, SystemExit):
        code = cast(SystemExit, error).code
        code = code if _type(code) in (int, type(None)) else "<non-integer>"
        report.exit_calls.append(f"cell {index} called sys.exit({code})")
    return _text(error)


def run_cell(index: int, source: str, namespace: dict[str, Any], report: Report,
             limits: Limits) -> None:
    """Compile and run one cell in ``namespace``; record whatever it raises."""
    filename = f"<cell {index}>"
    try:
        code = _compile(source, filename, "exec")
        try:
            _arm(limits.cell_timeout_s)
            _exec(code, namespace)
        finally:
            _disarm()
    except BaseException as error:  # noqa: B036 - every learner failure is recorded
        message = _note_special(report, index, error, limits)
        report.cell_errors.append({"cell": index, "error_type": _error_name(_type(error)),
                                   "message": message, "line": _line_in(error, filename)})


def _outcome_of(value: Any) -> dict[str, Any]:
    plain.restore_builtins()
    _setrecursionlimit(_RECURSION_LIMIT)
    try:
        return {"type": "value", "value": plain.to_wire_tree(value)}
    except (plain.NotPlain, plain.IntegrityFailure) as problem:
        return {"type": problem.outcome_type, "message": _str(problem),
                "type_name": problem.type_name}


def _lookup(namespace: dict[str, Any], name: str, want_function: bool) -> tuple[bool, Any]:
    """(True, value) or (False, outcome saying why there is nothing to use)."""
    value = _dict_get(namespace, name, _MISSING)
    if value is _MISSING:
        return False, {"type": "missing", "message": f"{name} is not defined"}
    if want_function and _type(value) is not _FunctionType:
        found = plain.type_name(_type(value))
        return False, {"type": "not_function", "type_name": found,
                       "message": f"{name} is a {found}, not a function defined with def"}
    return True, value


def _call_once(function: Any, args: Sequence[Any], limits: Limits,
               report: Report) -> dict[str, Any]:
    try:
        try:
            _arm(limits.call_timeout_s)
            result = function(*args)
        finally:
            _disarm()
    except TimeLimitExceeded:
        return {"type": "timeout",
                "message": f"the call took longer than {limits.call_timeout_s:g} s"}
    except BaseException as error:  # noqa: B036 - the learner's function may raise anything
        if _isinstance(error, MemoryError):
            _release_reserve()
            report.memory_error = True
        error_type = _error_name(_type(error))
        return {"type": "raised", "message": _text(error), "type_name": error_type}
    return _outcome_of(result)


def answer_call(request: CallRequest, namespace: dict[str, Any], limits: Limits,
                report: Report) -> list[dict[str, Any]]:
    """One outcome per argument tuple, or a single one saying why no call was possible."""
    found, function = _lookup(namespace, request.name, want_function=True)
    if not found:
        return [function]
    return [_call_once(function, args, limits, report) for args in request.args_list]


def answer_source(name: str, namespace: dict[str, Any],
                  cells: Sequence[str]) -> dict[str, Any]:
    """The text of a function defined in one of the cells (its ``def`` block)."""
    plain.restore_builtins()
    found, function = _lookup(namespace, name, want_function=True)
    if not found:
        return cast(dict[str, Any], function)
    code = function.__code__
    for index, source in _enumerate(cells):
        if code.co_filename == f"<cell {index}>":
            lines = source.splitlines(keepends=True)[code.co_firstlineno - 1:]
            try:
                lines = _getblock(lines)
            except Exception:  # noqa: BLE001 - fall back to the rest of the cell
                pass
            return {"type": "value", "value": "".join(lines)}
    return {"type": "missing", "message": f"the source of {name} is not in the cells"}


def execute(job: Job, limits: Limits) -> Report:
    """Run the cells, then answer every request in order."""
    report = Report()
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    for index, source in _enumerate(job.cells):
        run_cell(index, source, namespace, report, limits)
    for request in job.requests:
        name = request.name
        if _isinstance(request, ValueRequest):
            found, value = _lookup(namespace, name, want_function=False)
            report.values[name] = _outcome_of(value) if found else value
        elif _isinstance(request, CallRequest):
            report.calls[name] = answer_call(cast(CallRequest, request), namespace, limits,
                                             report)
        else:
            report.sources[name] = answer_source(name, namespace, job.cells)
    return report


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_os_write(fd, view):]


def _finish(report: Report, output: BoundedOutput, result_fd: int) -> None:
    plain.restore_builtins()
    _setrecursionlimit(_RECURSION_LIMIT)
    try:
        text = plain.dumps(report.to_tree(output))
    except MemoryError:
        _release_reserve()
        text = plain.dumps(Report(memory_error=True).to_tree(output))
    _send(result_fd, REPORT_MARKER + text.encode("ascii"))


def run_job_process(job: Job, limits: Limits, result_fd: int) -> NoReturn:
    """Entry point of the job process after confinement; never returns."""
    my_pid = _getpid()
    exit_code = EXIT_INTERNAL
    try:
        _RESERVE.append(mmap.mmap(-1, RESERVE_BYTES))
        output = BoundedOutput(limits.output_bytes)
        sys.stdout = sys.stderr = output
        sys.stdin = io.StringIO("")
        try:
            report = execute(job, limits)
        except MemoryError:
            _release_reserve()
            report = Report(memory_error=True)
        if _getpid() == my_pid:  # a fork made by learner code has nothing to report
            _finish(report, output, result_fd)
        exit_code = 0
    except MemoryError:
        exit_code = EXIT_NO_MEMORY
    finally:
        _os_exit(exit_code)
