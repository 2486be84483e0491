"""Operating-system isolation: namespaces for a worker, limits and privileges for a job.

Linux only. Two layers:

* :func:`isolate_worker` runs once when a warm worker starts. As root it moves the worker
  into fresh network, PID, IPC and UTS namespaces (``unshare(2)``): the worker and every
  job it forks then have no network interface but a down loopback, see only their own
  processes, and the worker is PID 1 of its namespace, so that when it dies the kernel
  kills every process a job left behind. As an ordinary user it tries the same inside a
  new user namespace (works where unprivileged user namespaces are enabled). Where
  neither works, network isolation relies on the machine (a firewall or no route) and
  :class:`Isolation` says so.
* :func:`confine_job` runs in each freshly forked job process, before learner code:
  new session, fds 0/1/2 replaced, every other inherited fd closed, a scratch working
  directory, privileges dropped to ``nobody`` (65534) when root, and rlimits on CPU,
  address space, file size, processes and open files.
"""

from __future__ import annotations

import ctypes
import math
import os
import resource
import signal
from dataclasses import dataclass, field
from typing import NoReturn

from autograder.sandbox import seccomp, world
from autograder.sandbox.protocol import Limits

NOBODY = 65534
SIGNALS_PENDING = 64  # queued signals a job may hold (the kernel's own always get through)

# <linux/sched.h> and <linux/prctl.h>
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36

_NAMESPACES = CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS


@dataclass
class Isolation:
    """What :func:`isolate_worker` achieved, reported by each worker when it starts."""

    network_isolated: bool = False
    pid_namespace: bool = False
    drops_privileges: bool = False
    notes: list[str] = field(default_factory=list)
    sandbox: str = "none"  # "bubblewrap" when the worker runs inside it
    fresh_world: bool = False    # each job: own IPC namespace, fresh tmpfs, /tmp read-only
    no_namespaces: bool = False  # each job: seccomp refuses new namespaces

    def to_wire(self) -> dict[str, object]:
        return dict(self.__dict__)


def _unshare(flags: int) -> str | None:
    """Call unshare(2); return None on success, else the error text."""
    if world.libc().unshare(ctypes.c_int(flags)) == 0:
        return None
    return os.strerror(ctypes.get_errno())


def _prctl(option: int, value: int) -> bool:
    return bool(world.libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0)


def die_with_parent() -> None:
    """SIGKILL this process when its parent ends (``PR_SET_PDEATHSIG``)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _map_own_ids() -> None:
    """Inside a new user namespace, keep our uid/gid (no root inside, no other ids)."""
    uid, gid = os.getuid(), os.getgid()
    with open("/proc/self/setgroups", "w") as file:
        file.write("deny")
    with open("/proc/self/uid_map", "w") as file:
        file.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as file:
        file.write(f"{gid} {gid} 1")


def _enter_namespaces(isolation: Isolation) -> bool:
    """Unshare the namespaces; True when a PID namespace awaits the next fork.

    As an ordinary user, first a user namespace (mapping our own ids, so we stay who we
    are), then the others inside it. CLONE_NEWPID comes in the last call only: once it
    succeeds the next fork *must* be the namespace's init, whatever else went wrong.
    """
    error = None
    if os.geteuid() != 0:
        error = _unshare(CLONE_NEWUSER)
        if error is None:
            try:
                _map_own_ids()
            except OSError as map_error:
                error = f"cannot map ids in the user namespace: {map_error}"
    error = error or _unshare(_NAMESPACES)
    if error is not None:
        isolation.notes.append(
            f"namespaces unavailable ({error}): network isolation relies on the machine, "
            "and processes a job leaves behind are cleaned up by process group only"
        )
        return False
    isolation.network_isolated = True
    return True


def contained_worker() -> Isolation:
    """The worker already runs inside bubblewrap (:mod:`autograder.sandbox.bwrap`): new
    namespaces, no capabilities, PID 1 of its own PID namespace. Only make it harder for a
    job (same uid inside) to reach into the worker."""
    _prctl(PR_SET_DUMPABLE, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return Isolation(network_isolated=True, pid_namespace=in_own_pid_namespace(),
                     drops_privileges=os.geteuid() == 0, sandbox="bubblewrap")


def isolate_worker() -> Isolation:
    """Put this (worker) process into its own namespaces; see the module docstring.

    When a PID namespace was created, this forks: the parent stays outside, waits for the
    child and exits with its status; the child returns here as PID 1 of the namespace and
    dies with the parent (``PR_SET_PDEATHSIG``), so killing the parent ends everything.
    """
    isolation = Isolation(drops_privileges=os.geteuid() == 0)
    if not isolation.drops_privileges:
        isolation.notes.append("not root: learner code runs as the grader's user")
    elif not readable_by_others(os.__file__):
        isolation.notes.append(
            "the standard library is not readable by 'nobody': learner code can import "
            "only the modules the worker pre-imports"
        )
    if _enter_namespaces(isolation):
        if os.fork():
            _wait_and_mirror()
        die_with_parent()
        isolation.pid_namespace = True
    else:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
    # Not dumpable (set after the id maps, which need it): a job running as the same user
    # cannot ptrace the worker or write to its /proc/<pid>/mem. SIGINT ignored: as PID 1
    # of its namespace with no handler left, the worker is deaf to signals from inside.
    _prctl(PR_SET_DUMPABLE, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return isolation


def _wait_and_mirror() -> NoReturn:
    """Outer half of the worker: release the pipes, wait, exit like the inner half."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    status = os.wait()[1]
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def readable_by_others(path: str) -> bool:
    """Whether a user with no special relation to ``path`` could read it (mode bits only)."""
    path = os.path.realpath(path)
    if not os.stat(path).st_mode & 0o004:
        return False
    parent = os.path.dirname(path)
    while True:
        if not os.stat(parent).st_mode & 0o001:
            return False
        if parent == os.path.dirname(parent):
            return True
        parent = os.path.dirname(parent)


def in_own_pid_namespace() -> bool:
    """True in the inner worker: PID 1 of a namespace created by :func:`isolate_worker`."""
    return os.getpid() == 1


def kill_leftovers(job_pid: int) -> None:
    """SIGKILL everything a job started: the whole namespace when we are its PID 1,
    otherwise the job's process group."""
    try:
        if in_own_pid_namespace():
            os.kill(-1, signal.SIGKILL)  # every process in our namespace except us
        else:
            os.killpg(job_pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def redirect_fds(stdout_fd: int, result_fd: int) -> int:
    """fd 0 <- /dev/null, fds 1 and 2 <- ``stdout_fd``; keep a private copy of
    ``result_fd`` above 2 and close every other inherited descriptor. Returns the copy."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stdout_fd, 2)
    private = os.dup(result_fd)  # lowest free fd >= 3, since 0-2 are taken
    os.closerange(3, private)
    os.closerange(private + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    return private


def drop_privileges() -> None:
    """Become nobody: no supplementary groups, gid then uid (order matters)."""
    if os.geteuid() != 0:
        return
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    if os.getuid() != NOBODY or os.geteuid() != NOBODY:
        raise OSError("could not drop privileges")


def address_space_bytes() -> int:
    """Current virtual memory size of this process (VmSize from /proc/self/statm)."""
    with open("/proc/self/statm") as file:
        pages = int(file.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def set_rlimits(limits: Limits) -> None:
    """Apply the job's rlimits (soft = hard, so learner code cannot raise them)."""
    cpu = max(1, math.ceil(limits.cpu_s))
    # SIGXCPU at the soft limit; SIGKILL one second later if the learner catches SIGXCPU.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = address_space_bytes() + limits.memory_mb * 1024 * 1024
    _lower(resource.RLIMIT_AS, memory)
    _lower(resource.RLIMIT_FSIZE, limits.file_mb * 1024 * 1024)
    _lower(resource.RLIMIT_NPROC, limits.processes)
    _lower(resource.RLIMIT_NOFILE, limits.open_files)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Counted per user across every job of the batch (the sandbox user is shared): queued
    # signals and POSIX message queue bytes (mq_open is refused by the filter as well).
    _lower(resource.RLIMIT_SIGPENDING, SIGNALS_PENDING)
    _lower(resource.RLIMIT_MSGQUEUE, 0)


def _lower(which: int, value: int) -> None:
    """Set soft = hard = ``value``, or the inherited hard limit if that is lower (a worker
    inside bubblewrap already has limits for the whole worker)."""
    hard = resource.getrlimit(which)[1]
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def confine_job(limits: Limits, scratch: str, stdout_fd: int, result_fd: int,
                fresh_world: bool = False) -> int:
    """Everything a forked job process does before learner code; returns the result fd.
    ``fresh_world``: the job gets its own IPC namespace and a fresh tmpfs scratch, the
    worker's /tmp read-only (:mod:`autograder.sandbox.world`)."""
    os.setsid()
    private = redirect_fds(stdout_fd, result_fd)
    if fresh_world:
        owner = NOBODY if os.geteuid() == 0 else os.getuid()
        world.enter_private_world(scratch, owner, limits.file_mb * 4, limits.memory_mb)
    os.chdir(scratch)
    drop_privileges()
    if fresh_world:
        world.drop_capabilities()
    # Readable by the worker (which adds up the job's memory from /proc), as any process
    # of the same user is; the worker itself stays closed to the job.
    world.set_dumpable(True)
    world.first_to_go()  # once its /proc files are its own (they are root's until now)
    seccomp.forbid_namespaces()  # where it cannot, the worker's hello said so
    set_rlimits(limits)
    # Python ignores SIGXFSZ, so writing past RLIMIT_FSIZE raises OSError (EFBIG) in the
    # cell instead of killing the process; make sure that stays so.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    os.environ.update(HOME=scratch, TMPDIR=scratch, MPLCONFIGDIR=scratch)
    return private
