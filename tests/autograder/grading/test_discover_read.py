"""Finding notebooks in both layouts, and reading them or saying why not."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.grading.discover import course_submissions, discover
from autograder.grading.read import Unreadable, parse_notebook, read_notebook


def test_flat_layout(write_notebook, tmp_path: Path) -> None:
    write_notebook("in/ann/ch01.ipynb", "{}")
    write_notebook("in/ann/notes.txt", "x")
    write_notebook("in/bob/.ipynb_checkpoints/ch01-checkpoint.ipynb", "{}")
    write_notebook("in/bob/ch01.ipynb", "{}")
    found = discover(tmp_path / "in")
    assert [(f.student, f.rel, f.assignment) for f in found.found] == [
        ("ann", "ann/ch01.ipynb", ""), ("bob", "bob/ch01.ipynb", "")]
    assert found.ignored == ["ann/notes.txt", "bob/.ipynb_checkpoints/"]
    assert found.reasons["bob/.ipynb_checkpoints/"].startswith("Jupyter's autosave copies")
    assert found.missing == []


def test_nbgrader_layout_inside_a_course_folder(write_notebook, tmp_path: Path) -> None:
    write_notebook("course/submitted/ann/ch01_toy/ch01_toy.ipynb", "{}")
    write_notebook("course/submitted/ann/ch01_toy/timestamp.txt", "2024-01-01")
    write_notebook("course/submitted/ann/ch02/notes.md", "no notebook here")
    write_notebook("course/source/ch01_toy/ch01_toy.ipynb", "{}")  # not a submission
    found = discover(course_submissions(tmp_path / "course"))
    assert [(f.student, f.rel, f.assignment) for f in found.found] == [
        ("ann", "ann/ch01_toy/ch01_toy.ipynb", "ch01_toy")]
    assert [(m.student, m.message, m.assignment) for m in found.missing] == [
        ("ann", "ann/ch02/: no notebook (.ipynb) in this assignment folder", "ch02")]
    assert found.ignored == ["ann/ch02/notes.md"]


def test_a_student_folder_named_submitted_is_just_a_student(write_notebook,
                                                            tmp_path: Path) -> None:
    write_notebook("in/submitted/ch01.ipynb", "{}")
    write_notebook("in/zoe/ch01.ipynb", "{}")
    found = discover(tmp_path / "in")
    assert [f.student for f in found.found] == ["submitted", "zoe"]


def test_folders_without_notebooks_and_stray_notebooks(write_notebook, tmp_path: Path) -> None:
    (tmp_path / "in" / "empty").mkdir(parents=True)
    write_notebook("in/loose.ipynb", "{}")
    found = discover(tmp_path / "in")
    assert [m.message for m in found.missing] == [
        "empty/: no notebook (.ipynb) in this student's folder",
        "loose.ipynb: a notebook outside any student folder; put it in "
        "SUBMISSIONS/<student>/"]


def test_an_empty_submissions_folder_finds_nothing(tmp_path: Path) -> None:
    found = discover(tmp_path)
    assert (found.found, found.missing, found.ignored) == ([], [], [])


@pytest.mark.parametrize("data, message", [
    (b"", "the file is empty"),
    (b"\xff\xfe\x00binary", "not a notebook: the file is not UTF-8 text"),
    (b'{"cells": [', "not valid JSON (line 1, column 12: Expecting value)"),
    (b"[]", "not a notebook: the JSON holds a list, not a notebook object"),
    (b"{}", "not a notebook: the JSON has no 'nbformat' version"),
    (b'{"nbformat": "4"}', "not a notebook: 'nbformat' is '4', not a version number"),
    (b'{"nbformat": 3, "worksheets": []}', "an nbformat 3 notebook (from a very old Jupyter)"),
    (b'{"nbformat": 5, "cells": []}', "an nbformat 5 notebook, newer than the nbformat 4"),
    (b'{"nbformat": 4}', "not a notebook: no list of 'cells'"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 3}]}',
     "not a notebook: the source of cell 1 is not text"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "widget"}]}',
     "not a notebook: cell 1 has cell_type 'widget'"),
])
def test_unreadable_files_say_why(data: bytes, message: str) -> None:
    with pytest.raises(Unreadable) as caught:
        parse_notebook(data)
    assert str(caught.value).startswith(message)


def test_a_notebook_reads_as_cells(toy_notebook, write_notebook) -> None:
    tree = toy_notebook({"1.1": ["answer_1_1 = ", "2"]})  # sources may be lists of lines
    path = write_notebook("nb.ipynb", tree)
    notebook = read_notebook(path)
    assert notebook.metadata["workbook"]["chapter"] == 1
    assert len(notebook.cells) == 8
    assert (notebook.cells[3].cell_id, notebook.cells[3].source) == ("t-3", "answer_1_1 = 2")
    assert notebook.cells[3].number == 4


def test_a_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.ipynb"
    with path.open("wb") as file:
        file.truncate(60 * 2**20)  # sparse: 60 MB on paper, nothing on disk
    with pytest.raises(Unreadable, match="the file is 63 MB, larger than the 16 MB"):
        read_notebook(path)


def test_links_and_special_files_are_refused_without_opening_them(write_notebook,
                                                                  tmp_path: Path) -> None:
    import os

    write_notebook("elsewhere/secret.ipynb", "{}")
    write_notebook("in/ann/ch01.ipynb", "{}")
    (tmp_path / "in" / "bob").mkdir()
    (tmp_path / "in" / "bob" / "ch01.ipynb").symlink_to(tmp_path / "elsewhere" / "secret.ipynb")
    (tmp_path / "in" / "cat").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "in" / "dan").mkdir()
    os.mkfifo(tmp_path / "in" / "dan" / "ch01.ipynb")  # opening it for reading would block
    found = discover(tmp_path / "in")
    assert [f.student for f in found.found] == ["ann"]
    assert [(m.student, m.message) for m in found.missing] == [
        ("bob", "bob/ch01.ipynb: a symbolic link; the grader does not follow links (submit "
                "the file itself)"),
        ("cat", "cat: a symbolic link; the grader does not follow links (submit the file "
                "itself)"),
        ("dan", "dan/ch01.ipynb: not a regular file (a device, pipe or socket); it was not "
                "opened")]
    # read_notebook on its own refuses them too, without blocking
    with pytest.raises(Unreadable, match="symbolic link"):
        read_notebook(tmp_path / "in" / "bob" / "ch01.ipynb")
    with pytest.raises(Unreadable, match="not a regular file"):
        read_notebook(tmp_path / "in" / "dan" / "ch01.ipynb")


def test_huge_code_cells_are_refused_before_parsing() -> None:
    import json

    def notebook(*sources: str) -> bytes:
        cells = [{"cell_type": "code", "source": s, "metadata": {}} for s in sources]
        return json.dumps({"nbformat": 4, "metadata": {}, "cells": cells}).encode()

    with pytest.raises(Unreadable, match="code cell 2 holds 100,001 characters"):
        parse_notebook(notebook("x = 1", "#" * 100_001))
    with pytest.raises(Unreadable, match="code cells hold 400,005 characters"):
        parse_notebook(notebook(*(["#" * 80_001] * 5)))
    assert len(parse_notebook(notebook("#" * 100_000)).cells) == 1
