"""Seccomp filters: the system calls a sandboxed process may not make, on x86-64 and arm64.

Two walls, each installed in a process and inherited by all it starts:

* :func:`forbid_namespaces` (every grading job): no ``unshare``, no ``setns``, no ``clone``
  asking for a new namespace (``clone3`` answers ENOSYS, so the C library falls back to
  ``clone``, where the flags can be read); and no kernel object that outlives the job or
  escapes its measures (:data:`KERNEL_OBJECT_CALLS`): no key in a keyring (keyrings belong
  to the user, not to a namespace: as root every job is the same real ``nobody``, whose
  keyrings outlive the batch), no ``memfd`` and no System V shared memory, message queue
  or semaphore set (memory no process needs to map, so no per-process measure sees it),
  no POSIX message queue, no ``userfaultfd``, ``io_uring``, ``bpf`` program, performance
  counter, ``fanotify`` or ``inotify`` instance (per-user counts and kernel memory
  outside every budget). docs/decisions.md lists what a job can still reach and why
  each is private to it.
* :func:`confine_ranks` (a lab's ranks' process forked from a warm server, beside the ranks'
  processes of other learners, :mod:`autograder.sandbox.rank_server`): all of the above, and
  nothing that reaches another process or outlives this one: no new process or thread at
  all, no signal to anyone (``kill`` and its relatives, pidfds), no ``ptrace`` or reading
  another process's memory, no socket (an abstract Unix socket would reach a sibling), no
  System V or POSIX message queue or semaphore set, no performance counters.

Numbers from the kernel's ``asm/unistd_64.h`` (x86-64) and ``asm-generic/unistd.h`` (arm64).
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

from autograder.sandbox import world

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
# Every CLONE_NEW* flag clone(2) accepts (not CLONE_NEWTIME: its bit is the exit signal's).
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 \
    | 0x20000000 | 0x40000000
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_NUMBERS = {  # name: (x86-64, arm64); None where the machine has no such call
    "clone": (56, 220), "clone3": (435, 435), "fork": (57, None), "vfork": (58, None),
    "unshare": (272, 97), "setns": (308, 268), "shmget": (29, 194),
    "kill": (62, 129), "tkill": (200, 130), "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138), "rt_tgsigqueueinfo": (297, 240),
    "pidfd_open": (434, 434), "pidfd_send_signal": (424, 424), "pidfd_getfd": (438, 438),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "kcmp": (312, 272), "socket": (41, 198), "socketpair": (53, 199),
    "msgget": (68, 186), "semget": (64, 190), "mq_open": (240, 180),
    "perf_event_open": (298, 241),
    "add_key": (248, 217), "request_key": (249, 218), "keyctl": (250, 219),
    "memfd_create": (319, 279), "memfd_secret": (447, 447), "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "bpf": (321, 280), "fanotify_init": (300, 262),
    "inotify_init": (253, None), "inotify_init1": (294, 26),
}
KERNEL_OBJECT_CALLS = (
    "add_key", "request_key", "keyctl", "memfd_create", "memfd_secret", "shmget", "msgget",
    "semget", "mq_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "bpf", "perf_event_open", "fanotify_init", "inotify_init",
    "inotify_init1")
NAMESPACE_CALLS = ("unshare", "setns", *KERNEL_OBJECT_CALLS)
RANKS_CALLS = NAMESPACE_CALLS + (
    "clone", "fork", "vfork", "kill", "tkill", "tgkill", "rt_sigqueueinfo",
    "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "ptrace",
    "process_vm_readv", "process_vm_writev", "kcmp", "socket", "socketpair")


def program(machine: str, refused: tuple[str, ...], clone_namespaces: bool) -> bytes:
    """The BPF program (classic instructions: code, jt, jf, k) refusing ``refused`` with
    EPERM, ``clone3`` with ENOSYS, and, when ``clone_namespaces``, a ``clone`` whose flags
    ask for a new namespace. Raises KeyError for a machine without a table."""
    column = 0 if machine == "x86_64" else 1 if machine == "aarch64" else -1
    if column < 0:
        raise KeyError(machine)
    ld_arch, ld_nr, ld_arg0 = (0x20, 0, 0, 4), (0x20, 0, 0, 0), (0x20, 0, 0, 16)
    code = [ld_arch, (0x15, 1, 0, _ARCH[machine]), (0x06, 0, 0, _EPERM),  # another ABI
            ld_nr, (0x35, 0, 1, 0x40000000), (0x06, 0, 0, _EPERM)]       # x32 numbers
    for name in refused:
        number = _NUMBERS[name][column]
        if number is not None:
            code += [(0x15, 0, 1, number), (0x06, 0, 0, _EPERM)]
    code += [(0x15, 0, 1, _number("clone3", column)), (0x06, 0, 0, _ENOSYS)]
    if clone_namespaces:
        code += [(0x15, 0, 3, _number("clone", column)), ld_arg0,
                 (0x45, 0, 1, CLONE_NEW_FLAGS), (0x06, 0, 0, _EPERM)]
    code.append((0x06, 0, 0, _ALLOW))
    return b"".join(struct.pack("=HBBI", *insn) for insn in code)


def _number(name: str, column: int) -> int:
    number = _NUMBERS[name][column]
    assert number is not None, name
    return number


def _install(code: bytes) -> str | None:
    buffer = ctypes.create_string_buffer(code, len(code))

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = world.libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0) != 0:
        return "prctl(PR_SET_NO_NEW_PRIVS) failed"
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER),
                  ctypes.byref(prog), 0, 0) != 0:
        return f"seccomp refused the filter ({os.strerror(ctypes.get_errno())})"
    return None


def supported() -> bool:
    """Whether this machine has a table here (x86-64 or arm64)."""
    return platform.machine() in _ARCH


def forbid_namespaces() -> str | None:
    """Install the grading job's filter in this process; None on success, else why not."""
    try:
        return _install(program(platform.machine(), NAMESPACE_CALLS, clone_namespaces=True))
    except KeyError:
        return f"no seccomp filter for {platform.machine()}"


PROCESS_CALLS = ("clone", "fork", "vfork")


def confine_ranks(may_fork: bool = False) -> str | None:
    """Install the ranks' process's filter in this process; None on success, else why not.
    ``may_fork`` leaves out the calls that start a process (a clone asking for a namespace
    is still refused): for a process that forks the ranks and walls each in itself."""
    refused = tuple(c for c in RANKS_CALLS if not may_fork or c not in PROCESS_CALLS)
    try:
        return _install(program(platform.machine(), refused, clone_namespaces=may_fork))
    except KeyError:
        return f"no seccomp filter for {platform.machine()}"
