"""The memory of a whole job, all its processes together, as the worker measures it.

RLIMIT_AS bounds each process of a job on its own (:mod:`autograder.sandbox.limits`); a job
that starts several processes could hold that much in each. So the worker also adds up,
every :data:`CHECK_S`, what the job's processes hold privately (``Private_Clean`` +
``Private_Dirty`` + ``Swap`` from ``/proc/<pid>/smaps_rollup``: pages inherited from the
warm worker and never written are shared and not counted), and stops the job past
``Limits.memory_mb``. System V shared memory lives in the job's own IPC namespace, whose
size limits are set to the same budget when it is made (:mod:`autograder.sandbox.world`);
the job's scratch is a tmpfs of bounded size. A cgroup would account the same without
polling; a worker may not have one of its own (an ordinary user with no delegated cgroup),
so this measure is what holds everywhere, to within one polling interval of growth.
"""

from __future__ import annotations

import os

CHECK_S = 0.05
_FIELDS = (b"Private_Clean:", b"Private_Dirty:", b"Swap:")


def _private_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as file:
            text = file.read(8192)
    except OSError:
        return 0  # gone already, or not ours to read
    total = 0
    for line in text.splitlines():
        if line.startswith(_FIELDS):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                total += int(parts[1])
    return total


def _session_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read(4096).rsplit(b")", 1)[1].split()
        return int(fields[3])  # after state, ppid, pgrp: the session id
    except (OSError, IndexError, ValueError):
        return -1


def proc_is_ours() -> bool:
    """Whether /proc shows this worker's own PID namespace with the worker as PID 1 (inside
    bubblewrap), so that every other process listed there is the job's."""
    try:
        return os.readlink("/proc/self") == "1"
    except OSError:
        return False


def job_processes(job_pid: int, whole_namespace: bool) -> list[int]:
    """The job's processes: every process but the worker when the worker is PID 1 of its
    own namespace, else those of the job's session (the job calls setsid)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            pid = int(entry)
            if pid != me and (whole_namespace or _session_of(pid) == job_pid):
                found.append(pid)
    return found


def job_memory_mb(job_pid: int, whole_namespace: bool) -> float:
    """What the job's processes hold privately, in MB."""
    return sum(_private_kb(pid) for pid in job_processes(job_pid, whole_namespace)) / 1024
