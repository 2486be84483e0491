"""The sandbox's vocabulary: limits, jobs, requests, outcomes and results, and their wire form.

Everything that crosses a process boundary is JSON built from plain data: ``None``, bools,
ints, finite floats, strings, lists and dicts with string keys. Two details make the wire
form lossless for answers:

* JSON has no NaN or infinity, so a non-finite float travels as ``{"$float": "nan"}``
  (or ``"inf"``, ``"-inf"``);
* so that a learner's own dict can never be mistaken for that marker, every dict key that
  starts with ``$`` gets one more ``$`` in front on the wire and loses it on decoding.

Tuples travel as lists (JSON has no tuple). ``from_wire`` functions validate shape and type
strictly and raise :class:`ProtocolError`; the worker uses them on what a sandboxed process
sends, which is untrusted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class JobStatus(str, Enum):
    """How one job ended as a whole."""

    OK = "ok"
    TIMEOUT = "timeout"            # a wall-clock, CPU or cell time limit
    MEMORY = "memory"
    CRASHED = "crashed"            # a signal, a malformed report, a sandbox that failed
    EXITED = "exited"              # the learner's code ended the process or called sys.exit
    OUTPUT_LIMIT = "output_limit"


STATUSES: tuple[str, ...] = tuple(status.value for status in JobStatus)


class OutcomeType(str, Enum):
    """What happened to one request. ``VALUE`` is the only type that carries an answer."""

    VALUE = "value"                # the answer, as plain data
    RAISED = "raised"              # the function raised (``type_name`` is the exception's class)
    MISSING = "missing"            # no such name after the cells ran
    NOT_FUNCTION = "not_function"  # a call/source request named a ``type_name`` that is no def
    NOT_PLAIN = "not_plain"        # the value is not plain data (``type_name``: the class at
    #                                fault, "" when it is too deep or too large)
    INTEGRITY = "integrity"        # a ``type_name`` subclassing int, float or str
    TIMEOUT = "timeout"            # one call ran longer than call_timeout_s
    UNAVAILABLE = "unavailable"    # the job ended (timeout, crash, exit) before this request


OUTCOME_TYPES: tuple[str, ...] = tuple(type_.value for type_ in OutcomeType)

FLOAT_TAG = "$float"
# Bounds on any tree read from the wire, checked without recursion before it is decoded:
# learner values are at most 64 levels deep (autograder.sandbox.plain), plus the levels of
# the result around them; a tree deeper or larger than this was forged.
MAX_WIRE_DEPTH = 100
MAX_WIRE_NODES = 4_000_000


class ProtocolError(ValueError):
    """A message between sandbox processes does not have the expected shape."""


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise ProtocolError(what)


# --- wire codec for trusted plain data ------------------------------------------------

def encode_tree(value: Any) -> Any:
    """Plain Python data -> wire tree (markers for non-finite floats, escaped ``$`` keys).

    For data the grader produced itself (call arguments); learner values go through
    :func:`autograder.sandbox.plain.to_wire_tree`, which trusts nothing.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {FLOAT_TAG: repr(value)}
    if isinstance(value, (list, tuple)):
        return [encode_tree(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("dict keys must be str to travel as JSON")
        return {escape_key(key): encode_tree(item) for key, item in value.items()}
    raise TypeError(f"not plain data: {type(value).__name__}")


def escape_key(key: str) -> str:
    return "$" + key if key.startswith("$") else key


def check_bounds(tree: Any, max_depth: int = MAX_WIRE_DEPTH,
                 max_nodes: int = MAX_WIRE_NODES) -> None:
    """Raise ProtocolError when ``tree`` is nested deeper than ``max_depth`` or has more
    than ``max_nodes`` nodes. Iterative: a forged tree cannot exhaust the stack here."""
    stack, nodes = [(tree, 0)], 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        _expect(depth <= max_depth, f"nested deeper than {max_depth} levels")
        _expect(nodes <= max_nodes, f"more than {max_nodes} items")
        if type(node) is list:
            stack.extend((item, depth + 1) for item in node)
        elif type(node) is dict:
            stack.extend((item, depth + 1) for item in node.values())


def read_wire(text: bytes | str) -> Any:
    """Parse untrusted JSON and check its bounds (no NaN or infinity constants)."""
    try:
        tree = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ProtocolError("nested too deeply to read") from None
    except ValueError as error:
        raise ProtocolError(f"not JSON ({str(error)[:100]})") from None
    check_bounds(tree)
    return tree


def _no_constant(name: str) -> Any:
    raise ProtocolError(f"{name} is not allowed")


_SCALARS = frozenset({type(None), bool, int, float, str})


def decode_tree(tree: Any) -> Any:
    """Wire tree (as parsed by ``json.loads``) -> plain Python data."""
    if type(tree) in _SCALARS:
        return tree
    if isinstance(tree, list):  # scalars, most of a tree, are taken as they are
        return [item if type(item) in _SCALARS else decode_tree(item) for item in tree]
    if isinstance(tree, dict):
        if len(tree) == 1 and FLOAT_TAG in tree:
            text = tree[FLOAT_TAG]
            _expect(text in ("nan", "inf", "-inf"), f"bad float marker {text!r}")
            return float(text)
        for key in tree:
            _expect(not key.startswith("$") or key.startswith("$$"), f"bad key {key!r}")
        return {key[1:] if key.startswith("$") else key:
                v if type(v) in _SCALARS else decode_tree(v) for key, v in tree.items()}
    _expect(tree is None or isinstance(tree, (bool, int, float, str)), "not a JSON tree")
    return tree


# --- what the grader asks for ---------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """Resource limits for one job (one learner's cells plus the requests after them).

    ``memory_mb`` is address space the learner may add on top of the warm worker's
    baseline (the interpreter with numpy loaded, ~100 MB). ``output_bytes`` bounds what
    the learner prints (characters for ``print``, bytes for raw writes to fds 1 and 2).
    ``cell_timeout_s`` interrupts one cell (the job goes on with the next cell);
    ``wall_s`` and ``cpu_s`` bound the whole job and end it.
    """

    cpu_s: float = 10
    memory_mb: int = 1024
    output_bytes: int = 1_000_000
    wall_s: float = 20
    call_timeout_s: float = 2
    cell_timeout_s: float = 5
    file_mb: int = 16       # largest file the learner may write (RLIMIT_FSIZE)
    processes: int = 16     # RLIMIT_NPROC for the sandbox user (counts threads too)
    open_files: int = 64    # RLIMIT_NOFILE

    def __post_init__(self) -> None:
        for name in ("cpu_s", "wall_s", "call_timeout_s", "cell_timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Limits.{name} must be a positive number of seconds")
        for name in ("memory_mb", "output_bytes", "file_mb", "processes", "open_files"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive integer")

    def to_wire(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_wire(cls, tree: Any) -> Limits:
        _expect(isinstance(tree, dict), "limits must be an object")
        try:
            return cls(**tree)
        except (TypeError, ValueError) as error:
            raise ProtocolError(f"bad limits: {error}") from None


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a request names a Python variable, got {name!r}")


@dataclass(frozen=True)
class ValueRequest:
    """Return the value bound to ``name`` after the cells ran, as plain data."""

    name: str

    def __post_init__(self) -> None:
        _check_name(self.name)


@dataclass(frozen=True)
class CallRequest:
    """Call the learner's function ``name`` once per argument tuple in ``args_list``."""

    name: str
    args_list: Sequence[Sequence[Any]]  # stored as a tuple of tuples

    def __post_init__(self) -> None:
        _check_name(self.name)
        object.__setattr__(self, "args_list", tuple(tuple(args) for args in self.args_list))


@dataclass(frozen=True)
class SourceRequest:
    """Return the source text of the function ``name`` (for feedback and integrity notes)."""

    name: str

    def __post_init__(self) -> None:
        _check_name(self.name)


Request = ValueRequest | CallRequest | SourceRequest


@dataclass(frozen=True)
class Job:
    """One learner's answer cells, run in order in one fresh namespace, then the requests."""

    job_id: str
    cells: Sequence[str]  # stored as a tuple
    requests: Sequence[Request] = ()  # stored as a tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "cells", tuple(self.cells))
        object.__setattr__(self, "requests", tuple(self.requests))
        if not isinstance(self.job_id, str):
            raise ValueError("job_id must be a string")
        if not all(isinstance(cell, str) for cell in self.cells):
            raise ValueError("cells must be strings of Python source")
        seen: set[tuple[type, str]] = set()
        for request in self.requests:
            key = (type(request), request.name)
            if key in seen:
                raise ValueError(f"duplicate {type(request).__name__} for {request.name!r}")
            seen.add(key)

    def to_wire(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "cells": list(self.cells),
            "requests": [_request_to_wire(request) for request in self.requests],
        }

    @classmethod
    def from_wire(cls, tree: Any) -> Job:
        _expect(isinstance(tree, dict), "job must be an object")
        _expect(isinstance(tree.get("cells"), list), "cells must be a list")
        _expect(isinstance(tree.get("requests"), list), "requests must be a list")
        try:
            requests = tuple(_request_from_wire(item) for item in tree["requests"])
            return cls(tree["job_id"], tuple(tree["cells"]), requests)
        except (KeyError, TypeError, ValueError) as error:
            raise ProtocolError(f"bad job: {error}") from None


def _request_to_wire(request: Request) -> dict[str, Any]:
    if isinstance(request, CallRequest):
        return {"type": "call", "name": request.name,
                "args_list": [encode_tree(list(args)) for args in request.args_list]}
    asked = "value" if isinstance(request, ValueRequest) else "source"
    return {"type": asked, "name": request.name}


def _request_from_wire(tree: Any) -> Request:
    _expect(isinstance(tree, dict), "request must be an object")
    asked = tree.get("type")
    if asked == "call":
        _expect(isinstance(tree.get("args_list"), list), "args_list must be a list")
        args_list = [decode_tree(args) for args in tree["args_list"]]
        _expect(all(isinstance(args, list) for args in args_list), "each args must be a list")
        return CallRequest(tree["name"], tuple(tuple(args) for args in args_list))
    if asked == "value":
        return ValueRequest(tree["name"])
    _expect(asked == "source", f"unknown request type {asked!r}")
    return SourceRequest(tree["name"])


# --- what comes back ------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """The answer to one request (or to one call of a CallRequest).

    ``value`` is meaningful only for ``OutcomeType.VALUE``. Otherwise ``type_name`` is the
    class the outcome is about (the exception raised, the value that is not plain data or
    not a function; qualified by module unless a builtin) and ``message`` is words for a
    learner (an exception's own text for ``RAISED``). Nothing reads ``message`` to learn
    what happened: that is ``type`` and ``type_name``.
    """

    type: OutcomeType
    value: Any = None
    message: str = ""
    type_name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", OutcomeType(self.type))

    @property
    def ok(self) -> bool:
        return self.type is OutcomeType.VALUE

    def to_wire(self) -> dict[str, Any]:
        if self.type is OutcomeType.VALUE:
            return {"type": "value", "value": encode_tree(self.value)}
        return {"type": self.type.value, "message": self.message, "type_name": self.type_name}

    @classmethod
    def from_wire(cls, tree: Any) -> Outcome:
        _expect(isinstance(tree, dict) and tree.get("type") in OUTCOME_TYPES, "bad outcome")
        if tree["type"] == "value":
            _expect("value" in tree, "value outcome without a value")
            return cls(OutcomeType.VALUE, decode_tree(tree["value"]))
        message, type_name = tree.get("message", ""), tree.get("type_name", "")
        _expect(isinstance(message, str) and isinstance(type_name, str), "bad outcome text")
        _expect(len(type_name) <= 300, "outcome type name too long")
        return cls(OutcomeType(tree["type"]), None, message, type_name)


@dataclass(frozen=True)
class CellError:
    """A cell that failed: its index in ``Job.cells``, the exception, and the line of the cell
    where it was raised (the innermost line of this cell in the traceback)."""

    cell: int
    error_type: str
    message: str
    line: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_wire(cls, tree: Any) -> CellError:
        _expect(isinstance(tree, dict), "cell error must be an object")
        cell, line = tree.get("cell"), tree.get("line")
        _expect(type(cell) is int and (line is None or type(line) is int), "bad cell error")
        _expect(isinstance(tree.get("error_type"), str), "bad cell error type")
        _expect(isinstance(tree.get("message"), str), "bad cell error message")
        return cls(cell, tree["error_type"], tree["message"], line)


@dataclass(frozen=True)
class JobResult:
    """Everything the grader learns about one job; built from JSON, never from pickles.

    Every request of the job has an entry: ``values`` and ``sources`` map a name to an
    :class:`Outcome`, ``calls`` maps a name to one outcome per argument tuple (a single
    ``"unavailable"``/``"missing"``/``"not_function"`` outcome when no call could be made).
    """

    job_id: str
    status: JobStatus
    cell_errors: tuple[CellError, ...] = ()
    values: dict[str, Outcome] = field(default_factory=dict)
    calls: dict[str, tuple[Outcome, ...]] = field(default_factory=dict)
    sources: dict[str, Outcome] = field(default_factory=dict)
    stdout_tail: str = ""
    message: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    # Set by the pool, never sent: the sandbox failed on this job (not the learner's code).
    infrastructure: bool = False   # it failed twice; the job's answers are unknown
    retry: bool = False            # it failed once; the pool runs the job again

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        object.__setattr__(self, "status", JobStatus(self.status))

    def to_wire(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id, "status": self.status,
            "cell_errors": [error.to_wire() for error in self.cell_errors],
            "values": {name: o.to_wire() for name, o in self.values.items()},
            "calls": {name: [o.to_wire() for o in os] for name, os in self.calls.items()},
            "sources": {name: o.to_wire() for name, o in self.sources.items()},
            "stdout_tail": self.stdout_tail, "message": self.message,
            "wall_s": self.wall_s, "cpu_s": self.cpu_s,
        }

    @classmethod
    def from_wire(cls, tree: Any) -> JobResult:
        _expect(isinstance(tree, dict), "result must be an object")
        try:
            return cls(
                job_id=str(tree["job_id"]), status=tree["status"],
                cell_errors=tuple(CellError.from_wire(e) for e in tree["cell_errors"]),
                values={str(n): Outcome.from_wire(o) for n, o in tree["values"].items()},
                calls={str(n): tuple(Outcome.from_wire(o) for o in os)
                       for n, os in tree["calls"].items()},
                sources={str(n): Outcome.from_wire(o) for n, o in tree["sources"].items()},
                stdout_tail=str(tree["stdout_tail"]), message=str(tree["message"]),
                wall_s=float(tree["wall_s"]), cpu_s=float(tree["cpu_s"]),
            )
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise ProtocolError(f"bad result: {error}") from None


def unavailable_outcomes(job: Job, message: str) -> JobResult:
    """A result for a job that produced nothing: every request ``"unavailable"``."""
    outcome = Outcome(OutcomeType.UNAVAILABLE, message=message)
    values = {r.name: outcome for r in job.requests if isinstance(r, ValueRequest)}
    calls: dict[str, tuple[Outcome, ...]] = {
        r.name: (outcome,) for r in job.requests if isinstance(r, CallRequest)}
    sources = {r.name: outcome for r in job.requests if isinstance(r, SourceRequest)}
    return JobResult(job.job_id, JobStatus.CRASHED, values=values, calls=calls, sources=sources,
                     message=message)
