"""A personalised notebook is in its student's numbers everywhere: every cell as released,
and every hint, solution, card and check its kernel gives.

A class is released through the command line (every chapter, so every build and debug
exercise), and each student's numbers are worked out here on their own: the seed as an
HMAC of the student's id under the course secret, the params as the record's own draw
from it. Then, for every cell of every student's notebook:

* an exercise's prompt cell states the student's question and shows the student's
  options or program, and a debug exercise's answer cell starts from that program;
* no cell holds a sentence of an exercise's printed question, or a line of its printed
  program, that the student's own version does not have.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from autograder.exercise import Exercise, NoVariantError
from autograder.kinds import Debug
from autograder.markup import escape_dollars
from workbook import cli
from workbook.records import printed

SECRET = b"0123456789abcdef0123456789abcdef"
CLASS = [f"s{n:02d}" for n in range(6)]
DEBUG = ("0.6", "5.5")
_SENTENCE = re.compile(r"(?<=[.?!:;])\s+|\n+")
_NUMBERED = re.compile(r"^\s*\d+ \| ")  # a program line as the prompt numbers it
MIN_FRAGMENT = 16  # shorter pieces ("the fixed function.") read the same in every variant


def seed_of(student: str) -> str:
    """RFC 2104 HMAC-SHA256 of the domain-tagged id under the secret, first 128 bits."""
    tag = b"distributed-training-workbook/student-numbers/v1\x00"
    return hmac.new(SECRET, tag + student.encode(), hashlib.sha256).hexdigest()[:32]


@cache
def params_of(exercise_id: str, student: str) -> dict[str, Any]:
    """The student's params: the record's own draw from their seed (its printed ones when
    no draw changes the answer)."""
    record = printed(exercise_id)
    try:
        return record.variant(seed_of(student))
    except NoVariantError:
        return dict(record.params)


def shown_texts(record: Exercise, params: Any) -> list[str]:
    """What the notebook shows of an exercise for ``params``: the question, its notes,
    and the options or the numbered program (as the prompt shows them)."""
    notes = [escape_dollars(record.render_notes(params))] if record.notes else []
    return [escape_dollars(record.render_prompt(params)), *notes,
            *record.render_extras(params)]


def listing(record: Exercise, params: Any) -> list[str]:
    kind = record.answer_kind
    assert isinstance(kind, Debug)
    return kind.code_for(params).rstrip("\n").split("\n")


def pieces(text: str) -> set[str]:
    """The sentences and lines of ``text``, a program line without its number."""
    return {_NUMBERED.sub("", piece).strip() for piece in _SENTENCE.split(text)}


def fragments(texts: list[str]) -> set[str]:
    return {piece for text in texts for piece in pieces(text) if len(piece) >= MIN_FRAGMENT}


def printed_only(record: Exercise, student: str) -> set[str]:
    """Sentences and program lines of the printed exercise that the student's own version
    of it does not have."""
    mine = params_of(record.id, student)
    theirs = fragments(shown_texts(record, record.params))
    own = fragments(shown_texts(record, mine))
    if isinstance(record.answer_kind, Debug):
        theirs |= {line.strip() for line in listing(record, record.params)
                   if len(line.strip()) >= MIN_FRAGMENT}
        own |= {line.strip() for line in listing(record, mine)}
    return theirs - own


def source(cell: dict[str, Any]) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


@pytest.fixture(scope="module")
def handout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("handout")
    (root / "roster.csv").write_text("id,name\n" + "".join(f"{s},Student {s}\n" for s in CLASS))
    key = root / "course.key"
    key.write_bytes(SECRET + b"\n")
    os.chmod(key, 0o600)
    assert cli.main(["release", "--out", str(root / "out"), "--chapters", "all", "--roster",
                     str(root / "roster.csv"), "--secret-file", str(key)]) == 0
    return root / "out"


def notebooks(handout: Path) -> list[tuple[str, dict[str, Any]]]:
    found = sorted((handout / "students").glob("*/*.ipynb"))
    assert len(found) == len(CLASS) * 10
    return [(path.parent.name, json.loads(path.read_text())) for path in found]


def exercise_cells(notebook: dict[str, Any]) -> dict[tuple[str, str], str]:
    cells = {}
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("workbook", {})
        if meta.get("exercise"):
            cells[(str(meta["exercise"]), str(meta.get("role")))] = source(cell)
    return cells


def test_the_class_differs_where_it_matters() -> None:
    """The sweep below has something to find: some students' debug programs, and most
    students' numbers, are not the printed ones."""
    for exercise_id in DEBUG:
        programs = {params_of(exercise_id, s)["program"] for s in CLASS}
        assert programs - {printed(exercise_id).params["program"]}, exercise_id
    assert params_of("0.1", CLASS[0]) != dict(printed("0.1").params)


def test_every_prompt_and_answer_cell_is_in_the_students_numbers(handout: Path) -> None:
    checked = 0
    for student, notebook in notebooks(handout):
        for (exercise_id, role), text in exercise_cells(notebook).items():
            record = printed(exercise_id)
            mine = params_of(exercise_id, student)
            if role == "prompt":
                for shown in shown_texts(record, mine):
                    assert shown in text, (student, exercise_id, shown[:80])
                checked += 1
            if role == "answer" and isinstance(record.answer_kind, Debug):
                program = "\n".join(listing(record, mine))
                assert program in text, (student, exercise_id)
                assert text.lstrip().startswith(f"bug_line_{exercise_id.replace('.', '_')} "
                                                "= None")
                checked += 1
    assert checked >= len(CLASS) * 58


def test_no_cell_keeps_a_printed_question_or_program(handout: Path) -> None:
    leftovers: list[tuple[str, str, str]] = []
    swept = 0
    for student, notebook in notebooks(handout):
        chapter = notebook["metadata"]["workbook"]["chapter"]
        ids = {key[0] for key in exercise_cells(notebook)}
        stale = {piece: exercise_id for exercise_id in ids
                 for piece in printed_only(printed(exercise_id), student)}
        swept += len(stale)
        for cell in notebook["cells"]:
            shown = pieces(source(cell))
            leftovers += [(student, stale[p], p[:60]) for p in stale if p in shown]
        assert chapter == int(notebook["metadata"]["workbook"]["chapter"])
    assert swept > 100  # most of the class's questions differ from the printed ones
    assert not leftovers, leftovers[:10]


def test_the_sweep_finds_a_printed_program_left_in_an_answer_cell(handout: Path) -> None:
    """The sweep's own check: the learner notebook as built (printed numbers) left in a
    student's folder is found for a student whose program differs."""
    student = next(s for s in CLASS if params_of("0.6", s)["program"] != 0)
    built = json.loads((Path(cli.__file__).parent / "notebooks" /
                        "ch00_ring_allreduce.ipynb").read_text())
    answer = pieces(exercise_cells(built)[("0.6", "answer")])
    assert printed_only(printed("0.6"), student) & answer


def test_the_answer_key_holds_the_same_numbers(handout: Path) -> None:
    rows = list(csv.DictReader((handout / "answer-key" / "answer_key.csv").open()))
    for row in rows:
        if row["exercise_id"] in ("0.1", *DEBUG):
            mine = params_of(row["exercise_id"], row["student"])
            key = json.loads(row["params"])
            assert {k: key[k] for k in mine} == json.loads(json.dumps(mine, default=str))


def _widget_texts(widget: Any) -> list[str]:
    """Every label and HTML value inside a card, its children included."""
    texts = [str(getattr(widget, "value", "") or "")]
    texts += [str(label) for label in getattr(widget, "options", ()) or ()]
    for child in getattr(widget, "children", ()):
        texts += _widget_texts(child)
    return texts


@pytest.mark.parametrize("student", CLASS[:3])
def test_the_kernel_hints_solves_and_checks_in_the_students_numbers(student: str) -> None:
    """After the notebook's numbers cell: every hint and worked solution is filled from
    the student's params and says nothing of the printed question that theirs does not;
    a debug card lists the student's program and its check takes the student's line."""
    import workbook as wb
    from workbook.learner import personal_numbers
    from workbook.records import all_challenges, all_exercises

    exec(f'wb.your_numbers("{student}", "{seed_of(student)}")', {"wb": wb})
    try:
        for record in (*all_exercises(), *all_challenges()):
            mine = params_of(record.id, student)
            stale = printed_only(record, student)
            texts = [wb.hint(record.id).body for _ in record.hints]
            assert texts == [record.render_hint(i, mine) for i in range(len(record.hints))]
            texts.append(wb.solution(record.id).body)
            assert texts[-1] == record.render_explanation(mine), record.id
            assert not {p for t in texts for p in pieces(t)} & stale, record.id
        for exercise_id in DEBUG:
            record, mine = printed(exercise_id), params_of(exercise_id, student)
            card = wb.widget(exercise_id)
            shown = "\n".join(_widget_texts(card.input) + _widget_texts(card.prompt))
            for number, line in enumerate(listing(record, mine), start=1):
                assert f"line {number}: {line.strip()}" in shown, (exercise_id, number)
            verdict = wb.check(exercise_id, mine["bug_line"])
            assert verdict.verdict.message.startswith("Right line"), exercise_id
    finally:
        personal_numbers._current.clear()
