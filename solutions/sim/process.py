"""The ranks' process of a lab: its staged code, starting it, and the pipes to it.

The learner's rank functions run in a process of their own (:mod:`solutions.sim.host`),
which receives copies of only a few modules (:func:`stage_host_code`). It is started either
plainly, as a child of this process (:class:`Popened`; warm spares started ahead when
:func:`keep_warm` asks), or by a caller's :data:`Launch`, which forks it from a warm server
inside a sandbox (the batch grader's: :mod:`autograder.sandbox.rank_server`). Either way a
:class:`Host` holds its two pipes, and :mod:`solutions.sim.channel` drives it.
"""

from __future__ import annotations

import atexit
import os
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from queue import Queue
from typing import IO, Any, Literal, Protocol

import numpy as np

from solutions.sim import wire as simwire

# of solutions.sim; and collectives where allowed
HOST_MODULES = ("wire", "classes", "bundle", "rank", "host", "cluster")
BOOT = ("import sys; sys.path.insert(0, {code!r}); sys.dont_write_bytecode = True; "
        "from solutions.sim import cluster; cluster.main()")
# The ranks run one after another: numpy's BLAS needs no thread per core (starting them
# costs about 0.1 s of CPU per process). A sandbox's own environment says the same.
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


Cause = Literal["rule", "program", "timeout", "memory", "channel", "infrastructure"]


@dataclass(frozen=True)
class RunFailure:
    """Why a run ended without a log, its ``cause``: "rule" (a simulator rule), "program"
    (the learner's code raised), "timeout", "memory", "channel" (the process broke the
    channel or died), or "infrastructure" (the grader could not start a ranks' process at
    all: no fault of the learner's, never charged to them)."""

    cause: Cause
    problem: str
    rank: int = -1
    step: int = -1


_STAGES: dict[bool, str] = {}
_LOCK = threading.Lock()


def stage_host_code(collectives: bool = True) -> str:
    """A private folder holding copies of the modules the ranks' process needs, as a
    ``solutions.sim`` package of a few files: nothing else of the project (and no ring
    collectives for a lab that asks the learner to write them). One per process and kind,
    removed when the process exits (:func:`cleanup`)."""
    with _LOCK:
        if collectives not in _STAGES:
            _STAGES[collectives] = _stage(collectives)
        return _STAGES[collectives]


def _stage(collectives: bool) -> str:
    stage = Path(tempfile.mkdtemp(prefix="wb-ranks-"))
    try:
        package = stage / "solutions" / "sim"
        package.mkdir(parents=True)
        for folder in (package.parent, package):
            (folder / "__init__.py").write_text("")
        here = Path(__file__).parent
        for name in HOST_MODULES + (("collectives",) if collectives else ()):
            shutil.copyfile(here / f"{name}.py", package / f"{name}.py")
        for path in stage.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        stage.chmod(0o755)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return str(stage)


def cleanup() -> None:
    """End every warm ranks' process and remove the staged folders (run at exit)."""
    with _LOCK:
        spares = [host for queue in _SPARES.values() for host in queue]
        _SPARES.clear()
        stages = list(_STAGES.values())
        _STAGES.clear()
    for host in spares:
        host.close()
    for stage in stages:
        shutil.rmtree(stage, ignore_errors=True)


def plain_command(python: str, code_dir: str) -> list[str]:
    """The unsandboxed command (``-I``: no user site, no environment variables)."""
    return [python, "-I", "-c", BOOT.format(code=code_dir)]


class _Reader:
    """Reads the other side's pipe with a deadline (``read`` as a file would)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.deadline = fd, 0.0
        self.buffer, self.at = memoryview(b""), 0

    def read(self, n: int) -> memoryview:
        if self.at >= len(self.buffer):
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError
            self.buffer, self.at = memoryview(os.read(self.fd, max(n, 1 << 20))), 0
            if not self.buffer:
                return self.buffer
        out = self.buffer[self.at:self.at + n]
        self.at += len(out)
        return out


def _widen(fd: int, size: int = 1 << 20) -> None:
    """A bigger pipe buffer (Linux ``F_SETPIPE_SZ``), so that a 16 KB payload and the
    frames around it never wait for the other side to read; a no-op where refused."""
    try:
        import fcntl
        fcntl.fcntl(fd, 1031, size)
    except (OSError, ImportError):
        pass


class Process(Protocol):
    """A started ranks' process as the channel sees it: the pipe to its stdin, the fd of
    the pipe from its stdout, ``poll()`` (None while it may run) and ``kill()`` (which
    also reaps it and closes this side)."""

    stdin: IO[bytes]
    stdout_fd: int

    def poll(self) -> int | None: ...

    def kill(self) -> None: ...


# (python, staged code folder, modules to import ahead, "module:function" to run) -> a
# process forked from a warm server (the batch grader's sandbox provides one)
Launch = Callable[[str, str, tuple[str, ...], str], Process]
WARM = ("numpy", "solutions.sim.host", "solutions.sim.cluster")
ENTRY = "solutions.sim.cluster:main"


class Popened:
    """A ranks' process started from a command line, a child of this process."""

    def __init__(self, command: list[str], memory_bytes: int = 4 << 30) -> None:
        def limits() -> None:  # no imports here: other threads may hold the import lock
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        self.popen = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, preexec_fn=limits,
                                      env={**os.environ, **ONE_THREAD})
        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.stdin: IO[bytes] = self.popen.stdin
        self.stdout_fd = self.popen.stdout.fileno()
        self.pid = self.popen.pid

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


class Host:
    """A started ranks' process and its channel."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.in_sync = True   # False once a run left the other side mid-case
        self.writer: IO[bytes] = process.stdin
        self.reader = _Reader(process.stdout_fd)
        for fd in (process.stdin.fileno(), process.stdout_fd):
            _widen(fd)

    def send(self, header: dict[str, Any], arrays: Sequence[np.ndarray] = ()) -> None:
        simwire.write_frame(self.writer, header, tuple(arrays))  # type: ignore[arg-type]

    def receive(self, max_bytes: int) -> tuple[dict[str, Any], list[np.ndarray]]:
        return simwire.read_frame(self.reader, max_bytes)  # type: ignore[arg-type]

    def close(self) -> None:
        self.process.kill()


# Warm ranks' processes: started ahead (interpreter, numpy and the channel's modules
# loaded), each waiting for its first frame. Each is handed out once, for one learner's
# function, and closed after it: no process ever runs two learners' code.
_SPARES: dict[tuple[str, ...], deque[Host]] = {}
_WARM = [0]   # how many to keep ready per command; 0 (the default) keeps none


def keep_warm(count: int) -> None:
    """Keep ``count`` fresh ranks' processes started ahead per command (a batch grader
    calls this once; a single check does not need it)."""
    if count < 0:
        raise ValueError(f"keep_warm needs a count >= 0, not {count}")
    _WARM[0] = count


def _fresh(command: list[str]) -> Host:
    """A never-used ranks' process for ``command``: a warm one if ready, else a new one;
    then start its replacement."""
    key = tuple(command)
    with _LOCK:
        queue = _SPARES.setdefault(key, deque())
        host = queue.popleft() if queue else None
    while host is not None and host.process.poll() is not None:  # died while waiting
        host.close()
        with _LOCK:
            host = queue.popleft() if queue else None
    if host is None:
        host = _SPAWNER.start(command)
    with _LOCK:
        missing = _WARM[0] - len(queue)
    for _ in range(max(missing, 0)):
        spare = _SPAWNER.start(command)
        with _LOCK:
            queue.append(spare)
    return host


class _Spawner:
    """Starts every ranks' process from one thread that lives as long as this process:
    bubblewrap's ``--die-with-parent`` ends a process when the *thread* that started it
    ends, and the graders start hosts from short-lived threads."""

    def __init__(self) -> None:
        self.requests: Queue[tuple[list[str], Queue[Host | BaseException]]] = Queue()
        self.thread: threading.Thread | None = None

    def start(self, command: list[str]) -> Host:
        with _LOCK:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._serve, name="rank-hosts",
                                               daemon=True)
                self.thread.start()
        answer: Queue[Host | BaseException] = Queue(1)
        self.requests.put((command, answer))
        started = answer.get()
        if isinstance(started, BaseException):
            raise started
        return started

    def _serve(self) -> None:
        while True:
            command, answer = self.requests.get()
            try:
                answer.put(Host(Popened(command)))
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                answer.put(error)


_SPAWNER = _Spawner()


def start_host(bundle: Any, launch: Launch | None = None, time_limit_s: float = 10.0,
               collectives: bool = True) -> Host | RunFailure:
    """Start a ranks' process and load the learner's function into it: forked by
    ``launch`` where given (a sandbox's warm server), else started plainly (or taken warm,
    never used, when :func:`keep_warm` asked for spares)."""
    code = stage_host_code(collectives)
    if launch is None:
        host = _fresh(plain_command(sys.executable, code))
    else:
        try:
            host = Host(launch(sys.executable, code, _warm(collectives), ENTRY))
        except OSError as error:
            return RunFailure("infrastructure", f"the grader could not start a process for "
                              f"your ranks ({error})")
    host.reader.deadline = time.monotonic() + max(time_limit_s, 5.0)
    try:
        host.send({"op": "load", "bundle": bundle})
        reply, _ = host.receive(0)
    except (TimeoutError, simwire.WireError, simwire.ChannelClosed, OSError) as error:
        host.close()
        return RunFailure("channel", f"the process running your code did not start "
                          f"({type(error).__name__})")
    if reply["op"] != "loaded":
        host.close()
        return RunFailure("program", f"your code could not be loaded: {reply.get('value')}")
    return host


def _warm(collectives: bool) -> tuple[str, ...]:
    """What a warm server imports before forking a ranks' process."""
    return WARM + (("solutions.sim.collectives",) if collectives else ())


def prestart(prepare: Callable[[str, str, tuple[str, ...], str], Any],
             collectives: bool = True) -> None:
    """Have ``prepare`` (the companion of a :data:`Launch`, taking the same arguments)
    start the server that :func:`start_host` will fork this kind of ranks' process from,
    ahead of the first lab."""
    prepare(sys.executable, stage_host_code(collectives), _warm(collectives), ENTRY)


atexit.register(cleanup)
