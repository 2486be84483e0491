"""A hostile class in the labs: learners whose rank functions attack the other learners'
ranks' processes, forked from the same warm server and running beside theirs.

Honest students write the ring AllReduce of lab 0.7 (one point each); attackers write a
ring_allreduce whose ranks try, from inside the ranks' process, to kill every process they
can see, to fork without end, to leave files for the next learner, to reach a sibling over
an abstract Unix socket, to spin forever, or to hold far more memory than they may. One
batch: every honest student gets exactly their point, every attacker gets none, and the
rank servers are still serving at the end."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from autograder.grading import Batch, grade_folder
from autograder.grading.fill import fill_answers
from autograder.sandbox import bwrap
from workbook.instructor import grading

sys.path.insert(0, str(Path(__file__).parent))
from nbgrader_course import RIGHT_FUNCTIONS  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox"),
    pytest.mark.skipif(bool(bwrap.unavailable_reason()), reason="bubblewrap does not work here"),
]

RING = RIGHT_FUNCTIONS["ring_allreduce"]
# Each attack runs in every rank's first step, then the rank does the honest ring's work (so
# that an attack which did no harm still earns nothing only if it broke something: the
# attackers' points are not what is tested; the honest students' are).
ATTACK_STEP = {
    "a_kills": """
    import os, signal
    for pid in range(1, 4096):
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
""",
    "a_forks": """
    import os
    for _ in range(200):
        try:
            os.fork()
        except OSError:
            break
""",
    "a_plants": """
    for target in ('/tmp/planted', '/dev/shm/planted', 'planted'):
        try:
            open(target, 'w').write('left by an earlier learner')
        except OSError:
            pass
""",
    "a_socket": """
    import socket
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind('\\0wb-rank-meeting-point')
        server.listen()
    except OSError:
        pass
""",
    "a_spins": """
    while True:
        pass
""",
    "a_hoards": """
    hoard = []
    try:
        while True:
            hoard.append(bytearray(256 << 20))
    except MemoryError:
        pass
""",
}
HONEST = ["honest_a", "honest_m", "honest_t", "honest_z"]


def attacked_ring(attack: str) -> str:
    """The honest ring with ``attack`` run by every rank before its first message."""
    head, body = RING.split("    n, me = rank.size, rank.id\n", 1)
    return head + attack.strip("\n") + "\n    n, me = rank.size, rank.id\n" + body


def notebook(source: str) -> dict[str, Any]:
    tree = json.loads(grading.learner_path(grading.CHAPTERS[0]).read_text())
    return fill_answers(tree, {"0.7": source})


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    root = tmp_path_factory.mktemp("labs")
    sources = {name: RING for name in HONEST}
    sources |= {name: attacked_ring(attack) for name, attack in ATTACK_STEP.items()}
    for student, source in sources.items():
        folder = root / "in" / student
        folder.mkdir(parents=True)
        (folder / "ch00.ipynb").write_text(json.dumps(notebook(source)))
    settings = dataclasses.replace(grading.settings(2, 5.0, root / "in", root / "out"),
                                   memory_mb=512)
    return grade_folder(root / "in", grading.releases(), settings)


def _lab(batch: Batch, student: str) -> Any:
    notebook = next(nb for nb in batch.notebooks if nb.student == student)
    return next(e for e in notebook.exercises if e.exercise_id == "0.7")


def test_every_honest_lab_passes_whatever_ran_beside_it(graded: Batch) -> None:
    for student in HONEST:
        lab = _lab(graded, student)
        assert (lab.status, lab.points) == ("correct", 1), (student, lab.message)


def test_attacks_that_need_a_forbidden_call_do_no_harm_and_the_rest_earn_nothing(
        graded: Batch) -> None:
    # Killing, forking, planting and sockets are refused inside the ranks' process: the
    # ring then runs as written. Spinning and hoarding are stopped and cost the lab.
    for student in ("a_kills", "a_forks", "a_plants", "a_socket"):
        assert _lab(graded, student).status == "correct", _lab(graded, student).message
    for student in ("a_spins", "a_hoards"):
        assert _lab(graded, student).points == 0, _lab(graded, student).message


def test_the_rank_servers_still_serve_after_the_class(graded: Batch) -> None:
    from autograder.kinds.lab import sandbox_launch
    from solutions.sim import lab as simlab
    from solutions.sim import ring_lab
    from solutions.sim.bundle import pack

    reports = simlab.grade_bundle(ring_lab.SPEC, pack(ring_lab.ring_allreduce),
                                  ring_lab.SPEC.graded(3), sandbox_launch())
    assert all(report.passed for report in reports), [r.problem for r in reports]


def test_a_cluster_the_grader_cannot_start_is_an_error_row_not_a_wrong_lab(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An infrastructure failure is never charged to the student: the row says `error`
    and why, and the notebook's other answers are graded as usual."""
    from autograder.kinds import lab as lab_kind
    from autograder.sandbox.rank_client import ServerFailed

    def broken(*_: Any) -> Any:
        raise ServerFailed("the ranks' server stopped")

    monkeypatch.setattr(lab_kind, "sandbox_launch", lambda: broken)
    folder = tmp_path / "in" / "honest"
    folder.mkdir(parents=True)
    tree = fill_answers(json.loads(grading.learner_path(grading.CHAPTERS[0]).read_text()),
                        {"0.7": RING, "0.1": "answer_0_1 = 1.75"})
    (folder / "ch00.ipynb").write_text(json.dumps(tree))
    batch = grade_folder(tmp_path / "in", grading.releases(),
                         grading.settings(1, 5.0, tmp_path / "in", tmp_path / "out"))
    lab = _lab(batch, "honest")
    assert (lab.status, lab.points) == ("error", 0), lab.message
    assert "grader's fault" in lab.message and "ranks' server stopped" in lab.message
    first = next(e for nb in batch.notebooks for e in nb.exercises if e.exercise_id == "0.1")
    assert first.status == "correct"
