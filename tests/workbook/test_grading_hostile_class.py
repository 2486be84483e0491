"""A hostile class in one batch: no student can cost another.

A few dozen chapter-0 submissions: honest students (each with a known score, worked out
by hand below) mixed with attacks on the grader's own process (a forged report nested 500
levels deep, a cell of 99,000 newlines with a syntax error, a folder of many notebooks, a
lab function dragging two million items), on the next student's job (files and folders
left in /tmp, chmods, renames, System V shared memory), on time (loops, sleepers) and on
memory (many processes together), and attempts at namespaces of their own. One batch:
every honest student gets exactly their points, every student gets rows, the gradebook is
written whole, the batch stays within its bound, and nothing is left on the host.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from autograder.grading import Batch, grade_folder, write_outputs
from autograder.grading.fill import fill_answers
from workbook.instructor import grading

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

R01, W01 = "answer_0_1 = 1.75", "answer_0_1 = 2.0"  # 2(N-1)/N x 1 GB for N = 8: 1.75 GB
R02, R04 = "answer_0_2 = 70", 'answer_0_4 = "A"'
# Honest students: answers and the points they must get (one point per exercise right).
HONEST: dict[str, tuple[dict[str, str], int]] = {
    "honest_a": ({"0.1": R01, "0.4": R04}, 2),
    "honest_b": ({"0.1": R01, "0.2": R02, "0.4": R04}, 3),
    "honest_c": ({"0.1": R01}, 1),
    "honest_d": ({"0.1": W01, "0.4": R04}, 1),
    "honest_e": ({"0.1": R01 + "  # the release said ### BEGIN SOLUTION here", "0.4": R04}, 2),
    "honest_f": ({"0.2": R02}, 1),
    "zz_honest_g": ({"0.1": R01, "0.2": R02}, 2),
    "zz_honest_h": ({"0.4": R04, "0.2": R02}, 2),
}
FORGE = """
import os, sys
marker = sys.modules['autograder.sandbox.runner'].REPORT_MARKER
deep = marker + b'{"cell_errors": ' + b'[' * 500 + b']' * 500 + b'}'
for fd in range(3, 64):
    try:
        os.write(fd, deep)
    except OSError:
        pass
os._exit(0)
"""
POLLUTE = """
import os, ctypes
libc = ctypes.CDLL(None)
libc.shmget(0x5eed, 1 << 20, 0o1666)
for target in ('/tmp/planted', '/dev/shm/planted'):
    try:
        open(target, 'w').write('secret')
    except OSError:
        pass
here = os.getcwd()
for step in (lambda: os.chmod(os.path.dirname(here), 0o000),
             lambda: os.rename(os.path.dirname(here), '/tmp/gone'),
             lambda: os.chmod('/tmp', 0o000)):
    try:
        step()
    except OSError:
        pass
open('left_for_the_next', 'w').write('x')
"""
READS_POLLUTION = """
import os
seen = [os.path.exists('/tmp/planted'), os.path.exists('/tmp/gone'), os.listdir('.'),
        os.access('/tmp', os.W_OK)]
answer_0_1 = 1.75 if seen == [False, False, [], False] else 0.0
"""
NAMESPACES = """
import ctypes, subprocess
libc = ctypes.CDLL(None)
made = [libc.unshare(flag) for flag in (0x10000000, 0x40000000, 0x00020000)]
made.append(subprocess.run(['unshare', '-U', '-r', 'true']).returncode)
answer_0_1 = 1.75 if made == [0, 0, 0, 0] else 0.0
"""
MANY_PROCESSES = """
import os, time
for _ in range(4):
    if os.fork() == 0:
        b = bytearray(100 << 20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        time.sleep(10)
        os._exit(0)
time.sleep(5)
answer_0_1 = 1.75
"""
HUGE_LAB = ("def ring_allreduce(rank, data, n, comm, _big=list(range(2 * 10**6))):\n"
            "    return data")
ATTACKS: dict[str, dict[str, str]] = {
    "a_forged_report": {"0.1": FORGE},
    "a_pollutes": {"0.1": POLLUTE, "0.4": R04},
    "a_reads_pollution": {"0.1": READS_POLLUTION},
    "a_namespaces": {"0.1": NAMESPACES},
    "a_many_processes": {"0.1": MANY_PROCESSES},
    "a_loops": {"0.1": "while True:\n    pass", "0.2": "while True:\n    pass"},
    "a_sleeps": {"0.5": "import time\ndef ring_allreduce_time_ms(*a):\n    time.sleep(9)"},
    "a_huge_lab": {"0.7": HUGE_LAB},
    "a_fork_bomb": {"0.1": "import os\nwhile True:\n    try:\n        os.fork()\n"
                           "    except OSError:\n        pass"},
    "a_deep_value": {"0.1": "x = []\nfor _ in range(500):\n    x = [x]\nanswer_0_1 = x"},
}
# Reached through the file itself: a cell of newlines with a syntax error at the end,
# and a folder of many copies.
NEWLINES = "\n" * 99_000 + "answer_0_1 = (1.75"


def notebook(answers: dict[str, str]) -> dict[str, Any]:
    return fill_answers(json.loads(grading.learner_path(grading.CHAPTERS[0]).read_text()),
                        answers)


def write(folder: Path, name: str, tree: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(tree))


def host_state(tmp: Path) -> dict[str, set[str]]:
    shm = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {"tmp": set(os.listdir(tmp)), "dev_shm": set(os.listdir("/dev/shm")),
            "sysv": {line.split()[1] for line in shm}}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Batch, float, Path, dict]:
    root = tmp_path_factory.mktemp("class")
    for student, (answers, _) in HONEST.items():
        write(root / "in" / student, "ch00.ipynb", notebook(answers))
    for student, answers in ATTACKS.items():
        write(root / "in" / student, "ch00.ipynb", notebook(answers))
    write(root / "in" / "a_newlines", "ch00.ipynb", notebook({"0.1": NEWLINES}))
    for copy in range(40):
        write(root / "in" / "a_many_files", f"ch00_{copy:02d}.ipynb", notebook({"0.1": R01}))
    # The grader's own temporary folders go to a folder of this test's (other programs
    # share /tmp), so that whatever a run leaves is seen.
    private_tmp = root / "tmp"
    private_tmp.mkdir()
    tempfile.tempdir = str(private_tmp)
    before = host_state(private_tmp)
    settings = dataclasses.replace(
        grading.settings(2, 0.5, root / "in", root / "out"), memory_mb=256,
        output_bytes=100_000)
    started = time.monotonic()
    batch = grade_folder(root / "in", grading.releases(), settings)
    write_outputs(batch, root / "out")
    seconds = time.monotonic() - started
    after = host_state(private_tmp)
    tempfile.tempdir = None
    left = {key: after[key] - before[key] for key in before}
    # The labs' rank code and the warm ranks' servers' code are staged once per grader
    # process and kept for its later runs (removed at exit: test_rank_host_walls.py).
    from autograder.sandbox import rank_client
    servers = {Path(server.stage).name for server in rank_client._SERVERS.values()}
    left["tmp"] = {name for name in left["tmp"]
                   if not name.startswith("wb-ranks-") and name not in servers}
    return batch, seconds, root / "out", left


def test_every_honest_student_gets_exactly_their_points(graded) -> None:
    batch = graded[0]
    points = {nb.student: nb.points for nb in batch.notebooks if nb.student in HONEST}
    assert points == {student: expected for student, (_, expected) in HONEST.items()}


def test_every_student_has_rows_and_the_gradebook_is_whole(graded) -> None:
    batch, _, out, _ = graded
    students = set(HONEST) | set(ATTACKS) | {"a_newlines", "a_many_files"}
    assert {nb.student for nb in batch.notebooks} == students
    assert all(nb.exercises for nb in batch.notebooks if nb.student != "a_many_files")
    csv_students = {line.split(",")[0] for line in
                    (out / "grades.csv").read_text().splitlines()[1:]}
    assert students <= csv_students
    assert json.loads((out / "grades.json").read_text())
    assert not any("sandbox failed" in p for p in batch.problems)


def test_attacks_on_the_grader_cost_only_their_own_rows(graded) -> None:
    batch = graded[0]
    by = {nb.student: nb for nb in batch.notebooks}
    forged = by["a_forged_report"]
    assert forged.points == 0 and all(e.status == "error" for e in forged.exercises)
    assert "malformed report" in " ".join(e.message for e in forged.exercises)
    newlines = next(e for e in by["a_newlines"].exercises if e.exercise_id == "0.1")
    assert newlines.status == "error" and "syntax error (line 99001)" in newlines.message
    assert by["a_deep_value"].exercises[0].status == "wrong"
    assert sum(1 for nb in batch.notebooks if nb.student == "a_many_files") == 40


def test_nothing_one_student_leaves_reaches_another(graded) -> None:
    batch = graded[0]
    by = {nb.student: nb for nb in batch.notebooks}
    # The reader runs after the polluter (names sort) on one of two warm workers.
    assert next(e for e in by["a_reads_pollution"].exercises
                if e.exercise_id == "0.1").status == "correct"
    assert next(e for e in by["a_pollutes"].exercises if e.exercise_id == "0.4").points == 1
    assert next(e for e in by["a_namespaces"].exercises if e.exercise_id == "0.1").points == 0
    assert next(e for e in by["a_many_processes"].exercises
                if e.exercise_id == "0.1").status == "error"


def test_the_batch_stays_within_its_bound_and_leaves_nothing(graded) -> None:
    _, seconds, _, left = graded
    assert seconds < 180  # 68 files at 2 workers, each job capped at a few seconds
    assert left == {"tmp": set(), "dev_shm": set(), "sysv": set()}


def test_stalling_students_sorting_first_cost_the_honest_nothing(tmp_path: Path) -> None:
    """Two notebooks that loop in every answer cell sort first; with a batch budget that
    their full limits would use up, the honest students still get exactly their points."""
    # A loop that swallows the cell's time-out runs until the job's own wall clock.
    stall = {"0.1": "while True:\n    try:\n        while True:\n            pass\n"
                    "    except BaseException:\n        pass"}
    for student in ("aa_stall_1", "aa_stall_2"):
        write(tmp_path / "in" / student, "ch00.ipynb", notebook(stall))
    honest = {"zz_a": HONEST["honest_a"], "zz_b": HONEST["honest_b"]}
    for student, (answers, _) in honest.items():
        write(tmp_path / "in" / student, "ch00.ipynb", notebook(answers))
    settings = dataclasses.replace(grading.settings(2, 0.5, tmp_path / "in", tmp_path / "out"),
                                   batch_budget_s=6.0)
    full = settings.limits(20).wall_s
    assert full > 6.0  # one staller's full limits alone would outlast the budget
    started = time.monotonic()
    batch = grade_folder(tmp_path / "in", grading.releases(), settings)
    points = {nb.student: nb.points for nb in batch.notebooks}
    assert {s: points[s] for s in honest} == {s: p for s, (_, p) in honest.items()}
    assert time.monotonic() - started < 6.0 + full + 10  # the budget, one last job, start-up
