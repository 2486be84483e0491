"""A memory cgroup around a sandboxed process tree, where the host lets the grader make one.

The worker's own measure of a job's memory (:mod:`autograder.sandbox.memory`) reads what
the job's processes map; the kernel charges more than that: files in the job's tmpfs, pages
of a shared mapping, socket buffers, page tables. A memory cgroup charges all of it to one
account and enforces one limit, without polling. :class:`MemoryGroup` is such an account:
made beside the grader's own cgroup, joined by a process as it starts (``preexec``), read
for how often the kernel had to kill inside it (``oom_kills``), and removed when its
processes are gone.

Where it can be made:

* **cgroup v2** (one unified hierarchy): under the grader's own cgroup when that cgroup
  offers the ``memory`` controller to its children (``cgroup.subtree_control``), or can be
  made to: a cgroup delegated to the grader's user with the controller available
  (``systemd-run --user --scope -p Delegate=yes workbook grade ...``), where the grader
  first moves itself into a leaf group of its own (:func:`_offer_memory`). The grader's
  groups are then its siblings there.
* **cgroup v1** (a ``memory`` hierarchy of its own): under the grader's memory cgroup when
  that folder is writable (root, or a folder given to the user).

Elsewhere :func:`available` says why not, and the worker's accounting is what holds.
Each group's limit is ``memory.max`` (v2) or ``memory.limit_in_bytes`` (v1), with swap
held at zero where the kernel lets us, so that the limit is the job's whole footprint.
Anyone starting a sandboxed process tree can use it (a lab's ranks' processes too)::

    group = MemoryGroup.create("ranks", limit_bytes)       # None where not available
    subprocess.Popen(argv, preexec_fn=group.preexec if group else None)
    ...
    group.oom_kills()   # > 0: the kernel stopped a process of the tree for memory
    group.remove()      # once its processes have ended
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from functools import cache

PREFIX = "wb-sandbox-"
LEAF_PREFIX = "wb-grader-"  # where a grader moves itself on cgroup v2 (see _offer_memory)
_COUNTER = itertools.count()


@dataclass(frozen=True)
class _Base:
    version: int  # 1 or 2
    path: str     # the folder new groups are made in


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, file system type, super options) of every cgroup mount."""
    found = []
    try:
        with open("/proc/self/mountinfo") as file:
            for line in file:
                head, _, tail = line.partition(" - ")
                fields, rest = head.split(), tail.split()
                if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
                    found.append((fields[4], rest[0], rest[2]))
    except OSError:
        pass
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup per hierarchy: "" for v2, the controller list for v1."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as file:
            for line in file:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3:
                    paths[parts[1]] = parts[2]
    except OSError:
        pass
    return paths


def _read(path: str) -> str:
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return ""


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w") as file:
            file.write(text)
        return True
    except OSError:
        return False


def _v2_base(mounts: list[tuple[str, str, str]], own: dict[str, str]) -> _Base | None:
    mount = next((point for point, kind, _ in mounts if kind == "cgroup2"), None)
    if mount is None or "" not in own:
        return None
    folder = os.path.join(mount, own[""].lstrip("/"))
    if not os.access(folder, os.W_OK | os.X_OK):
        return None
    offered = _read(os.path.join(folder, "cgroup.subtree_control")).split()
    if "memory" not in offered and not _offer_memory(folder):
        return None
    return _Base(2, folder)


def _offer_memory(folder: str) -> bool:
    """Make the grader's own (delegated) cgroup offer the memory controller to its children.

    cgroup v2 lets a cgroup hand a controller to its children only while no process sits
    in it; a grader started in a delegated cgroup of its own (``systemd-run --user
    --scope -p Delegate=yes``) is such a process. So it moves itself into a leaf group
    (``wb-grader-<pid>``, removed by the next grader once empty) first, then enables
    ``+memory``. If that fails (another process
    shares the cgroup, or the controller is not delegated), it moves back and says no."""
    if "memory" not in _read(os.path.join(folder, "cgroup.controllers")).split():
        return False
    leaf = os.path.join(folder, f"{LEAF_PREFIX}{os.getpid()}")
    try:
        os.mkdir(leaf, 0o755)
    except OSError:
        return False
    if _write(os.path.join(leaf, "cgroup.procs"), str(os.getpid())) \
            and _write(os.path.join(folder, "cgroup.subtree_control"), "+memory"):
        return True
    _write(os.path.join(folder, "cgroup.procs"), str(os.getpid()))
    try:
        os.rmdir(leaf)
    except OSError:
        pass
    return False


def _v1_base(mounts: list[tuple[str, str, str]], own: dict[str, str]) -> _Base | None:
    mount = next((point for point, kind, options in mounts
                  if kind == "cgroup" and "memory" in options.split(",")), None)
    where = next((path for controllers, path in own.items()
                  if "memory" in controllers.split(",")), None)
    if mount is None or where is None:
        return None
    folder = os.path.join(mount, where.lstrip("/"))
    if not os.access(folder, os.W_OK | os.X_OK) \
            or not os.path.exists(os.path.join(folder, "memory.limit_in_bytes")):
        return None
    return _Base(1, folder)


@cache
def _base() -> _Base | None:
    mounts, own = _mounts(), _own_paths()
    base = _v2_base(mounts, own) or _v1_base(mounts, own)
    if base is not None:
        sweep(base.path)
    return base


def sweep(folder: str) -> list[str]:
    """Remove the empty groups that a grader no longer running left in ``folder`` (one
    killed outright never removed its own); returns their names. A group still holding a
    process, or made by a grader still running, is left alone."""
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        prefix = next((p for p in (PREFIX, LEAF_PREFIX) if name.startswith(p)), "")
        owner = name[len(prefix):].split("-", 1)[0] if prefix else ""
        if not owner.isdigit() or _running(int(owner)):
            continue
        try:
            os.rmdir(os.path.join(folder, name))
            removed.append(name)
        except OSError:
            pass
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def available() -> str:
    """"" when groups can be made here, else why not (for the batch's isolation text)."""
    if _base() is not None:
        return ""
    if not _mounts():
        return "no cgroup file system is mounted"
    return ("no memory cgroup the grader may create groups in (cgroup v2 without the memory "
            "controller delegated to this user, or a cgroup v1 memory folder it cannot "
            "write)")


class MemoryGroup:
    """One memory cgroup with a limit; see the module docstring."""

    def __init__(self, version: int, path: str) -> None:
        self.version, self.path = version, path
        self._procs = os.path.join(path, "cgroup.procs")

    @classmethod
    def create(cls, name: str, limit_bytes: int) -> MemoryGroup | None:
        """A new group holding at most ``limit_bytes`` (memory and swap together), or None
        where no group can be made here."""
        base = _base()
        if base is None:
            return None
        path = os.path.join(base.path, f"{PREFIX}{os.getpid()}-{next(_COUNTER)}-{name}")
        try:
            os.mkdir(path, 0o755)
        except OSError:
            return None
        group = cls(base.version, path)
        if not group._limit(limit_bytes):
            group.remove()
            return None
        return group

    def _limit(self, limit_bytes: int) -> bool:
        def at(name: str) -> str:
            return os.path.join(self.path, name)

        if self.version == 2:
            _write(at("memory.swap.max"), "0")  # absent without swap accounting
            return _write(at("memory.max"), str(limit_bytes))
        if not _write(at("memory.limit_in_bytes"), str(limit_bytes)):
            return False
        _write(at("memory.memsw.limit_in_bytes"), str(limit_bytes))  # swap accounting on
        _write(at("memory.swappiness"), "0")
        return True

    def preexec(self) -> None:
        """Join this group (the calling process, and so all it starts): a ``preexec_fn``.
        Raises OSError if the kernel refuses, so that nothing starts outside the limit."""
        with open(self._procs, "w") as file:
            file.write("0")

    def add(self, pid: int) -> None:
        """Move a running process into this group (not its existing children)."""
        with open(self._procs, "w") as file:
            file.write(str(pid))

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in this group for want of memory."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        for line in _read(os.path.join(self.path, name)).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def usage_bytes(self) -> int:
        """What the kernel charges to the group now."""
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        text = _read(os.path.join(self.path, name)).strip()
        return int(text) if text.isdigit() else 0

    def pids(self) -> list[int]:
        return [int(p) for p in _read(self._procs).split() if p.isdigit()]

    def remove(self) -> bool:
        """Remove the group once its processes have ended; False while any is left."""
        try:
            os.rmdir(self.path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False
