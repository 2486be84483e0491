"""Gradebook rows, JSON, feedback pages and the progress display, on hand-made results."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from autograder.grading.feedback import page_name, render_page, safe_folder, write_feedback
from autograder.grading.model import Batch, ExerciseResult, NotebookResult
from autograder.grading.pipeline import write_outputs
from autograder.grading.status_bar import StatusBar
from autograder.kinds.base import HiddenInput

BUILD = ExerciseResult("1.2", "Write <double>", "build", 0, 1, "wrong",
                       "double(3.0) returned 7.0; expected 6.0.", yours="double: 1 of 3 cases",
                       details=("1 of 3 cases passed.",
                                HiddenInput("Also: double(0.5) returned 7.0; expected 1.0.")),
                       notes=("Redefines check; ignored.",),
                       answer_source="def double(x):\n    return 7  # <b>")
GRADED = NotebookResult("ann", "ann/ch01.ipynb", 1, "Toy", (
    ExerciseResult("1.1", "Toy 1.1", "derive", 1, 1, "correct", "Correct.", yours="2 GB"),
    BUILD), notes=("Cell 2 (added by the learner) raised NameError: x",))
UNREADABLE = NotebookResult("bob", "bob/x.ipynb", None, "", problem="bob/x.ipynb: not valid JSON")
BATCH = Batch((GRADED, UNREADABLE), ignored=("ann/notes.txt",))


def test_csv_has_a_row_per_exercise_and_one_per_unreadable_file(tmp_path: Path) -> None:
    write_outputs(BATCH, tmp_path)
    rows = list(csv.reader((tmp_path / "grades.csv").open(encoding="utf-8")))
    assert rows == [
        ["student", "chapter", "exercise_id", "points", "max_points", "status", "message",
         "policy"],
        ["ann", "1", "1.1", "1", "1", "correct", "Correct.", ""],
        ["ann", "1", "1.2", "0", "1", "wrong",
         "double(3.0) returned 7.0; expected 6.0. Note: Redefines check; ignored.", ""],
        ["bob", "", "", "0", "0", "error", "bob/x.ipynb: not valid JSON", ""],
    ]


def test_json_leaves_out_further_failing_inputs(tmp_path: Path) -> None:
    write_outputs(BATCH, tmp_path)
    data = json.loads((tmp_path / "grades.json").read_text())
    assert data["summary"] == {"notebooks": 2, "graded": 1, "could_not_grade": 1,
                               "students": 2, "points": 1, "max_points": 2,
                               "statuses": {"correct": 1, "wrong": 1}, "seconds": 0.0}
    assert data["notebooks"][0]["exercises"][1]["details"] == ["1 of 3 cases passed."]
    assert data["ignored"] == ["ann/notes.txt"]
    assert "double(0.5)" not in json.dumps(data)


def test_feedback_page_escapes_and_hides(tmp_path: Path) -> None:
    text = render_page(GRADED)
    assert "Write &lt;double&gt;" in text and "# &lt;b&gt;" in text
    assert "double(0.5)" not in text
    assert '<span aria-hidden="true">✘</span> Not yet</strong> · 0 of 1 point' in text
    assert "<dt>Your answer</dt><dd><code>double: 1 of 3 cases</code></dd>" in text
    assert "Redefines check; ignored." in text and "raised NameError: x" in text
    written = write_feedback(BATCH.notebooks, tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "ann/ch01.html", "bob/not-graded-x.html"]
    assert "This file could not be graded." in written[1].read_text()


def test_page_names_and_student_folders() -> None:
    assert page_name(GRADED) == "ch01.html"
    assert page_name(NotebookResult("a", "a/ch05/", 5, "T", problem="x")) == \
        "not-graded-ch05.html"
    assert safe_folder("ann.lee") == "ann.lee"
    assert safe_folder("../..").startswith("_-") and "/" not in safe_folder("a/b")
    assert safe_folder("a b") != safe_folder("a_b")


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere() -> None:
    lines = io.StringIO()
    plain = StatusBar(2, lines, tty=False)
    plain.step("ann/ch01.ipynb: 1/2")
    plain.step("bob/x.ipynb: could not be read")
    plain.done()
    assert lines.getvalue().splitlines()[:2] == ["[1/2] ann/ch01.ipynb: 1/2",
                                                 "[2/2] bob/x.ipynb: could not be read"]
    assert lines.getvalue().splitlines()[2].startswith("Graded 2 file(s) in ")
    screen = io.StringIO()
    bar = StatusBar(4, screen, tty=True)
    bar.step("ann")
    assert screen.getvalue().startswith("\r[#######.....................] 1/4  ann")
    assert "\n" not in screen.getvalue()
