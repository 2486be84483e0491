"""Real nbgrader and ``workbook grade`` give the same per-exercise points.

nbgrader awards a check cell's points when the cell runs without an error and nothing
otherwise, so for honest submissions every exercise is worth all or nothing. The class
below covers each way a student leaves an answer cell (see ``nbgrader_course``): right,
right with the stub's ``raise`` left in, wrong, right line but unfixed function (debug),
raising, and untouched. Chapters 0 and 5 hold build and debug exercises besides derive
and trace ones.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
import pytest

from autograder.exercise import Exercise
from workbook.build.cells import answer_source
from workbook.outline import CHAPTERS
from workbook.records import all_challenges, all_exercises, all_labs, lookup


def _load_harness() -> ModuleType:
    """The harness lives next to this file; tests are not a package, so load it by path."""
    if "nbgrader_course" not in sys.modules:
        path = Path(__file__).with_name("nbgrader_course.py")
        spec = importlib.util.spec_from_file_location("nbgrader_course", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["nbgrader_course"] = module  # dataclasses look their module up here
        spec.loader.exec_module(module)
    return sys.modules["nbgrader_course"]


nc = _load_harness()
RECORDS = (*all_exercises(), *all_challenges(), *all_labs())
AGREEMENT_CHAPTERS = (0, 5)
# Points nbgrader must award per mode (every record is worth 1 point, checked below):
# only a check cell that runs without raising earns its points.
NBGRADER_EXPECTS = {"right": 1.0, "kept_stub": 1.0, "wrong": 0.0, "line_only": 0.0,
                    "error": 0.0, "empty": 0.0}
CLASS = {
    "right_rosa": nc.constant("right"),
    "wrong_walt": nc.constant("wrong"),
    "error_erin": nc.constant("error"),
    "empty_emil": nc.constant("empty"),
    "lineonly_lin": nc.constant("line_only"),
    "mixed_mo": nc.cycling(0),
    "mixed_mei": nc.cycling(3),
}


def _needs_nbgrader() -> None:
    if not nc.NBGRADER.exists():
        pytest.skip(f"nbgrader is not installed in this environment ({nc.NBGRADER} missing)")


# -- the fabricated answers do what their mode says (fast, no nbgrader) ----------------------
def _answer_after_running(record: Exercise, source: str) -> Any:
    namespace: dict[str, object] = {}
    try:
        exec(source, namespace)  # the harness's own code, not a submission
    except Exception:  # erroring and stub-keeping cells raise on purpose
        pass
    kind = record.answer_kind
    value_name, spec = kind.value_name(record.names), kind.function_spec()
    if value_name is None and spec is None:  # a lab: the function is the answer
        return namespace.get(nc.function_name(record))
    if spec is None:
        return namespace.get(value_name or "")
    function = namespace.get(spec.function_name)
    return function if value_name is None else (namespace.get(value_name), function)


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_fabricated_answers_pass_exactly_in_the_passing_modes(record: Exercise) -> None:
    assert record.points == 1  # NBGRADER_EXPECTS assumes one point per exercise
    released = answer_source(record, instructor=False) + "\n" + nc.STUB
    for mode, points in NBGRADER_EXPECTS.items():
        answer = _answer_after_running(record, nc.fill_answer(released, record, mode))
        passed = not record.answer_kind.is_untouched(answer) and record.grade(answer).passed
        assert passed == (points == 1.0), (mode, answer)


def test_wrong_functions_are_wrong_on_some_but_not_all_cases() -> None:
    # A "partly wrong" build answer passes some cases, so a grader giving partial credit
    # would award a fraction where nbgrader awards 0.
    scores = {}
    for record in RECORDS:
        if record.category == "build":
            namespace: dict[str, Any] = {}
            exec(nc.answer_code(record, "wrong"), namespace)
            verdict = record.grade(namespace[nc.function_name(record)])
            assert verdict.status == "wrong", record.id
            scores[record.id] = verdict.score
    assert sum(0 < score < 1 for score in scores.values()) >= 2, scores


# -- nbgrader accepts every instructor notebook ----------------------------------------------
@pytest.mark.slow
def test_generate_assignment_accepts_every_instructor_notebook(tmp_path: Path) -> None:
    _needs_nbgrader()
    course = nc.Course.create(tmp_path / "course", range(len(CHAPTERS)))
    course.generate()
    with nc._alembic_on_path():
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
            assignment = gb.find_assignment(course.assignment)
            notebooks = {nb.name: nb for nb in assignment.notebooks}
            assert sorted(notebooks) == sorted(c.stem for c in CHAPTERS)
            for chapter in CHAPTERS:
                wanted = {f"check_{r.id.replace('.', '_')}" for r in RECORDS
                          if r.chapter == chapter.number}
                cells = notebooks[chapter.stem].grade_cells
                assert {cell.name for cell in cells} == wanted
                assert notebooks[chapter.stem].max_score == len(wanted)  # 1 point each
    for chapter in CHAPTERS:
        _assert_released_for_students(course.release_path(chapter.stem))


def _assert_released_for_students(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(cell.source for cell in nb.cells)
    assert "BEGIN SOLUTION" not in text and "from solutions" not in text, path.name
    answers = [c for c in nb.cells if c.metadata.get("workbook", {}).get("role") == "answer"]
    assert answers, path.name
    for cell in answers:
        record = lookup(cell.metadata["workbook"]["exercise"])
        # the placeholder survives above the stub, so the answer name is always defined
        assert cell.source == answer_source(record, instructor=False) + "\n" + nc.STUB


# -- the same class graded by both -----------------------------------------------------------
@pytest.fixture(scope="module")
def graded_course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _needs_nbgrader()
    course = nc.Course.create(tmp_path_factory.mktemp("agreement") / "course",
                              AGREEMENT_CHAPTERS)
    course.generate()
    for student, mode_for in CLASS.items():
        course.submit(student, mode_for)
    course.autograde()
    yield course
    shutil.rmtree(course.root, ignore_errors=True)


def _expected_points() -> dict[tuple[str, str], float]:
    expected = {}
    for student, mode_for in CLASS.items():
        for record in RECORDS:
            if record.chapter in AGREEMENT_CHAPTERS:
                mode = mode_for(record)
                if mode == "line_only" and record.category != "debug":
                    mode = "wrong"
                expected[(student, record.id)] = NBGRADER_EXPECTS[mode]
    return expected


@pytest.mark.slow
def test_nbgrader_and_workbook_grade_award_the_same_points(graded_course: Any,
                                                           tmp_path: Path) -> None:
    # One test, so that under pytest-xdist the class is autograded by nbgrader only once.
    theirs = graded_course.nbgrader_points()
    # 6 exercises and the lab 0.7 in chapter 0; 6 exercises, the challenge 5.7 and the lab
    # 5.8 in chapter 5
    assert len(theirs) == len(CLASS) * 15
    assert {("right_rosa", "0.7"), ("right_rosa", "5.8")} <= set(theirs)
    assert {lookup(exercise).category for _, exercise in theirs} >= {"build", "debug", "derive",
                                                                 "trace"}
    # nbgrader itself awards what each mode earns: the harness fabricates what it claims
    assert nc.disagreements(_expected_points(), theirs) == []

    out = tmp_path / "out"
    run = nc.run_workbook_grade(graded_course.submitted, out, workers=2)
    assert nc.ungraded_files(out) == []
    assert run.returncode == 0, run.stderr[-3000:]
    assert nc.disagreements(theirs, nc.workbook_points(out)) == []
