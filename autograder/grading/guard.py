"""The grader's own cells, run in the sandbox around the learner's cells.

Three small pieces of code the grader adds to every job (learner code never sees their
names, which carry a random token per batch):

* the *guard* (first cell) installs an audit hook (PEP 578) before any learner code runs.
  It is a reporter: it logs, with the cell that tried, each attempt to open or list the
  grader's files (the reference packages, the release and instructor notebooks, the
  other submissions, the output folder), to start a program or to load C code through
  ctypes. Inside bubblewrap those files are simply not there and a program started finds
  the same sandbox, so nothing depends on the hook; only when grading without the
  sandbox (``--unsafe-no-sandbox``) does it also refuse them (``enforce``), as a last,
  weak wall that code in the same interpreter can get around. It also defines a wrapper for
  the learner's functions that stops calling a function after its first time-out, as
  :class:`autograder.kinds.Function` does, so that an endless loop costs one time limit;
* a *snapshot* after each answer cell keeps the answer as the check cell right below it
  would have seen it, whatever later cells do to the name;
* the *report* (last cell) copies the guard's log into a variable the grader requests.

The hook's checks run inside the learner's process, so a determined attacker who knows
these internals can evade the report; isolation comes from bubblewrap around the worker
(:mod:`autograder.sandbox.bwrap`), never from this hook.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

GUARD_TEMPLATE = r'''
def {p}install(protected, _add=__import__("sys").addaudithook,
               _frame=__import__("sys")._getframe, _real=__import__("os").path.realpath,
               _norm=__import__("os").path.normpath, _cwd=__import__("os").getcwd,
               _fspath=__import__("os").fspath, _type=type, _str=str, _bytes=bytes,
               _int=int, _tuple=tuple, _list=list, _Denied=PermissionError):
    log = []
    files = ("open", "os.listdir", "os.scandir", "os.symlink", "os.link")
    programs = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile",
                "subprocess.Popen", "os.forkpty", "pty.spawn", "sys.addaudithook",
                "gc.get_referrers", "gc.get_objects", "gc.get_referents")

    def cell():
        frame = _frame(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<cell ") and name != "<cell 0>":
                return _int(name[6:-1])
            frame = frame.f_back
        return -1

    def inside(path):
        if _type(path) is _bytes:
            path = path.decode("utf-8", "surrogateescape")
        elif _type(path) is not _str:
            path = _fspath(path)
            if _type(path) is _bytes:
                path = path.decode("utf-8", "surrogateescape")
        if _type(path) is not _str:
            return ""
        absolute = _norm(path if path.startswith("/") else _cwd() + "/" + path)
        for candidate in (absolute, _real(path)):
            for root in protected:
                if candidate == root or candidate.startswith(root + "/"):
                    return candidate
        return ""

    def hook(event, args):
        if event in files:
            if not args or _type(args[0]) is _int:
                return
            hit = inside(args[0])
            if hit:
                log.append((cell(), event, hit))
                if {enforce!r}:
                    raise _Denied("the grader's files are off limits while grading")
        elif event in programs or event.startswith("ctypes.dl"):
            log.append((cell(), event, ""))
            if {enforce!r}:
                raise _Denied("not allowed while grading: " + event)

    _add(hook)
    return lambda: [_list(entry) for entry in log]


def {p}guard(function, _type=type, _FunctionType=type(lambda: None),
             _BaseException=BaseException):
    if _type(function) is not _FunctionType:
        return function
    timed_out = [False]

    def call(*args):
        if timed_out[0]:
            raise {p}Skipped("not run after an earlier time-out")
        try:
            return function(*args)
        except _BaseException as error:
            if _type(error).__name__ == "TimeLimitExceeded":
                timed_out[0] = True
            raise
    return call


class {p}Skipped(Exception):
    pass


{p}audit = {p}install({protected!r})
del {p}install
'''


class Names:
    """The grader's variable names for one batch (a random prefix no learner can guess)."""

    def __init__(self, token: str | None = None) -> None:
        self.prefix = f"__wb_{token or secrets.token_hex(6)}_"

    def snapshot(self, exercise: str, what: str) -> str:
        """The variable holding exercise ``exercise``'s ``what`` ("value", "function")."""
        return f"{self.prefix}{what}_{exercise.replace('.', '_')}"

    def harness(self, exercise: str) -> str:
        """The function the grader calls to run exercise ``exercise``'s lab jobs."""
        return f"{self.prefix}lab_{exercise.replace('.', '_')}"

    @property
    def log(self) -> str:
        return self.prefix + "log"

    @property
    def skipped(self) -> str:
        """The class name of the exception the wrapper raises for skipped calls."""
        return self.prefix + "Skipped"


def guard_cell(names: Names, protected: Sequence[str], enforce: bool = False) -> str:
    return GUARD_TEMPLATE.format(p=names.prefix, protected=tuple(protected),
                                 enforce=bool(enforce))


def snapshot_cell(names: Names, bindings: Sequence[tuple[str, str, bool]]) -> str:
    """Copy each (learner name -> grader name) that exists; ``wrap`` puts the function in
    the time-out wrapper."""
    lines = []
    for learner, grader, wrap in bindings:
        value = f"{names.prefix}guard({learner})" if wrap else learner
        lines += ["try:", f"    {grader} = {value}", "except BaseException:", "    pass"]
    return "\n".join(lines)


def report_cell(names: Names) -> str:
    return f"{names.log} = {names.prefix}audit()"


LAB_TEMPLATE = r'''
def {p}lab_install(modules, _types=__import__("types"), _sys=__import__("sys")):
    for name, source in modules:
        parts = name.split(".")
        for i in range(1, len(parts)):
            package = ".".join(parts[:i])
            stub = _types.ModuleType(package)
            stub.__path__ = []
            _sys.modules[package] = stub
        module = _types.ModuleType(name)
        _sys.modules[name] = module
        exec(compile(source, "<" + name + ">", "exec"), module.__dict__)
    return _sys.modules


def {p}lab_harness(function, run, _type=type, _BaseException=BaseException):
    timed_out = [False]

    def call(job):
        if timed_out[0]:
            raise {p}Skipped("not run after an earlier time-out")
        try:
            return run(function, job)
        except _BaseException as error:
            if _type(error).__name__ == "TimeLimitExceeded":
                timed_out[0] = True
            raise
    return call


{p}lab_modules = {p}lab_install({modules!r})
del {p}lab_install
'''


def lab_cell(names: Names, modules: Sequence[tuple[str, str]], harnesses: Sequence[tuple[str, str]],
             ) -> str:
    """Load the lab runtime from ``modules`` ((name, source) pairs, shipped by the grader so
    nothing needs reading from disk) and bind, per lab (exercise id, "module:function"), a
    harness calling ``entry(learner_function, job)`` when the learner's function exists.
    After a job runs out of time the harness runs no more (one time limit per lab, as for
    a build exercise's function)."""
    lines = [LAB_TEMPLATE.format(p=names.prefix, modules=tuple(modules))]
    for exercise, entry in harnesses:
        module, _, function = entry.partition(":")
        snapshot = names.snapshot(exercise, "function")
        lines += ["try:",
                  f"    {names.harness(exercise)} = {names.prefix}lab_harness({snapshot}, "
                  f"getattr({names.prefix}lab_modules[{module!r}], {function!r}))",
                  "except NameError:",
                  "    pass"]
    return "\n".join(lines)
