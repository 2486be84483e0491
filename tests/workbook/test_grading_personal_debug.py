"""Grading a personalised debug exercise against the program its student was shown.

Chapters 0 and 5 are released to a class with a course secret; the students picked here
were shown a buggy program other than the printed one in both debug exercises (0.6 and
5.5). Handed back and graded with the same secret:

* a student who names the buggy line of the program in their own answer cell and fixes
  that line (the fix the record's explanation gives) gets every point of both exercises;
* a student who fixes the printed program instead names the printed line, which is not
  the bug of the program they were given: wrong;
* a notebook handed back untouched is unanswered everywhere, and the grader finds every
  cell as it was released (no locked cell edited, the student's own numbers carried).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import sys
from typing import Any

import pytest

from autograder.exercise import NoVariantError
from autograder.kinds import Debug
from workbook import cli
from workbook.records import printed

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

SECRET = b"0a1b2c3d4e5f60718293a4b5c6d7e8f9"
DEBUG = ("0.6", "5.5")


def params_of(exercise_id: str, student: str) -> dict[str, Any]:
    """The student's numbers: the record's draw from HMAC-SHA256(secret, tagged id)."""
    tag = b"distributed-training-workbook/student-numbers/v1\x00"
    seed = hmac.new(SECRET, tag + student.encode(), hashlib.sha256).hexdigest()[:32]
    try:
        return printed(exercise_id).variant(seed)
    except NoVariantError:
        return dict(printed(exercise_id).params)


def _bug_elsewhere(student: str) -> bool:
    """Whether the student's programs have their bugs on other lines than the printed."""
    return all(params_of(e, student)["bug_line"] != printed(e).params["bug_line"]
               for e in DEBUG)


CANDIDATES = [f"u{n:02d}" for n in range(40)]
FIXER, PRINTED_FIXER = [s for s in CANDIDATES if _bug_elsewhere(s)][:2]
BLANK = "u99"


def fixed_cell(starting: str, line: int, why: str) -> str:
    """The answer cell as released, with the bug line named and that line of its program
    replaced by the fix the record's explanation states ("Fix: `...`")."""
    fix = re.search(r"Fix: `([^`]+)`", why)
    assert fix is not None, why
    lines = starting.split("\n")
    start = next(i for i, text in enumerate(lines) if text.startswith("def "))
    buggy = lines[start + line - 1]
    lines[start + line - 1] = buggy[: len(buggy) - len(buggy.lstrip())] + fix.group(1)
    cell = "\n".join(lines)
    return re.sub(r"= None\b", f"= {line}", cell, count=1)


def printed_fix(exercise_id: str) -> str:
    """The printed program fixed, as a student working from it would hand it in."""
    record = printed(exercise_id)
    kind = record.answer_kind
    assert isinstance(kind, Debug)
    starting = kind.placeholder_for(record.names, record.params)
    return fixed_cell(starting, record.params["bug_line"], record.params["why"])


def _answer_cells(notebook: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(c["metadata"]["workbook"]["exercise"]): c for c in notebook["cells"]
            if c.get("metadata", {}).get("workbook", {}).get("role") == "answer"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("debug")
    students = (FIXER, PRINTED_FIXER, BLANK)
    (root / "roster.csv").write_text("id,name\n" + "".join(f"{s},{s}\n" for s in students))
    key = root / "course.key"
    key.write_bytes(SECRET + b"\n")
    os.chmod(key, 0o600)
    assert cli.main(["release", "--out", str(root / "handout"), "--chapters", "0,5",
                     "--roster", str(root / "roster.csv"), "--secret-file", str(key)]) == 0
    for path in sorted((root / "handout" / "students").glob("*/*.ipynb")):
        student, notebook = path.parent.name, json.loads(path.read_text())
        for exercise_id, cell in _answer_cells(notebook).items():
            if exercise_id not in DEBUG or student == BLANK:
                continue
            if student == FIXER:
                mine = params_of(exercise_id, student)
                text = cell["source"]
                text = text if isinstance(text, str) else "".join(text)
                cell["source"] = fixed_cell(text, mine["bug_line"], mine["why"])
            else:
                cell["source"] = printed_fix(exercise_id)
        target = root / "in" / student / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(notebook))
    assert cli.main(["grade", str(root / "in"), "--out", str(root / "out"), "--secret-file",
                     str(key), "--workers", "2", "--timeout", "10"]) == 0
    data: dict[str, Any] = json.loads((root / "out" / "grades.json").read_text())
    return data


def _rows(data: dict[str, Any], student: str) -> dict[str, dict[str, Any]]:
    return {ex["exercise_id"]: ex for nb in data["notebooks"] if nb["student"] == student
            for ex in nb["exercises"]}


def test_the_students_were_shown_programs_of_their_own() -> None:
    for exercise_id in DEBUG:
        for student in (FIXER, PRINTED_FIXER):
            mine = params_of(exercise_id, student)
            assert mine["program"] != printed(exercise_id).params["program"]


def test_fixing_the_program_shown_earns_every_point(graded: dict[str, Any]) -> None:
    rows = _rows(graded, FIXER)
    for exercise_id in DEBUG:
        row = rows[exercise_id]
        assert (row["status"], row["points"]) == ("correct", row["max_points"]), row
        assert row["max_points"] == printed(exercise_id).points


def test_fixing_the_printed_program_instead_is_graded_against_ones_own(
        graded: dict[str, Any]) -> None:
    rows = _rows(graded, PRINTED_FIXER)
    for exercise_id in DEBUG:
        assert rows[exercise_id]["status"] == "wrong", (exercise_id, rows[exercise_id])
        assert rows[exercise_id]["message"].startswith(
            f"Line {printed(exercise_id).params['bug_line']} is not where the bug is")


def test_an_untouched_personal_notebook_is_unanswered_and_as_released(
        graded: dict[str, Any]) -> None:
    notebooks = [nb for nb in graded["notebooks"] if nb["student"] == BLANK]
    assert len(notebooks) == 2
    for notebook in notebooks:
        assert {ex["status"] for ex in notebook["exercises"]} == {"unanswered"}, notebook
        assert notebook["points"] == 0 and not notebook["problem"]
        assert not [n for n in notebook["notes"] if "locked" in n or "numbers" in n], \
            notebook["notes"]
