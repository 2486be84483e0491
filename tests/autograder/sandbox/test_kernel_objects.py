"""Kernel objects a job could make that outlive it or reach past it are refused: the
keyrings, memory no process maps, event and submission queues, kernel programs.

One warm worker runs one job that tries each call once (with arguments that work for an
ordinary user on a default kernel) and writes down (return value, errno) for each; every
test then reads its own call's line. The numbers are x86-64's, from ``asm/unistd_64.h``.
"""

from __future__ import annotations

import platform
import struct
import sys
from collections.abc import Iterator

import pytest

from autograder.sandbox import Job, Limits, ValueRequest, WorkerPool

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() != "x86_64",
    reason="Linux sandbox, x86-64 call numbers")

EPERM = 1
# name: C arguments of the call (after its number), each an ordinary user's use of it.
PROBES = {
    # A key in the user's keyring (-4, KEY_SPEC_USER_KEYRING): per user, not per namespace;
    # as root the sandbox's user is the real nobody and the key outlives the batch.
    "add_key": "248, b'user', b'planted', b'secret', 6, ctypes.c_int(-4)",
    "request_key": "249, b'user', b'planted', None, ctypes.c_int(-4)",
    "keyctl": "250, 0, ctypes.c_int(-4), 0",           # KEYCTL_GET_KEYRING_ID, user keyring
    "memfd_create": "319, b'hidden', 0",              # memory no process needs to map
    "memfd_secret": "447, 0",
    "userfaultfd": "323, 1",                          # UFFD_USER_MODE_ONLY
    "io_uring_setup": "425, 4, ctypes.byref(ctypes.create_string_buffer(120))",
    "bpf": "321, 0, ctypes.byref(ctypes.create_string_buffer(128)), 128",
    "perf_event_open": ("298, ctypes.byref(ctypes.create_string_buffer(b'\\x01' + 127 * b'\\0')),"
                        " 0, -1, -1, 0"),
    "fanotify_init": "300, 0x200, 0",                # FAN_REPORT_FID: open to any user
    "inotify_init1": "294, 0",                        # per-user instances (128 by default)
    "mq_open": "240, b'q', 0o100 | 2, 0o600, None",   # O_CREAT | O_RDWR
    "msgget": "68, 0, 0o1600",                        # IPC_PRIVATE | IPC_CREAT
    "semget": "64, 0, 4, 0o1600",
}
SOURCE = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\nx = {}\n"
    + "".join(f"ctypes.set_errno(0)\nx[{name!r}] = [libc.syscall({args}), ctypes.get_errno()]\n"
              for name, args in PROBES.items())
    + "import resource\nlimits = [resource.getrlimit(resource.RLIMIT_SIGPENDING)[1], "
      "resource.getrlimit(resource.RLIMIT_MSGQUEUE)[1]]\n")


@pytest.fixture(scope="module")
def tried() -> Iterator[dict[str, list[int]]]:
    with WorkerPool(1, Limits(cpu_s=4, wall_s=8, memory_mb=256)) as pool:
        result = pool.run(Job("kernel-objects", [SOURCE], [ValueRequest("x"),
                                                           ValueRequest("limits")]))
        outcome, limits = result.values["x"], result.values["limits"]
        assert outcome.ok and limits.ok, (outcome, result.cell_errors, result.message)
        assert isinstance(outcome.value, dict)
        yield {**outcome.value, "limits": limits.value}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_the_call_is_refused(tried: dict[str, list[int]], name: str) -> None:
    assert tried[name] == [-1, EPERM]


def test_per_user_queues_are_bounded_per_job(tried: dict[str, list[int]]) -> None:
    """Queued signals and message-queue bytes count per user, and every job is the same
    user: each job may hold few of the first and none of the second."""
    pending, queues = tried["limits"]
    assert 0 < pending <= 64 and queues == 0


def test_the_probes_are_real_calls() -> None:
    """Outside the sandbox, in this process, the harmless ones work: the arguments above
    are a working use of each call, so a refusal in the job is the filter's doing."""
    import ctypes
    import os

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    for name in ("memfd_create", "inotify_init1"):
        fd = eval(f"libc.syscall({PROBES[name]})", {"ctypes": ctypes, "libc": libc})  # noqa: S307
        assert fd >= 0, (name, ctypes.get_errno())
        os.close(fd)


def test_a_labs_ranks_are_held_to_the_same_list() -> None:
    """A lab's ranks run learner code too, in processes beside other learners' ranks: every
    call refused to a job is refused to them, whether or not their process may fork."""
    from autograder.sandbox import seccomp

    for may_fork in (False, True):
        refused = [c for c in seccomp.RANKS_CALLS
                   if not may_fork or c not in seccomp.PROCESS_CALLS]
        assert set(seccomp.KERNEL_OBJECT_CALLS) <= set(refused)
    code = seccomp.program("x86_64", seccomp.RANKS_CALLS, clone_namespaces=False)
    for number in (248, 249, 250, 319, 425, 321):  # keys, memfd, io_uring, bpf
        assert struct.pack("=HBBI", 0x15, 0, 1, number) in code
