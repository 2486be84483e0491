"""A lab's ranks' process (the learner's code itself) gets the sandbox's walls, and more: it is
forked from a warm server beside other learners' ranks' processes, so it must reach none of
them, nor the server, nor leave anything for the next one. And the trusted side leaves no
staged folder and no process behind."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from autograder.kinds.lab import sandbox_launch
from autograder.sandbox import bwrap
from solutions.sim import channel as simchannel
from solutions.sim import process as simprocess
from solutions.sim.bundle import source_bundle

PROBE = textwrap.dedent('''
    import ctypes, os, socket, threading

    def _errno(call):
        try:
            call()
            return 0
        except OSError as error:
            return error.errno or -1
        except RuntimeError:
            return -2

    def probe(flags, victims):
        """What this process is, what it may make, and whom it may reach (0 = it could)."""
        libc = ctypes.CDLL(None, use_errno=True)
        made = [0 if libc.unshare(flag) == 0 else ctypes.get_errno() for flag in flags]
        with open("/proc/self/status") as status:
            caps = [line.split()[1] for line in status if line.startswith("CapEff")]
        tried = {
            "write /tmp": _errno(lambda: open("/tmp/planted", "w").write("left behind")),
            "write /dev/shm": _errno(lambda: open("/dev/shm/planted", "w").write("x")),
            "fork": _errno(os.fork),
            "thread": _errno(lambda: threading.Thread(target=print).start()),
            "socket": _errno(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
            "shmget": 0 if libc.shmget(0, 4096, 0o1000 | 0o600) >= 0 else ctypes.get_errno(),
            "msgget": 0 if libc.msgget(0, 0o1000 | 0o600) >= 0 else ctypes.get_errno(),
            "ptrace server": 0 if libc.ptrace(16, os.getppid(), 0, 0) == 0
                             else ctypes.get_errno(),
        }
        for pid in [os.getppid()] + victims:
            tried[f"kill {pid}"] = _errno(lambda: os.kill(pid, 0))
            tried[f"mem {pid}"] = _errno(lambda: open(f"/proc/{pid}/mem", "rb").read(1))
        return [os.getuid(), caps[0], made, sorted(os.listdir("/tmp")), tried, os.getpid()]
''')
SLEEPER = "import time\ndef sleeper(seconds):\n    time.sleep(seconds)\n    return 1\n"
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID = (
    0x10000000, 0x00020000, 0x08000000, 0x40000000, 0x20000000)
FLAGS = [CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID]

needs_bwrap = pytest.mark.skipif(bool(bwrap.unavailable_reason()),
                                 reason="bubblewrap does not work here")


def _host(source: str, name: str) -> simprocess.Host:
    host = simprocess.start_host(source_bundle(source, f"{name}.py", name), sandbox_launch(),
                                 20.0)
    assert isinstance(host, simprocess.Host), host
    return host


def _probe(victims: list[int]) -> list[Any]:
    host = _host(PROBE, "probe")
    try:
        value = simchannel.call(host, [FLAGS, victims], 20.0)
    finally:
        host.close()
    assert isinstance(value, list), value
    return value


@needs_bwrap
def test_a_ranks_process_is_nobody_without_capabilities_namespaces_or_writable_files() -> None:
    uid, caps, made, tmp, tried, _ = _probe([])
    assert uid == bwrap.SANDBOX_UID
    assert int(str(caps), 16) == 0
    assert all(errno != 0 for errno in made), dict(zip(FLAGS, made, strict=True))
    assert set(tmp) == bwrap.interpreter_entries_in_tmp()
    allowed = {what: errno for what, errno in tried.items() if errno == 0}
    assert not allowed, f"a ranks' process could: {sorted(allowed)}"


@needs_bwrap
def test_a_ranks_process_cannot_reach_a_sibling_running_beside_it() -> None:
    """Two learners' processes at once, forked by the same server: the second can neither
    signal nor read the first (nor the server), and the first finishes untouched."""
    sleeper = _host(SLEEPER, "sleeper")
    outcome: list[Any] = []
    running = threading.Thread(target=lambda: outcome.append(
        simchannel.call(sleeper, [3.0], 20.0)))
    running.start()
    try:
        victim = getattr(sleeper.process, "pid", 0)  # as the server (and its children) see it
        assert victim
        *_, tried, own = _probe([victim])
        assert victim != own
        assert tried[f"kill {victim}"] != 0 and tried[f"mem {victim}"] != 0, tried
    finally:
        running.join(30)
        sleeper.close()
    assert outcome == [1]


@needs_bwrap
def test_nothing_one_ranks_process_leaves_reaches_the_next() -> None:
    first, second = _probe([]), _probe([])
    interpreter = bwrap.interpreter_entries_in_tmp()
    assert set(first[3]) == interpreter and set(second[3]) == interpreter


@needs_bwrap
def test_a_killed_ranks_process_is_gone_and_the_server_serves_on() -> None:
    sleeper = _host(SLEEPER, "sleeper")
    value = simchannel.call(sleeper, [30.0], 1.0)
    assert isinstance(value, simprocess.RunFailure) and value.cause == "timeout"
    sleeper.close()
    assert _probe([])[0] == bwrap.SANDBOX_UID


def test_a_process_that_ran_labs_leaves_no_staged_folder_and_no_process() -> None:
    script = textwrap.dedent('''
        from autograder.kinds.lab import sandbox_launch
        from autograder.sandbox import rank_client
        from solutions.sim import process as simprocess
        from solutions.sim import lab as simlab
        from solutions.sim import ring_lab as simring
        from solutions.sim.bundle import pack
        simprocess.keep_warm(2)
        spec = simring.SPEC
        case = spec.graded(1)[0]
        run = simlab.run_case(spec, simring.ring_allreduce, case)
        launch = sandbox_launch()
        if launch is not None:
            simlab.grade_bundle(spec, pack(simring.ring_allreduce), spec.graded(2)[:1], launch)
        print(simprocess.stage_host_code(True))
        print(simprocess.stage_host_code(False))
        print(" ".join(s.stage for s in rank_client._SERVERS.values()) or "-")
        pids = [h.process.pid for q in simprocess._SPARES.values() for h in q]
        pids += [s.process.pid for s in rank_client._SERVERS.values()]
        print(" ".join(map(str, pids)))
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    *stages, servers, pids = done.stdout.strip().splitlines()
    assert stages and all(Path(s).name.startswith("wb-ranks-") for s in stages)
    assert not any(Path(s).exists() for s in stages), stages
    assert not any(Path(s).exists() for s in servers.split() if s != "-"), servers
    for pid in pids.split():
        assert not Path(f"/proc/{pid}").exists() or _is_zombie_of_other(int(pid))


def _is_zombie_of_other(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_a_prestarted_server_is_the_one_a_lab_forks_from() -> None:
    """A batch starts the servers ahead (workbook grade, while it reads the files); the
    first lab must then fork from that server, not start a second one."""
    from autograder.kinds.lab import sandbox_prepare
    from autograder.sandbox import rank_client

    prepare, launch = sandbox_prepare(), sandbox_launch()
    if prepare is None or launch is None:
        pytest.skip(f"bubblewrap is not usable here: {bwrap.unavailable_reason()}")
    rank_client.close_all()
    simprocess.prestart(prepare, collectives=False)
    servers = list(rank_client._SERVERS.values())
    assert len(servers) == 1 and servers[0].alive()
    host = simprocess.start_host(source_bundle(SLEEPER, "s.py", "sleeper"), launch, 10,
                                 collectives=False)
    assert isinstance(host, simprocess.Host), host
    try:
        assert simchannel.call(host, [0]) == 1
        assert list(rank_client._SERVERS.values()) == servers  # forked from it, none new
    finally:
        host.close()
