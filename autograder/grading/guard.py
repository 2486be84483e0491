"""The grader's own cells, run in the sandbox around the learner's cells.

The code itself is :mod:`autograder.grading.in_sandbox`, a real module (linted and typed
like the rest) whose source the first cell of every job loads under a random name before
any learner code runs. The cells here only call it; their names carry a random token per
batch:

* the *guard* (first cell) loads the module and installs its audit hook, a reporter of
  attempts to reach the grader's files, start programs or load C code (refusing them only
  without bubblewrap, ``enforce``);
* a *snapshot* after each answer cell keeps the answer as the check cell right below it
  would have seen it, whatever later cells do to the name (a function goes behind the
  one-time-out rule);
* the *report* (after the learner's cells) copies the hook's log into a variable the grader
  requests;
* the *lab* cell loads a lab's runtime from shipped sources and binds a harness per lab.

The hook runs inside the learner's process, so a determined attacker who knows these
internals can evade the report; isolation comes from bubblewrap around the worker
(:mod:`autograder.sandbox.bwrap`), never from this hook.
"""

from __future__ import annotations

import binascii
import marshal
import secrets
import zlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from autograder.grading import in_sandbox

_LOADER = '''\
def {p}load(code, name, _module=__import__("types").ModuleType,
        _unpack=lambda text, _zlib=__import__("zlib"), _binascii=__import__("binascii"),
        _marshal=__import__("marshal"): _marshal.loads(_zlib.decompress(
            _binascii.a2b_base64(text)))):
    module = _module(name)
    exec(_unpack(code), module.__dict__)
    return module


{p}rt = {p}load({code!r}, {name!r})
del {p}load
{p}audit = {p}rt.install({protected!r}, {enforce!r})
'''


@cache
def runtime_source() -> str:
    """The source of :mod:`autograder.grading.in_sandbox`."""
    return Path(in_sandbox.__file__).read_text(encoding="utf-8")


def compiled(source: str, filename: str) -> str:
    """``source`` compiled here, as a job receives the grader's own modules: marshalled,
    compressed and in base64 (plain text, which the job's JSON carries without escapes).
    Jobs run this same interpreter (the worker is started with it), so the code loads as
    is; compiling it in every job, a fresh process each time, cost about a millisecond per
    module and job."""
    data = zlib.compress(marshal.dumps(compile(source, filename, "exec")), 6)
    return binascii.b2a_base64(data, newline=False).decode("ascii")


@cache
def runtime_code() -> str:
    """:mod:`autograder.grading.in_sandbox`, compiled, as the sandbox receives it."""
    return compiled(runtime_source(), "<grader>")


class Names:
    """The grader's variable names for one batch (a random prefix no learner can guess)."""

    def __init__(self, token: str | None = None) -> None:
        self.prefix = f"__wb_{token or secrets.token_hex(6)}_"

    def snapshot(self, exercise: str, name: str) -> str:
        """The variable keeping exercise ``exercise``'s learner name ``name``."""
        return f"{self.prefix}kept_{exercise.replace('.', '_')}_{name}"

    def harness(self, exercise: str, what: str) -> str:
        """The function the grader calls to run exercise ``exercise``'s lab jobs."""
        return f"{self.prefix}run_{what}_{exercise.replace('.', '_')}"

    @property
    def runtime(self) -> str:
        """The name the in-sandbox module is loaded under (and bound to)."""
        return self.prefix + "rt"

    @property
    def log(self) -> str:
        return self.prefix + "log"

    @property
    def skipped(self) -> str:
        """The qualified class name of the exception a skipped call raises."""
        return f"{self.runtime}.{in_sandbox.Skipped.__name__}"


def guard_cell(names: Names, protected: Sequence[str], enforce: bool = False) -> str:
    return _LOADER.format(p=names.prefix, code=runtime_code(), name=names.runtime,
                          protected=tuple(protected), enforce=bool(enforce))


def snapshot_cell(names: Names, bindings: Sequence[tuple[str, str, bool]]) -> str:
    """Copy each (learner name -> grader name) that exists; ``wrap`` puts the function
    behind the one-time-out rule."""
    lines = []
    for learner, grader, wrap in bindings:
        value = f"{names.runtime}.guard({learner})" if wrap else learner
        lines += ["try:", f"    {grader} = {value}", "except BaseException:", "    pass"]
    return "\n".join(lines)


def report_cell(names: Names) -> str:
    return f"{names.log} = {names.prefix}audit()"


def lab_cell(names: Names, modules: Sequence[tuple[str, str]],
             harnesses: Sequence[tuple[str, str, str]]) -> str:
    """Load the lab runtime from ``modules`` ((name, :func:`compiled` code) pairs, shipped
    by the grader so nothing needs reading from disk) and bind, per (harness name, kept
    function name,
    "module:function"), a harness calling ``entry(learner_function, job)`` when the
    learner's function exists."""
    lines = [f"{names.prefix}lab_modules = {names.runtime}.lab_install({tuple(modules)!r})"]
    for harness, kept, entry in harnesses:
        module, _, function = entry.partition(":")
        lines += ["try:",
                  f"    {harness} = {names.runtime}.lab_harness({kept}, "
                  f"getattr({names.prefix}lab_modules[{module!r}], {function!r}))",
                  "except NameError:",
                  "    pass"]
    return "\n".join(lines)
