"""Malformed input: each file gets a clear message and an error row; the batch never crashes.

Exit status: 0 when every file was graded, 1 when some could not be, 2 on bad arguments.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from autograder.grading.fill import fill_answers
from workbook.cli import main
from workbook.instructor import grading

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")


def release_json(chapter: int) -> dict[str, Any]:
    return json.loads(grading.learner_path(grading.CHAPTERS[chapter]).read_text())


def role(cell: dict[str, Any]) -> tuple[str, str]:
    meta = cell["metadata"].get("workbook", {})
    return meta.get("exercise", ""), meta.get("role", "")


def save(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, list[dict]], Path]:
    root = tmp_path_factory.mktemp("malformed")
    sub = root / "in"
    save(sub / "good" / "ch00.ipynb", fill_answers(release_json(0), {"0.1": "answer_0_1 = 1.75"}))
    save(sub / "bad_json" / "ch00.ipynb", '{"cells": [')
    save(sub / "old_format" / "ch00.ipynb", {"nbformat": 3, "nbformat_minor": 0,
                                             "worksheets": [{"cells": []}], "metadata": {}})
    save(sub / "a_list" / "ch00.ipynb", "[1, 2, 3]")
    (sub / "a_pdf").mkdir(parents=True)
    (sub / "a_pdf" / "ch00.ipynb").write_bytes(b"%PDF-1.4\n\x00\xff\xfe binary")
    save(sub / "instructor" / "ch00.ipynb",
         json.loads(grading.instructor_path(grading.CHAPTERS[0]).read_text()))
    (sub / "empty_folder").mkdir()
    save(sub / "only_a_pdf" / "essay.pdf", "not a notebook")
    missing = release_json(0)
    missing["cells"] = [c for c in missing["cells"] if role(c) != ("0.2", "answer")]
    save(sub / "missing_answer" / "ch00.ipynb", missing)
    doubled = fill_answers(release_json(0), {"0.1": "answer_0_1 = 1.75"})
    copy = next(dict(c, id="copied") for c in doubled["cells"] if role(c) == ("0.1", "answer"))
    doubled["cells"].append(copy)
    save(sub / "doubled_answer" / "ch00.ipynb", doubled)
    # nbgrader layout: chapter 3's notebook filed under chapter 5's assignment folder
    save(sub / "wrong_folder" / "ch05_pipeline_parallelism" / "notebook.ipynb", release_json(3))
    save(sub / "good" / "notes.txt", "a stray file: ignored, not an error")
    save(sub / "twice" / "old.ipynb", release_json(0))
    save(sub / "twice" / "new.ipynb", fill_answers(release_json(0), {"0.1": "answer_0_1 = 1.75"}))
    os.utime(sub / "twice" / "old.ipynb", (1_000_000_000, 1_000_000_000))
    save(sub / "loose.ipynb", release_json(0))
    status = grading.grade_cli(str(sub), str(root / "out"), workers=2, timeout_s=1)
    rows: dict[str, list[dict]] = {}
    for row in csv.DictReader((root / "out" / "grades.csv").open(encoding="utf-8")):
        rows.setdefault(row["student"], []).append(row)
    return status, rows, root / "out"


def only(rows: dict[str, list[dict]], student: str) -> dict[str, str]:
    assert len(rows[student]) == 1, rows[student]
    return rows[student][0]


def test_some_files_could_not_be_graded_so_exit_status_1(graded: tuple) -> None:
    assert graded[0] == 1


def test_the_good_notebook_is_still_graded(graded: tuple) -> None:
    by_id = {row["exercise_id"]: row for row in graded[1]["good"]}
    assert by_id["0.1"]["status"] == "correct"
    assert len(by_id) == 7  # 0.1-0.6 and the lab 0.7


@pytest.mark.parametrize("student, message", [
    ("bad_json", "bad_json/ch00.ipynb: not valid JSON (line 1, column 12: Expecting value)"),
    ("old_format", "old_format/ch00.ipynb: an nbformat 3 notebook (from a very old Jupyter); "
                   "open it in a current Jupyter, save it (nbformat 4) and submit it again"),
    ("a_list", "a_list/ch00.ipynb: not a notebook: the JSON holds a list, not a notebook "
               "object"),
    ("a_pdf", "a_pdf/ch00.ipynb: not a notebook: the file is not UTF-8 text (a binary file "
              "renamed to .ipynb?)"),
    ("instructor", "instructor/ch00.ipynb: this is the instructor version of chapter 0 (it "
                   "holds the solutions), not a learner's notebook"),
    ("empty_folder", "empty_folder/: no notebook (.ipynb) in this student's folder"),
    ("only_a_pdf", "only_a_pdf/: no notebook (.ipynb) in this student's folder (found only: "
                   "only_a_pdf/essay.pdf)"),
])
def test_unreadable_files_get_one_error_row_each(graded: tuple, student: str,
                                                  message: str) -> None:
    row = only(graded[1], student)
    assert (row["status"], row["points"], row["exercise_id"]) == ("error", "0", "")
    assert row["message"].startswith(message)


def test_a_missing_answer_cell_is_an_error_for_that_exercise_only(graded: tuple) -> None:
    by_id = {row["exercise_id"]: row for row in graded[1]["missing_answer"]}
    assert by_id["0.2"]["status"] == "error"
    assert by_id["0.2"]["message"].startswith("The answer cell of exercise 0.2 is missing")
    assert by_id["0.1"]["status"] == "unanswered"


def test_a_doubled_answer_cell_is_an_error(graded: tuple) -> None:
    by_id = {row["exercise_id"]: row for row in graded[1]["doubled_answer"]}
    assert by_id["0.1"]["status"] == "error"
    assert "2 cells claim to be the answer cell of exercise 0.1" in by_id["0.1"]["message"]


def test_a_notebook_in_the_wrong_assignment_folder(graded: tuple) -> None:
    rows = graded[1]["wrong_folder"]
    chapter3 = [r for r in rows if r["chapter"] == "3"]
    chapter5 = [r for r in rows if r["chapter"] == "5"]
    # graded as what it is (chapter 3, 5 exercises), with a note on every row ...
    assert len(chapter3) == 5
    assert all("suggests chapter 5; it was graded as chapter 3" in r["message"]
               for r in chapter3)
    # ... and chapter 5 (5.1-5.6, the challenge 5.7 and the lab 5.8) is reported missing
    assert len(chapter5) == 8 and {r["status"] for r in chapter5} == {"error"}
    assert "no chapter 5 notebook in this assignment folder" in chapter5[0]["message"]


def test_two_notebooks_of_one_chapter_grade_the_newer(graded: tuple) -> None:
    rows = graded[1]["twice"]
    assert [(r["exercise_id"], r["status"]) for r in rows if r["exercise_id"] == "0.1"] == [
        ("0.1", "correct")]
    [dropped] = [r for r in rows if r["exercise_id"] == ""]
    assert dropped["message"] == ("twice/old.ipynb: twice has 2 notebooks for chapter 0; only "
                                  "the most recently modified one (twice/new.ipynb) was graded")


def test_a_notebook_outside_any_student_folder(graded: tuple) -> None:
    assert only(graded[1], "")["message"] == (
        "loose.ipynb: a notebook outside any student folder; put it in "
        "SUBMISSIONS/<student>/")


def test_progress_lines_when_not_on_a_terminal(tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    save(tmp_path / "in" / "ann" / "ch00.ipynb", release_json(0))
    assert main(["grade", str(tmp_path / "in"), "--out", str(tmp_path / "out"),
                 "--workers", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == "[1/1] ann/ch00.ipynb: 0/7"
    assert captured.out.startswith("Graded 1 notebook(s) of 1 student(s) in ")


def test_stray_files_are_listed_as_ignored(graded: tuple) -> None:
    summary = json.loads((graded[2] / "grades.json").read_text())
    assert "good/notes.txt" in summary["ignored"]
    assert "good" not in {p.split("/")[0] for p in summary["problems"]}


def test_an_empty_submissions_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "in").mkdir()
    assert grading.grade_cli(str(tmp_path / "in"), str(tmp_path / "out")) == 1
    assert "no student folders with notebooks to grade" in capsys.readouterr().err
    lines = (tmp_path / "out" / "grades.csv").read_text().splitlines()
    assert lines == ["student,chapter,exercise_id,points,max_points,status,message,policy"]


@pytest.mark.parametrize("args, message", [
    (["nowhere"], "no such folder"),
    (["in", "--workers", "0"], "--workers must be at least 1, got 0"),
    (["in", "--timeout", "0"], "--timeout must be a positive number of seconds"),
    (["in", "--out-inside"], "--out must not be inside the submissions folder"),
])
def test_bad_arguments_exit_with_status_2(tmp_path: Path, capsys: pytest.CaptureFixture,
                                          args: list[str], message: str) -> None:
    (tmp_path / "in").mkdir()
    out = str(tmp_path / ("in/grades" if "--out-inside" in args else "out"))
    argv = ["grade", str(tmp_path / args[0]), "--out", out,
            *[a for a in args[1:] if a != "--out-inside"]]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
