"""Collecting what students hand in: every layout, every entry accounted for, lateness,
feedback folders that never meet, a gradebook that is replaced whole, and only the
chapters graded are loaded."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from autograder.grading.discover import Options, discover, parse_time
from autograder.grading.feedback import folder_names, safe_folder
from autograder.grading.swap import replace_problem, swap_in
from workbook.instructor import grading
from workbook.instructor.term import TermArguments

DUE = datetime(2026, 3, 1, 18, 0, tzinfo=timezone.utc)


def touch(root: Path, rel: str, text: str = "{}") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_every_entry_is_a_row_or_ignored_with_a_reason(tmp_path: Path) -> None:
    for rel in (".ada/ch00.ipynb", "__pycache__/ch00.ipynb", ".git/config",
                "bob/ch00.ipynb", "bob/.ipynb_checkpoints/ch00-checkpoint.ipynb",
                "bob/._ch00.ipynb", "bob/.DS_Store", "__MACOSX/x", "notes.txt"):
        touch(tmp_path, rel)
    found = discover(tmp_path)
    assert sorted(f.student for f in found.found) == [".ada", "__pycache__", "bob"]
    assert found.reasons == {
        ".git/": "a folder without any notebook",
        "__MACOSX/": "macOS archive metadata, not a submission",
        "bob/.DS_Store": "macOS folder metadata, not a submission",
        "bob/.ipynb_checkpoints/": "Jupyter's autosave copies (the notebook itself is graded)",
        "bob/._ch00.ipynb": "a macOS resource-fork copy (AppleDouble), not a notebook",
        "notes.txt": "not a notebook (.ipynb)"}
    assert sorted(found.ignored) == sorted(found.reasons)


def test_nbgrader_timestamps_make_lateness(tmp_path: Path) -> None:
    touch(tmp_path, "ann/ch00/ch00.ipynb")
    touch(tmp_path, "ann/ch00/timestamp.txt", "2026-03-01 17:59:59.999999 UTC")
    touch(tmp_path, "ben/ch00/ch00.ipynb")
    touch(tmp_path, "ben/ch00/timestamp.txt", "2026-03-01 18:00:01 UTC")
    touch(tmp_path, "cat/ch00.ipynb")  # handed in by hand: no time known
    found = {f.student: f for f in discover(tmp_path, Options(due=DUE)).found}
    assert (found["ann"].late, found["ben"].late, found["cat"].late) == (False, True, None)
    assert found["ben"].submitted_at == "2026-03-01T18:00:01+00:00"
    assert not discover(tmp_path).ignored  # timestamp.txt is read, not a stray file


@pytest.mark.parametrize("text, want", [
    ("2026-03-01 18:00:00.5 UTC", datetime(2026, 3, 1, 18, 0, 0, 500000, tzinfo=timezone.utc)),
    ("2026-03-01T19:00:00+01:00", datetime(2026, 3, 1, 18, 0, tzinfo=timezone.utc)),
    ("2026-03-01T18:00Z", datetime(2026, 3, 1, 18, 0, tzinfo=timezone.utc)),
    ("yesterday", None),
])
def test_times_are_read_as_utc(text: str, want: datetime | None) -> None:
    assert parse_time(text) == want


def test_feedback_folders_never_meet_a_students_name() -> None:
    """The victim 'bob' shares a name up to case with 'BOB'; 'a b' cleans to a name a
    student could have chosen. Each page goes to the folder of its own student, and no
    folder given out is another student's plain name."""
    tricky = safe_folder("a b")
    students = ["bob", "BOB", "bob~2", "a b", tricky, "x/../y"]
    names = folder_names(students)
    assert len(set(n.lower() for n in names.values())) == len(students)
    plain = {s for s in students if safe_folder(s) == s}
    for student, folder in names.items():
        assert folder == student or folder.lower() not in {p.lower() for p in plain}
        assert "/" not in folder and folder not in (".", "..")
    assert names[tricky] == tricky and names["a b"] != tricky


def test_the_output_folder_is_replaced_whole_or_refused(tmp_path: Path) -> None:
    out = tmp_path / "grades"
    assert replace_problem(out) == ""
    out.mkdir()
    (out / "grades.csv").write_text("old")
    (out / "feedback").mkdir()
    (out / "feedback" / "stale.html").write_text("old")
    assert replace_problem(out) == ""
    new = tmp_path / "new"
    new.mkdir()
    (new / "grades.csv").write_text("new")
    swap_in(new, out)
    assert [p.name for p in out.iterdir()] == ["grades.csv"]
    assert (out / "grades.csv").read_text() == "new" and not new.exists()
    (out / "thesis.tex").write_text("mine")
    assert "holds files that are not a gradebook (thesis.tex)" in replace_problem(out)
    assert "not a folder" in replace_problem(out / "thesis.tex")


def test_grade_refuses_an_out_folder_it_would_destroy(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    touch(tmp_path, "in/ann/ch00.ipynb")
    touch(tmp_path, "home/thesis.tex", "years of work")
    status = grading.grade_cli(str(tmp_path / "in"), str(tmp_path / "home"), workers=1)
    assert status == 2 and "not a gradebook" in capsys.readouterr().err
    assert (tmp_path / "home" / "thesis.tex").read_text() == "years of work"


def test_grading_one_chapter_loads_only_that_chapters_release(tmp_path: Path) -> None:
    notebook = json.loads(grading.learner_path(grading.CHAPTERS[3]).read_text())
    touch(tmp_path, "in/ann/ch03_nbgrader_folder/lr.ipynb", json.dumps(notebook))
    touch(tmp_path, "in/ann/ch03_nbgrader_folder/timestamp.txt", "2026-01-01 00:00:00")
    releases = grading.Releases()
    settings = grading.settings(1, 5.0, tmp_path / "in", tmp_path / "out")
    batch = grading.grade_folder(tmp_path / "in", releases, settings)
    assert [nb.chapter for nb in batch.notebooks] == [3]
    assert releases.loaded == (3,)


def test_grading_a_forged_seed_uses_the_submitters_numbers(tmp_path: Path) -> None:
    """A notebook whose numbers cell names a seed of its own making, answered right for
    it, earns nothing: the grader recomputes the submitter's numbers from the secret."""
    from autograder.grading.fill import fill_answers
    from autograder.personal import personalised, student_seed
    from workbook.instructor.release import personal_notebook
    from workbook.records import printed

    secret = b"0123456789abcdef0123456789abcdef"
    forged = "f" * 32
    notebook = personal_notebook(grading.CHAPTERS[0], "s1", forged)
    mine = personalised(printed("0.2"), student_seed(secret, "s1")).expected()
    fake = personalised(printed("0.2"), forged).expected()
    assert mine != fake
    touch(tmp_path, "in/s1/ch00.ipynb",
          json.dumps(fill_answers(notebook, {"0.2": f"answer_0_2 = {fake!r}"})))
    key = tmp_path / "course.key"
    key.write_bytes(secret)
    os.chmod(key, 0o600)
    assert grading.grade_cli(str(tmp_path / "in"), str(tmp_path / "out"), workers=1,
                             term_args=TermArguments(secret_file=str(key))) == 0
    rows = json.loads((tmp_path / "out" / "grades.json").read_text())["notebooks"][0]
    row = next(e for e in rows["exercises"] if e["exercise_id"] == "0.2")
    assert (row["status"], row["points"]) == ("wrong", 0)
    assert any("carries another student's numbers" in n for n in rows["notes"])
    students = json.loads((tmp_path / "out" / "grades.json").read_text())["students"]
    assert "numbers of someone outside this class" in students[0]["integrity"]
    assert students[0]["feedback_folder"] == "s1"


def test_grading_with_another_secret_warns(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from autograder.personal import student_seed
    from workbook.instructor.release import personal_notebook

    released_with = b"0123456789abcdef0123456789abcdef"
    for student in ("s1", "s2"):
        notebook = personal_notebook(grading.CHAPTERS[3], student,
                                     student_seed(released_with, student))
        touch(tmp_path, f"in/{student}/ch03.ipynb", json.dumps(notebook))
    key = tmp_path / "other.key"
    key.write_bytes(b"another course's secret, not this one")
    os.chmod(key, 0o600)
    assert grading.grade_cli(str(tmp_path / "in"), str(tmp_path / "out"), workers=1,
                             term_args=TermArguments(secret_file=str(key))) == 0
    assert "is --secret-file the secret the notebooks were released with?" in \
        capsys.readouterr().err


def test_totals_give_everyone_on_the_roster_a_row() -> None:
    """A student who handed in nothing is out of every graded chapter too (0 of 12)."""
    from autograder.grading.model import Batch, ExerciseResult, NotebookResult
    from autograder.grading.totals import Handed, csv_text, totals

    rows = tuple(ExerciseResult(f"3.{i}", "", "derive", p, 1, "correct" if p else "wrong", "")
                 for i, p in enumerate((1, 1, 0), start=1))
    batch = Batch((NotebookResult("s2", "s2/ch03.ipynb", 3, "", rows),))
    got = totals(batch, {3: 5, 5: 7}, ["s1", "s2"], {"s2": Handed("2026-03-01T17:00:00+00:00",
                                                                    False)}, {})
    assert [(t.student, t.points, t.max_points, t.late) for t in got] == [
        ("s1", 0, 12, None), ("s2", 2, 12, False)]
    assert csv_text(got).splitlines()[1:] == [
        "s1,0,12,0.0,,,,", "s2,2,12,16.7,no,2026-03-01T17:00:00+00:00,ch03.ipynb,"]


def test_a_personal_notebook_graded_without_the_secret_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from autograder.personal import student_seed
    from workbook.instructor.release import personal_notebook

    notebook = personal_notebook(grading.CHAPTERS[3], "s1", student_seed(b"k" * 32, "s1"))
    touch(tmp_path, "in/s1/ch03.ipynb", json.dumps(notebook))
    assert grading.grade_cli(str(tmp_path / "in"), str(tmp_path / "out"), workers=1) == 0
    assert "graded in the printed ones: grade them with --secret-file" in \
        capsys.readouterr().err
    graded = json.loads((tmp_path / "out" / "grades.json").read_text())["notebooks"][0]
    assert any("grade it with --secret-file" in n for n in graded["notes"])
    assert not any("added by the learner" in n for n in graded["notes"])  # never ran


def test_a_labs_graded_cases_come_from_the_secret_per_student() -> None:
    """Its seed is keyed by the secret, not by the student's seed the notebook carries, so
    the cases are the student's own, the same at every regrade, and unknown in advance."""
    from autograder.personal import grading_seed
    from workbook.instructor.personal_grading import Personaliser
    from workbook.records import printed

    secret = b"0123456789abcdef0123456789abcdef"
    lab = printed("0.7")
    first = Personaliser.for_class(secret, ["s1", "s2"])
    again = Personaliser.for_class(secret, ["s1"])
    seeds = [p._record(s, lab).params["grading_seed"] for p, s in
             ((first, "s1"), (first, "s2"), (again, "s1"))]
    assert seeds[0] == seeds[2] == grading_seed(secret, "s1", "0.7") != seeds[1]
    assert grading_seed(b"another secret, same student!!", "s1", "0.7") != seeds[0]
    assert "grading_seed" not in first._record("s1", printed("0.1")).params
