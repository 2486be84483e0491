"""A fresh world for every job: what one job leaves, the next cannot see; no job can make a
namespace of its own. Run on one warm worker, so every job lands where the last one ran."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from autograder.sandbox import Job, Limits, ValueRequest, WorkerPool, bwrap

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(1, Limits(cpu_s=4, wall_s=8, memory_mb=256)) as started:
        yield started


def value(pool: WorkerPool, source: str, name: str = "x") -> object:
    result = pool.run(Job("w", [source], [ValueRequest(name)]))
    outcome = result.values[name]
    assert outcome.ok, (outcome, result.cell_errors, result.message)
    return outcome.value


def test_the_worker_reports_both_walls(pool: WorkerPool) -> None:
    assert (pool.isolation.fresh_world, pool.isolation.no_namespaces) == (True, True)


def test_no_system_v_shared_memory(pool: WorkerPool) -> None:
    """Memory no process holds would escape the job's memory budget: shmget is refused."""
    made = value(pool, LIBC + "x = [libc.shmget(0x5eed, 1 << 20, 0o1666), ctypes.get_errno()]")
    assert made == [-1, 1]  # EPERM


def test_files_and_folders_do_not_outlive_the_job(pool: WorkerPool) -> None:
    plant = ("import os\nopen('note', 'w').write('secret')\nos.chmod('.', 0o777)\n"
             "x = []\nfor target in ('/tmp/note', os.path.dirname(os.getcwd())):\n"
             "    try:\n        open(target + '/n', 'w') if target != '/tmp/note' else "
             "open(target, 'w')\n        x.append('wrote ' + target)\n"
             "    except OSError as error:\n        x.append(error.errno)\n"
             "try:\n    os.rename(os.path.dirname(os.getcwd()), '/tmp/moved')\n"
             "except OSError as error:\n    x.append(error.errno)")
    assert value(pool, plant) == [30, 30, 30]  # EROFS: the worker's /tmp is read-only
    seen = value(pool, "import os\nx = [os.listdir('.'), sorted(os.listdir('/tmp'))]")
    # a fresh scratch; in /tmp only the worker's root (and the interpreter's folder when
    # the interpreter itself lives under /tmp)
    assert seen[0] == [] and len(set(seen[1]) - bwrap.interpreter_entries_in_tmp()) == 1


@pytest.mark.parametrize("flag", [0x10000000, 0x40000000, 0x00020000, 0x08000000])
def test_no_namespace_of_its_own(pool: WorkerPool, flag: int) -> None:
    """user, network, mount, IPC: refused by unshare and by clone."""
    source = LIBC + (f"u = libc.unshare({flag})\nimport subprocess\n"
                     "done = subprocess.run(['unshare', '-U', '-n', 'true'], "
                     "capture_output=True)\nx = [u, ctypes.get_errno(), done.returncode]")
    unshared, errno, code = value(pool, source)  # type: ignore[misc]
    assert (unshared, errno) == (-1, 1) and code != 0  # EPERM; the tool failed too


def test_memory_is_counted_for_all_the_jobs_processes(pool: WorkerPool) -> None:
    """Four processes of 100 MB each pass the per-process limit (256 MB) one by one, not
    together; System V shared memory is held to the same budget."""
    forks = ("import os, time\nfor _ in range(4):\n    if os.fork() == 0:\n"
             "        b = bytearray(100 << 20)\n        for i in range(0, len(b), 4096):\n"
             "            b[i] = 1\n        time.sleep(4)\n        os._exit(0)\n"
             "time.sleep(3)\nx = 1")
    result = pool.run(Job("many", [forks], [ValueRequest("x")]))
    assert result.status == "memory" and "processes together" in result.message
    assert result.wall_s < 3  # stopped as soon as the sum passed the budget
