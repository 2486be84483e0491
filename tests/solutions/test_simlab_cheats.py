"""Every cheat in the corpus earns nothing, with a reason; every honest solution passes.

Three ways in, as a learner meets them:

* ``workbook check 0.7 file.py``: the file is never run in the checking process
  (``LabSource``); here through the CLI for a few and through the same path for all;
* ``wb.check`` in a kernel where the learner's file has run (module-level patches of the
  grader's modules included): a forked child plays the kernel, so its patches stay there;
* ``workbook grade`` is in ``tests/workbook/test_grading_labs.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from autograder.kinds.lab import LabSource

sys.path.insert(0, str(Path(__file__).parent))
from lab_corpus import CHEATS, HONEST, KERNEL_ONLY_PASSES, reason_given  # noqa: E402

import workbook  # noqa: E402
from workbook import cli  # noqa: E402


@pytest.fixture(autouse=True)
def _own_progress_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_PROGRESS_LOG", str(tmp_path / "progress.sqlite"))


def test_the_corpus_is_big_enough() -> None:
    assert len(CHEATS) >= 30
    assert {ex for ex, *_ in CHEATS.values()} == {"0.7", "1.7", "5.8", "6.6"}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_a_cheating_file_earns_nothing_with_a_reason(name: str) -> None:
    exercise, source, _ = CHEATS[name]
    verdict = workbook.check(exercise, LabSource(source, f"{name}.py")).verdict
    assert verdict.score == 0 and not verdict.passed
    assert reason_given(name, verdict.message), verdict.message


@pytest.mark.parametrize("name", sorted(HONEST))
def test_an_honest_unusual_file_passes(name: str) -> None:
    exercise, source = HONEST[name]
    verdict = workbook.check(exercise, LabSource(source, f"{name}.py")).verdict
    assert verdict.passed, verdict.message


@pytest.mark.parametrize("name", ["ring-patch-grader", "tp-patch-kind", "ring-stash"])
def test_the_command_line_never_runs_the_file_itself(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exercise, source, reason = CHEATS[name]
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    assert cli.main(["check", exercise, str(path)]) == 1
    assert reason in capsys.readouterr().out


KERNEL = """
import json, sys
import workbook
exercise, source = json.loads(sys.stdin.read())
namespace = {"__name__": "__main__"}
exec(compile(source, "<cell>", "exec"), namespace)   # the learner's cell, patches and all
record = workbook.exercise(exercise)
verdict = workbook.check(exercise, namespace[record.answer_kind.function_name]).verdict
print(json.dumps({"score": verdict.score, "message": verdict.message}))
"""


def _in_a_kernel(exercise: str, source: str) -> dict[str, Any]:
    """Run the learner's file in a fresh interpreter (the kernel), then check its function
    there; the verdict's fields come back as JSON."""
    done = subprocess.run([sys.executable, "-c", KERNEL], input=json.dumps([exercise, source]),
                          capture_output=True, text=True, timeout=300, check=False,
                          env=os.environ.copy())
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-2000:]
    return dict(json.loads(lines[-1]))


@pytest.mark.parametrize("name", sorted(set(CHEATS) - KERNEL_ONLY_PASSES))
def test_a_cheat_checked_in_its_own_kernel_earns_nothing(name: str) -> None:
    exercise, source, _ = CHEATS[name]
    out = _in_a_kernel(exercise, source)
    assert out["score"] == 0, out["message"]
    assert reason_given(name, out["message"]) or "cannot be run on the simulated cluster" in \
        out["message"], out["message"]


@pytest.mark.parametrize("name", ["ring-reverse", "zero-all-to-all", "pipe-search",
                                  "tp-dataclass-transpose"])
def test_honest_work_checked_in_its_kernel_passes(name: str) -> None:
    exercise, source = HONEST[name]
    out = _in_a_kernel(exercise, source)
    assert out["score"] == 1.0, out["message"]


_HOARD = '''
import numpy as np
{setup}

def zero3_forward(rank):
    x = rank.data["x"]
    d = x.shape[1]
    kept = []
    for shard in rank.data["shards"]:
        parts = yield from rank.all_gather(shard)
        w = {untracked}.reshape(d, d)
        w[:] = np.concatenate(parts).reshape(d, d)
        rank.free(*parts)
        del parts
        kept.append(w)          # every gathered layer kept until the end
    for w in kept:
        x = np.maximum(x @ w, 0.0)
    return np.asarray(x)
'''
OUTSIDE_THE_ALLOCATORS = {
    "anonymous mmap": ("import mmap",
                       "np.frombuffer(mmap.mmap(-1, d * d * 8), dtype=np.float64)"),
    "malloc through ctypes": (
        "import ctypes\n_libc = ctypes.CDLL(None)\n_libc.malloc.restype = ctypes.c_void_p",
        "np.ctypeslib.as_array((ctypes.c_double * (d * d)).from_address("
        "_libc.malloc(d * d * 8)))"),
}


@pytest.mark.parametrize("route", sorted(OUTSIDE_THE_ALLOCATORS))
def test_layers_kept_outside_the_tracked_allocators_are_counted(route: str) -> None:
    setup, untracked = OUTSIDE_THE_ALLOCATORS[route]
    hoard = _HOARD.format(setup=setup, untracked=untracked)
    verdict = workbook.check("1.7", LabSource(hoard, "hoard.py")).verdict
    assert not verdict.passed and "held" in verdict.message, verdict.message
    # the same program keeping ordinary arrays fails on memory today
    plain = _HOARD.format(setup="", untracked="np.empty(d * d)")
    verdict = workbook.check("1.7", LabSource(plain, "hoard.py")).verdict
    assert not verdict.passed and "held" in verdict.message, verdict.message
