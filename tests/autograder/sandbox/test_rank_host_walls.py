"""A lab's ranks' process (the learner's code itself) gets the grading sandbox's walls:
nobody inside, no capabilities, no new namespace of any kind, its own /tmp and IPC; and
the trusted side leaves no staged folder and no process behind."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.kinds.lab import sandbox_prefix
from autograder.sandbox import bwrap
from solutions import simchannel
from solutions.simbundle import source_bundle

PROBE = textwrap.dedent('''
    import ctypes, os

    def probe(flags):
        """What this process is, and which namespaces it may make (errno per flag)."""
        libc = ctypes.CDLL(None, use_errno=True)
        made = []
        for flag in flags:
            made.append(0 if libc.unshare(flag) == 0 else ctypes.get_errno())
        with open("/proc/self/status") as status:
            caps = [line.split()[1] for line in status if line.startswith("CapEff")]
        tmp = sorted(os.listdir("/tmp"))
        with open("/tmp/planted", "w") as note:
            note.write("left by an earlier learner")
        return [os.getuid(), caps[0], made, tmp]
''')
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID = (
    0x10000000, 0x00020000, 0x08000000, 0x40000000, 0x20000000)
FLAGS = [CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID]

needs_bwrap = pytest.mark.skipif(bool(bwrap.unavailable_reason()),
                                 reason="bubblewrap does not work here")


def _probe_once() -> list[object]:
    prefix = sandbox_prefix()
    assert prefix is not None

    def wrap(python: str, code_dir: str) -> list[str]:
        command, inside = prefix(python, code_dir)
        return [*command, "-I", "-c", simchannel.BOOT.format(code=inside)]
    host = simchannel.start_host(source_bundle(PROBE, "probe.py", "probe"), wrap, 20.0)
    assert isinstance(host, simchannel.Host), host
    try:
        value = simchannel.call(host, [FLAGS], 20.0)
    finally:
        host.close()
    assert isinstance(value, list), value
    return value


@needs_bwrap
def test_the_ranks_process_is_nobody_without_capabilities_or_new_namespaces() -> None:
    uid, caps, made, tmp = _probe_once()
    assert uid == bwrap.SANDBOX_UID
    assert int(str(caps), 16) == 0
    assert isinstance(made, list) and len(made) == len(FLAGS)
    assert all(errno != 0 for errno in made), dict(zip(FLAGS, made, strict=True))
    assert set(tmp) == bwrap.interpreter_entries_in_tmp()  # nothing of anyone else's


@needs_bwrap
def test_each_ranks_process_has_its_own_tmp_even_when_started_ahead() -> None:
    simchannel.keep_warm(1)
    try:
        first, second = _probe_once(), _probe_once()
    finally:
        simchannel.keep_warm(0)
        simchannel.cleanup()
    interpreter = bwrap.interpreter_entries_in_tmp()
    # the first one's note is not in the second
    assert set(first[3]) == interpreter and set(second[3]) == interpreter


def test_a_process_that_ran_labs_leaves_no_staged_folder_and_no_process() -> None:
    script = textwrap.dedent('''
        from solutions import simchannel, simlab, simring
        simchannel.keep_warm(2)
        spec = simring.SPEC
        case = spec.graded(1)[0]
        run = simlab.run_case(spec, simring.ring_allreduce, case)
        print(simchannel.stage_host_code(True))
        print(simchannel.stage_host_code(False))
        print(" ".join(str(h.process.pid) for q in simchannel._SPARES.values() for h in q))
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    *stages, pids = done.stdout.strip().splitlines()
    assert stages and all(Path(s).name.startswith("wb-ranks-") for s in stages)
    assert not any(Path(s).exists() for s in stages), stages
    for pid in pids.split():
        assert not Path(f"/proc/{pid}").exists() or _is_zombie_of_other(int(pid))


def _is_zombie_of_other(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True
