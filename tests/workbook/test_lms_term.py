"""One class, handed in through every LMS layout, graded the same way each time.

The downloads are built here from the LMSs' own rules, written out independently of the
grader: Canvas's ``lib/content_zipper.rb`` (sortable name with ``_<digits>_`` runs joined,
lowercased, non-word characters dropped; ``LATE``; user id; attachment id; the uploaded
name) and Moodle's ``mod/assign/classes/downloader.php`` (full name with ``_`` as spaces,
the participant id Moodle allocates per assignment, ``_assignsubmission_file`` as a folder
since 4.1, with a trailing ``_`` before, or flat). The roster is Canvas's own gradebook
export (its Manual Posting and Points Possible rows, the Test Student, a name with ``_``
and one starting with ``=``) or Moodle's participants download, and the Moodle download
is mapped through the assignment's grading worksheet.

The class: honest students (right, and wrong in ways honest students are: a wrong letter
in the shuffled multiple choice, slips, plain mistakes), a student who hands in a
classmate's whole notebook, one who copies a classmate's answers into their own, one who
uploads another chapter's notebook, one who hands in late, one who never hands in, and
one whose upload is named like a classmate's. Points are derived from the answer key:
an answer earns its exercise's points when it is the student's own key answer.
"""

from __future__ import annotations

import ast
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grading.fill import fill_answers
from workbook.instructor.release import chapter_records
from workbook.outline import CHAPTERS
from workbook.paths import learner_path
from workbook.records import lookup

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CHAPTER_FILE = "ch00_ring_allreduce.ipynb"
VALUES = ("0.1", "0.2", "0.3", "0.4")
NAMES = {"0.1": "answer_0_1", "0.2": "answer_0_2", "0.3": "answer_0_3", "0.4": "answer_0_4"}
# id, first, last, Canvas id, Moodle participant id (this assignment's), email
CLASS = [
    ("s01", "Ada", "Lovelace", "50101", "877", "ada@uni.example"),
    ("s02", "Alan", "Turing", "50102", "912", "alan@uni.example"),
    ("s03", "Grace", "Hopper", "50103", "604", "grace@uni.example"),
    ("s04", "Mary_Ann", "O'Brien", "50104", "731", "mary@uni.example"),
    ("s05", "Jürgen", "Müller", "50105", "555", "jurgen@uni.example"),
    ("s06", "Li", "Wei 2", "50106", "1203", "li@uni.example"),
    ("s07", "=Eve", "Formula", "50107", "88", "eve@uni.example"),
    ("s08", "Ken", "Late", "50108", "341", "ken@uni.example"),
    ("s09", "Cass", "Copier", "50109", "4002", "cass@uni.example"),
    ("s10", "Pat", "Paste", "50110", "77", "pat@uni.example"),
    ("s11", "Wes", "Wrongchapter", "50111", "265", "wes@uni.example"),
    ("s12", "Dee", "Dropped", "50112", "3131", "dee@uni.example"),
]
DUE = "2026-03-01T18:00"
PARTLY_RIGHT_0_5 = '''
def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):
    return 2 * (n_gpus - 1) * (1000.0 * message_gb / n_gpus / link_gb_per_s
                               + latency_us / 1000.0)
'''


def workbook(*words: str, cwd: Path, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run([sys.executable, "-m", "workbook.cli", *words], cwd=cwd,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode in ok, f"{words}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def canvas_gradebook() -> str:
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Ring AllReduce (9001)",
             "Current Score"],
            ["", "", "", "", "", "Manual Posting", ""],
            ["    Points Possible", "", "", "", "", "10.00", "(read only)"]]
    for sid, first, last, canvas, _, email in CLASS:
        name = f"{last}, {first}"
        name = f'="{name}"' if name.startswith("=") else name
        rows.append([name, canvas, sid, email, "Section 1", "", ""])
    rows.append(["Student, Test", "50199", "", "", "Section 1", "", ""])
    return "".join(",".join(f'"{c}"' for c in row) + "\n" for row in rows)


def moodle_participants() -> str:
    lines = ["First name,Last name,ID number,Email address,Roles,Groups"]
    lines += [f"{first},{last},{sid},{email},Student,No groups"
              for sid, first, last, _, _, email in CLASS]
    return "\n".join(lines) + "\n"


def canvas_name(first: str, last: str, canvas: str, late: bool, upload: str) -> str:
    name = re.sub(r"_(\d+)_", r"\1", f"{last}, {first}").lower()
    name = re.sub(r"[^\w]", "", name)
    display = re.sub(r'[\x00/\\:*?"<>|]+', "_", upload)
    return "_".join([name, *(["LATE"] if late else []), canvas, canvas + "7", display])


def moodle_prefix(first: str, last: str, pid: str) -> str:
    return f"{first} {last}".replace("_", " ") + "_" + pid


def key(folder: Path) -> dict[tuple[str, str], str]:
    with open(folder / "handout" / "answer-key" / "answer_key.csv", encoding="utf-8") as f:
        return {(r["student"], r["exercise_id"]): r["answer"] for r in csv.DictReader(f)}


def source(exercise: str, answer: str) -> str:
    if exercise == "0.4":
        return f"{NAMES[exercise]} = {answer.split(':')[0]!r}"
    return f"{NAMES[exercise]} = {answer!r}"


def scaled(answer: str, factor: float) -> str:
    number, unit = answer.split(" ", 1) if " " in answer else (answer.rstrip("%"), "%")
    return f"{float(number) * factor:.6g}{' ' if unit != '%' else ''}{unit}"


def wrong_letter(answer: str) -> str:
    return next(letter for letter in "ABCD" if letter != answer.split(":")[0])


def copied_from(k: dict[tuple[str, str], str]) -> str:
    """The classmate s10 copies: the first whose four answers are all wrong for s10's own
    numbers (an answer that happens to be right for both is no sign of copying, and a
    copy that coincides on most exercises leaves too little to tell)."""
    return next(sid for sid, *_ in CLASS[1:8] if not any(
        right_for(e, source(e, k[(sid, e)]), k[("s10", e)]) for e in VALUES))


def answers_for(k: dict[tuple[str, str], str], sid: str) -> dict[str, str]:
    """What each student writes, by exercise (their own key answer unless they err)."""
    own = {e: k[(sid, e)] for e in VALUES}
    if sid == "s05":      # honest: a wrong letter in the shuffled multiple choice
        return {**{e: source(e, own[e]) for e in VALUES[:3]},
                "0.4": f"answer_0_4 = {wrong_letter(own['0.4'])!r}"}
    if sid == "s06":      # honest: a slip of a thousand, a plain mistake, a wrong letter
        return {"0.1": source("0.1", scaled(own["0.1"], 1000)),
                "0.2": source("0.2", scaled(own["0.2"], 1.37)),
                "0.3": source("0.3", own["0.3"]),
                "0.4": f"answer_0_4 = {wrong_letter(own['0.4'])!r}"}
    if sid == "s07":      # honest: everything wrong by a factor nobody's numbers give,
        # and 0.5's formula right but without the checks its edge cases ask for
        return {**{e: (source(e, scaled(own[e], 0.613)) if e != "0.4" else
                       f"answer_0_4 = {wrong_letter(own[e])!r}") for e in VALUES},
                "0.5": PARTLY_RIGHT_0_5}
    if sid == "s10":      # copies a classmate's answers into their own notebook
        return {e: source(e, k[(copied_from(k), e)]) for e in VALUES}
    return {e: source(e, own[e]) for e in VALUES}


def handed_in(folder: Path) -> dict[str, tuple[bytes, bool]]:
    """Each student's upload (bytes, late); s12 hands in nothing."""
    k = key(folder)
    out: dict[str, tuple[bytes, bool]] = {}
    for sid, *_ in CLASS:
        own = json.loads((folder / "handout" / "students" / sid / CHAPTER_FILE).read_text())
        if sid == "s12":
            continue
        if sid == "s09":  # s01's whole notebook
            out[sid] = out["s01"]
            continue
        if sid == "s11":  # another chapter's notebook
            out[sid] = (learner_path(CHAPTERS[3]).read_bytes(), False)
            continue
        notebook = fill_answers(own, answers_for(k, sid))
        out[sid] = (json.dumps(notebook).encode(), sid == "s08")
    return out


def right_for(exercise: str, written: str, own: str) -> bool:
    """Whether the answer line ``written`` is right for a student whose key answer is ``own``:
    the same letter for the choice, else the same unit and a value within the tolerance the
    exercise states (two students' numbers can differ and still share an answer)."""
    value = str(ast.literal_eval(written.split(" = ", 1)[1]))
    if exercise == "0.4":
        return value == own.split(":")[0]
    number, unit = re.fullmatch(r"([-\d.e+]+)\s*(.*)", value).groups()  # type: ignore[union-attr]
    want, want_unit = re.fullmatch(r"([-\d.e+]+)\s*(.*)", own).groups()  # type: ignore[union-attr]
    kind = lookup(exercise).answer_kind
    return unit == want_unit and abs(float(number) - float(want)) <= max(
        kind.rel_tol * abs(float(want)), kind.abs_tol) + 1e-6 * abs(float(want))


def expected_points(folder: Path) -> dict[str, int]:
    """Per student: the points of every value exercise whose handed answer is their own key
    answer (the functions are left unanswered, and s11's notebook counts for nothing)."""
    k = key(folder)
    out = {}
    for sid, *_ in CLASS:
        if sid in ("s11", "s12"):
            out[sid] = 0
            continue
        giver = "s01" if sid == "s09" else sid
        written = {e: source(e, k[(giver, e)]) for e in VALUES} if sid == "s09" else \
            answers_for(k, sid)
        out[sid] = sum(lookup(e).points for e in VALUES
                       if right_for(e, written[e], k[(sid, e)]))
    return out


@pytest.fixture(scope="module")
def term(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("lms")
    (folder / "gradebook_export.csv").write_text(canvas_gradebook(), encoding="utf-8")
    (folder / "participants.csv").write_text(moodle_participants(), encoding="utf-8")
    workbook("new-secret", "course.key", cwd=folder)
    workbook("release", "--out", "handout", "--chapters", "0", "--roster",
             "gradebook_export.csv", "--secret-file", "course.key", cwd=folder)
    uploads = handed_in(folder)
    people = {sid: (first, last, canvas, pid) for sid, first, last, canvas, pid, _ in CLASS}
    canvas = folder / "canvas"
    canvas.mkdir()
    for sid, (data, late) in uploads.items():
        first, last, cid, _ = people[sid]
        upload = "ch00_ring_allreduce-1.ipynb" if sid == "s03" else CHAPTER_FILE
        (canvas / canvas_name(first, last, cid, late, upload)).write_bytes(data)
    for layout, suffix in (("moodle41", "_assignsubmission_file/"),
                           ("moodle31", "_assignsubmission_file_/"),
                           ("moodleflat", "_assignsubmission_file_")):
        root = folder / layout
        root.mkdir()
        for sid, (data, _) in uploads.items():
            first, last, _, pid = people[sid]
            upload = CHAPTER_FILE
            if sid == "s10":  # an upload named like s01's entry stays s10's
                upload = moodle_prefix("Ada", "Lovelace", "877") + \
                    "_assignsubmission_file_" + CHAPTER_FILE
            target = root / (moodle_prefix(first, last, pid) + suffix + upload)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (root / (moodle_prefix("Ada", "Lovelace", "877") +
                 "_assignsubmission_onlinetext")).mkdir()
    header = ["Identifier", "Full name", "Email address", "ID number", "Status", "Grade",
              "Maximum grade", "Grade can be changed", "Last modified (submission)",
              "Last modified (grade)", "Feedback comments"]
    with open(folder / "worksheet.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for sid, first, last, _, pid, email in CLASS:
            when = "Monday, 2 March 2026, 9:15 AM" if sid == "s08" else \
                "Sunday, 1 March 2026, 5:40 PM"
            writer.writerow([f"Participant {pid}", f"{first} {last}", email, sid,
                             "Submitted for grading", "", "100.00", "Yes", when, "-", ""])
    common = ["--chapters", "0", "--secret-file", "course.key", "--due", DUE, "--workers", "2"]
    workbook("grade", "canvas", "--out", "g-canvas", "--roster", "gradebook_export.csv",
             *common, cwd=folder, ok=(1,))   # s11's notebook is an error row
    for layout in ("moodle41", "moodle31", "moodleflat"):
        workbook("grade", layout, "--out", f"g-{layout}", "--roster", "participants.csv",
                 "--lms-worksheet", "worksheet.csv", *common, cwd=folder, ok=(1,))
    return folder


def totals(path: Path) -> dict[str, dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


PATHS = ("g-canvas", "g-moodle41", "g-moodle31", "g-moodleflat")


@pytest.mark.parametrize("path", PATHS)
def test_every_lms_path_gives_the_points_of_the_answer_key(term: Path, path: str) -> None:
    rows = totals(term / path / "totals.csv")
    assert sorted(rows) == sorted(sid for sid, *_ in CLASS)   # the Test Student is not in
    most = sum(r.points for r in chapter_records(CHAPTERS[0]))
    want = expected_points(term)
    for sid, row in rows.items():
        assert float(row["points"]) == want[sid], (sid, row)
        assert float(row["max_points"]) == most, row   # s11's chapter 3 changes nobody's


@pytest.mark.parametrize("path", PATHS)
def test_only_the_copiers_are_flagged(term: Path, path: str) -> None:
    rows = totals(term / path / "totals.csv")
    flagged = {sid for sid, row in rows.items() if row["integrity"]}
    assert flagged == {"s09", "s10"}, {s: rows[s]["integrity"] for s in flagged}
    assert "strong" in rows["s10"]["integrity"]
    for sid in ("s05", "s06", "s07"):
        page = (term / path / "feedback" / sid / "ch00.html").read_text(encoding="utf-8")
        assert "classmate" not in page


@pytest.mark.parametrize("path", PATHS)
def test_lateness_comes_from_the_lms(term: Path, path: str) -> None:
    rows = totals(term / path / "totals.csv")
    assert rows["s08"]["late"] == "yes" and rows["s01"]["late"] == "no"


@pytest.mark.parametrize("path", PATHS)
def test_the_wrong_chapter_is_an_error_row_for_its_uploader(term: Path, path: str) -> None:
    tree = json.loads((term / path / "grades.json").read_text(encoding="utf-8"))
    mine = [nb for nb in tree["notebooks"] if nb["student"] == "s11"]
    assert len(mine) == 1 and "chapter 3" in mine[0]["problem"], mine


def test_the_lms_imports_carry_the_assignment(term: Path) -> None:
    with open(term / "g-canvas" / "canvas_import.csv", encoding="utf-8") as f:
        lines = list(csv.reader(f))
    # --assignment was not given: the default title; the gradebook's own column has
    # another title, so a new column is created, worth the chapter's points
    most = sum(r.points for r in chapter_records(CHAPTERS[0]))
    assert lines[0][5] == "Workbook ch00" and float(lines[1][5]) == most
    by_id = {line[1]: line for line in lines[2:]}
    assert "50199" not in by_id and float(by_id["50101"][5]) == expected_points(term)["s01"]
    with open(term / "g-moodle41" / "moodle_grading_worksheet.csv", encoding="utf-8") as f:
        sheet = {row["Identifier"]: row for row in csv.DictReader(f)}
    want = expected_points(term)
    for sid, _, _, _, pid, _ in CLASS:
        assert float(sheet[f"Participant {pid}"]["Grade"]) == pytest.approx(
            want[sid] / most * 100, abs=0.01)


def test_honest_wrong_answers_of_a_large_class_flag_nobody() -> None:
    """400 honest students, each answering chapter 0's four value exercises wrong in one of
    the ways students do (a wrong letter of the shuffled choice, a slip of two or a
    thousand, a plain miscalculation, the answer of a formula with N for N - 1). Many of
    these land on some classmate's right answer; none may be flagged."""
    from autograder.grading.model import Batch
    from workbook.instructor.personal_grading import Personaliser

    students = [f"h{i:03d}" for i in range(400)]
    personaliser = Personaliser.for_class(b"0123456789abcdef0123456789abcdef", students)
    landed = 0
    for i, student in enumerate(students):
        for exercise in VALUES:
            record = personaliser._record(student, lookup(exercise))
            right = record.expected()
            if exercise == "0.4":
                answer: object = wrong_letter(str(right))
            else:
                value = float(str(right).split()[0].rstrip("%"))
                factor = (2.0, 0.5, 1000.0, 1.37, 0.8, 7 / 8)[(i + len(exercise)) % 6]
                answer = value * factor
            verdict = record.grade(answer)
            assert verdict.status == "wrong", (student, exercise, answer)
            landed += (student, exercise) in personaliser.copied
    personaliser.flag(Batch(()))
    assert landed > 150          # the coincidences are there to be mistaken
    assert not [w for w in personaliser.weighed if w.strong]
    assert all(not personaliser.integrity(s) for s in students)


def test_policies_survive_a_regrade_and_one_student_regrade_keeps_the_others(
        term: Path) -> None:
    """A policy file beside the gradebook (an override, an excused exercise, 10 % a day
    late counted from the time Moodle's worksheet records, partial credit) is applied on
    the first grading and again on a whole-class regrade; then a regrade of s06 alone, after
    s06 handed in again with their own answers, changes s06's row and nothing else."""
    (term / "g-term.policies.ini").write_text(
        "[late]\ndeadline = 2026-03-01T18:00\npenalty_per_day = 10 %\n\n"
        "[grading]\npartial_credit = yes\n\n"
        "[overrides]\ns05, 0.4, 1, regraded by hand: the letter was written in words\n"
        "s04, 0.4, excused, joined the course late\n",
        encoding="utf-8")
    args = ["moodle41", "--out", "g-term", "--roster", "participants.csv", "--lms-worksheet",
            "worksheet.csv", "--chapters", "0", "--secret-file", "course.key", "--due", DUE,
            "--workers", "2"]
    want = expected_points(term)
    want["s05"] += lookup("0.4").points        # the override
    want["s04"] -= lookup("0.4").points        # excused: 0 of 0 points
    want["s08"] = round(want["s08"] * 0.9, 2)  # 15 hours late: one day started, -10 %
    partial: list[float] = []
    for _ in range(2):                          # graded, then regraded whole
        workbook("grade", *args, cwd=term, ok=(1,))
        rows = totals(term / "g-term" / "totals.csv")
        partial.append(float(rows["s07"]["points"]))   # 0.5 passes some of its cases
        assert 0 < partial[-1] < lookup("0.5").points
        assert {s: float(r["points"]) for s, r in rows.items() if s != "s07"} == {
            s: p for s, p in want.items() if s != "s07"}
        most = sum(r.points for r in chapter_records(CHAPTERS[0]))
        assert float(rows["s04"]["max_points"]) == most - lookup("0.4").points
    assert partial[0] == partial[1]
    with open(term / "g-term" / "moodle_grading_worksheet.csv", encoding="utf-8") as f:
        sheet = {row["Identifier"]: row for row in csv.DictReader(f)}
    # the LMS takes each student's share of their own maximum, in its maximum grade
    assert float(sheet["Participant 731"]["Grade"]) == pytest.approx(
        want["s04"] / (most - lookup("0.4").points) * 100, abs=0.01)
    before = (term / "g-term" / "grades.csv").read_text(encoding="utf-8").splitlines()
    pages = {p.relative_to(term): p.read_bytes()
             for p in (term / "g-term" / "feedback").rglob("*.html") if "s06" not in str(p)}
    k = key(term)
    upload = next((term / "moodle41").glob("Li Wei 2_*/*.ipynb"))
    own = json.loads((term / "handout" / "students" / "s06" / CHAPTER_FILE).read_text())
    upload.write_text(json.dumps(fill_answers(own, {e: source(e, k[("s06", e)])
                                                    for e in VALUES})), encoding="utf-8")
    workbook("grade", *args, "--only", "s06", cwd=term)
    after = (term / "g-term" / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert sorted(r for r in before if not r.startswith("s06,")) == sorted(
        r for r in after if not r.startswith("s06,"))
    rows = totals(term / "g-term" / "totals.csv")
    assert float(rows["s06"]["points"]) == 4 and float(rows["s05"]["points"]) == want["s05"]
    assert float(rows["s07"]["points"]) == partial[0]
    assert rows["s10"]["integrity"] and rows["s09"]["integrity"]
    for path, data in pages.items():
        assert (term / path).read_bytes() == data, path


def test_feedback_goes_back_through_each_lms_to_its_student(term: Path) -> None:
    """The zips are read the way the LMSs read them: Canvas takes the first two all-digit
    parts of a name as user and attachment id; Moodle splits a name at ``_`` into full
    name, participant id, plugin type, plugin name and file."""
    import zipfile

    people = {sid: (canvas, pid) for sid, _, _, canvas, pid, _ in CLASS}
    graded = {sid for sid in people if sid not in ("s11", "s12")}
    with zipfile.ZipFile(term / "g-canvas" / "canvas_feedback.zip") as archive:
        placed = {}
        for name in archive.namelist():
            user, attachment = [p for p in name.split("_") if p.isdigit()][:2]
            sid = next(s for s, (canvas, _) in people.items() if canvas == user)
            assert attachment == people[sid][0] + "7"       # the student's own upload
            page = term / "g-canvas" / "feedback" / sid / "ch00.html"
            assert archive.read(name) == page.read_bytes()
            placed[sid] = name
    assert set(placed) == graded
    for layout in ("moodle41", "moodle31", "moodleflat"):
        with zipfile.ZipFile(term / f"g-{layout}" / "moodle_feedback.zip") as archive:
            found = {}
            for name in archive.namelist():
                _, pid, plugin_type, plugin, file = name.split("_", 4)
                assert (plugin_type, plugin, file) == ("assignsubmission", "file", "ch00.html")
                sid = next(s for s, (_, p) in people.items() if p == pid)
                page = term / f"g-{layout}" / "feedback" / sid / "ch00.html"
                assert archive.read(name) == page.read_bytes()
                found[sid] = name
        assert set(found) == graded, layout


def test_times_from_the_collection_step_decide_lateness(term: Path) -> None:
    """nbgrader's timestamp.txt is written on the student's side; a student who writes an
    early one into their folder is still late by the times the instructor recorded."""
    root = term / "nbgrader-style"
    for sid, when in (("s01", "2026-03-01 17:00:00 UTC"), ("s02", "2026-03-01 17:10:00 UTC")):
        folder = root / sid / "ch00"
        folder.mkdir(parents=True)
        source = next((term / "moodle41").glob(f"*_{dict((s, p) for s, *_, p, _ in CLASS)[sid]}"
                                               "_assignsubmission_file/*.ipynb"))
        (folder / CHAPTER_FILE).write_bytes(source.read_bytes())
        (folder / "timestamp.txt").write_text(when, encoding="utf-8")
    (term / "times.csv").write_text("student,submitted_at\ns01,2026-03-03T08:00:00Z\n",
                                    encoding="utf-8")
    workbook("grade", "nbgrader-style", "--out", "g-times", "--chapters", "0", "--secret-file",
             "course.key", "--due", DUE, "--handed-in", "times.csv", "--workers", "2", cwd=term)
    rows = totals(term / "g-times" / "totals.csv")
    assert (rows["s01"]["late"], rows["s01"]["submitted_at"]) == (
        "yes", "2026-03-03T08:00:00+00:00")
    assert rows["s02"]["late"] == "no"   # no recorded time: nbgrader's stands


def test_the_class_report_counts_the_class(term: Path) -> None:
    """The report's lines, counted by hand from what the class handed in: 12 on the
    roster; s11's other chapter and s12's nothing are no attempts; the right answers are
    the key's."""
    with open(term / "g-canvas" / "class_report.csv", encoding="utf-8") as f:
        lines = {row["exercise_id"]: row for row in csv.DictReader(f)}
    assert list(lines)[:4] == list(VALUES) and "0.7" in lines
    k = key(term)
    for exercise in VALUES:
        right = sum(1 for sid, *_ in CLASS if sid not in ("s11", "s12") and right_for(
            exercise, (answers_for(k, sid) if sid != "s09" else {
                e: source(e, k[("s01", e)]) for e in VALUES})[exercise], k[(sid, exercise)]))
        assert int(lines[exercise]["students"]) == 12
        assert int(lines[exercise]["attempted"]) == 10, lines[exercise]
        assert int(lines[exercise]["correct"]) == right, (exercise, lines[exercise])
    page = (term / "g-canvas" / "class_report.html").read_text(encoding="utf-8")
    assert page.count("<svg") >= 2   # the score distribution and the difficulty


def test_uploads_no_roster_entry_vouches_for_are_error_rows(tmp_path: Path) -> None:
    """Names that claim participants the roster does not know, or a classmate inside the
    file's own name, make error rows for the upload, never students."""
    from autograder.grading.discover import Options, discover
    from workbook.instructor.term import LAYOUTS

    made_up = [f"Someone {i}_{9000 + i}_assignsubmission_file_ch00.ipynb" for i in range(12)]
    for name in [*made_up, "Ada Lovelace_877_assignsubmission_file_Alan Turing_912_"
                 "assignsubmission_file_ch00.ipynb"]:
        (tmp_path / name).write_text("{}")
    found = discover(tmp_path, Options(None, {"877": "s01", "912": "s02"}, None, LAYOUTS,
                                       roster_only=True))
    assert found.layout == "moodle"
    assert [f.student for f in found.found] == ["s01"]
    assert len(found.missing) == 12 and all(m.student == "" and "not on the roster" in
                                            m.message for m in found.missing)
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    for name in ("lovelaceada_50101_1_ch00.ipynb", "studenttest_50199_2_ch00.ipynb",
                 "lovelaceada_LATE_anon_x7Yq2_3_ch00.ipynb"):
        (canvas / name).write_text("{}")
    found = discover(canvas, Options(None, {"50101": "s01"}, None, LAYOUTS, roster_only=True))
    assert [f.student for f in found.found] == ["s01"]
    assert sorted(m.message.split(": ", 1)[1][:30] for m in found.missing) == [
        "an anonymous Canvas submission", "canvas user 50199 is not on th"]


def test_a_moodle_release_places_each_notebook_on_its_student(term: Path) -> None:
    """The release zip, read as Moodle's feedback-zip importer reads it, gives each
    participant the notebook released in their own numbers (the same roster ids, so the
    same notebooks as the Canvas-roster release)."""
    import zipfile

    workbook("release", "--out", "handout-moodle", "--chapters", "0", "--roster",
             "participants.csv", "--secret-file", "course.key", "--lms-worksheet",
             "worksheet.csv", cwd=term)
    pids = {pid: sid for sid, _, _, _, pid, _ in CLASS}
    with zipfile.ZipFile(term / "handout-moodle" / "moodle_release.zip") as archive:
        placed = {}
        for name in archive.namelist():
            full_name, pid, plugin_type, plugin, file = name.split("_", 4)
            assert (plugin_type, plugin, file) == ("assignsubmission", "file", CHAPTER_FILE)
            sid = pids[pid]
            mine = term / "handout" / "students" / sid / CHAPTER_FILE
            assert archive.read(name) == mine.read_bytes()
            placed[sid] = full_name
    assert set(placed) == set(pids.values())
    assert placed["s04"] == "Mary Ann O'Brien"   # Moodle writes a name's _ as a space


def test_canvas_names_of_every_script_and_form_read(tmp_path: Path) -> None:
    """Canvas keeps Ruby's word characters, combining marks included: a name downloaded in
    decomposed form (u + combining diaeresis), in another script, or with digits and
    underscores still reads as its user's upload."""
    import unicodedata

    from autograder.grading.discover import Options, discover
    from workbook.instructor.term import LAYOUTS

    names = {"50201": unicodedata.normalize("NFD", "müllerjürgen"), "50202": "王小明",
             "50203": "o_brien2mary", "50204": ""}
    for user, name in names.items():
        (tmp_path / f"{name}_{user}_{user}9_ch00.ipynb").write_text("{}")
    students = {user: f"s{user}" for user in names}
    found = discover(tmp_path, Options(None, students, None, LAYOUTS, roster_only=True))
    assert sorted(f.student for f in found.found) == sorted(students.values())
    assert not found.missing
