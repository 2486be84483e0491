"""Labs graded by ``workbook grade``: the program runs in the sandbox, the log is judged here.

Each student hands in chapter 0 with one version of the ring AllReduce lab (0.7): right,
or cheating in a way a hostile learner could (another rank's buffer, the global input, a
root that gathers and broadcasts, patched counters, a forged result), or wrong by an
off-by-one chunking. Only the right one earns the point, and each message names the fault.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from autograder.grading.fill import fill_answers
from workbook import grading

RING = '''
import numpy as np

def ring_allreduce(rank):
    n, me = rank.size, rank.id
    x = np.array(rank.data, copy=True)
    parts = np.array_split(np.arange(len(x)), n)
    for s in range(n - 1):
        rank.send((me + 1) % n, x[parts[(me - s) % n]])
        yield
        x[parts[(me - s - 1) % n]] += rank.recv((me - 1) % n)
    for s in range(n - 1):
        rank.send((me + 1) % n, x[parts[(me + 1 - s) % n]])
        yield
        x[parts[(me - s) % n]] = rank.recv((me - 1) % n)
    return x
'''

SUBMISSIONS = {
    "right": RING,
    # Every rank leaves its buffer in a global; after one step each adds them all up.
    "stash": '''
STASH = {}

def ring_allreduce(rank):
    STASH[rank.id] = rank.data
    yield
    return sum(STASH[r] for r in range(rank.size))
''',
    # Gather to rank 0, sum there, send the sum back: the right answer, the wrong traffic.
    "root": '''
import numpy as np

def ring_allreduce(rank):
    if rank.id:
        rank.send(0, rank.data)
    yield
    if rank.id == 0:
        total = np.array(rank.data, copy=True)
        for src in range(1, rank.size):
            total += rank.recv(src)
        for dst in range(1, rank.size):
            rank.send(dst, total)
        yield
        return total
    yield
    return np.array(rank.recv(0))
''',
    # The root version, with the simulator's counters and log patched to look like a ring.
    "patched": '''
import sys
import numpy as np

def ring_allreduce(rank):
    sim = sys.modules["solutions.simcluster"]
    sim.Message.nbytes = property(lambda self: 0)
    original = sim.Trace.to_plain
    def ring_looking(self):
        tree = original(self)
        tree["messages"] = [m for m in tree["messages"] if (m[1] + 1) % self.n_ranks == m[2]]
        return tree
    sim.Trace.to_plain = ring_looking
    if rank.id:
        rank.send(0, rank.data)
    yield
    if rank.id == 0:
        total = np.array(rank.data, copy=True)
        for src in range(1, rank.size):
            total += rank.recv(src)
        for dst in range(1, rank.size):
            rank.send(dst, total)
        yield
        return total
    yield
    return np.array(rank.recv(0))
''',
    # The library's ring all-reduce, fetched from the loaded modules instead of written.
    "borrowed": '''
import sys

def ring_allreduce(rank):
    ring = sys.modules["solutions.simcollectives"].ring_all_reduce
    return (yield from ring(rank, rank.data))
''',
    # A rank that never finishes its step.
    "endless": '''
def ring_allreduce(rank):
    while True:
        pass
    yield
''',
    # Chunks of M // N: the last M mod N elements are never reduced.
    "floor": RING.replace("parts = np.array_split(np.arange(len(x)), n)",
                          "k = len(x) // n\n    parts = [np.arange(c * k, c * k + k) "
                          "for c in range(n)]"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict[str, str]], Path]:
    root = tmp_path_factory.mktemp("labs")
    chapter = grading.CHAPTERS[0]
    notebook = json.loads(grading.learner_path(chapter).read_text())
    for student, source in SUBMISSIONS.items():
        folder = root / "in" / student
        folder.mkdir(parents=True)
        (folder / "ch00.ipynb").write_text(json.dumps(fill_answers(notebook, {"0.7": source})))
    status = grading.grade_cli(str(root / "in"), str(root / "out"), workers=2, timeout_s=5)
    assert status == 0
    with (root / "out" / "grades.csv").open(encoding="utf-8") as file:
        rows = {row["student"]: row for row in csv.DictReader(file)
                if row["exercise_id"] == "0.7"}
    return rows, root / "out"


def test_only_the_right_ring_earns_the_point(graded: tuple) -> None:
    rows, _ = graded
    assert {s: r["points"] for s, r in rows.items()} == {
        "right": "1", "stash": "0", "root": "0", "patched": "0", "floor": "0", "endless": "0",
        "borrowed": "0"}
    assert rows["right"]["status"] == "correct"


def test_each_cheat_is_named(graded: tuple) -> None:
    rows, _ = graded
    assert rows["stash"]["message"].startswith(
        "Case N=4, M=16, int64: rank 0 returned element 0")
    assert "could not have built from its own data" in rows["stash"]["message"]
    assert "rank 0 sent 48 elements (384 bytes) in all" in rows["root"]["message"]
    # the patched run hid rank 0's broadcast: its receivers hold sums nobody sent them
    assert "could not have built" in rows["patched"]["message"]
    # the ring lab's sandbox is not given the library's collectives
    assert "KeyError: 'solutions.simcollectives'" in rows["borrowed"]["message"]


def test_off_by_one_chunking_fails_where_n_does_not_divide_m(graded: tuple) -> None:
    rows, _ = graded
    assert rows["floor"]["message"].startswith(
        "Case N=5, M=13, int64: rank 0's sum of all ranks' vectors is wrong at element 10")


def test_the_feedback_page_shows_the_learners_trace(graded: tuple) -> None:
    _, out = graded
    page = (out / "feedback" / "root" / "ch00.html").read_text(encoding="utf-8")
    assert "Your trace, case N=4, M=16, int64:" in page
    assert "✘-&gt;2:16" in page  # rank 0's second broadcast message, marked


def test_an_endless_program_costs_one_time_limit(graded: tuple) -> None:
    rows, out = graded
    assert rows["endless"]["status"] == "wrong"
    assert rows["endless"]["message"].startswith(
        "Case N=4, M=16, int64: Your program was stopped: it did not finish within")
    report = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    seconds = {nb["student"]: nb["seconds"] for nb in report["notebooks"]}
    assert seconds["endless"] < 15  # one 5 s limit, not one per case (6 x 5 s)
