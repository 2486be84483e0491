"""A feedback page shows the student's own answer and what is wrong with it, never the
expected answer, the right option, or the feedback of options the student did not pick.

A class is released in its own numbers (every chapter), every student answers every
exercise wrong (:mod:`wrong_answers`: a known misconception or a perturbed expected
value of the right type), the class is graded with the course secret, and every page is
searched, exercise by exercise, for that student's expected answer, worked out here from
the record in the student's numbers (and the same for a class released and graded without
a secret, in the printed numbers):

* a number in its unit, the neighbouring prefixes, as a fraction or a percentage, at the
  precision the page prints it (the notations of the page-leak test's ``page_text``),
  unless the prompt itself gives that number or the student wrote it;
* a choice's right key in any "answer is C" phrasing, its text, and the feedback of
  every option the student did not pick;
* an order's items in the right order, a configuration's every expected field, a debug
  exercise's buggy line, and any line of the reference program.

``grades.json`` (the instructor's) may and does keep the expected values.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
import os
import re
import string
import sys
from html import escape
from pathlib import Path
from typing import Any

import page_text as pt
import pytest
import wrong_answers as wa

from autograder.exercise import Exercise, NoVariantError
from autograder.kinds import Choice, Constraints, Debug, Numeric, Ordering, Trace
from autograder.kinds.named_numbers import NamedNumbers
from autograder.unit_table import target_unit
from workbook import cli
from workbook.records import all_challenges, all_exercises, printed

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")]

SECRET = b"fedcba9876543210fedcba9876543210"
CLASS = ("ann", "bo", "cy", "di", "ed", "flo")
_SECTION = re.compile(r'<section[^>]*aria-labelledby="ex-([^"]+)">(.*?)</section>', re.DOTALL)
MISS_WORDING = ("by less than 50%", "by a factor between 1.5 and 10")
_YOURS = re.compile(r"<dt>Your answer</dt><dd><code>(.*?)</code></dd>|"
                    r"<summary>Your answer cell</summary><pre><code>(.*?)</code>", re.DOTALL)


def params_of(exercise_id: str, student: str, own: bool = True) -> dict[str, Any]:
    """The student's numbers: the record's draw from HMAC-SHA256(secret, tagged id), or
    the printed ones for a class released without personal numbers (``own`` False)."""
    if not own:
        return dict(printed(exercise_id).params)
    tag = b"distributed-training-workbook/student-numbers/v1\x00"
    seed = hmac.new(SECRET, tag + student.encode(), hashlib.sha256).hexdigest()[:32]
    try:
        return printed(exercise_id).variant(seed)
    except NoVariantError:
        return dict(printed(exercise_id).params)


def _cells(notebook: dict[str, Any]) -> dict[str, str]:
    found = {}
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("workbook", {})
        if meta.get("role") == "answer":
            text = cell["source"]
            found[str(meta["exercise"])] = text if isinstance(text, str) else "".join(text)
    return found


@pytest.fixture(scope="module", params=[True, False], ids=["own numbers", "printed numbers"])
def graded(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bool]:
    """The graded class: released and graded in each student's own numbers, or (a course
    without a secret) everyone in the printed numbers."""
    own: bool = request.param
    root = tmp_path_factory.mktemp("pages")
    (root / "roster.csv").write_text("id,name\n" + "".join(f"{s},{s}\n" for s in CLASS))
    key = root / "course.key"
    key.write_bytes(SECRET + b"\n")
    os.chmod(key, 0o600)
    personal = ["--roster", str(root / "roster.csv"), "--secret-file", str(key)] if own else []
    assert cli.main(["release", "--out", str(root / "handout"), "--chapters", "all",
                     *personal]) == 0
    handed_out = sorted((root / "handout" / "students").glob("*/*.ipynb")) if own else [
        root / "handout" / student / path.name for student in CLASS
        for path in sorted((root / "handout").glob("*.ipynb"))]
    for path in handed_out:
        notebook = json.loads((path if own else root / "handout" / path.name).read_text())
        student = path.parent.name
        for cell in notebook["cells"]:
            meta = cell.get("metadata", {}).get("workbook", {})
            if meta.get("role") == "answer":
                record = printed(str(meta["exercise"]))
                starting = _cells({"cells": [cell]})[record.id]
                cell["source"] = wa.wrong_source(record, params_of(record.id, student, own),
                                                 starting, CLASS.index(student))
        target = root / "in" / student / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(notebook))
    secret = ["--secret-file", str(key)] if own else []
    status = cli.main(["grade", str(root / "in"), "--out", str(root / "out"), *secret,
                       "--workers", "2", "--timeout", "10"])
    assert status == 0
    return root / "out", own


def rows(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    data = json.loads((out / "grades.json").read_text())
    return {(nb["student"], ex["exercise_id"]): ex for nb in data["notebooks"]
            for ex in nb["exercises"]}


def test_every_answer_was_graded_wrong_in_the_students_numbers(
        graded: tuple[Path, bool]) -> None:
    found = rows(graded[0])
    assert len(found) == len(CLASS) * 67
    assert {(k, r["status"]) for k, r in found.items() if r["status"] != "wrong"} == set()


# -- the searches ------------------------------------------------------------------------

def _numbers(text: str, value: float, unit: str, allowed: str) -> list[str]:
    """Printed forms of ``value`` in ``text``; none when ``allowed`` (the prompt and the
    student's own answer) prints it too."""
    forms, family = pt.answer_forms(value, unit), target_unit(unit).family
    if pt.found_in(allowed, forms, "") or not value:
        return []
    return list(pt.found_in(text, forms, family))


def _reference_lines(program: Any) -> list[str]:
    """The reference program's lines past its signature (which the answer cell gives)."""
    body, signature = [], False
    for line in (line.strip() for line in inspect.getsource(program).split("\n")):
        signature = signature or line.startswith("def ")
        if signature:
            signature = not line.endswith(":")
        elif len(line) >= 20 and not line.startswith(('"""', "#")):
            body.append(line)
    return body


def _choice(kind: Choice, record: Exercise, params: Any, text: str, yours: str) -> list[str]:
    options = {o.key: o for o in kind.options_for(params)}
    right = options[record.expected(params)]
    chosen = next(o for key, o in options.items() if yours.startswith(f"{key}:"))
    leaks = [f"right key {right.key}" for pattern in (
        rf"\b(?:right|correct|answer|expected)\b\W{{0,4}}(?:is\W+|was\W+|=\W*)?{right.key}\b",
        rf"\boption {right.key}\b") if re.search(pattern, text, re.IGNORECASE)]
    if len(right.text) >= 8 and right.text not in chosen.text and right.text in text:
        leaks.append(f"right option's text {right.text[:40]!r}")
    for option in options.values():
        if option is not chosen and len(option.feedback) >= 20 \
                and option.feedback not in chosen.feedback and option.feedback in text:
            leaks.append(f"feedback of option {option.key}")
    return leaks


def fixed_text(record: Exercise) -> list[str]:
    """Feedback that reads the same in every student's numbers, so that a number in it is
    no answer: the wording of a miss's size, and the literal text of the record's
    misconception feedback ("Adam's 12 bytes of FP32 state per parameter")."""
    chunks = [literal for m in record.misconceptions
              for literal, *_ in string.Formatter().parse(m.feedback) if len(literal) >= 12]
    return sorted([*chunks, *MISS_WORDING], key=len, reverse=True)


def leaks(record: Exercise, params: Any, section: str) -> list[str]:
    """What of the expected answer ``section`` (one exercise's part of a page) shows."""
    kind, expected = record.answer_kind, record.expected(params)
    own = " ".join(pt.readable(a or b) for a, b in _YOURS.findall(section))
    text = pt.readable(section)
    for chunk in fixed_text(record):
        text = text.replace(chunk, " ")
    allowed = f"{record.render_prompt(params)} {own}"
    found: list[str] = []
    if "Expected" in section:
        found.append("an Expected field")
    if isinstance(kind, Numeric):
        found += _numbers(text, float(expected), kind.unit, allowed)
    elif isinstance(kind, NamedNumbers):
        for name, unit in kind.fields:
            found += _numbers(text, float(expected[name]), unit, allowed)
    elif isinstance(kind, Trace):
        for row in expected:
            for col, cell in enumerate(row if isinstance(row, tuple) else (row,)):
                if isinstance(cell, (int, float)) and not isinstance(cell, bool):
                    unit = kind.column_units[col] if kind.column_units else kind.unit
                    found += _numbers(text, float(cell), unit, allowed)
    elif isinstance(kind, Choice):
        yours = re.search(r"<dt>Your answer</dt><dd><code>(.*?)</code>", section, re.DOTALL)
        assert yours is not None, record.id
        found += _choice(kind, record, params, text, pt.readable(yours.group(1)))
    elif isinstance(kind, Ordering):
        pattern = r"\W{1,6}".join(re.escape(kind.items[kind.resolve(expected)[i]])
                                  for i in range(len(kind.items)))
        found += re.findall(pattern, text)
    elif isinstance(kind, Constraints):
        shown = [f for f, v in expected.items() if re.search(rf"\b{f}\s*[=:]\s*{v}\b", text)]
        # every field at its reference value: a page showing the student's own
        # configuration, which differs from the reference in some field, is not a leak
        if shown and len(shown) == len(expected):
            found.append(f"the reference configuration {dict(expected)}")
    if isinstance(kind, Debug):
        found += re.findall(rf"\bline\s+{expected[0]}\b", text, re.IGNORECASE)
    program = expected[1] if isinstance(kind, Debug) else expected if callable(expected) \
        else None
    if program is not None:
        found += [line for line in _reference_lines(program) if line in text]
    return found


def sections(page: str) -> dict[str, str]:
    return {key.replace("-", "."): body for key, body in _SECTION.findall(page)}


def test_no_page_shows_a_students_expected_answer(graded: tuple[Path, bool]) -> None:
    out, own = graded
    pages = sorted((out / "feedback").glob("*/*.html"))
    assert len(pages) == len(CLASS) * 10
    shown: dict[tuple[str, str], list[str]] = {}
    searched = 0
    for page in pages:
        student = page.parent.name
        for exercise_id, body in sections(page.read_text(encoding="utf-8")).items():
            record = printed(exercise_id)
            found = leaks(record, params_of(exercise_id, student, own), body)
            searched += 1
            if found:
                shown[(student, exercise_id)] = found
    assert searched == len(CLASS) * 67
    assert not shown, shown


def test_the_search_finds_each_kind_of_answer_when_a_page_shows_it() -> None:
    """The searches themselves: an answer written into a section is found."""
    params = dict(printed("0.1").params)
    want = printed("0.1").expected(params) * 1000
    assert leaks(printed("0.1"), params, f"<p>Not yet: it is {want:.0f} MB.</p>")
    choice = printed("0.4")
    kind = choice.answer_kind
    assert isinstance(kind, Choice)
    key = choice.expected(choice.params)
    other = next(o for o in kind.options_for(choice.params) if o.key != key)
    section = f"<dt>Your answer</dt><dd><code>{other.key}: {other.text}</code></dd>"
    assert leaks(choice, choice.params, f"{section}<li>right = {key}</li>")
    right = next(o for o in kind.options_for(choice.params) if o.key == key)
    assert leaks(choice, choice.params, f"{section}<li>{right.feedback}</li>")
    debug = printed("0.6")
    line = debug.expected(debug.params)[0]
    assert leaks(debug, debug.params, f"<p>The bug is on line {line}.</p>")
    lab = printed("0.7")
    reference = _reference_lines(lab.expected(lab.params))[0]
    assert leaks(lab, lab.params, f"<pre>{reference}</pre>")
    order = printed("9.8")
    assert leaks(order, order.params, "<p>" + " -> ".join(order.expected(order.params))
                 + "</p>")
    assert not leaks(printed("0.1"), params, "<p>Not yet: your answer is too small.</p>")


def _variants(record: Exercise, count: int = 12) -> list[dict[str, Any]]:
    drawn = [dict(record.params)]
    for seed in range(count):
        try:
            drawn.append(record.variant(f"sweep-{seed}"))
        except NoVariantError:
            break
    return drawn


@pytest.mark.parametrize("record", [r for r in (*all_exercises(), *all_challenges())
                                    if isinstance(r.answer_kind, (Choice, Debug))],
                         ids=lambda r: r.id)
def test_every_wrong_option_and_line_gets_feedback_without_the_answer(
        record: Exercise) -> None:
    """Beyond the class above: every wrong option of a choice, and every wrong line of a
    debug listing, in the printed numbers and a dozen variants, as a page would show its
    verdict (the answer, the message, the details)."""
    shown: dict[str, list[str]] = {}
    for params in _variants(record):
        kind = record.answer_kind
        right = record.expected(params)
        answers: list[Any] = (
            [o.key for o in kind.options if o.key != right] if isinstance(kind, Choice)
            else [n for n in range(1, len(kind.lines_for(params)) + 1) if n != right[0]]
            if isinstance(kind, Debug) else [])
        for answer in answers:
            verdict = record.grade(answer, params)
            assert verdict.status == "wrong", (record.id, answer)
            section = (f"<dt>Your answer</dt><dd><code>{escape(verdict.yours)}</code></dd>"
                       + "".join(f"<p>{escape(t)}</p>" for t in (verdict.message,
                                                                 *verdict.details)))
            found = leaks(record, params, section)
            if found:
                shown[f"{answer} in {params.get('program', '')}"] = found
    assert not shown, shown
