"""Which chapter a notebook is, and which submitted cell is which release cell."""

from __future__ import annotations

import pytest

from autograder.grading.identify import identify, implied_chapter
from autograder.grading.match import match_cells
from autograder.grading.read import Unreadable, parse_notebook


def parse(tree) -> object:
    import json

    return parse_notebook(json.dumps(tree).encode())


def test_the_chapter_comes_from_the_metadata(release, toy_notebook) -> None:
    assert identify(parse(toy_notebook()), {1: release}) is release


def test_without_metadata_the_cells_tell(release, toy_notebook) -> None:
    tree = toy_notebook()
    tree["metadata"] = {}
    assert identify(parse(tree), {1: release}) is release


def test_the_instructor_version_is_refused(release, toy_notebook) -> None:
    tree = toy_notebook({"1.1": "answer_1_1 = None\n### BEGIN SOLUTION\nanswer_1_1 = 2\n"
                                "### END SOLUTION"})
    tree["metadata"]["workbook"]["role"] = "instructor"
    with pytest.raises(Unreadable, match="instructor version of chapter 1"):
        identify(parse(tree), {1: release})


def test_nbgraders_student_version_is_a_learner_notebook(release, toy_notebook) -> None:
    # generate_assignment keeps the metadata and replaces the solution region
    tree = toy_notebook({"1.1": "answer_1_1 = None\n# YOUR CODE HERE\n"
                                "raise NotImplementedError()"})
    tree["metadata"]["workbook"]["role"] = "instructor"
    assert identify(parse(tree), {1: release}) is release


def test_a_notebook_from_elsewhere_is_refused(release) -> None:
    tree = {"nbformat": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "x", "metadata": {}, "source": "print(1)"}]}
    with pytest.raises(Unreadable, match="not a workbook chapter notebook"):
        identify(parse(tree), {1: release})


@pytest.mark.parametrize("folder, chapter", [
    ("ch01_toy", 1), ("ch01", 1), ("chapter-1", 1), ("1", 1), ("homework", None), ("", None),
    ("ch07", None),  # no such release
])
def test_the_chapter_an_assignment_folder_implies(release, folder: str, chapter) -> None:
    assert implied_chapter(folder, {1: release}) == chapter


def test_cells_pair_up_by_id(release, toy_notebook) -> None:
    tree = toy_notebook({"1.1": "answer_1_1 = 2"})
    tree["cells"].insert(5, {"cell_type": "code", "id": "mine", "metadata": {},
                             "source": "helper = 1"})
    match = match_cells(parse(tree), release)
    assert match.answers == {"1.1": (3,), "1.2": (6,)}
    assert match.added == (5,)
    assert match.executed() == [3, 5, 6]
    assert match.counterpart["t-4"] == 4 and match.counterpart["t-7"] == 8
    assert (match.answer_of(3), match.answer_of(5)) == ("1.1", "")


def test_without_ids_metadata_then_unchanged_source_pair_cells(release, toy_notebook) -> None:
    tree = toy_notebook()
    for cell in tree["cells"]:
        del cell["id"]
    tree["cells"][7]["metadata"] = {}
    match = match_cells(parse(tree), release)
    assert match.answers == {"1.1": (3,), "1.2": (5,)}
    # the setup and explorer cells have no metadata but their release source: not run
    assert match.added == ()
    assert set(match.counterpart) == {"t-0", "t-1", "t-2", "t-4", "t-6", "t-7"}


def test_nbgrader_grade_ids_pair_cells_too(release, toy_notebook) -> None:
    tree = toy_notebook()
    for cell in tree["cells"]:
        cell["id"] = "renamed-" + cell["id"]
        cell["metadata"].pop("workbook", None)
    tree["cells"][3]["metadata"]["nbgrader"] = {"grade_id": "answer_1_1"}
    tree["cells"][5]["metadata"]["nbgrader"] = {"grade_id": "answer_1_2"}
    assert match_cells(parse(tree), release).answers == {"1.1": (3,), "1.2": (5,)}


def test_a_copied_answer_cell_makes_two_claims(release, toy_notebook) -> None:
    tree = toy_notebook()
    tree["cells"].append(dict(tree["cells"][3], id="copy"))
    assert match_cells(parse(tree), release).answers["1.1"] == (3, 8)


def test_a_deleted_answer_cell_leaves_no_claim(release, toy_notebook) -> None:
    tree = toy_notebook()
    del tree["cells"][3]
    assert match_cells(parse(tree), release).answers["1.1"] == ()
