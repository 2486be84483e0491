"""The grader's code that runs inside the sandbox, around the learner's cells.

This module is never imported by the grader: :mod:`autograder.grading.guard` ships its
source in the job's first cell, which loads it as a module under a random name before any
learner code runs. It therefore imports only the standard library, and binds every
builtin it relies on as a default argument when it is defined, so a learner's later edit
to ``builtins`` changes nothing it does.

* :func:`install` sets an audit hook (PEP 578) that logs, with the cell that tried, each
  attempt to open or list the grader's files, to start a program or to load C code. It is a
  reporter: inside bubblewrap those files are not there; only without the sandbox
  (``enforce``) does it also refuse them, as a last, weak wall.
* :func:`guard` wraps a learner's function so that after its first time-out it is not run
  again (one endless loop costs one time limit); the skipped calls raise :class:`Skipped`.
* :func:`lab_install` and :func:`lab_harness` load a lab's runtime from shipped code and
  run the learner's function through it, with the same one-time-out rule.
"""

from __future__ import annotations

import binascii
import marshal
import os
import sys
import types
import zlib
from collections.abc import Callable, Sequence
from typing import Any

_FILE_EVENTS = ("open", "os.listdir", "os.scandir", "os.symlink", "os.link")
_PROGRAM_EVENTS = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile",
                   "subprocess.Popen", "os.forkpty", "pty.spawn", "sys.addaudithook",
                   "gc.get_referrers", "gc.get_objects", "gc.get_referents")
_TIME_LIMIT = "TimeLimitExceeded"

LogEntry = list[Any]


class Skipped(Exception):
    """A call not made because an earlier call of the same function ran out of time."""


def _cell(_frame: Any = sys._getframe, _int: Callable[[str], int] = int) -> int:
    """The learner cell ("<cell N>", not the grader's cell 0) on the current stack, or -1."""
    frame = _frame(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<cell ") and name != "<cell 0>":
            return _int(name[6:-1])
        frame = frame.f_back
    return -1


def _as_text(path: Any, _type: type = type, _fspath: Any = os.fspath) -> str:
    if _type(path) is not str and _type(path) is not bytes:
        path = _fspath(path)
    if _type(path) is bytes:
        path = path.decode("utf-8", "surrogateescape")
    return path if _type(path) is str else ""


def _inside(path: Any, protected: tuple[str, ...], _norm: Any = os.path.normpath,
            _real: Callable[[str], str] = os.path.realpath, _cwd: Any = os.getcwd) -> str:
    """The protected path ``path`` reaches (as written or resolved), or ""."""
    text = _as_text(path)
    if not text:
        return ""
    absolute = _norm(text if text.startswith("/") else _cwd() + "/" + text)
    for candidate in (absolute, _real(text)):
        for root in protected:
            if candidate == root or candidate.startswith(root + "/"):
                return candidate
    return ""


def install(protected: Sequence[str], enforce: bool, _add: Any = sys.addaudithook,
            _type: type = type, _int: type = int, _list: type = list,
            _denied: type[Exception] = PermissionError) -> Callable[[], list[LogEntry]]:
    """Set the audit hook; return a function giving what it logged so far."""
    roots = tuple(protected)
    log: list[tuple[int, str, str]] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _FILE_EVENTS:
            if not args or _type(args[0]) is _int:
                return
            hit = _inside(args[0], roots)
            if hit:
                log.append((_cell(), event, hit))
                if enforce:
                    raise _denied("the grader's files are off limits while grading")
        elif event in _PROGRAM_EVENTS or event.startswith("ctypes.dl"):
            log.append((_cell(), event, ""))
            if enforce:
                raise _denied("not allowed while grading: " + event)

    _add(hook)
    return lambda: [_list(entry) for entry in log]


def _once_timed_out(call: Callable[..., Any], _type: type = type,
                    _base: type[BaseException] = BaseException) -> Callable[..., Any]:
    """``call`` that raises Skipped for good once it has raised the sandbox's time-out."""
    timed_out = [False]

    def limited(*args: Any) -> Any:
        if timed_out[0]:
            raise Skipped("not run after an earlier time-out")
        try:
            return call(*args)
        except _base as error:
            if _type(error).__name__ == _TIME_LIMIT:
                timed_out[0] = True
            raise
    return limited


def guard(function: Any, _type: type = type,
          _function_type: type = types.FunctionType) -> Any:
    """The learner's function behind the one-time-out rule; anything else as it is."""
    if _type(function) is not _function_type:
        return function
    return _once_timed_out(function)


def lab_install(modules: Sequence[tuple[str, str]], _module: type = types.ModuleType,
                _modules: dict[str, Any] = sys.modules, _exec: Any = exec,
                _loads: Any = marshal.loads, _unzip: Any = zlib.decompress,
                _text: Any = binascii.a2b_base64) -> dict[str, Any]:
    """Load each (name, code as :func:`autograder.grading.guard.compiled` ships it) as a
    module (parent packages as empty stubs)."""
    for name, code in modules:
        parts = name.split(".")
        for i in range(1, len(parts)):
            stub = _module(".".join(parts[:i]))
            stub.__path__ = []
            _modules[stub.__name__] = stub
        module = _module(name)
        _modules[name] = module
        _exec(_loads(_unzip(_text(code))), module.__dict__)
    return _modules


def lab_harness(function: Any, run: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    """``job -> run(function, job)`` behind the one-time-out rule."""
    return _once_timed_out(lambda job: run(function, job))
