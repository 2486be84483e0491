"""The ranks' process's parts: the rank processes it forks, their walls, their memory.

Started by the trusted side (:mod:`solutions.sim.channel`) as ``python -I`` on a staged copy
of a few modules of this package (forked from a warm server inside bubblewrap where
available), it reads frames on its stdin and writes frames on its stdout
(:mod:`solutions.sim.wire`). It never runs the learner's code itself: it forks one process
per rank (:mod:`solutions.sim.rank`) before any of a case's data reaches it, and relays
between them (a rank's process serves that rank in every case of the function
loaded, so a case costs no fork):

* a rank's process is walled in before it loads the learner's code (:func:`_wall`): only
  its own two pipes open, no new process or thread, no file it can write or grow (a memfd
  included), at most one more descriptor at a time (no pipe to park data in), not
  dumpable (no other process of the user may read its memory), killed with this process,
  and the caller's ``confine`` (the sandbox's seccomp wall) on top;
* it holds nothing of any other rank: this process forks the ranks, then receives their
  data and forwards each rank's to its own process, and each message to its destination
  at the start of the step after it was sent;
* its memory is the kernel's account of its process (:func:`resident`: anonymous, shared
  and swapped pages, which is where ``mmap``, a memfd, ``malloc`` through ctypes, SQLite
  and numpy all keep their bytes), less what it held when it was forked, read here after
  every step while it waits; what it allocates when the learner's file is loaded, and
  whatever it still holds from an earlier case, counts.

After each step this side streams one answer frame to the trusted side, without being
asked: each rank's requests (send, recv, free) in order, how its step ended and its
memory. It keeps each rank's arrived messages the way the trusted side does (a message
sent in step t arrives when step t ends), so that the ids it hands out are the ones the
trusted side's log gives; the trusted side believes none of it without checking. It stops
after the step in which a rank raised, a send could not be delivered, a rank sent more than
the run's budget, or the run reached its last step, and marks that step's frame the last.

A function that is simply called (a schedule) runs in one process of its own, forked when
the function is loaded. What the ranks' process does with these parts, case by case, is
:mod:`solutions.sim.cluster` (its entry point, :func:`solutions.sim.cluster.main`).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from solutions.sim import rank as simrank
from solutions.sim import wire as simwire

try:  # staged only for the labs that offer rank.all_reduce and rank.all_gather
    from solutions.sim import collectives as _collectives  # noqa: F401
except ImportError:
    pass
# Modules an honest rank may import, loaded once here so that importing them costs a rank
# nothing (a rank may open only one file at a time).
import bisect  # noqa: F401, E402
import collections  # noqa: F401, E402
import dataclasses  # noqa: F401, E402
import functools  # noqa: F401, E402
import heapq  # noqa: F401, E402
import itertools  # noqa: F401, E402
import math  # noqa: F401, E402
import operator  # noqa: F401, E402
import typing  # noqa: F401, E402

MAX_RANKS = 64
RANK_FILES = 4            # stdin, stdout, stderr and one more, at a time
_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE = 1, 4
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
Confine = Callable[[], "str | None"]


def _warm_blas() -> None:
    """BLAS's workspace, set up by one 256 x 256 product. Run again in a forked rank before
    its memory is first read: OpenBLAS sets its workspace up again in a forked process (1.8
    MB of pages), which an honest rank's first product would otherwise be charged."""
    a = np.ones((256, 256))
    (a @ a).sum()


def _warm_numpy() -> None:
    """Run numpy's common operations once here, before any rank is forked: the buffers
    they set up on first use are then every rank's from the start, not memory an honest
    rank seems to take at its first product (BLAS's workspace: :func:`_warm_blas`)."""
    _warm_blas()
    a = np.arange(256 * 256, dtype=np.float64).reshape(256, 256) / 65536.0
    b = np.maximum(a.T, 0.0)
    np.concatenate(np.array_split(b.ravel(), 7)).reshape(256, 256).sum()
    (a.astype(np.float32) @ a.astype(np.float32)).sum()
    (np.arange(64) @ np.arange(64), np.isclose(a[0], a[0]), np.argsort(a[0]))


_warm_numpy()


def resident(pid: int) -> int:
    """Bytes of process ``pid`` the kernel counts as its own: resident anonymous and shared
    pages and swapped pages (``/proc/<pid>/status``); -1 if it is gone."""
    total = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith((b"RssAnon:", b"RssShmem:", b"VmSwap:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return -1
    return total


def release() -> None:
    """Give freed heap memory back to the system, so that what is counted is what is held."""
    _LIBC.malloc_trim(0)


def _wall(into: int, out: int, parent: int, confine: Confine | None) -> None:
    """In a forked rank's process: its channel on fds 0 and 1, everything else closed, the
    limits and the caller's wall. Exits (never returns) if any of it fails."""
    try:
        os.dup2(into, 0)
        os.dup2(out, 1)
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(71)
        _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        for limit, value in ((resource.RLIMIT_NPROC, 0), (resource.RLIMIT_FSIZE, 0),
                             (resource.RLIMIT_NOFILE, RANK_FILES)):
            resource.setrlimit(limit, (value, value))
        try:  # woken by this process, a rank does not preempt it: a step's go reaches
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # every rank first
        except (AttributeError, OSError):
            pass
        _LIBC.mallopt(_M_MMAP_THRESHOLD, 64 << 10)  # a large array is its own mapping,
        _LIBC.mallopt(_M_TRIM_THRESHOLD, 128 << 10)  # given back when freed
        if confine is not None and confine() is not None:
            os._exit(71)
        _warm_blas()
        release()
    except BaseException:  # noqa: B036 - a process that is not walled in runs nothing
        os._exit(71)


class Child:
    """A forked rank's (or the caller's) process and this side's ends of its pipes;
    ``ready()`` waits for it to say it is walled in, and notes what it holds then."""

    def __init__(self, serve: Callable[[simrank.Link], None], confine: Confine | None,
                 wait: bool = True) -> None:
        into_r, into_w = os.pipe()
        out_r, out_w = os.pipe()
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:
            _wall(into_r, out_w, parent, confine)
            try:
                link = simrank.link_on_stdio()
                simwire.write_frame(link.out, {"op": "ready"})
                serve(link)
            except BaseException:  # noqa: B036 - whatever happened, leave without a trace
                os._exit(70)
            os._exit(0)
        os.close(into_r)
        os.close(out_w)
        self.writer: BinaryIO = os.fdopen(into_w, "wb", buffering=1 << 16)
        self.reader: BinaryIO = os.fdopen(out_r, "rb", buffering=1 << 16)
        self.base = 0
        if wait:
            self.ready()

    def ready(self) -> None:
        try:
            header, _ = self.hear(0)
        except (simwire.WireError, simwire.ChannelClosed) as error:
            self.close()
            raise OSError(f"a forked process did not start ({type(error).__name__})") \
                from None
        if header.get("op") != "ready":
            self.close()
            raise OSError("a forked process did not start")
        self.base = resident(self.pid)

    def tell(self, header: dict[str, Any], arrays: Any = ()) -> None:
        simwire.write_frame(self.writer, header, tuple(arrays))

    def hear(self, max_bytes: int = simwire.MAX_FRAME_ARRAY_BYTES,
             ) -> tuple[dict[str, Any], list[np.ndarray]]:
        return simwire.read_frame(self.reader, max_bytes)

    def close(self, wait: bool = True) -> None:
        """Close its pipes (it exits when its input ends) and, with ``wait``, reap it."""
        for stream in (self.writer, self.reader):
            try:
                stream.close()
            except OSError:
                pass
        if wait:
            reap([self.pid], block=True)


def reap(pids: list[int], block: bool = False) -> list[int]:
    """Reap the ended processes among ``pids``; the ones still running."""
    running = []
    for pid in pids:
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            continue
        if done == 0:
            running.append(pid)
    return running


def fork_all(count: int, serve: Callable[[simrank.Link], None],
             confine: Confine | None) -> list[Child]:
    """``count`` walled-in processes running ``serve``, forked one after the other and
    then waited for (each walls itself in while the next is forked)."""
    children: list[Child] = []
    try:
        for _ in range(count):
            children.append(Child(serve, confine, wait=False))
        for child in children:
            child.ready()
    except BaseException:
        for child in children:
            child.close(wait=False)
        raise
    return children


class Host:
    """The channel to the trusted side and the loaded function (as a bundle)."""

    def __init__(self, into: BinaryIO, out: BinaryIO, confine: Confine | None) -> None:
        self.into, self.out, self.confine = into, out, confine
        self.bundle: Any = None
        self.caller: Child | None = None
        self.ranks: list[Child] = []   # rank r's process, for every case of this function

    def tell(self, header: dict[str, Any], arrays: Any = ()) -> None:
        simwire.write_frame(self.out, header, tuple(arrays))
