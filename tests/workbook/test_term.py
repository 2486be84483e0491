"""A whole term in one go, with the instructors' guide's own commands.

The commands come from the `sh` blocks of the guide's "A term, step by step" section and
the roster from its `text` block, run in order in a fresh folder: a course secret, a
personalised release of chapter 0, three students handing in (one honestly, one handing
in a classmate's notebook under their own name, one copying a classmate's numbers into
their own notebook, late), grading, the same class as a Canvas export, and a regrade.
Right answers are read from the student's own notebook (0.1 worked out by hand from the
numbers in its prompt) and from the release's answer key, never from the grader.
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grading.fill import fill_answers
from workbook.records import printed

sys.path.insert(0, str(Path(__file__).parent))
from nbgrader_course import RIGHT_FUNCTIONS  # noqa: E402
from test_grading_honest import FUNCTIONS as HONEST_FUNCTIONS  # noqa: E402
from test_grading_honest import HELPERS  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "instructors.md"
SECTION = "## A term, step by step"
CHAPTER_FILE = "ch00_ring_allreduce.ipynb"

# The chapter's functions as a learner writes them (the same for every student: what
# differs per student is the inputs they are tested on), shared with the grading tests.
FUNCTIONS = {
    "0.5": HELPERS + HONEST_FUNCTIONS["0.5"],
    "0.6": HELPERS + '''
bug_line_0_6 = {bug_line}

def ring_allreduce_bandwidth_time_s(message_gb, n_gpus, link_gb_per_s):
    _number(message_gb); _number(link_gb_per_s, allow_zero=False)
    n = _whole(n_gpus)
    steps = 2 * (n - 1)
    return steps * (message_gb / n) / link_gb_per_s
''',
    "0.7": RIGHT_FUNCTIONS["ring_allreduce"],
}
VALUE_EXERCISES = ("0.1", "0.2", "0.3", "0.4")
ANSWER_NAMES = {"0.1": "answer_0_1", "0.2": "answer_0_2", "0.3": "answer_0_3",
                "0.4": "answer_0_4"}


def guide_section() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return text[start:end]


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", guide_section(), re.DOTALL)


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command)
    assert words[0] == "workbook", command
    env = dict(os.environ, WORKBOOK_HOME=str(cwd / "home"))
    done = subprocess.run([sys.executable, "-m", "workbook.cli", *words[1:], "--workers", "2"]
                          if words[1] == "grade" else [sys.executable, "-m", "workbook.cli",
                                                       *words[1:]],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


def commands() -> list[str]:
    lines = [line.strip() for block in blocks("sh") for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def hand_worked_0_1(notebook: dict) -> float:
    """GB each GPU sends in a ring AllReduce, from the numbers in the student's own prompt:
    2 (N - 1) / N x M (Patarasuk & Yuan 2009)."""
    prompt = next("".join(c["source"]) for c in notebook["cells"]
                  if c["metadata"].get("workbook", {}).get("exercise") == "0.1"
                  and c["metadata"]["workbook"].get("role") == "prompt")
    found = re.search(r"(\d+) GPUs each hold a ([\d.]+) GB gradient", prompt)
    assert found, prompt
    n, m = int(found[1]), float(found[2])
    return 2 * (n - 1) / n * m


def key_answers(folder: Path) -> dict[tuple[str, str], str]:
    with open(folder / "handout" / "answer-key" / "answer_key.csv", encoding="utf-8") as f:
        return {(row["student"], row["exercise_id"]): row["answer"] for row in csv.DictReader(f)}


def value_source(exercise: str, answer: str) -> str:
    if exercise == "0.4":
        return f"{ANSWER_NAMES[exercise]} = {answer.split(':')[0]!r}"
    return f"{ANSWER_NAMES[exercise]} = {answer!r}"


def own_notebook(folder: Path, student: str) -> dict:
    path = folder / "handout" / "students" / student / CHAPTER_FILE
    return json.loads(path.read_text(encoding="utf-8"))


def bug_line(key: dict[tuple[str, str], str], student: str) -> int:
    """The line of the buggy program 0.6 shows this student (each variant shows its own)."""
    found = re.match(r"bug on line (\d+);", key[(student, "0.6")])
    assert found, key[(student, "0.6")]
    return int(found[1])


def answered(notebook: dict, values: dict[str, str], line: int) -> dict:
    functions = dict(FUNCTIONS, **{"0.6": FUNCTIONS["0.6"].replace("{bug_line}", str(line))})
    return fill_answers(notebook, {**values, **functions})


def hand_in(folder: Path, student: str, notebook: dict, when: str) -> None:
    target = folder / "submissions" / student / "ch00"
    target.mkdir(parents=True)
    (target / CHAPTER_FILE).write_text(json.dumps(notebook), encoding="utf-8")
    (target / "timestamp.txt").write_text(when, encoding="utf-8")  # as nbgrader writes it


def totals(path: Path) -> dict[str, dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def term(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("term")
    (folder / "roster.csv").write_text(blocks("text")[0], encoding="utf-8")
    steps = commands()
    assert [s.split()[1] for s in steps] == ["new-secret", "release", "grade", "grade"]
    new_secret, release, grade, grade_canvas = steps
    run(new_secret, folder)
    run(release, folder)
    key = key_answers(folder)
    ada, alan, grace = "s1001", "s1002", "s1003"
    ada_values = {e: value_source(e, key[(ada, e)]) for e in VALUE_EXERCISES}
    ada_notebook = answered(own_notebook(folder, ada), ada_values, bug_line(key, ada))
    # the key prints six significant digits (3.83333 GB for 2 x 23/24 x 2 GB)
    assert float(key[(ada, "0.1")].split()[0]) == pytest.approx(
        hand_worked_0_1(own_notebook(folder, ada)), rel=1e-5)
    hand_in(folder, ada, ada_notebook, "2026-03-01 17:59:12.123456 UTC")
    hand_in(folder, alan, ada_notebook, "2026-03-01 17:30:00 UTC")   # Ada's whole notebook
    hand_in(folder, grace, answered(own_notebook(folder, grace), ada_values, bug_line(key, ada)),
            "2026-03-02 09:00:00 UTC")                                  # Ada's answers, late
    run(grade, folder)
    canvas = folder / "canvas-export"
    canvas.mkdir()
    for student, canvas_id, late in ((ada, "50113", ""), (alan, "50114", ""),
                                     (grace, "50115", "LATE_")):
        source = folder / "submissions" / student / "ch00" / CHAPTER_FILE
        name = f"student{canvas_id[-1]}_{late}{canvas_id}_{canvas_id}9_{CHAPTER_FILE}"
        (canvas / name).write_bytes(source.read_bytes())
    run(grade_canvas, folder)
    return folder


def key_params(folder: Path, student: str, exercise: str) -> dict:
    with open(folder / "handout" / "answer-key" / "answer_key.csv", encoding="utf-8") as f:
        return next(json.loads(row["params"]) for row in csv.DictReader(f)
                    if (row["student"], row["exercise_id"]) == (student, exercise))


def shared(folder: Path, a: str, b: str, exercise: str) -> bool:
    """Is what ``a`` hands in for ``exercise`` also right for ``b``? Two students' numbers
    can differ and still share an answer within the tolerance (or 0.4's letter), so ``a``'s
    answer from the key is checked in ``b``'s numbers from the key."""
    key = key_answers(folder)
    if exercise not in VALUE_EXERCISES:
        return key[(a, exercise)] == key[(b, exercise)]
    answer = value_source(exercise, key[(a, exercise)]).split(" = ", 1)[1]
    record = dataclasses.replace(printed(exercise), params=key_params(folder, b, exercise))
    return record.grade(ast.literal_eval(answer)).status == "correct"


def expected_points(folder: Path, student: str) -> int:
    """Ada's answers are right for Alan and Grace only where their numbers coincide with
    hers; the functions are right for all, and 0.6's bug line only where Ada's program put
    the bug on the same line as theirs."""
    if student == "s1001":
        return 7
    same = [shared(folder, "s1001", student, e) for e in (*VALUE_EXERCISES, "0.6")]
    return len(FUNCTIONS) - 1 + sum(same)


def test_each_student_gets_their_own_numbers(term: Path) -> None:
    notebooks = {s: own_notebook(term, s) for s in ("s1001", "s1002", "s1003")}
    numbers = {s: next(c["source"] for c in nb["cells"] if c["id"] == "ch00-numbers")
               for s, nb in notebooks.items()}
    assert len(set(numbers.values())) == 3
    for notebook in notebooks.values():
        text = json.dumps(notebook)
        assert "BEGIN SOLUTION" not in text and "solutions" not in numbers["s1001"]
    assert not (term / "handout" / "students" / "s1001" / "instructor").exists()
    assert oct((term / "handout" / "answer-key").stat().st_mode & 0o777) == "0o700"
    manifest = json.loads((term / "handout" / "answer-key" / "manifest.json").read_text())
    secret = (term / "course.key").read_text().strip()
    assert secret not in json.dumps(manifest) and secret not in json.dumps(notebooks)


def test_totals_give_right_answers_full_points_and_copies_none(term: Path) -> None:
    rows = totals(term / "grades" / "totals.csv")
    assert list(rows) == ["s1001", "s1002", "s1003"]
    for student, row in rows.items():
        assert int(row["points"]) == expected_points(term, student), row
        assert row["max_points"] == "7"
    assert rows["s1001"]["integrity"] == ""
    assert "carries the numbers of s1001" in rows["s1002"]["integrity"]
    if not all(shared(term, "s1001", "s1003", e) for e in ("0.1", "0.2", "0.3")):
        assert "right for the numbers of s1001" in rows["s1003"]["integrity"]
    assert [rows[s]["late"] for s in rows] == ["no", "no", "yes"]


def test_copied_answers_are_integrity_rows_and_pages_name_nobody(term: Path) -> None:
    with open(term / "grades" / "grades.csv", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["student"] == "s1003"]
    for row in rows:
        if row["exercise_id"] in ("0.1", "0.2", "0.3") and not shared(
                term, "s1001", "s1003", row["exercise_id"]):
            assert (row["status"], row["points"]) == ("integrity", "0"), row
    page = (term / "grades" / "feedback" / "s1003" / "ch00.html").read_text()
    assert "s1001" not in page and "classmate" in page


def test_the_canvas_export_grades_the_same(term: Path) -> None:
    folders = totals(term / "grades" / "totals.csv")
    canvas = totals(term / "grades-canvas" / "totals.csv")
    assert {s: r["points"] for s, r in canvas.items()} == {
        s: r["points"] for s, r in folders.items()}
    assert canvas["s1003"]["late"] == "yes" and canvas["s1001"]["late"] == "no"
    with open(term / "grades-canvas" / "canvas_import.csv", encoding="utf-8") as f:
        lines = list(csv.reader(f))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                        "Workbook ch00"]
    assert lines[1][0] == "Points Possible" and lines[1][5] == "7"
    assert ["50113", "s1001"] == lines[2][1:3]


def test_a_regrade_replaces_the_whole_gradebook(term: Path) -> None:
    stale = term / "grades" / "feedback" / "s1001" / "ch07.html"
    stale.write_text("from a previous run")
    grade = commands()[2]
    run(grade, term)
    assert not stale.exists()
    assert (term / "grades" / "feedback" / "s1001" / "ch00.html").exists()
    assert not [p for p in term.iterdir() if p.name.startswith(".grades")]
