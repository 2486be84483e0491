"""The gradebook and the feedback pages: shape, escaping, and nothing that gives answers away."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import pytest

from autograder.grading.fill import fill_answers
from workbook.instructor import grading

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

STUDENT = "<i>o'b&"  # a folder name is learner-chosen text too
HOSTILE_TEXT = '<script>alert("x")</script> & </code>'
# Fails every case: the page may show the first failing input (the learner's own check
# shows it) but no other hidden input.
CONSTANT = "def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):\n" \
           "    return 1.0"
FIRST_CASE = "ring_allreduce_time_ms(4.0, 16, 100.0, 10.0)"
SECOND_CASE = "ring_allreduce_time_ms(1.0, 1, 100.0, 5.0)"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("outputs")
    notebook = json.loads(grading.learner_path(grading.CHAPTERS[0]).read_text())
    answers = {"0.1": "answer_0_1 = 1.75", "0.2": f"answer_0_2 = {HOSTILE_TEXT!r}",
               "0.5": CONSTANT}
    for student in ("ann", STUDENT):
        folder = root / "in" / student
        folder.mkdir(parents=True)
        (folder / "ch00.ipynb").write_text(json.dumps(fill_answers(notebook, answers)))
    assert grading.grade_cli(str(root / "in"), str(root / "out"), workers=2, timeout_s=2) == 0
    return root / "out"


def test_csv_header_and_rows(out: Path) -> None:
    lines = (out / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "student,chapter,exercise_id,points,max_points,status,message,policy"
    rows = list(csv.DictReader(lines))
    assert len(rows) == 2 * 7  # 2 students x the 6 exercises and 1 lab of chapter 0
    first = rows[0]
    assert {k: first[k] for k in ("student", "chapter", "exercise_id", "points",
                                  "max_points", "status")} == {
        "student": STUDENT, "chapter": "0", "exercise_id": "0.1", "points": "1",
        "max_points": "1", "status": "correct"}
    by_id = {row["exercise_id"]: row for row in rows if row["student"] == "ann"}
    assert [by_id[ex]["status"] for ex in ("0.1", "0.2", "0.3", "0.4", "0.5", "0.6")] == [
        "correct", "wrong", "unanswered", "unanswered", "wrong", "unanswered"]
    # 2 (N - 1) (M / (N B) + alpha) = 30 x (4 GB / (16 x 100 GB/s) + 10 us) = 75.3 ms
    assert by_id["0.5"]["message"] == f"{FIRST_CASE} returned 1.0; expected 75.3."


def test_json_shape(out: Path) -> None:
    data = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    assert set(data) == {"version", "summary", "isolation", "problems", "ignored", "notebooks",
                         "layout", "ignored_reasons", "personal_numbers", "students"}
    assert data["layout"] == "folders" and data["personal_numbers"] is None
    assert [s["student"] for s in data["students"]] == sorted(["ann", STUDENT])
    summary = data["summary"]
    assert {k: summary[k] for k in ("notebooks", "graded", "could_not_grade", "students",
                                    "points", "max_points")} == {
        "notebooks": 2, "graded": 2, "could_not_grade": 0, "students": 2, "points": 2,
        "max_points": 14}
    assert summary["statuses"] == {"correct": 2, "unanswered": 8, "wrong": 4}  # + 2 x lab 0.7
    notebook = data["notebooks"][0]
    assert set(notebook) == {"student", "path", "chapter", "title", "points", "max_points",
                             "problem", "notes", "seconds", "exercises"}
    assert (notebook["chapter"], notebook["title"]) == (0, "Ring AllReduce")
    exercise = notebook["exercises"][4]
    assert set(exercise) == {"exercise_id", "title", "category", "points", "max_points", "status",
                             "message", "yours", "expected", "details", "notes", "score",
                             "policy", "misconceptions"}
    assert exercise["yours"] == "ring_allreduce_time_ms: 0 of 28 cases"
    assert (exercise["score"], exercise["policy"]) == (0.0, "")  # no case passed, no policy
    assert SECOND_CASE not in json.dumps(data)


def page(out: Path, student: str) -> str:
    return (out / "feedback" / student / "ch00.html").read_text(encoding="utf-8")


def test_feedback_pages_per_student_and_chapter(out: Path) -> None:
    pages = sorted(p.relative_to(out).as_posix() for p in out.glob("feedback/*/*.html"))
    assert pages[0] == "feedback/ann/ch00.html"
    assert re.fullmatch(r"feedback/i_o_b-[0-9a-f]{8}/ch00\.html", pages[1])
    text = page(out, "ann")
    assert "<h1>Chapter 0 · Ring AllReduce</h1>" in text
    assert '<span aria-hidden="true">✔</span> Correct</strong> · 1 of 1 point' in text
    assert '<span aria-hidden="true">✘</span> Not yet</strong>' in text
    assert '<span aria-hidden="true">○</span> Not answered yet</strong>' in text
    assert "Points: 1 of 7" in text


def test_everything_the_learner_wrote_is_escaped(out: Path) -> None:
    for folder in (out / "feedback").iterdir():
        text = (folder / "ch00.html").read_text(encoding="utf-8")
        assert "<script>" not in text and "<i>" not in text
        assert re.search(r"&lt;script&gt;alert\(&(quot|#x27);x&(quot|#x27);\)&lt;/script&gt;",
                         text)


def test_no_reference_code_and_no_hidden_inputs(out: Path) -> None:
    text = page(out, "ann")
    assert FIRST_CASE in text and SECOND_CASE not in text
    for secret in ("BEGIN SOLUTION", "from solutions", "solutions.collectives",
                   "ring_allreduce_steps(n) * step_ms", "positive_int("):
        assert secret not in text


def test_totals_one_row_per_student(out: Path) -> None:
    """Independently: both students answered 0.1 right (1.75 GB) and nothing else right,
    out of chapter 0's seven exercises."""
    lines = (out / "totals.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "student,points,max_points,percent,late,submitted_at,notebooks,integrity"
    rows = list(csv.DictReader(lines))
    assert [(r["student"], r["points"], r["max_points"], r["late"]) for r in rows] == [
        (STUDENT, "1", "7", ""), ("ann", "1", "7", "")]
    assert (out / "totals.csv").stat().st_mode & 0o777 == 0o600
