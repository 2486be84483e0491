"""A fresh world for every job: set up in the forked job process.

What a warm worker cannot give a job by itself, done in the job process before it drops
privileges (:func:`autograder.sandbox.limits.confine_job`): :func:`enter_private_world`
gives it its own IPC namespace (System V shared memory, semaphores and message queues die
with the job) and its own mount namespace, in which the worker's ``/tmp`` is read-only and
the job's scratch folder is a fresh tmpfs. Nothing a job leaves (files, shared memory,
renamed or chmodded folders) reaches the next job, which belongs to another student as
often as not. It needs CAP_SYS_ADMIN in the worker's user namespace: bubblewrap grants it
to the worker (:mod:`autograder.sandbox.bwrap`), and the job gives up every capability
right after (:func:`drop_capabilities`). The seccomp wall that keeps a job from making
namespaces of its own is :mod:`autograder.sandbox.seccomp`. Linux only.
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522


@cache
def libc() -> ctypes.CDLL:
    """The C library, through the interpreter's own symbols: ``find_library`` would run a
    compiler in every job (slow, and it writes to /tmp, which a job cannot)."""
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    _check(libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags),
                         enc(data)), f"mount {target}")


def enter_private_world(scratch: str, owner: int, size_mb: int, shm_mb: int = 64) -> None:
    """New IPC and mount namespaces; ``/tmp`` read-only; ``scratch`` (under /tmp) a fresh
    tmpfs of ``size_mb`` owned by ``owner``; System V shared memory of the new IPC
    namespace at most ``shm_mb`` in all. Raises OSError when it cannot."""
    _check(libc().unshare(ctypes.c_int(CLONE_NEWIPC | CLONE_NEWNS)), "unshare")
    _limit_shared_memory(shm_mb)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("/tmp", "/tmp", None, MS_BIND | MS_REC)
    _mount(None, "/tmp", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={size_mb}m,mode=0700,uid={owner},gid={owner}")


def _limit_shared_memory(shm_mb: int) -> None:
    """The new IPC namespace's own limits (they start at the kernel's huge defaults)."""
    page = os.sysconf("SC_PAGE_SIZE")
    for name, value in (("shmmax", shm_mb << 20), ("shmall", (shm_mb << 20) // page),
                        ("shmmni", 64)):
        try:
            with open(f"/proc/sys/kernel/{name}", "w") as file:
                file.write(str(value))
        except OSError:  # a /proc of another namespace: the worker's memory watch holds
            pass


def first_to_go(score: int = 1000) -> None:
    """Raise this process's ``oom_score_adj`` (anyone may raise their own): when memory
    runs short, in its cgroup or on the whole machine, the kernel ends this process before
    any with a lower score, so learner code goes before the worker and the worker before
    the grader that holds everyone's results."""
    try:
        with open("/proc/self/oom_score_adj", "w") as file:
            file.write(str(score))
    except OSError:
        pass


def set_dumpable(dumpable: bool) -> None:
    """PR_SET_DUMPABLE for this process (who may read its /proc entries)."""
    libc().prctl(PR_SET_DUMPABLE, ctypes.c_ulong(int(dumpable)), 0, 0, 0)


def drop_capabilities() -> None:
    """No capabilities left, none to regain: bounding set, ambient, and the three sets."""
    c = libc()
    for cap in range(64):
        c.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)  # EINVAL past the last
    c.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(c.capset(header, data), "capset")
