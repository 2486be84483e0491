"""A ZeRO-3 rank's memory is the kernel's count of its own process, out of its code's reach.

Each cheat keeps every gathered layer (or the whole model) somewhere the earlier,
in-process measurement did not look: memory from the system straight (mmap, malloc through
ctypes, an in-memory SQLite database), memory allocated when the file is loaded, memory
parked in messages that are never or not yet received, or a measurement it edits. Each
must earn nothing, with the memory bound named; the ways that hold bytes no process counts
(a memfd, a pipe, a mapping of ``/dev/zero``) must be refused. The same program keeping
ordinary arrays fails the same way, and the honest program passes, so the figure is not
simply large. Checked as ``workbook check 1.7 file.py`` checks (in the sandbox where
available).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import workbook
from autograder.kinds.lab import LabSource

_KEEPER = '''
import numpy as np
{setup}

def zero3_forward(rank):
    x = rank.data["x"]
    d = x.shape[1]
    kept = []
    for shard in rank.data["shards"]:
        parts = yield from rank.all_gather(shard)
        w = {store}
        rank.free(*parts)
        del parts
        kept.append(w)          # every gathered layer kept until the end
    for w in kept:
        x = np.maximum(x @ {load}, 0.0)
    return np.asarray(x)
'''
_LAYER = "np.concatenate(parts)"
COUNTED = {
    "anonymous mmap": ("import mmap", f"mmap.mmap(-1, d * d * 8); w.write({_LAYER}.tobytes())",
                       "np.frombuffer(w, dtype=np.float64).reshape(d, d)"),
    "malloc through ctypes": (
        "import ctypes\n_libc = ctypes.CDLL(None)\n_libc.malloc.restype = ctypes.c_void_p",
        f"_libc.malloc(d * d * 8); layer = {_LAYER}; "
        "ctypes.memmove(w, layer.ctypes.data, d * d * 8)",
        "np.ctypeslib.as_array((ctypes.c_double * (d * d)).from_address(w)).reshape(d, d)"),
    "in-memory SQLite": (
        "import sqlite3\n_db = sqlite3.connect(':memory:')\n"
        "_db.execute('create table w (k integer primary key, v blob)')",
        f"len(kept); _db.execute('insert into w values (?, ?)', (w, {_LAYER}.tobytes()))",
        "np.frombuffer(_db.execute('select v from w where k = ?', (w,)).fetchone()[0])"
        ".reshape(d, d)"),
    "a pool allocated when the file is loaded": (
        "_POOL = np.ones((16, 160 * 160))   # touched now, before the first step",
        f"_POOL[len(kept)]; w[:d * d] = {_LAYER}",
        "w[:d * d].reshape(d, d)"),
    "ordinary arrays": ("", f"{_LAYER}.reshape(d, d)", "w"),
}
REFUSED = {
    "a memfd": ("import mmap, os",
                "os.memfd_create('w'); os.ftruncate(w, d * d * 8); "
                f"w = mmap.mmap(w, d * d * 8); w.write({_LAYER}.tobytes())",
                "np.frombuffer(w, dtype=np.float64).reshape(d, d)"),
    "a pipe": ("import os",
               f"os.pipe(); os.write(w[1], {_LAYER}.tobytes())",
               "np.frombuffer(os.read(w[0], d * d * 8), dtype=np.float64).reshape(d, d)"),
    "a private mapping of /dev/zero": (
        "", "np.memmap('/dev/zero', dtype=np.float64, mode='c', shape=(d, d)); "
        f"w[:] = {_LAYER}.reshape(d, d)", "w"),
}


@pytest.fixture(autouse=True)
def _own_progress_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_PROGRESS_LOG", str(tmp_path / "progress.sqlite"))


def _check(source: str) -> workbook.Checked:
    return workbook.check("1.7", LabSource(source, "keeper.py"))


def _keeper(setup: str, store: str, load: str) -> str:
    return _KEEPER.format(setup=setup, store=f"{store.split(';')[0]}\n        " +
                          "\n        ".join(p.strip() for p in store.split(";")[1:]),
                          load=load)


@pytest.mark.parametrize("route", sorted(COUNTED))
def test_layers_kept_anywhere_a_process_holds_memory_are_counted(route: str) -> None:
    verdict = _check(_keeper(*COUNTED[route])).verdict
    assert not verdict.passed and verdict.score == 0
    assert " held " in verdict.message and "expected at most" in verdict.message, \
        verdict.message


@pytest.mark.parametrize("route", sorted(REFUSED))
def test_memory_no_process_counts_is_refused(route: str) -> None:
    verdict = _check(_keeper(*REFUSED[route])).verdict
    assert not verdict.passed and verdict.score == 0
    assert "raised an error" in verdict.message and "Error" in verdict.message, \
        verdict.message


def test_a_rank_cannot_edit_its_measurement() -> None:
    # it lowers every counter it can find in its process and stops tracemalloc: the figure
    # is read by another process from the kernel's account of this one
    tamper = (
        "import sys, tracemalloc\n"
        "tracemalloc.stop()\n"
        "tracemalloc.get_traced_memory = lambda: (0, 0)\n"
        "def _zero(obj):\n"
        "    for name in ('held', 'peak', 'base', 'memory'):\n"
        "        try:\n"
        "            setattr(obj, name, 0)\n"
        "        except Exception:\n"
        "            pass\n"
        "for _m in list(sys.modules.values()):\n"
        "    if (getattr(_m, '__name__', '') or '').startswith('solutions'):\n"
        "        for _name in ('resident', 'release', '_account'):\n"
        "            if hasattr(_m, _name):\n"
        "                setattr(_m, _name, lambda *a, **k: 0)\n")
    source = _keeper(tamper, f"{_LAYER}.reshape(d, d); _zero(rank)", "w")
    verdict = _check(source).verdict
    assert not verdict.passed and " held " in verdict.message, verdict.message


_UP_FRONT = '''
import numpy as np

def zero3_forward(rank):
    """The whole model sent at once and left waiting in the inboxes; each layer received
    only when it is used, so the rank's own process holds one layer at a time."""
    n, me = rank.size, rank.id
    x = rank.data["x"]
    d = x.shape[1]
    for shard in rank.data["shards"]:
        for dst in range(n):
            if dst != me:
                rank.send(dst, shard)
    yield
    for shard in rank.data["shards"]:
        parts = [shard if src == me else rank.recv(src) for src in range(n)]
        x = np.maximum(x @ np.concatenate(parts).reshape(d, d), 0.0)
        rank.free(*parts)
        del parts
        yield
    return x
'''


def test_messages_not_yet_received_count_against_their_sender() -> None:
    verdict = _check(_UP_FRONT).verdict
    assert not verdict.passed and verdict.score == 0
    assert "rank 0 held " in verdict.message, verdict.message
    # at step 0 its own process holds only its data: what it sent and no one has received
    # yet is what puts it over the budget (its peak may come a step later, with layer 0)
    budget = re.search(r"expected at most (\d+)", verdict.message)
    first = re.search(r"^0 +(\d+)", verdict.picture, re.MULTILINE)
    assert budget and first, (verdict.message, verdict.picture)
    assert int(first.group(1)) > int(budget.group(1)), verdict.picture


def test_the_honest_program_passes_under_the_same_measurement() -> None:
    honest = _keeper("", f"{_LAYER}.reshape(d, d)", "w").replace(
        "kept.append(w)          # every gathered layer kept until the end",
        "x = np.maximum(x @ w, 0.0)").replace(
        "    for w in kept:\n        x = np.maximum(x @ w, 0.0)\n", "")
    assert "kept.append" not in honest
    verdict = _check(honest).verdict
    assert verdict.passed, verdict.message
