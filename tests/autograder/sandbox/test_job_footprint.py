"""A job's memory is measured the way the kernel charges it: shared memory its processes
pass between them counts, and where a memory cgroup can be made, everything the worker and
its job hold is under one kernel-enforced limit (files and memory no process maps too)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.sandbox import Job, Limits, ValueRequest, WorkerPool, cgroup, pool, world
from autograder.sandbox.memory import held_kb

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
MB = 1 << 20

# Four processes in two pairs; each pair shares one 148 MB mapping, written 4 MB at a time
# by one of the two and touched by the other right after, so that no page stays private
# for long. 296 MB in all against a budget of 256 MB; no process holds more than 4 MB of
# it privately.
PAIRS = """
import mmap, os, time
SIZE, STEP = 148 << 20, 4 << 20
def pair():
    shared = mmap.mmap(-1, SIZE)
    go_r, go_w = os.pipe()
    done_r, done_w = os.pipe()
    if os.fork() == 0:
        for start in range(0, SIZE, STEP):
            shared[start:start + STEP] = b"x" * STEP
            os.write(go_w, b"."); os.read(done_r, 1)
        time.sleep(6); os._exit(0)
    for start in range(0, SIZE, STEP):
        os.read(go_r, 1)
        sum(shared[i] for i in range(start, start + STEP, 4096))
        os.write(done_w, b".")
    time.sleep(6); os._exit(0)
for _ in range(2):
    if os.fork() == 0:
        pair()
time.sleep(5)
x = 1
"""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[WorkerPool]:
    with WorkerPool(1, Limits(cpu_s=8, wall_s=10, memory_mb=256)) as started:
        yield started


def test_memory_shared_between_the_jobs_processes_counts(sandbox: WorkerPool) -> None:
    result = sandbox.run(Job("pairs", [PAIRS], [ValueRequest("x")]))
    assert result.status == "memory", (result.status, result.message)
    assert result.wall_s < 5


def test_a_shared_page_counts_once_per_job() -> None:
    """The measure itself, in this process: 64 MB written to a shared mapping show as the
    process's proportional share of shared memory (and as nothing else shared)."""
    import mmap

    before = held_kb(os.getpid())
    shared = mmap.mmap(-1, 64 * MB)
    shared[:] = b"y" * (64 * MB)
    private, proportional = held_kb(os.getpid())
    assert proportional - before[1] >= 63 * 1024
    shared.close()


def test_a_job_goes_before_its_worker_when_memory_runs_short(sandbox: WorkerPool) -> None:
    source = "x = int(open('/proc/self/oom_score_adj').read())"
    result = sandbox.run(Job("score", [source], [ValueRequest("x")]))
    assert result.values["x"].value == 1000


needs_group = pytest.mark.skipif(cgroup.available() != "",
                                 reason=f"no memory cgroup here: {cgroup.available()}")


@needs_group
def test_a_group_charges_memory_no_process_maps() -> None:
    """memfd pages written with write() are mapped by no process; the group's limit still
    holds them, and the kernel stops the process that passes it."""
    group = cgroup.MemoryGroup.create("test", 64 * MB)
    assert group is not None
    code = ("import os\nfd = os.memfd_create('held')\nfor _ in range(200):\n"
            "    os.write(fd, b'z' * (1 << 20))\nprint('kept 200 MB')")
    done = subprocess.run([sys.executable, "-c", code], preexec_fn=group.preexec,
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == -9 and b"kept" not in done.stdout
    assert group.oom_kills() >= 1
    assert group.remove()
    assert not os.path.exists(group.path)


@needs_group
def test_the_worker_and_its_job_share_one_kernel_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no headroom the group's limit is the job's budget, and the worker's own
    baseline and the job's files count in it: a job holding 200 MB of a 256 MB budget in
    memory and 60 MB in files passes the worker's measure but not the kernel's, which stops
    it, and the result says so."""
    monkeypatch.setattr(pool, "GROUP_HEADROOM_MB", 0)
    grow = ("for n in range(4):\n    open(f'f{n}', 'wb').write(b'f' * (15 << 20))\n"
            "b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
            "import time\ntime.sleep(1)\nx = 1")
    with WorkerPool(1, Limits(cpu_s=8, wall_s=10, memory_mb=256)) as small:
        paths = [w.group.path for w in small._workers if w.group is not None]
        assert paths
        result = small.run(Job("grow", [grow], [ValueRequest("x")]))
        assert result.status == "memory" and "kernel" in result.message, result
        again = small.run(Job("after", ["x = 2"], [ValueRequest("x")]))
        assert again.values["x"].value == 2  # the worker itself was not the one stopped
    deadline = time.monotonic() + 3
    while any(os.path.exists(p) for p in paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(os.path.exists(p) for p in paths)  # removed with the pool


def test_first_to_go_raises_the_score_of_this_process_only() -> None:
    code = ("from autograder.sandbox import world\nworld.first_to_go(700)\n"
            "print(open('/proc/self/oom_score_adj').read().strip())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True, cwd=os.path.dirname(pool.PROJECT_ROOT + "/x"))
    assert done.stdout.strip() == "700"
    assert world is not None


@needs_group
def test_groups_left_by_a_grader_that_was_killed_are_swept() -> None:
    """A grader killed outright leaves its empty groups; the next one removes them, and
    leaves those of a grader still running."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    gone = int(done.stdout)  # a process that has ended
    probe = cgroup.MemoryGroup.create("probe", 64 * MB)
    assert probe is not None
    base = os.path.dirname(probe.path)
    assert probe.remove()
    stale = os.path.join(base, f"{cgroup.PREFIX}{gone}-0-worker")
    alive = os.path.join(base, f"{cgroup.PREFIX}{os.getpid()}-999-worker")
    os.mkdir(stale)
    os.mkdir(alive)
    try:
        assert os.path.basename(stale) in cgroup.sweep(base)
        assert not os.path.exists(stale) and os.path.exists(alive)
    finally:
        for path in (stale, alive):
            if os.path.exists(path):
                os.rmdir(path)


def test_the_worker_goes_before_the_grader() -> None:
    with WorkerPool(1, Limits(cpu_s=4, wall_s=8, memory_mb=128)) as started:
        process = started._workers[0].process
        scores = []
        for pid in [process.pid, *_descendants(process.pid)]:
            with open(f"/proc/{pid}/oom_score_adj") as file:
                scores.append(int(file.read()))
    assert scores[-1] == 500  # the worker's interpreter, innermost
    with open("/proc/self/oom_score_adj") as file:
        assert int(file.read()) < 500  # the grader itself


def _descendants(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as file:
                    parent = int(file.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == pid:
                found.append(int(entry))
    return [d for child in found for d in (child, *_descendants(child))]


def _fake_v2(tmp_path: Path, controllers: str
             ) -> tuple[list[tuple[str, str, str]], dict[str, str], Path]:
    """A folder laid out as a delegated cgroup v2 (plain files stand for the kernel's)."""
    own = tmp_path / "user.slice" / "grader.scope"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text(controllers + "\n")
    (own / "cgroup.subtree_control").write_text("\n")
    (own / "cgroup.procs").write_text(f"{os.getpid()}\n")
    return [(str(tmp_path), "cgroup2", "rw")], {"": "/user.slice/grader.scope"}, own


def test_on_cgroup_v2_the_grader_moves_into_a_leaf_and_offers_memory(tmp_path: Path) -> None:
    mounts, own_paths, own = _fake_v2(tmp_path, "cpu memory pids")
    base = cgroup._v2_base(mounts, own_paths)
    assert base is not None and (base.version, base.path) == (2, str(own))
    leaf = own / f"{cgroup.LEAF_PREFIX}{os.getpid()}"
    assert (leaf / "cgroup.procs").read_text() == str(os.getpid())
    assert (own / "cgroup.subtree_control").read_text() == "+memory"


def test_on_cgroup_v2_without_the_memory_controller_nothing_moves(tmp_path: Path) -> None:
    mounts, own_paths, own = _fake_v2(tmp_path, "cpu pids")
    assert cgroup._v2_base(mounts, own_paths) is None
    assert sorted(p.name for p in own.iterdir()) == [
        "cgroup.controllers", "cgroup.procs", "cgroup.subtree_control"]
