"""The class report: every number checked against a count made by hand on a small class,
the CSV and HTML made safe, and misconception names carried from a real grading."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

import pytest

from autograder.grading.fill import fill_answers
from autograder.grading.model import Batch, ExerciseResult, NotebookResult, Status
from workbook.instructor import grading
from workbook.instructor.class_report import class_report, csv_text
from workbook.instructor.class_report_html import render, write_class_report
from workbook.instructor.regrade import read_previous
from workbook.outline import CHAPTERS
from workbook.paths import learner_path
from workbook.records import by_id

ONE_PHASE = "That is one phase only"
LIMIT = "2M is the limit for very many GPUs"
BOTH_WAYS = "You added what each GPU sends and what it receives"
NAIVE = "(N-1)M is what the root of a naive gather-then-broadcast receives"
ROSTER = ("s1", "s2", "s3", "s4", "s5", "s6", "s7")   # s7 hands in nothing
OUTSIDER = "<script>alert(1)</script>"                # in the hand-in, not on the roster


def row(exercise: str, status: Status, points: float = 0, *mistakes: str,
        title: str = "") -> ExerciseResult:
    return ExerciseResult(exercise_id=exercise, title=title or f"title {exercise}",
                          category="derive", points=points, max_points=1, status=status,
                          message="", misconceptions=mistakes)


def notebook(student: str, *rows: ExerciseResult) -> NotebookResult:
    return NotebookResult(student=student, path=f"{student}/ch00.ipynb", chapter=0,
                          title="ch00", exercises=rows)


# The class, exercise by exercise:
#   0.1  s1 correct; s2, s3 one phase; s4 limit AND both ways (one number, two mistakes);
#        s5 blank; s6 error; s7 nothing.
#   0.2  s1, s2 correct; s3 wrong, no known mistake; s4 excused; s5 correct, late: 0.8;
#        s6 two files, one blank and one correct; s7 nothing.
BATCH = Batch(notebooks=(
    notebook("s1", row("0.1", "correct", 1), row("0.2", "correct", 1)),
    notebook("s2", row("0.1", "wrong", 0, ONE_PHASE), row("0.2", "correct", 1)),
    notebook("s3", row("0.1", "wrong", 0, ONE_PHASE), row("0.2", "wrong", 0)),
    notebook("s4", row("0.1", "wrong", 0, LIMIT, BOTH_WAYS), row("0.2", "excused", 0)),
    notebook("s5", row("0.1", "unanswered"), row("0.2", "correct", 0.8)),
    notebook("s6", row("0.1", "error"), row("0.2", "unanswered")),
    notebook("s6", row("0.2", "correct", 1)),
    notebook(OUTSIDER, row("0.1", "correct", 1), row("0.2", "correct", 1)),
))


def test_per_exercise_numbers_match_the_hand_count() -> None:
    report = class_report(BATCH, ROSTER)
    first, second = report.exercises
    assert (first.exercise_id, first.students, first.attempted, first.correct, first.wrong,
            first.failed) == ("0.1", 7, 5, 1, 3, 1)     # attempted: s1, s2, s3, s4, s6
    assert (first.median_points, first.mean_points) == (0, 0.14)   # 1 point over 7
    assert first.share_correct == pytest.approx(1 / 7)
    assert dict(first.misconceptions) == {LIMIT: 1, ONE_PHASE: 2, BOTH_WAYS: 1, NAIVE: 0}
    assert [label for label, _ in first.misconceptions] == [LIMIT, ONE_PHASE, BOTH_WAYS, NAIVE]
    assert first.unexplained == 0
    # 0.2 without the excused s4: points 1, 1, 0, 0.8, 1, 0 -> median (0.8 + 1) / 2
    assert (second.students, second.attempted, second.correct, second.wrong,
            second.failed) == (6, 5, 4, 1, 0)
    assert (second.median_points, second.mean_points) == (0.9, 0.63)
    assert second.share_correct == pytest.approx(4 / 6)
    assert all(count == 0 for _, count in second.misconceptions)
    assert second.unexplained == 1


def test_totals_and_score_distribution_match_the_hand_count() -> None:
    report = class_report(BATCH, ROSTER)
    assert [(t.student, t.points, t.max_points) for t in report.totals] == [
        ("s1", 2, 2), ("s2", 1, 2), ("s3", 0, 2), ("s4", 0, 1), ("s5", 0.8, 2),
        ("s6", 1, 2), ("s7", 0, 2)]
    # 100 % -> last tenth; 50 % (s2, s6); 40 % (s5); 0 % (s3, s4, s7)
    assert report.score_bins() == (3, 0, 0, 0, 1, 2, 0, 0, 0, 1)
    assert report.unlisted == (OUTSIDER,)


def test_without_a_roster_the_class_is_the_hand_in() -> None:
    report = class_report(BATCH)
    assert report.students == 7 and report.unlisted == ()
    assert report.exercises[0].correct == 2 and report.exercises[0].students == 7


def test_an_exercise_nobody_handed_in_gets_its_line_from_the_record() -> None:
    report = class_report(BATCH, ROSTER, exercise_ids=("0.3", "0.1"))
    third, first = report.exercises
    assert (third.exercise_id, third.title, third.students, third.attempted) == (
        "0.3", "Bus bandwidth utilisation", 7, 0)
    assert third.misconceptions[0] == ("That uses the algorithm bandwidth S/t", 0)
    assert first.exercise_id == "0.1"
    assert report.totals[0].max_points == 2   # 0.3 and 0.1, not 0.2


def test_csv_rows_and_cells_are_safe() -> None:
    hostile = Batch(notebooks=(notebook("s1", row("0.1", "wrong", 0, ONE_PHASE),
                                        row("99.9", "wrong", 0, "=1+2",
                                            title="=HYPERLINK(\"x\")")),))
    rows = list(csv.DictReader(io.StringIO(csv_text(class_report(hostile)))))
    assert [r["exercise_id"] for r in rows] == ["0.1", "99.9"]
    assert rows[0]["misconceptions"] == f"{ONE_PHASE}: 1"
    assert rows[0]["share_correct"] == "0.0" and rows[0]["attempted"] == "1"
    assert rows[1]["title"] == "'=HYPERLINK(\"x\")"
    assert rows[1]["misconceptions"] == "'=1+2: 1" and rows[1]["unexplained"] == "0"
    full = list(csv.DictReader(io.StringIO(csv_text(class_report(BATCH, ROSTER)))))
    assert full[0]["misconceptions"] == (f"{ONE_PHASE}: 2; {LIMIT}: 1; {BOTH_WAYS}: 1")
    assert (full[1]["median_points"], full[1]["mean_points"]) == ("0.9", "0.63")


def test_html_is_escaped_self_contained_and_holds_the_numbers(tmp_path: Path) -> None:
    csv_path, html_path = write_class_report(class_report(BATCH, ROSTER), tmp_path)
    assert csv_path.name == "class_report.csv" and html_path.name == "class_report.html"
    page = html_path.read_text(encoding="utf-8")
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not re.search(r"\b(src|href)=|@import|url\(|https?:", page)
    assert page.count("<svg") == 3 and page.count("<title id=") == 3
    assert page.count("<desc id=") == 3
    assert "prefers-color-scheme: dark" in page
    assert "<td>90–100 %</td><td class=\"n\">1</td>" in page
    assert f"<td>{ONE_PHASE}</td><td class=\"n\">2 of 7</td>" in page
    assert "<td>wrong, and no known mistake explains it</td><td class=\"n\">1 of 6</td>" in page
    assert "0.1: 14 %" in page and "0.2: 67 %" in page    # the difficulty figure's text


def test_html_without_known_mistakes_or_students_says_so() -> None:
    page = render(class_report(Batch(notebooks=()), ("s1",), exercise_ids=("0.1",)))
    assert "No wrong answer matched a known mistake" in page
    assert page.count("<svg") == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
def test_a_real_grading_names_the_mistakes(tmp_path: Path) -> None:
    """Chapter 0 graded by the real grader: 0.1 is 2 x 1 GB x 7/8 = 1.75 GB for everyone;
    0.875 is one phase, 2.0 the many-GPU limit. The gradebook read back gives the report."""
    source = json.loads(learner_path(CHAPTERS[0]).read_text())
    answers = {"a": "1.75", "b": "0.875", "c": "0.875", "d": "2.0", "e": "None"}
    for student, answer in answers.items():
        folder = tmp_path / "in" / student
        folder.mkdir(parents=True)
        filled = fill_answers(source, {"0.1": f"answer_0_1 = {answer}"})
        (folder / "ch00.ipynb").write_text(json.dumps(filled))
    out = tmp_path / "out"
    assert grading.grade_cli(str(tmp_path / "in"), str(out), workers=2, timeout_s=5) == 0
    batch = Batch(notebooks=read_previous(out).notebooks)
    report = class_report(batch, (*answers, "f"), exercise_ids=("0.1",))
    (only,) = report.exercises
    assert (only.students, only.attempted, only.correct, only.wrong) == (6, 4, 1, 3)
    assert dict(only.misconceptions) == {ONE_PHASE: 2, LIMIT: 1, BOTH_WAYS: 0, NAIVE: 0}
    # and workbook grade wrote its own report beside the gradebook (the class = the hand-in)
    written = {r["exercise_id"]: r for r in csv.DictReader(
        io.StringIO((out / "class_report.csv").read_text(encoding="utf-8")))}
    assert (written["0.1"]["students"], written["0.1"]["attempted"]) == ("5", "4")
    assert written["0.1"]["misconceptions"] == f"{ONE_PHASE}: 2; {LIMIT}: 1"
    assert "<svg" in (out / "class_report.html").read_text(encoding="utf-8")


def test_an_excused_row_read_back_at_zero_points_leaves_the_worth() -> None:
    excused = ExerciseResult(exercise_id="0.1", title="t", category="derive", points=0,
                             max_points=0, status="excused", message="")
    report = class_report(Batch(notebooks=(notebook("s1", excused),
                                           notebook("s2", row("0.1", "wrong", 0)))))
    assert (report.exercises[0].max_points, report.exercises[0].students) == (1, 1)
    assert [(t.points, t.max_points) for t in report.totals] == [(0, 0), (0, 1)]
    assert report.score_bins()[0] == 1   # s1 has nothing to score and is left out


def test_every_records_mistakes_have_distinct_short_names() -> None:
    """Two known mistakes of one exercise under one name would be counted as one."""
    for record in by_id().values():
        labels = [m.label for m in record.misconceptions]
        assert len(set(labels)) == len(labels), (record.id, labels)
        for label in labels:
            assert label and len(label.rstrip("…").split()) <= 10, (record.id, label)
            assert "{" not in label and "; " not in label, (record.id, label)
