"""The memory of a whole job, all its processes together, as the worker measures it.

RLIMIT_AS bounds each process of a job on its own (:mod:`autograder.sandbox.limits`); a job
that starts several processes could hold that much in each. So the worker also adds up,
every :data:`CHECK_S`, what the job's processes hold (from ``/proc/<pid>/smaps_rollup``):

* what each holds privately, ``Private_Clean`` + ``Private_Dirty`` + ``Swap`` (pages
  inherited from the warm worker and never written are shared with it and not counted);
* when the job has more than one process, the shared memory they map, ``Pss_Shmem``
  summed over them: a page of a shared mapping that two of the job's processes map is
  "shared" in each, so no process holds it privately, but the proportional shares of all
  who map it add up to the page. (A shared page that only one process maps is counted in
  both sums: an overcount in the job's disfavour, only for a job that forks.)

It stops the job past ``Limits.memory_mb``. Memory that no process maps is refused or
bounded elsewhere: ``memfd_create`` and System V shared memory are refused by the
job's seccomp filter (:mod:`autograder.sandbox.seccomp`), ``/dev/shm`` is read-only, and
the job's scratch is a tmpfs of bounded size. Where the host lets the grader make a memory
cgroup, each worker runs in one (:mod:`autograder.sandbox.cgroup`) and the kernel charges
everything, files and kernel memory included, to one limit; this measure is what holds
everywhere, to within one polling interval of growth.
"""

from __future__ import annotations

import os

CHECK_S = 0.05
_FIELDS = (b"Private_Clean:", b"Private_Dirty:", b"Swap:")
_SHARED = b"Pss_Shmem:"


def held_kb(pid: int) -> tuple[int, int]:
    """(private, proportional shared memory) of one process in kB; zeros when it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as file:
            text = file.read(8192)
    except OSError:
        return 0, 0  # gone already, or not ours to read
    private = shared = 0
    for line in text.splitlines():
        if line.startswith(_FIELDS) or line.startswith(_SHARED):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                if line.startswith(_SHARED):
                    shared += int(parts[1])
                else:
                    private += int(parts[1])
    return private, shared


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
    """What the job's processes hold, in MB: privately, and the shared memory they map
    when there are several of them."""
    held = [held_kb(pid) for pid in job_processes(job_pid, whole_namespace)]
    private = sum(p for p, _ in held)
    shared = sum(s for _, s in held) if len(held) > 1 else 0
    return (private + shared) / 1024
