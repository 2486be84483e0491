"""A fresh world for every job, and no namespaces of its own: set up in the forked job process.

Two things a warm worker cannot give a job by itself, done in the job process before it
drops privileges (:func:`autograder.sandbox.limits.confine_job`):

* :func:`enter_private_world`: its own IPC namespace (System V shared memory, semaphores
  and message queues die with the job) and its own mount namespace, in which the worker's
  ``/tmp`` is read-only and the job's scratch folder is a fresh tmpfs. Nothing a job
  leaves (files, shared memory, renamed or chmodded folders) reaches the next job, which
  belongs to another student as often as not. It needs CAP_SYS_ADMIN in the worker's user
  namespace: bubblewrap grants it to the worker (:mod:`autograder.sandbox.bwrap`), and the
  job gives up every capability right after (:func:`drop_capabilities`).
* :func:`forbid_namespaces`: a seccomp filter refusing ``unshare``, ``setns`` and a
  ``clone`` that asks for a new namespace (``clone3`` answers ENOSYS, so the C library falls
  back to ``clone``), and ``shmget``: System V shared memory is memory no process holds, so
  no per-process measure sees it (``/dev/shm`` is read-only already). The same wall whether
  the grader runs as root or not, and without bubblewrap too.

Linux only; x86-64 and arm64 (elsewhere :func:`forbid_namespaces` says why it cannot).
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from functools import cache

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
# Every CLONE_NEW* flag clone(2) accepts (not CLONE_NEWTIME: its bit is the exit signal's).
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 \
    | 0x20000000 | 0x40000000
# (audit arch, clone, unshare, setns, clone3, shmget) per machine.
_SYSCALLS = {"x86_64": (0xC000003E, 56, 272, 308, 435, 29),
             "aarch64": (0xC00000B7, 220, 97, 268, 435, 194)}
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38


@cache
def _libc() -> ctypes.CDLL:
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

    _check(_libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags),
                         enc(data)), f"mount {target}")


def enter_private_world(scratch: str, owner: int, size_mb: int, shm_mb: int = 64) -> None:
    """New IPC and mount namespaces; ``/tmp`` read-only; ``scratch`` (under /tmp) a fresh
    tmpfs of ``size_mb`` owned by ``owner``; System V shared memory of the new IPC
    namespace at most ``shm_mb`` in all. Raises OSError when it cannot."""
    _check(_libc().unshare(ctypes.c_int(CLONE_NEWIPC | CLONE_NEWNS)), "unshare")
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


def set_dumpable(dumpable: bool) -> None:
    """PR_SET_DUMPABLE for this process (who may read its /proc entries)."""
    _libc().prctl(PR_SET_DUMPABLE, ctypes.c_ulong(int(dumpable)), 0, 0, 0)


def drop_capabilities() -> None:
    """No capabilities left, none to regain: bounding set, ambient, and the three sets."""
    libc = _libc()
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)  # EINVAL past the last
    libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(libc.capset(header, data), "capset")


def _filter(arch: int, clone: int, unshare: int, setns: int, clone3: int,
            shmget: int) -> bytes:
    """The BPF program: classic BPF instructions (code, jt, jf, k)."""
    ld_arch, ld_nr, ld_arg0 = (0x20, 0, 0, 4), (0x20, 0, 0, 0), (0x20, 0, 0, 16)
    program = [
        ld_arch, (0x15, 1, 0, arch), (0x06, 0, 0, _EPERM),   # another ABI: refuse
        ld_nr, (0x35, 0, 1, 0x40000000), (0x06, 0, 0, _EPERM),  # x32 numbers: refuse
        (0x15, 0, 1, unshare), (0x06, 0, 0, _EPERM),
        (0x15, 0, 1, setns), (0x06, 0, 0, _EPERM),
        (0x15, 0, 1, shmget), (0x06, 0, 0, _EPERM),  # System V shared memory: none
        (0x15, 0, 1, clone3), (0x06, 0, 0, _ENOSYS),
        (0x15, 0, 3, clone), ld_arg0, (0x45, 0, 1, CLONE_NEW_FLAGS), (0x06, 0, 0, _EPERM),
        (0x06, 0, 0, _ALLOW),
    ]
    return b"".join(struct.pack("=HBBI", *insn) for insn in program)


def forbid_namespaces() -> str | None:
    """Install the seccomp filter in this process (and all it starts); None on success,
    else why not."""
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return f"no seccomp filter for {platform.machine()}"
    code = _filter(*numbers)
    buffer = ctypes.create_string_buffer(code, len(code))

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0) != 0:
        return "prctl(PR_SET_NO_NEW_PRIVS) failed"
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER),
                  ctypes.byref(program), 0, 0) != 0:
        return f"seccomp refused the filter ({os.strerror(ctypes.get_errno())})"
    return None
