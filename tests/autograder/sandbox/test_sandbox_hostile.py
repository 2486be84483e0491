"""Hostile submissions: each is contained with a clear message and the pool keeps working.

Limits are tight so the suite stays quick: 1.5 s per cell, 3 s of CPU, 5 s of wall clock,
128 MB of memory, 100,000 characters of output, 4 MB files, 16 processes. The wall clock
leaves room for a loaded test machine, where a job may get well under one core.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.sandbox import Job, JobResult, Limits, ValueRequest, WorkerPool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

LIMITS = Limits(cpu_s=3, wall_s=5, cell_timeout_s=1.5, call_timeout_s=0.5, memory_mb=128,
                output_bytes=100_000, file_mb=4, processes=16)


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(2, LIMITS) as started:
        yield started


def run(pool: WorkerPool, *cells: str, names: tuple[str, ...] = ("y",)) -> JobResult:
    """Run the cells, then check that the pool still runs an honest job correctly."""
    result = pool.run(Job("hostile", list(cells), [ValueRequest(name) for name in names]))
    honest = pool.run(Job("honest", ["y = 6 * 7"], [ValueRequest("y")]))
    assert (honest.status, honest.values["y"].value) == ("ok", 42)
    return result


def errors(result: JobResult) -> list[tuple[int, str]]:
    return [(error.cell, error.error_type) for error in result.cell_errors]


def test_infinite_loop_is_interrupted_and_the_next_cell_runs(pool: WorkerPool) -> None:
    result = run(pool, "while True:\n    pass", "y = 2")
    assert result.status == "timeout"
    assert result.message == "cell 0 ran longer than 1.5 s and was interrupted"
    assert errors(result) == [(0, "TimeLimitExceeded")]
    assert result.values["y"].value == 2


def test_loop_that_ignores_the_alarm_meets_the_cpu_limit() -> None:
    # A pool of its own: 1 s of CPU, and a wall clock far enough away not to come first.
    with WorkerPool(1, Limits(cpu_s=1, wall_s=15, cell_timeout_s=10)) as pool:
        result = run(pool, "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                           "while True:\n    pass")
    assert result.status == "timeout"
    assert result.message == "stopped at the CPU-time limit of 1 s"
    assert result.values["y"].type == "unavailable"


def test_sleeping_loop_that_swallows_interrupts_meets_the_wall_clock(pool: WorkerPool) -> None:
    result = run(pool, "import time\nwhile True:\n    try:\n        time.sleep(100)\n"
                       "    except BaseException:\n        pass")
    assert result.status == "timeout"
    assert result.message == "stopped at the wall-clock limit of 5 s"
    assert 5 <= result.wall_s < 9


def test_unbounded_allocation_is_a_memory_error(pool: WorkerPool) -> None:
    result = run(pool, "x = []\nwhile True:\n    x.append(bytearray(10**7))", "y = 2")
    assert result.status == "memory" and "out of memory" in result.message
    assert errors(result) == [(0, "MemoryError")]
    assert result.values["y"].value == 2


def test_enomem_from_the_system_counts_as_running_out_of_memory(pool: WorkerPool) -> None:
    # One anonymous map larger than the whole 128 MB allowance: mmap fails with ENOMEM.
    result = run(pool, "import mmap\nbig = mmap.mmap(-1, 512 * 2**20)", "y = 2")
    assert errors(result) == [(0, "OSError")]
    assert "Cannot allocate memory" in result.cell_errors[0].message
    assert result.status == "memory" and result.values["y"].value == 2


def test_sys_exit_is_reported_and_later_cells_still_run(pool: WorkerPool) -> None:
    result = run(pool, "import sys\nsys.exit(0)", "y = 2")
    assert result.status == "exited"
    assert result.message == "cell 0 called sys.exit(0) (later cells still ran)"
    assert result.values["y"].value == 2


def test_os_exit_ends_the_job_with_its_exit_status(pool: WorkerPool) -> None:
    result = run(pool, "y = 1", "import os\nos._exit(3)")
    assert result.status == "exited" and "exit status 3" in result.message
    assert result.values["y"].type == "unavailable"


def test_fork_bomb_is_stopped_by_the_process_limit(pool: WorkerPool) -> None:
    # Guarded twice: RLIMIT_NPROC (16) is what must stop it; the loop bound is a backstop
    # so that a broken limit cannot take the test machine down.
    bomb = "import os\nfor _ in range(12):\n    os.fork()"
    start = time.monotonic()
    result = run(pool, bomb, "y = 2")
    assert errors(result)[:1] == [(0, "BlockingIOError")]
    assert "Resource temporarily unavailable" in result.cell_errors[0].message
    assert result.values["y"].value == 2 and result.status == "ok"
    assert time.monotonic() - start < 4


def test_printing_a_billion_characters_stops_at_the_output_limit(pool: WorkerPool) -> None:
    result = run(pool, "for _ in range(10**6):\n    print('x' * 999)", "y = 2")
    assert result.status == "output_limit"
    assert result.message == "printed more than 100000 characters; printing was stopped"
    assert errors(result) == [(0, "OutputLimitExceeded")]
    assert result.values["y"].value == 2  # the other results still come back
    assert result.stdout_tail.endswith("x\n") and len(result.stdout_tail) <= 4000


def test_raw_writes_to_fd_1_are_bounded_too(pool: WorkerPool) -> None:
    result = run(pool, "import os\nwhile True:\n    os.write(1, b'x' * 65536)")
    assert result.status == "output_limit" and "more than 100000 bytes" in result.message


def test_redefining_len_does_not_switch_the_output_limit_off(pool: WorkerPool) -> None:
    result = run(pool, "__builtins__.__dict__['len'] = lambda *a: 0\n"
                       "for _ in range(10**6):\n    print('x' * 999)")
    assert result.status == "output_limit"


def test_an_object_equal_to_everything_is_not_an_answer(pool: WorkerPool) -> None:
    result = run(pool, "class Yes:\n    def __eq__(self, other):\n        return True\n"
                       "    __hash__ = object.__hash__\ny = Yes()")
    assert result.values["y"].type == "not_plain"
    assert result.values["y"].message == "not plain data: __main__.Yes"
    assert result.values["y"].type_name == "__main__.Yes"


def test_a_float_subclass_with_an_evil_float_is_an_integrity_failure(pool: WorkerPool) -> None:
    result = run(pool, "class F(float):\n    def __float__(self):\n        return 3.0\n"
                       "    def __eq__(self, other):\n        return True\ny = F(1.0)")
    assert result.values["y"].type == "integrity"
    assert result.values["y"].message == (
        "an instance of a custom subclass: __main__.F (a subclass of float)")


def test_redefined_builtins_do_not_fool_the_conversion(pool: WorkerPool) -> None:
    tamper = ("b = __builtins__.__dict__\n"
              "b['isinstance'] = lambda *a: True\nb['type'] = lambda *a: float\n"
              "b['issubclass'] = lambda *a: False\nb['repr'] = lambda x: '42.0'\n"
              "class F(float):\n    pass\ny = F(1.0)\nz = 3.5")
    result = run(pool, tamper, names=("y", "z"))
    assert result.values["y"].type == "integrity"
    assert result.values["z"].value == 3.5


def test_patching_json_does_not_change_the_report(pool: WorkerPool) -> None:
    result = run(pool, "import json, json.encoder\njson.dumps = lambda *a, **k: '{}'\n"
                       "json.encoder.c_encode_basestring_ascii = None\ny = 'kept'")
    assert result.values["y"].value == "kept"


def test_host_files_are_not_in_the_sandbox_at_all(pool: WorkerPool) -> None:
    # bubblewrap's root holds only /usr, the interpreter and its packages: a folder of the
    # grader's (even a world-readable one) does not exist for the job.
    assert pool.isolation.sandbox == "bubblewrap"
    folder = Path(tempfile.mkdtemp(dir=Path.home() if Path.home().is_dir() else None))
    try:
        folder.chmod(0o755)
        (folder / "public.txt").write_text("public")
        (folder / "public.txt").chmod(0o644)
        result = run(pool, f"y = open({str(folder / 'public.txt')!r}).read()",
                     "import os\nroot = sorted(os.listdir('/'))", names=("y", "root"))
    finally:
        (folder / "public.txt").unlink()
        folder.rmdir()
    assert errors(result) == [(0, "FileNotFoundError")]
    assert set(result.values["root"].value) <= {
        "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "proc", "dev", "tmp", "opt",
        *(Path(os.path.realpath(p)).parts[1] for p in (sys.prefix, sys.base_prefix)),
        *(Path(os.path.abspath(p)).parts[1] for p in (sys.prefix, sys.base_prefix))}


def test_a_job_cannot_list_the_scratch_directories_of_others(pool: WorkerPool) -> None:
    if not pool.isolation.drops_privileges:
        pytest.skip("the grader is not root: learner code runs as the grader's own user")
    result = run(pool, "import os\nopen('mine.txt', 'w').close()\ny = os.listdir('.')",
                 "others = os.listdir('..')", names=("y", "others"))
    assert result.values["y"].value == ["mine.txt"]  # its own directory is writable
    assert errors(result) == [(1, "PermissionError")]


def test_the_network_is_unreachable(pool: WorkerPool) -> None:
    if not pool.isolation.network_isolated:
        pytest.skip("no network namespace here: isolation relies on the machine's network")
    result = run(pool, "import socket\ns = socket.socket()\ns.settimeout(2)\n"
                       "s.connect(('1.1.1.1', 53))\ny = 'connected'")
    assert result.values["y"].type == "missing"
    assert errors(result) == [(0, "OSError")]
    assert "unreachable" in result.cell_errors[0].message


def test_huge_files_stop_at_the_file_size_limit(pool: WorkerPool) -> None:
    result = run(pool, "with open('big', 'wb') as f:\n    f.write(b'x' * (100 * 2**20))",
                 "y = 2")
    assert errors(result) == [(0, "OSError")]
    assert "File too large" in result.cell_errors[0].message
    assert result.values["y"].value == 2


def test_killing_the_parent_does_not_kill_the_worker(pool: WorkerPool) -> None:
    if not (pool.isolation.drops_privileges or pool.isolation.pid_namespace):
        pytest.skip("same user and no PID namespace: the worker is killable and gets replaced")
    workers = [worker.process for worker in pool._workers]
    result = run(pool, "import os\nos.kill(os.getppid(), 9)", "y = 2")
    # As root the job (nobody) may not signal the worker; as a normal user it may, but the
    # worker is PID 1 of its namespace and the kernel drops the signal.
    assert errors(result) in ([(0, "PermissionError")], [])
    assert result.values["y"].value == 2
    assert [worker.process for worker in pool._workers] == workers  # none was replaced


def test_killing_every_process_in_reach_spares_other_jobs(pool: WorkerPool) -> None:
    if not pool.isolation.pid_namespace:
        pytest.skip("without a PID namespace kill(-1) would reach the grader's own processes")
    victim = Job("victim", ["import time\ntime.sleep(0.6)\nv = 'alive'"], [ValueRequest("v")])
    killer = Job("killer", ["import os, time\ntime.sleep(0.2)\nos.kill(-1, 9)"])
    results = {result.job_id: result for result in pool.map([victim, killer])}
    assert results["victim"].status == "ok"
    assert results["victim"].values["v"].value == "alive"


def test_recursion_bomb_is_a_recursion_error(pool: WorkerPool) -> None:
    result = run(pool, "def f(n):\n    return f(n + 1)\nf(0)", "y = 2")
    assert errors(result) == [(0, "RecursionError")]
    assert result.values["y"].value == 2


def test_c_stack_overflow_after_raising_the_limit_is_a_crash(pool: WorkerPool) -> None:
    result = run(pool, "import sys\nsys.setrecursionlimit(10**6)\n"
                       "def f(n):\n    return sorted([0], key=lambda _: f(n + 1))\nf(0)")
    assert result.status == "crashed" and "SIGSEGV" in result.message


def test_a_syntax_error_cell_does_not_stop_the_valid_one(pool: WorkerPool) -> None:
    result = run(pool, "def broken(:\n    pass", "y = 2")
    assert [(e.cell, e.error_type, e.line) for e in result.cell_errors] == [
        (0, "SyntaxError", 1)]
    assert result.values["y"].value == 2 and result.status == "ok"


def test_processes_left_behind_are_killed_when_the_job_ends(pool: WorkerPool) -> None:
    daemon = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(30)\n"
              "    os._exit(0)\ny = 2")
    result = run(pool, daemon)
    assert result.values["y"].value == 2
    # Each worker is PID 1 of its own PID namespace: after a job only it and the next job
    # exist there (run() already ran one honest job on one worker; ask both).
    census = Job("census", ["import os\npids = sorted(int(p) for p in os.listdir('/proc') "
                            "if p.isdigit())\nme = os.getpid()"],
                 [ValueRequest("pids"), ValueRequest("me")])
    for found in pool.map([census, census]):
        assert found.values["pids"].value == [1, found.values["me"].value]


def test_spraying_garbage_into_every_fd_cannot_corrupt_the_report(pool: WorkerPool) -> None:
    result = run(pool, "import os\nfor fd in range(3, 64):\n    try:\n"
                       "        os.write(fd, b'{\"forged\": 1}\\n')\n    except OSError:\n"
                       "        pass\ny = 2")
    assert result.status == "ok" and result.values["y"].value == 2


def test_closing_every_fd_is_reported_as_interference(pool: WorkerPool) -> None:
    result = run(pool, "import os\nos.closerange(3, 1000)\ny = 2")
    assert result.status == "crashed" and "interfered with the sandbox" in result.message


def test_background_threads_do_not_outlive_the_job(pool: WorkerPool) -> None:
    result = run(pool, "import threading\ndef spin():\n    while True:\n        pass\n"
                       "threading.Thread(target=spin, daemon=True).start()\ny = 2")
    assert result.status == "ok" and result.values["y"].value == 2


def test_reading_stdin_gets_end_of_file(pool: WorkerPool) -> None:
    result = run(pool, "y = input()")
    assert errors(result) == [(0, "EOFError")]
