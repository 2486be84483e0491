"""OS helpers used outside a PID namespace (the fallback path), tested in plain processes."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.sandbox import limits
from autograder.sandbox.protocol import Limits
from autograder.sandbox.worker import _children_of

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")


def test_readable_by_others_checks_the_file_and_every_directory() -> None:
    with tempfile.TemporaryDirectory() as name:
        top = Path(name)
        top.chmod(0o755)
        for path in top.parents:
            if not path.stat().st_mode & 0o001:
                pytest.skip(f"{path} is not searchable by others on this machine")
        folder = top / "inner"
        folder.mkdir(mode=0o755)
        target = folder / "file.txt"
        target.write_text("x")
        target.chmod(0o644)
        assert limits.readable_by_others(str(target))
        target.chmod(0o600)
        assert not limits.readable_by_others(str(target))
        target.chmod(0o644)
        folder.chmod(0o700)  # the file is readable, the folder cannot be entered
        assert not limits.readable_by_others(str(target))


def test_children_of_finds_our_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(10)"])
    try:
        assert child.pid in _children_of(os.getpid())
        assert child.pid not in _children_of(child.pid)
    finally:
        child.kill()
        child.wait()


def test_kill_leftovers_outside_a_namespace_kills_the_whole_process_group() -> None:
    assert not limits.in_own_pid_namespace()  # the test runner is not PID 1
    script = ("import subprocess, sys, time\n"
              "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; "
              "time.sleep(30)'])\nprint(grandchild.pid, flush=True)\ntime.sleep(30)\n")
    leader = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              start_new_session=True)
    assert leader.stdout is not None
    grandchild = int(leader.stdout.readline())
    limits.kill_leftovers(leader.pid)
    assert leader.wait(5) == -9
    deadline = time.monotonic() + 5
    while Path(f"/proc/{grandchild}").exists() and time.monotonic() < deadline:
        state = Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":  # dead, waiting for init to reap it
            break
        time.sleep(0.01)
    else:
        assert not Path(f"/proc/{grandchild}").exists()


def test_set_rlimits_in_a_forked_child() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: apply limits, report them, leave
        try:
            os.close(read)
            before = limits.address_space_bytes()
            limits.set_rlimits(Limits(cpu_s=2.5, memory_mb=64, file_mb=3, processes=9,
                                      open_files=40))
            values = [resource.getrlimit(r) for r in (
                resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC,
                resource.RLIMIT_NOFILE, resource.RLIMIT_CORE)]
            memory = resource.getrlimit(resource.RLIMIT_AS)[0] - before
            os.write(write, json.dumps([values, memory]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        values, memory = json.loads(pipe.read())
    os.waitpid(pid, 0)
    # CPU: ceil(2.5) = 3 s soft, 3 + 1 = 4 s hard. Files: 3 x 1024 x 1024 = 3145728 bytes.
    assert values == [[3, 4], [3145728, 3145728], [9, 9], [40, 40], [0, 0]]
    # 64 MB on top of the address space at the time: 64 x 1024 x 1024 = 67108864 bytes
    # (within a page or two, since reading /proc allocates a little).
    assert abs(memory - 67108864) < 1 << 20
