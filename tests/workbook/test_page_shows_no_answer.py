"""Nothing a learner sees before answering gives the answer away.

Every learner notebook is executed twice in a fresh kernel: once as a learner first opens
it (no prediction locked) and once after a wrong guess was locked. Every text output,
every visible widget (explorer readouts at their defaults, the lock's prompt, the reveal)
and every text of every matplotlib figure (titles, labels, legends, annotations; tick
labels are an axis's scale, not a readout, and are left out) is searched for

* before the lock: the prediction's answer and every exercise's answer;
* after the lock: every exercise's answer (the reveal may state the prediction's own);

each rendered in its unit and the neighbouring prefixes, as a fraction or a percentage,
at the precision the page prints (1.75 GB is found as "1.8 GB", "1750 MB" or "1.75").
Numbers the exercise itself gives in its prompt are not answers and are not looked for.
The same pass checks that no output shows "$...$" that a front end would typeset as math.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import page_text as pt
import pytest

from autograder.exercise import Exercise
from autograder.kinds import Choice, Numeric
from autograder.markup import NO_MATH_CLASS
from autograder.unit_table import target_unit
from autograder.widgets import choice_labels
from workbook.build.notebooks import learner_path
from workbook.learner import progress_log
from workbook.learner.prediction_page import prediction_for
from workbook.outline import CHAPTERS
from workbook.records import all_challenges, all_exercises, lookup

answer_forms, found_in, page_texts, readable = (pt.answer_forms, pt.found_in, pt.page_texts,
                                               pt.readable)
unescaped_dollars = pt.unescaped_dollars

pytestmark = pytest.mark.slow


def _givens(record: Exercise) -> list[float]:
    return [float(v) for v in record.params.values()
            if isinstance(v, (int, float)) and not isinstance(v, bool)]


def answers_of(chapter: int) -> dict[str, tuple[float, str]]:
    """Exercise id -> (expected value, unit) for the chapter's numeric exercises.

    Left out: a single digit ("1 head") and a number the exercise's own prompt gives. A
    later exercise that builds on an answer refers to it ("your answer to 7.1"), so every
    prompt is searched like the prose."""
    records = [r for r in (*all_exercises(), *all_challenges()) if r.chapter == chapter]
    found = {}
    for record in records:
        if type(record.answer_kind) is not Numeric:
            continue
        value, unit = float(record.expected()), record.answer_kind.unit
        own = any(abs(value - g) <= 1e-9 * max(1.0, abs(g)) for g in _givens(record))
        if (value.is_integer() and abs(value) < 10) or own:
            continue
        found[record.id] = (value, unit)
    return found


RUN = 6  # words in a row that make a sentence recognisable


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", readable(text).lower())


def right_options(chapter: int) -> dict[str, list[str]]:
    """Exercise id -> the words of its right option, for the chapter's choice exercises."""
    found = {}
    for record in (*all_exercises(), *all_challenges()):
        if record.chapter == chapter and isinstance(record.answer_kind, Choice):
            right = record.answer_kind.find(record.expected(), record.params)
            if right is not None and len(_words(right.text)) >= RUN:
                found[record.id] = _words(right.text)
    return found


def restated(texts: list[str], chapter: int) -> dict[str, list[str]]:
    """Exercise id -> the texts outside its own prompt that repeat RUN words in a row of
    its right option (chapter 8's intro once restated 8.4's answer almost word for word)."""
    found: dict[str, list[str]] = {}
    for exercise_id, words in right_options(chapter).items():
        runs = {" ".join(words[i:i + RUN]) for i in range(len(words) - RUN + 1)}
        record = lookup(exercise_id)
        assert isinstance(record.answer_kind, Choice)
        labels = set(choice_labels(record.answer_kind, record.params))
        for text in texts:
            if text.lstrip().startswith(f"### Exercise {exercise_id} ") or text in labels:
                continue  # the question and its card list their own options
            joined = " ".join(_words(text))
            hits = [run for run in runs if run in joined]
            if hits:
                found.setdefault(exercise_id, []).append(hits[0])
    return found


# Every chapter runs strict: chapter 9's tables withhold the cells that answer an exercise
# until the progress log says it is answered, and its planner opens on a layout that answers
# none (tests/workbook/test_explorer_ch09.py checks both with the exercises answered too).
LEAK_CASES = list(CHAPTERS)


def wrong_guess(key: str) -> Any:
    prediction = prediction_for(key)
    actual = prediction.actual()
    if prediction.is_choice:
        return next(option for option in prediction.options if option != actual)
    return float(f"{float(actual) * 7.3:.3g}")


@cache
def executed(chapter_stem: str, locked: bool) -> Any:
    """The page's texts and figure texts, executed in its own progress home (once per
    test session: the two tests after the lock read the same run)."""
    chapter = next(c for c in CHAPTERS if c.stem == chapter_stem)
    workdir = Path(tempfile.mkdtemp(prefix=f"dtw-page-{chapter_stem}-"))
    before = os.environ.get("WORKBOOK_HOME")
    os.environ["WORKBOOK_HOME"] = str(workdir / "home")
    progress_log.reopen()
    try:
        if locked:
            key = f"ch{chapter.number:02d}"
            progress_log.record_event("prediction", key, json.dumps(wrong_guess(key)))
        return page_texts(pt.execute(learner_path(chapter), workdir))
    finally:
        if before is None:
            os.environ.pop("WORKBOOK_HOME", None)
        else:
            os.environ["WORKBOOK_HOME"] = before
        progress_log.reopen()
        shutil.rmtree(workdir, ignore_errors=True)


# The same number as an answer, meaning something else that the page must say: Llama 3
# 405B's 128 query heads of size 128 and its 128K context are not 9.1's data-parallel 128
# (nor is the 16 x 8 = 128 one-layer slots of its pipeline).
COINCIDENCES = {
    "9.1": re.compile(r"128 (?:query )?heads|heads x 128|of size 128|/\s*128\b|128K"),
}
#: A lab's verdict on one generated case ("Case p=7, m=50 (1F1B): The schedule was rejected:
#: stage 0 runs 0 of 25 ...") names the case's inputs, drawn afresh for every learner, and
#: what the learner's own code did with them: numbers of that draw, never an exercise's
#: result, so the verdict is not searched (the rest of the line is).
CASE_VERDICT = re.compile(r"\bCase\b[^:]*:.*$")


def leaks(texts: list[str], answers: dict[str, tuple[float, str]]) -> dict[str, list[str]]:
    """Exercise id -> the lines of ``texts`` that print its answer."""
    found: dict[str, list[str]] = {}
    for exercise_id, (value, unit) in answers.items():
        forms, family = answer_forms(value, unit), target_unit(unit).family
        other = COINCIDENCES.get(exercise_id)
        for text in texts:
            for line in readable(text).splitlines():
                line = CASE_VERDICT.sub("Case:", line)
                hits = found_in(line, forms, family, (value, unit))
                if hits and other is not None and len(other.findall(line)) >= len(hits):
                    continue
                if hits:
                    found.setdefault(exercise_id, []).append(f"{hits} in {line.strip()[:160]!r}")
    return found


@pytest.mark.parametrize("chapter", LEAK_CASES, ids=lambda c: c.stem)
def test_before_the_lock_nothing_shows_an_answer(chapter: Any) -> None:
    page = executed(chapter.stem, False)
    outputs, figures, errors, prose = page.texts, page.figures, page.errors, page.prose
    figures = figures + page.worded_ticks()
    texts = outputs + prose
    assert not errors, errors
    key = f"ch{chapter.number:02d}"
    prediction = prediction_for(key)
    answers = answers_of(chapter.number)
    if not prediction.is_choice:
        answers[f"prediction {key}"] = (float(prediction.actual()), prediction.unit)
    elif prediction.measure is not None:  # the number behind the right option
        answers[f"prediction {key}"] = (float(prediction.measure()), prediction.measure_unit)
    found = leaks(texts + figures, answers)
    assert not found, f"{chapter.stem} before the lock:\n" + json.dumps(found, indent=1)
    said = restated(texts, chapter.number)
    assert not said, f"{chapter.stem} restates a right option: {said}"
    if prediction.is_choice:  # the chosen option is never named as the answer
        assert not any(f"answer is \u201c{prediction.actual()}" in t for t in texts)


@pytest.mark.parametrize("chapter", LEAK_CASES, ids=lambda c: c.stem)
def test_after_the_lock_no_exercise_answer_shows(chapter: Any) -> None:
    page = executed(chapter.stem, True)
    outputs, figures, errors, prose = page.texts, page.figures, page.errors, page.prose
    figures = figures + page.worded_ticks()
    texts = outputs + prose
    assert not errors, errors
    assert any("Your prediction, revealed" in t for t in texts), "the lock did not open"
    found = leaks(texts + figures, answers_of(chapter.number))
    assert not found, f"{chapter.stem} after the lock:\n" + json.dumps(found, indent=1)
    said = restated(texts, chapter.number)
    assert not said, f"{chapter.stem} restates a right option: {said}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_no_dollar_is_typeset_as_math(chapter: Any) -> None:
    texts, figures, ticks, _, _ = executed(chapter.stem, True)
    math_in_figures = [t for t in figures + ticks if unescaped_dollars(t) >= 2]
    assert not math_in_figures, f"figure text typeset as math: {math_in_figures}"
    exposed = [t[:160] for t in texts if unescaped_dollars(t) >= 2 and NO_MATH_CLASS not in t
               and not t.lstrip().startswith(("<pre", "[", "(", "'"))]
    assert not exposed, f"outputs whose '$' a front end would typeset: {exposed}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_a_choice_prediction_names_the_number_behind_it(chapter: Any) -> None:
    prediction = prediction_for(f"ch{chapter.number:02d}")
    if prediction.is_choice:
        assert prediction.measure is not None, "the leak search needs the number behind it"


def test_the_search_finds_printed_answers() -> None:
    # ch01's old figure: "ZeRO-3 1.8 GB" for 1.75 GB, and 112.0 / 29.3 for 1.1 and 1.2.
    assert found_in("ZeRO-3 1.8 GB ✔ fits", answer_forms(1.75, "GB")) == ["1.8"]
    assert found_in("112.0 GB", answer_forms(112.0, "GB")) == ["112.0"]
    assert found_in("1750 MB", answer_forms(1.75, "GB")) == ["1750"]
    assert found_in("comm 0.6 %", answer_forms(0.6, "%")) == ["0.6"]
    assert found_in("comm 0.6 %", answer_forms(0.0061, "")) == ["0.6"]
    # a single digit is too coarse to give anything away; another number is not the answer
    assert not found_in("about 2 GB", answer_forms(1.75, "GB"))
    assert not found_in("29.4 GB", answer_forms(29.25, "GB"))
    assert not found_in("0.0 GB", answer_forms(1.75e-6, "GB"))
    assert not found_in("16 GB", answer_forms(15.5, "GB"))  # rounded too far to tell
    assert found_in("C = 98 s", answer_forms(98.0, "s"), "time") == ["98"]
    assert not found_in("98 GB", answer_forms(98.0, "s"), "time")
    assert not found_in("interval: 98 min", answer_forms(98.0, "s"), "time", (98.0, "s"))
    assert found_in("1750 MB", answer_forms(1.75, "GB"), "size", (1.75, "GB")) == ["1750"]
    assert found_in("comm 0.6 %", answer_forms(0.0061, ""), "ratio", (0.0061, "")) == ["0.6"]
    assert not found_in("a TP group of 16", answer_forms(16.1, "GB"), "size")
    assert not found_in("128 query heads", answer_forms(128.0, ""), "ratio")
    assert found_in("64 accumulation steps of 4", answer_forms(64.0, "steps"),
                    "count:step") == ["64"]
    assert not found_in("64 query heads", answer_forms(64.0, "steps"), "count:step")
    assert found_in("TP 8 x PP 16 x DP 128: each cell", answer_forms(128.0, ""), "ratio")
    # a category's tick label is read (chapter 8's axis once named FP16's smallest normal,
    # 8.1's answer); a scale's numbers are not
    ticks = pt.Page([], [], ["1e-40", "FP16 (1-5-10)\nmin normal 6.10e-05"], [], []).worded_ticks()
    assert ticks == ["FP16 (1-5-10)\nmin normal 6.10e-05"]
    assert found_in(ticks[0], answer_forms(6.103515625e-05, "")) == ["6.10e-05"]
    # narration is written for the ear: numbers in words are numbers
    assert found_in(readable("one checkpoint takes ninety-eight seconds"),
                    answer_forms(98.0, "s"), "time", (98.0, "s")) == ["98"]
    assert found_in(readable("about sixty-eight point six minutes"),
                    answer_forms(68.5857, "min"), "time", (68.5857, "min")) == ["68.6"]
    # a lab's verdict on a generated case speaks of that draw, not of an exercise; what
    # comes before it on the line, and every other line, is read
    answers = {"prediction ch05": (0.5, ""), "5.1": (25.0, "%")}
    assert not leaks(["0 of 6 cases Case p=7, m=50 (1F1B): The schedule was rejected: "
                      "stage 0 idles 25 % of the step"], answers)
    assert leaks(["the bubble is 50 % of compute. Case p=7, m=4 (1F1B): rejected"], answers)
    assert leaks(["stage 0 idles 25 % of the step"], answers)
    assert unescaped_dollars("$\\mathdefault{10^{3}}$") == 0
    assert unescaped_dollars("costs $2 to $5") == 2
    assert readable('<p style="line-height: 1.4">Exercise 1.75 is <b>fun</b></p>').split() == [
        "is", "fun"]


def test_the_walk_skips_hidden_widgets() -> None:
    nb: Any = {"cells": [{"outputs": [{"output_type": "display_data", "data": {
        "application/vnd.jupyter.widget-view+json": {"model_id": "box"}}}]}],
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {
            "box": {"state": {"children": ["IPY_MODEL_a", "IPY_MODEL_b"]}},
            "a": {"state": {"value": "shown 12.5", "layout": "IPY_MODEL_la"}},
            "b": {"state": {"value": "hidden 99.5", "layout": "IPY_MODEL_lb"}},
            "la": {"state": {}}, "lb": {"state": {"display": "none"}}}}}}}

    class Nb(dict):  # attribute access like nbformat's NotebookNode
        __getattr__ = dict.__getitem__

    page = page_texts(Nb(cells=nb["cells"], metadata=nb["metadata"]))
    assert page.texts == ["shown 12.5"] and page.prose == []
