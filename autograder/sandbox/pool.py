"""A pool of warm sandbox workers: hand it jobs, get JobResults back.

    with WorkerPool(n_workers=4, limits=Limits(wall_s=20)) as pool:
        for result in pool.map(jobs):          # completion order; ordered=True for input order
            grade(result)

Each worker is a long-lived ``python -I`` process (see :mod:`autograder.sandbox.worker`)
that talks one JSON line per job over its stdin/stdout; nothing it sends is unpickled.
By default each worker runs inside bubblewrap (:mod:`autograder.sandbox.bwrap`): a
minimal read-only root with no path to the project, the submissions or the output, a
private /tmp, new namespaces and rlimits on the whole worker. Where bubblewrap is missing
or not permitted, starting the pool raises :class:`SandboxUnavailable`; only
``sandbox="none"`` (the grader's ``--unsafe-no-sandbox``) runs workers without it, with
the weaker in-process isolation of :mod:`autograder.sandbox.limits`.
Jobs go to whichever worker is idle. A worker that dies or stops answering (which no
learner code should be able to cause, but the pool does not assume it) is killed and
replaced, and its job is reported as ``crashed`` with every request ``unavailable``.

The pool is not thread-safe: drive it from one thread. Abandoning a ``map`` iterator early
restarts the workers that were still busy.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from autograder.sandbox import bwrap
from autograder.sandbox.cgroup import MemoryGroup
from autograder.sandbox.limits import Isolation
from autograder.sandbox.protocol import (
    Job,
    JobResult,
    JobStatus,
    Limits,
    read_wire,
    unavailable_outcomes,
)

# The project root (the directory holding the ``autograder`` package), put on the worker's
# sys.path explicitly because ``-I`` ignores PYTHONPATH and the current directory.
PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
BOOTSTRAP = ("import sys; sys.path.insert(0, sys.argv[1]); "
             "from autograder.sandbox.worker import main; main()")
WORKER_ENV = bwrap.SANDBOX_ENV
GRACE_S = 10.0  # beyond wall_s, for the worker to clean up and reply
# A worker's memory group holds the job's budget and this much more: the worker itself
# (an interpreter with numpy, ~60 MB), its private /tmp and the job's scratch.
GROUP_HEADROOM_MB = 320
MAX_REPLY_BYTES = 256 * 1024 * 1024  # one reply line; the worker bounds reports far below
SANDBOXES = ("bubblewrap", "none")
_KERNEL_MEMORY = ("ran out of memory (everything the job held, files and shared memory "
                  "included, passed its {} MB; the kernel stopped it)")


@dataclass(frozen=True)
class _Launch:
    """How to start a worker: plain (``code_dir`` empty) or inside bubblewrap."""

    python: str
    limits: Limits
    code_dir: str = ""
    hidden: tuple[str, ...] = ()
    n_workers: int = 1

    def argv(self) -> list[str]:
        if not self.code_dir:
            return [self.python, "-I", "-c", BOOTSTRAP, PROJECT_ROOT]
        outer = bwrap.command(self.python, self.code_dir, self.hidden, fresh_world=True)
        return [*outer[:-2], "--setenv", "TMPDIR", "/tmp", "--", self.python, "-I",
                "-c", BOOTSTRAP, bwrap.SANDBOX_CODE, "--contained"]

    def preexec(self, group: MemoryGroup | None = None) -> Callable[[], None] | None:
        """What the worker's process does before it starts: join its memory group, and
        inside bubblewrap the whole worker's rlimits."""
        rlimits = bwrap.worker_rlimits(self.limits.memory_mb, self.limits.processes,
                                       self.n_workers) if self.code_dir else None
        if group is None:
            return rlimits

        def both() -> None:
            group.preexec()
            if rlimits is not None:
                rlimits()
        return both

    def group(self) -> MemoryGroup | None:
        """A memory cgroup for one worker where the host allows (:mod:`.cgroup`)."""
        return MemoryGroup.create("worker", (self.limits.memory_mb + GROUP_HEADROOM_MB) << 20)


class _Worker:
    """One worker process and the job it is running."""

    def __init__(self, launch: _Launch) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()
        self.group = launch.group()
        try:
            self.process = subprocess.Popen(
                launch.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self.stderr, env={**WORKER_ENV, "TMPDIR": tempfile.gettempdir()},
                close_fds=True, start_new_session=True, preexec_fn=launch.preexec(self.group))
        except BaseException:
            if self.group is not None:
                self.group.remove()
            raise
        self.oom_kills = 0  # the group's count when the current job was sent
        self.contained = bool(launch.code_dir)
        self.buffer = bytearray()
        self.job: tuple[int, Job] | None = None
        self.deadline = 0.0
        self.hello: dict[str, Any] = {}
        self.scratch_root = ""
        self.failed = False  # died, overran or answered nonsense: replace after this job

    def fileno(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    def read_line(self, timeout_s: float) -> bytes | None:
        """Next line from the worker, or None at end of file or timeout."""
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self.fileno(), selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining) or not self.read_more():
                    return None
        return self.take_line()

    def read_more(self) -> bool:
        """Read what the worker sent; False at end of file or when a reply outgrows
        :data:`MAX_REPLY_BYTES` (then the worker is treated as dead)."""
        chunk = os.read(self.fileno(), 1 << 16)
        self.buffer += chunk
        return bool(chunk) and len(self.buffer) <= MAX_REPLY_BYTES

    def take_line(self) -> bytes | None:
        line, newline, rest = bytes(self.buffer).partition(b"\n")
        if not newline:
            return None
        self.buffer = bytearray(rest)
        return line

    def send(self, index: int, job: Job, limits: Limits) -> None:
        message = {"job": job.to_wire(), "limits": limits.to_wire()}
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message, allow_nan=False).encode() + b"\n")
        self.process.stdin.flush()
        self.job = (index, job)
        self.deadline = time.monotonic() + limits.wall_s + GRACE_S
        self.oom_kills = self.group.oom_kills() if self.group is not None else 0

    def killed_for_memory(self) -> bool:
        """Whether the kernel killed a process of this worker for memory during its job."""
        return self.group is not None and self.group.oom_kills() > self.oom_kills

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-2000:].decode("utf-8", "replace")

    def stop(self, timeout_s: float = 2.0) -> None:
        """Close stdin (the worker exits between jobs), kill if it does not, release fds."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout_s)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.stderr):
            if stream is not None:
                stream.close()
        # A worker killed in the middle of a job leaves its scratch behind (only outside
        # bubblewrap: inside, its /tmp vanished with it).
        if not self.contained and os.path.basename(self.scratch_root).startswith("sandbox-worker-"):
            shutil.rmtree(self.scratch_root, ignore_errors=True)
        self._remove_group()

    def _remove_group(self) -> None:
        """The worker's memory group, once the last of its processes (the worker's own
        children end with it, a moment later) is gone."""
        if self.group is None:
            return
        deadline = time.monotonic() + 2.0
        while not self.group.remove() and time.monotonic() < deadline:
            time.sleep(0.01)


class WorkerPool:
    """Warm sandbox workers running :class:`Job` s under :class:`Limits`; a context manager."""

    def __init__(self, n_workers: int | None = None, limits: Limits | None = None, *,
                 python: str | None = None, start_timeout_s: float = 60.0,
                 sandbox: str = "bubblewrap", hidden: Iterable[str] = ()) -> None:
        self.n_workers = n_workers if n_workers is not None else (os.cpu_count() or 1)
        if self.n_workers < 1:
            raise ValueError("a WorkerPool needs at least one worker")
        if sandbox not in SANDBOXES:
            raise ValueError(f"sandbox must be one of {SANDBOXES}, got {sandbox!r}")
        self.limits = limits or Limits()
        self.python = python or sys.executable
        self.start_timeout_s = start_timeout_s
        self.sandbox = sandbox
        self.hidden = tuple(hidden)
        self._launch = _Launch(self.python, self.limits)
        self._workers: list[_Worker] = []
        self.isolation = Isolation()
        self._retried: set[str] = set()           # job ids already run once more
        self._jobs_by_index: dict[int, Job] = {}  # the running map's jobs, to run again
        self._launched: list[_Worker] = []        # started, not yet greeted

    def __enter__(self) -> WorkerPool:
        self.start()
        return self

    def __exit__(self, error_type: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def start(self) -> None:
        """Start the workers (in parallel) and wait until each has said hello. Raises
        :class:`SandboxUnavailable` when bubblewrap was asked for and cannot be used."""
        if not self._launched:
            self.launch()
        self._workers = []
        while self._launched:  # the ones not greeted yet stay listed, for close()
            self._workers.append(self._greet(self._launched[0]))
            self._launched.pop(0)

    def launch(self) -> None:
        """Start the workers' processes without waiting for them (:meth:`start` waits), so
        that the caller can do its own work meanwhile. Call it from a thread that lives as
        long as the pool: a worker ends with the thread that started it."""
        if self.sandbox == "bubblewrap":
            reason = bwrap.unavailable_reason(self.python)
            if reason:
                raise bwrap.SandboxUnavailable(reason)
            self._launch = _Launch(self.python, self.limits, bwrap.stage_sandbox_code(),
                                   self.hidden + (str(Path(__file__).parents[1]),),
                                   self.n_workers)
        self._launched = [_Worker(self._launch) for _ in range(self.n_workers)]

    def _greet(self, worker: _Worker) -> _Worker:
        line = worker.read_line(self.start_timeout_s)
        try:
            message = json.loads(line or b"null")
            worker.hello, worker.scratch_root = message["hello"], str(message["scratch_root"])
        except (TypeError, KeyError, ValueError):
            details = worker.stderr_text()
            worker.stop(0.1)
            raise RuntimeError(f"a sandbox worker failed to start:\n{details}") from None
        self.isolation = Isolation(**worker.hello)
        return worker

    def close(self) -> None:
        for worker in self._workers + self._launched:
            worker.stop()
        self._workers, self._launched = [], []
        if self._launch.code_dir:
            shutil.rmtree(self._launch.code_dir, ignore_errors=True)
            self._launch = _Launch(self.python, self.limits)

    def run(self, job: Job) -> JobResult:
        """Run one job and return its result."""
        return next(iter(self.map([job])))

    def map(self, jobs: Iterable[Job], *, ordered: bool = False) -> Iterator[JobResult]:
        """Run jobs on all workers in parallel; yield results as they complete
        (``ordered=True``: in the order of ``jobs``, holding back early finishers)."""
        if not self._workers:
            raise RuntimeError("the pool is not started: use it as a context manager")
        pending = iter(enumerate(jobs))
        idle, busy = list(self._workers), []
        held: dict[int, JobResult] = {}
        next_index = 0
        try:
            while True:
                while idle and (item := next(pending, None)) is not None:
                    busy.append(self._dispatch(idle.pop(), *item))
                if not busy:
                    return
                for worker, index, result in self._collect(busy):
                    busy.remove(worker)
                    fresh = self._worker_after(worker)
                    if result.retry:  # the worker failed, not the job: run it again
                        assert worker.job is None
                        busy.append(self._dispatch(fresh, index, self._jobs_by_index[index]))
                        continue
                    idle.append(fresh)
                    if not ordered:
                        yield result
                        continue
                    held[index] = result
                    while next_index in held:
                        yield held.pop(next_index)
                        next_index += 1
        finally:
            for worker in busy:
                self._replace(worker)

    def _dispatch(self, worker: _Worker, index: int, job: Job) -> _Worker:
        self._jobs_by_index[index] = job
        try:
            worker.send(index, job, self.limits)
        except OSError:  # the worker is gone: a fresh one takes the job
            worker = self._replace(worker)
            worker.send(index, job, self.limits)
        return worker

    def _collect(self, busy: list[_Worker]) -> list[tuple[_Worker, int, JobResult]]:
        """Wait until at least one busy worker replies, dies or overruns its deadline."""
        finished: list[tuple[_Worker, int, JobResult]] = []
        with selectors.DefaultSelector() as selector:
            for worker in busy:
                selector.register(worker.fileno(), selectors.EVENT_READ, worker)
            while not finished:
                timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
                ready = {key.data for key, _ in selector.select(timeout)}
                for worker in busy:
                    outcome = self._check(worker, worker in ready)
                    if outcome is not None:
                        assert worker.job is not None
                        finished.append((worker, worker.job[0], outcome))
        return finished

    def _check(self, worker: _Worker, readable: bool) -> JobResult | None:
        """The worker's result if it has one now, or a ``crashed`` result if it failed."""
        assert worker.job is not None
        job = worker.job[1]
        if readable and not worker.read_more():
            return self._failure(worker, job, "the sandbox worker died; it was restarted")
        line = worker.take_line()
        if line is not None:
            return self._parse(worker, job, line)
        if time.monotonic() > worker.deadline:
            return self._failure(worker, job, "the sandbox worker stopped responding; "
                                              "it was restarted")
        return None

    def _failure(self, worker: _Worker, job: Job, message: str) -> JobResult:
        """The worker failed on ``job`` (not the job's own fault, as far as the pool can
        tell): it is replaced, and the job runs once more on a fresh worker before it is
        reported, as an infrastructure failure, with every request unavailable."""
        worker.failed = True
        if worker.killed_for_memory():  # the job's footprint, not the sandbox, ended it
            return replace(unavailable_outcomes(job, _KERNEL_MEMORY.format(self.limits.memory_mb)),
                           status=JobStatus.MEMORY)
        failed = unavailable_outcomes(job, message)
        if job.job_id in self._retried:
            return replace(failed, infrastructure=True)
        self._retried.add(job.job_id)
        return replace(failed, retry=True)

    def _parse(self, worker: _Worker, job: Job, line: bytes) -> JobResult:
        try:
            reply = read_wire(line)
            if isinstance(reply, dict) and "damaged" in reply:
                return self._failure(worker, job, "the sandbox worker found its own folders "
                                                  f"damaged ({str(reply['damaged'])[:200]})")
            result = JobResult.from_wire(reply["result"])
        except Exception as error:  # noqa: BLE001 - whatever the reply holds, one job's row
            return self._failure(worker, job, "unreadable reply from the worker: "
                                              f"{type(error).__name__}: {str(error)[:200]}")
        if result.job_id != job.job_id:
            return self._failure(worker, job, "the worker answered for another job")
        if worker.killed_for_memory() and result.status is not JobStatus.MEMORY:
            return replace(result, status=JobStatus.MEMORY,
                           message=_KERNEL_MEMORY.format(self.limits.memory_mb))
        return result

    def _worker_after(self, worker: _Worker) -> _Worker:
        """The worker itself if it is healthy after its job, else a fresh replacement."""
        healthy = not worker.failed and worker.process.poll() is None and not worker.buffer
        # A worker that cannot give each job a world of its own (a bubblewrap not allowed
        # to keep CAP_SYS_ADMIN, e.g. under a restrictive AppArmor profile) serves one job.
        spent = worker.contained and not worker.hello.get("fresh_world", False)
        worker.job = None
        return worker if healthy and not spent else self._replace(worker)

    def _replace(self, worker: _Worker) -> _Worker:
        worker.process.kill()
        worker.stop(0.5)
        fresh = self._greet(_Worker(self._launch))
        self._workers[self._workers.index(worker)] = fresh
        return fresh
