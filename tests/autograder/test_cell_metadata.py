"""The builder's metadata writers and the grader's readers describe the same cells."""

from __future__ import annotations

from autograder.cell_metadata import (
    METADATA_KEY,
    NBGRADER_KEY,
    answer_exercise,
    exercise_cell,
    exercise_grade_id,
    grade_id,
    has_solution,
    nbgrader_cell,
    with_solution,
    workbook_meta,
)


def test_an_answer_cell_written_by_the_builder_is_read_back_by_the_grader() -> None:
    metadata = {METADATA_KEY: exercise_cell("9.10", "answer"),
                NBGRADER_KEY: nbgrader_cell(exercise_grade_id("answer", "9.10"), solution=True)}
    assert answer_exercise(metadata) == "9.10"
    assert grade_id(metadata) == "answer_9_10"
    assert metadata[NBGRADER_KEY]["locked"] is False


def test_nbgraders_student_version_is_found_by_its_grade_id_alone() -> None:
    # nbgrader keeps its own metadata; a pasted cell may have lost the workbook entry
    assert answer_exercise({NBGRADER_KEY: {"grade_id": "answer_5_1"}}) == "5.1"
    assert answer_exercise({NBGRADER_KEY: {"grade_id": "check_5_1"}}) == ""


def test_only_a_check_cell_carries_points_and_everything_else_is_locked() -> None:
    check = nbgrader_cell("check_5_1", grade=True, points=2)
    assert (check["points"], check["locked"], check["schema_version"]) == (2, True, 3)
    assert "points" not in nbgrader_cell("ch05_cell_003")


def test_malformed_metadata_reads_as_nothing() -> None:
    assert workbook_meta({METADATA_KEY: "answer"}) == {}
    assert grade_id({NBGRADER_KEY: {"grade_id": 7}}) == ""
    assert answer_exercise({}) == ""


def test_a_solution_region_is_recognised() -> None:
    source = with_solution("answer_5_1 = None", "answer_5_1 = 25")
    assert has_solution(source) and not has_solution("answer_5_1 = None")
    assert source.endswith("### END SOLUTION")
