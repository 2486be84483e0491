"""What the workbook hands the grading engine: releases, names and protected folders."""

from __future__ import annotations

import os
from pathlib import Path

from workbook.instructor import grading
from workbook.records import all_challenges, all_exercises, all_labs


def test_every_record_is_a_task_of_its_chapter_in_order() -> None:
    releases = grading.releases()
    ids = [t.record.id for number in sorted(releases) for t in releases[number].tasks]
    # each chapter's 58-count exercises, then the challenges (5.7, 9.10-9.13), then the labs
    records = (*all_exercises(), *all_challenges(), *all_labs())
    assert ids == [r.id for r in sorted(records, key=lambda r: r.chapter)]
    for number, release in releases.items():
        assert {t.record.chapter for t in release.tasks} == {number}


def test_tasks_name_what_the_learner_assigns() -> None:
    tasks = {t.record.id: t for r in grading.releases().values() for t in r.tasks}
    assert (tasks["0.1"].value_name, tasks["0.1"].function_name) == ("answer_0_1", None)
    assert (tasks["0.5"].value_name, tasks["0.5"].function_name) == (
        None, "ring_allreduce_time_ms")
    assert (tasks["5.5"].value_name, tasks["5.5"].function_name) == (
        "bug_line_5_5", "bubble_over_compute")
    asks = {type(t.record.answer_kind).__name__: tuple(type(a).__name__ for a in t.asks)
            for t in tasks.values()}
    assert asks == {"Numeric": ("AskValue",), "Choice": ("AskValue",),
                    "Ordering": ("AskValue",), "Trace": ("AskValue",),
                    "Constraints": ("AskValue",), "Function": ("AskCalls",),
                    "Debug": ("AskValue", "AskCalls"), "Lab": ("AskRun", "AskSource")}
    assert (tasks["0.7"].value_name, tasks["0.7"].function_name) == (None, "ring_allreduce")


def test_release_cells_carry_roles_and_nbgrader_grade_ids() -> None:
    release = grading.releases()[5]
    answer = release.answer_cell("5.1")
    assert answer is not None
    assert (answer.cell_id, answer.grade_id, answer.tag) == ("ch05-023", "answer_5_1", "answer")
    roles = [c.role for c in release.cells]
    # 5.1-5.6, the challenge 5.7 and the lab 5.8
    assert roles.count("answer") == roles.count("check") == len(release.tasks) == 8
    assert release.cells[1].grade_id == "ch05_cell_001"  # the locked setup cell


def test_learner_code_may_not_read_the_grader_files(tmp_path: Path) -> None:
    settings = grading.settings(1, 1.0, tmp_path / "in", tmp_path / "out")
    root = Path(grading.__file__).resolve().parents[2]   # workbook/instructor/grading.py
    for folder in ("solutions", "workbook", "autograder", "tests"):
        assert str(root / folder) in settings.protected
    assert str(root / ".venv") not in settings.protected  # the learner's numpy lives there
    assert {os.path.realpath(tmp_path / "in"), os.path.realpath(tmp_path / "out")} <= set(
        settings.protected)
    assert settings.reference == {"solutions", "workbook", "autograder"}
