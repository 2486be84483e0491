"""The warm worker: forks one confined process per job, watches it, replies with JSON.

Started by :class:`autograder.sandbox.pool.WorkerPool` as
``python -I -c "<put the project on sys.path>; from autograder.sandbox.worker import main;
main()"``, it isolates itself (:func:`autograder.sandbox.limits.isolate_worker`), imports
numpy and the other modules learners use once, says hello, then serves jobs: one JSON line
in on stdin, one JSON line out on stdout.

For each job it forks. The child confines itself and runs the learner's cells
(:mod:`autograder.sandbox.runner`); the worker meanwhile reads three things at once: the
child's report pipe, the pipe behind the child's fds 1 and 2 (counted against the output
limit), and a pidfd that becomes readable when the child exits. It enforces the wall clock,
kills whatever the job left running, reads the exit status and CPU time, and turns all of
that into a :class:`~autograder.sandbox.protocol.JobResult`. Nothing a job does can end the
worker: the job runs as another user in another session, and the worker's own code around
the fork catches everything.
"""

from __future__ import annotations

import gc
import inspect
import json
import os
import selectors
import shutil
import signal
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from autograder.sandbox import limits as oslimits
from autograder.sandbox import memory, runner, seccomp, world
from autograder.sandbox.classify import Observed, describe_job
from autograder.sandbox.protocol import (
    Job,
    JobResult,
    JobStatus,
    Limits,
    ProtocolError,
    unavailable_outcomes,
)

# Imported once here so that a job costs a fork, not an import (numpy comes with plain).
# Where the interpreter's files are not readable by the sandbox user (an interpreter under
# /root, say), these are also the only standard modules learner code can import; socket
# is among them so that network attempts meet the empty network namespace, not ImportError.
# The last rows are what the lab runtime the grader ships into lab jobs imports
# (solutions.sim.bundle, which packs the learner's function) and what unpacks the
# grader's compiled code in a job.
WARM_MODULES = (
    "math", "cmath", "random", "statistics", "fractions", "decimal", "itertools",
    "functools", "operator", "collections", "dataclasses", "typing", "json", "re", "heapq",
    "bisect", "string", "textwrap", "datetime", "copy", "enum", "socket",
    "base64", "builtins", "dis", "marshal", "pickle", "sys", "types",
    "binascii", "zlib",  # and how the grader's own code travels (guard.compiled)
)
MAX_REPORT_BYTES = 32 * 1024 * 1024
WORKER_OOM_SCORE = 500  # between its jobs (1000) and the grader (0)
TAIL_BYTES = 4000


@dataclass
class Watch:
    """What the worker saw while the job process ran."""

    report: bytearray = field(default_factory=bytearray)
    output_tail: bytes = b""
    output_bytes: int = 0
    stopped: str | None = None  # "wall", "output", "report_size" or "memory": killed by us

    def observed(self, wait_status: int, cpu_s: float, wall_s: float) -> Observed:
        return Observed(bytes(self.report), self.output_tail.decode("utf-8", "replace"),
                        self.stopped, wait_status, cpu_s, wall_s)


def _record(chunk: bytes, watch: Watch, is_report: bool, limits: Limits) -> None:
    if is_report:
        watch.report += chunk
        if len(watch.report) > MAX_REPORT_BYTES:
            watch.stopped = watch.stopped or "report_size"
    else:
        watch.output_bytes += len(chunk)
        watch.output_tail = (watch.output_tail + chunk)[-TAIL_BYTES:]
        if watch.output_bytes > limits.output_bytes:
            watch.stopped = watch.stopped or "output"


def _read_available(fd: int, watch: Watch, is_report: bool, limits: Limits) -> bool:
    """Read everything available now on one non-blocking pipe; False at end of file."""
    while watch.stopped is None:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        _record(chunk, watch, is_report, limits)
    return True


def watch_job(pid: int, report_fd: int, output_fd: int, limits: Limits, started: float) -> Watch:
    """Collect the job's report and output until it exits or must be stopped."""
    watch = Watch()
    selector = selectors.DefaultSelector()
    pidfd = os.pidfd_open(pid)
    for fd in (report_fd, output_fd):
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    selector.register(pidfd, selectors.EVENT_READ)
    exited = False
    try:
        whole, checked = memory.proc_is_ours(), started  # first look after CHECK_S
        while not exited and watch.stopped is None:
            remaining = started + limits.wall_s - time.monotonic()
            if remaining <= 0:
                watch.stopped = "wall"
                break
            if time.monotonic() - checked >= memory.CHECK_S:
                checked = time.monotonic()
                if memory.job_memory_mb(pid, whole) > limits.memory_mb:
                    watch.stopped = "memory"
                    break
            for key, _ in selector.select(min(remaining, memory.CHECK_S)):
                if key.fd == pidfd:
                    exited = True
                elif not _read_available(key.fd, watch, key.fd == report_fd, limits):
                    selector.unregister(key.fd)
        if exited:  # what the child wrote before exiting is still in the pipes
            _read_available(report_fd, watch, True, limits)
            _read_available(output_fd, watch, False, limits)
    finally:
        selector.close()
        os.close(pidfd)
    return watch


def _children_of(parent: int) -> list[int]:
    """PIDs whose parent is ``parent`` (for orphans reparented to us as subreaper)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as file:
                    fields = file.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                found.append(int(entry))
    return found


def warm_caches() -> None:
    """Fill, once, the caches every job would otherwise fill for itself: the tokenizer's
    compiled patterns, which finding a function's source (``inspect.getblock``, for the
    grader's source requests) compiles on first use, a few milliseconds per job."""
    inspect.getblock(["def warm():\n", "    return 1\n"])


def reap_job(pid: int) -> tuple[int, float]:
    """Kill everything the job started; return the job process's wait status and CPU time."""
    oslimits.kill_leftovers(pid)
    _, status, usage = os.wait4(pid, 0)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if oslimits.in_own_pid_namespace():
            oslimits.kill_leftovers(pid)
        else:
            for orphan in _children_of(os.getpid()):
                os.kill(orphan, signal.SIGKILL)
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.001)
        except ChildProcessError:
            break
    return status, usage.ru_utime + usage.ru_stime


# Whether jobs get their own IPC namespace and a fresh tmpfs (set once, by main()).
FRESH_WORLD = [False]


def make_scratch_root() -> str:
    """This worker's directory for job scratch directories. Others may pass through it
    (mode 0711) but not list it, so a job cannot find another job's files; the pool
    removes it when the worker is gone, whatever the worker was doing."""
    root = tempfile.mkdtemp(prefix="sandbox-worker-")
    os.chmod(root, 0o711)
    return root


def make_scratch(root: str) -> str:
    scratch = tempfile.mkdtemp(prefix="job-", dir=root)
    if os.geteuid() == 0:
        os.chown(scratch, oslimits.NOBODY, oslimits.NOBODY)
    return scratch


def probe_world(scratch_root: str) -> tuple[bool, bool]:
    """Whether a job here can have a fresh world, and whether the seccomp filter holds
    (tried once, in a throw-away child)."""
    scratch = make_scratch(scratch_root)
    pid = os.fork()
    if pid == 0:
        fresh = 0
        try:
            owner = oslimits.NOBODY if os.geteuid() == 0 else os.getuid()
            world.enter_private_world(scratch, owner, 1)
            oslimits.drop_privileges()
            world.drop_capabilities()
            fresh = 1
        except BaseException:  # noqa: B036 - a probe: any failure means no
            pass
        sealed = seccomp.forbid_namespaces() is None and \
            world.libc().unshare(0x04000000) != 0  # CLONE_NEWUTS must now be refused
        os._exit(fresh | (2 if sealed else 0))
    status = os.waitpid(pid, 0)[1]
    shutil.rmtree(scratch, ignore_errors=True)
    code = os.waitstatus_to_exitcode(status)
    return code >= 0 and bool(code & 1), code >= 0 and bool(code & 2)


def environment_damage(scratch_root: str) -> str:
    """What is wrong with this worker's own folders ("" when nothing): a job that could
    reach them must never make the next job fail."""
    try:
        info = os.lstat(scratch_root)
    except OSError as error:
        return f"the worker's scratch folder is gone ({error.strerror})"
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() \
            or stat.S_IMODE(info.st_mode) != 0o711:
        return "the worker's scratch folder was changed"
    if not os.access(scratch_root, os.W_OK | os.X_OK):
        return "the worker's scratch folder is not writable"
    return ""


def start_job(job: Job, limits: Limits, scratch: str) -> tuple[int, int, int]:
    """Fork the job process; return (pid, report read fd, output read fd)."""
    report_r, report_w = os.pipe()
    output_r, output_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (report_r, report_w, output_r, output_w):
            os.close(fd)
        raise
    if pid == 0:  # the job process: never returns into the worker's code
        try:
            private = oslimits.confine_job(limits, scratch, output_w, report_w, FRESH_WORLD[0])
        except BaseException:  # noqa: B036 - whatever failed, leave with a known status
            os._exit(runner.EXIT_SETUP)
        runner.run_job_process(job, limits, private)
    os.close(report_w)
    os.close(output_w)
    return pid, report_r, output_r


def empty_private_tmp(keep: frozenset[str]) -> None:
    """Inside bubblewrap /tmp is this worker's own: remove whatever a job left there (the
    next job, of another student, must not find it). ``keep``: what was there before any
    job (the scratch root, folders leading to an interpreter bound under /tmp)."""
    for entry in os.listdir("/tmp"):
        path = os.path.join("/tmp", entry)
        if path in keep:
            continue
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def run_job(job: Job, limits: Limits, scratch_root: str,
            keep: frozenset[str] | None = None) -> JobResult:
    """Run one job in a fresh confined process and describe what happened."""
    scratch = make_scratch(scratch_root)
    started = time.monotonic()
    try:
        pid, report_fd, output_fd = start_job(job, limits, scratch)
        try:
            watch = watch_job(pid, report_fd, output_fd, limits, started)
        finally:
            status, cpu_s = reap_job(pid)
            os.close(report_fd)
            os.close(output_fd)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if keep is not None:  # inside bubblewrap
            empty_private_tmp(keep)
    wall_s = time.monotonic() - started
    return describe_job(job, limits, watch.observed(status, cpu_s, wall_s))


def _reply(tree: dict[str, Any]) -> None:
    data = json.dumps(tree, allow_nan=False).encode("ascii") + b"\n"
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def serve_one(line: bytes, scratch_root: str, keep: frozenset[str] | None = None) -> None:
    """Answer one request line; every failure becomes a ``crashed`` result."""
    message: Any = None
    try:
        message = json.loads(line)
        job, limits = Job.from_wire(message["job"]), Limits.from_wire(message["limits"])
    except (ProtocolError, ValueError, KeyError, TypeError, AttributeError) as error:
        job_id = "?"
        if isinstance(message, dict) and isinstance(message.get("job"), dict):
            job_id = str(message["job"].get("job_id", "?"))
        _reply({"result": JobResult(job_id, JobStatus.CRASHED,
                                    message=f"bad request to the worker: {error}").to_wire()})
        return
    damage = environment_damage(scratch_root)
    if damage:
        _reply({"damaged": damage, "job_id": job.job_id})
        return
    try:
        result = run_job(job, limits, scratch_root, keep)
    except Exception as error:  # noqa: BLE001 - the worker must outlive its own bugs
        result = unavailable_outcomes(job, f"the sandbox worker failed: {error!r}")
    _reply({"result": result.to_wire()})


def main() -> None:
    """Isolate, warm up, say hello, then serve jobs until stdin closes."""
    contained = "--contained" in sys.argv[2:]
    world.first_to_go(WORKER_OOM_SCORE)  # while its /proc files are still its own
    isolation = oslimits.contained_worker() if contained else oslimits.isolate_worker()
    for name in WARM_MODULES:
        __import__(name)
    warm_caches()
    # Everything imported so far is immortal for the collector, so a job's first garbage
    # collection does not touch (and copy-on-write) every page it inherited.
    gc.freeze()
    scratch_root = make_scratch_root()
    if contained:
        FRESH_WORLD[0], isolation.no_namespaces = probe_world(scratch_root)
        isolation.fresh_world = FRESH_WORLD[0]
    else:
        isolation.no_namespaces = probe_world(scratch_root)[1]
    keep = frozenset(os.path.join("/tmp", e) for e in os.listdir("/tmp")) if contained \
        else None
    _reply({"hello": isolation.to_wire(), "scratch_root": scratch_root})
    try:
        for line in sys.stdin.buffer:
            if line.strip():
                serve_one(line, scratch_root, keep)
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)

