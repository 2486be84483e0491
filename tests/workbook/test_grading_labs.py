"""Labs graded by ``workbook grade``: the notebook runs in the sandbox, the lab on the trusted side.

The sandbox only packs the learner's function; the grader's own process runs the simulator
and the verifier, with the ranks in a sandboxed process of their own, on cases drawn for
that student. Each student hands in one lab: every cheat of the corpus earns nothing and
its message names the fault; every honest, unusual solution earns the point.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from autograder.grading.fill import fill_answers
from workbook.instructor import grading
from workbook.outline import CHAPTERS

sys.path.insert(0, str(Path(__file__).parents[1] / "solutions"))
from lab_corpus import CHEATS, HONEST, reason_given  # noqa: E402

STUDENTS = {**{f"cheat-{k}": (ex, src) for k, (ex, src, _) in CHEATS.items()},
            **{f"honest-{k}": v for k, v in HONEST.items()}}
# a notebook cell that imports from the reference library fails in the sandbox (it is not
# there): the function is then missing, and the row says so
IMPORTS_LIBRARY = {"cheat-ring-borrowed-library"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict[str, str]], Path]:
    root = tmp_path_factory.mktemp("labs")
    chapters = {c.number: c for c in CHAPTERS}
    for student, (exercise, source) in STUDENTS.items():
        chapter = chapters[int(exercise.split(".")[0])]
        notebook = json.loads(grading.learner_path(chapter).read_text())
        folder = root / "in" / student
        folder.mkdir(parents=True)
        (folder / f"ch{chapter.number:02d}.ipynb").write_text(
            json.dumps(fill_answers(notebook, {exercise: source})))
    status = grading.grade_cli(str(root / "in"), str(root / "out"), workers=2, timeout_s=10)
    assert status == 0
    with (root / "out" / "grades.csv").open(encoding="utf-8") as file:
        rows = {row["student"]: row for row in csv.DictReader(file)
                if row["exercise_id"] == STUDENTS[row["student"]][0]}
    return rows, root / "out"


def test_every_cheat_earns_nothing_with_its_reason(graded: tuple) -> None:
    rows, _ = graded
    for name in CHEATS:
        row = rows[f"cheat-{name}"]
        assert row["points"] == "0", (name, row["message"])
        if f"cheat-{name}" not in IMPORTS_LIBRARY:  # a class of the notebook cannot travel
            assert reason_given(name, row["message"]) or "cannot be shipped" in row["message"], (
                name, row["message"])


def test_every_honest_solution_earns_the_point(graded: tuple) -> None:
    rows, _ = graded
    for name in HONEST:
        row = rows[f"honest-{name}"]
        assert row["points"] == "1" and row["status"] == "correct", (name, row["message"])


def test_the_feedback_page_shows_the_learners_trace(graded: tuple) -> None:
    rows, out = graded
    page = (out / "feedback" / "cheat-ring-root" / "ch00.html").read_text(encoding="utf-8")
    # the first fault is marked whatever N was drawn: a wrong message, or (when a rank
    # sent nothing where the ring needs a chunk, e.g. rank 0 at N = 2) its empty cell
    assert "Your trace, case N=" in page, rows["cheat-ring-root"]
    assert "✘-&gt;" in page or "✘." in page, rows["cheat-ring-root"]
