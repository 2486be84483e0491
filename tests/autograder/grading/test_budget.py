"""A batch's budget is shared fairly: bounded files per student, turns in rounds, a share
each, reading included; honest students are graded whoever stalls."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from autograder.grading import GradingSettings, Release, grade_folder
from autograder.grading.budget import Share, bounded, in_rounds
from autograder.grading.discover import Found

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")


def _found(tmp_path: Path, student: str, name: str, size: int) -> Found:
    path = tmp_path / student / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return Found(student, path, f"{student}/{name}")


def test_files_past_a_students_count_are_not_read(tmp_path: Path) -> None:
    found = [_found(tmp_path, "many", f"n{i:02d}.ipynb", 10) for i in range(7)]
    found.append(_found(tmp_path, "few", "a.ipynb", 10))
    kept, over = bounded(found, max_notebooks=5, max_bytes=1 << 20)
    assert [f.rel for f in kept] == ["few/a.ipynb"] + [f"many/n{i:02d}.ipynb" for i in range(5)]
    assert [f.rel for f, _ in over] == ["many/n05.ipynb", "many/n06.ipynb"]
    assert all("7 notebooks were handed in" in why for _, why in over)


def test_files_past_a_students_bytes_are_not_read(tmp_path: Path) -> None:
    found = [_found(tmp_path, "big", f"b{i}.ipynb", 400) for i in range(4)]
    found.append(_found(tmp_path, "big", "small.ipynb", 100))
    found.append(_found(tmp_path, "other", "o.ipynb", 900))
    kept, over = bounded(found, max_notebooks=10, max_bytes=1000)
    # 400 + 400 fit; the third 400 would pass 1000; the 100-byte file still fits after it
    assert sorted(f.rel for f in kept) == ["big/b0.ipynb", "big/b1.ipynb", "big/small.ipynb",
                                           "other/o.ipynb"]
    assert sorted(f.rel for f, _ in over) == ["big/b2.ipynb", "big/b3.ipynb"]


def test_work_comes_in_rounds_whatever_sorts_first() -> None:
    items = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("c", 1), ("c", 2)]
    assert in_rounds(items, lambda i: i[0]) == [
        ("a", 1), ("b", 1), ("c", 1), ("a", 2), ("c", 2), ("a", 3)]


def test_a_student_past_their_share_waits_for_everyone_else() -> None:
    share = Share(10.0, ["a", "b", "c"], lanes=1)  # 3.33 s each
    items = in_rounds([("a", 1), ("a", 2), ("b", 1), ("b", 2), ("c", 1)], lambda i: i[0])
    order, late = [], list[tuple[str, int]]()
    for item in share.turns(items, lambda i: i[0], time.monotonic() + 60, late):
        order.append(item)
        share.charge(item[0], 5.0 if item[0] == "a" else 0.1)  # a stalls
    assert order == [("a", 1), ("b", 1), ("c", 1), ("b", 2), ("a", 2)] and not late


def test_without_a_budget_nobody_waits() -> None:
    share = Share(None, ["a", "b"])
    share.charge("a", 1e9)
    assert not share.used_up("a")


def test_what_the_deadline_leaves_is_late_waiting_ones_too() -> None:
    share = Share(1.0, ["a", "b"])
    share.charge("a", 5.0)
    late: list[str] = []
    assert list(share.turns(["a", "b"], lambda s: s, time.monotonic() - 1, late)) == []
    assert late == ["a", "b"]


# --- the whole pipeline, on the toy chapter given as four chapters ------------------------

def _chapters(release: Release, count: int) -> dict[int, Release]:
    return {n: dataclasses.replace(release, chapter=n) for n in range(1, count + 1)}


def _tree(toy_notebook: Any, chapter: int, answers: dict[str, str]) -> dict[str, Any]:
    tree = toy_notebook(answers)
    tree["metadata"]["workbook"]["chapter"] = chapter
    return tree


HONEST = {"1.1": "answer_1_1 = 2", "1.2": "def double(x):\n    if x < 0:\n"
          "        raise ValueError('no')\n    return 2 * x"}
# A loop that swallows the cell's time-out runs until the job's own limit.
STALL = {"1.1": "while True:\n    try:\n        while True:\n            pass\n"
                "    except BaseException:\n        pass"}


def test_honest_students_are_graded_when_several_others_stall_every_chapter(
        release, toy_notebook, write_notebook, tmp_path: Path) -> None:
    releases = _chapters(release, 4)
    for student in ("aa_stall", "ab_stall", "ac_stall"):
        for chapter in releases:
            write_notebook(f"in/{student}/ch{chapter}.ipynb",
                           _tree(toy_notebook, chapter, STALL))
    for student in ("zz_a", "zz_b", "zz_c"):
        for chapter in releases:
            write_notebook(f"in/{student}/ch{chapter}.ipynb",
                           _tree(toy_notebook, chapter, HONEST))
    settings = GradingSettings(workers=2, timeout_s=0.5, batch_budget_s=8.0)
    # Every staller's files at the first pass's cap alone would take longer than the budget.
    assert 12 * (2 * 0.5 + 2.0) / 2 > 8.0
    started = time.monotonic()
    batch = grade_folder(tmp_path / "in", releases, settings)
    elapsed = time.monotonic() - started
    full = sum(task.record.points for task in release.tasks)
    honest = {(nb.student, nb.chapter): nb.points for nb in batch.notebooks
              if nb.student.startswith("zz_")}
    assert honest == {(s, c): full for s in ("zz_a", "zz_b", "zz_c") for c in releases}
    stalled = [nb for nb in batch.notebooks if nb.student.endswith("_stall")]
    assert len(stalled) == 12 and all(nb.points == 0 for nb in stalled)
    assert elapsed < 8.0 + settings.limits(4).wall_s + 10


def test_the_budget_covers_reading_the_files(
        release, toy_notebook, write_notebook, tmp_path: Path) -> None:
    for student in ("ann", "bob"):
        write_notebook(f"in/{student}/toy.ipynb", toy_notebook(HONEST))
    settings = GradingSettings(workers=1, timeout_s=1, batch_budget_s=1e-6)
    batch = grade_folder(tmp_path / "in", {1: release}, settings)
    assert len(batch.notebooks) == 2
    assert all("before this file was read" in (nb.problem or "") for nb in batch.notebooks)


def test_notebooks_past_a_students_count_are_error_rows(
        release, toy_notebook, write_notebook, tmp_path: Path) -> None:
    from autograder.grading import budget

    for n in range(budget.MAX_NOTEBOOKS + 3):
        write_notebook(f"in/many/n{n:02d}.ipynb", toy_notebook(HONEST))
    write_notebook("in/one/toy.ipynb", toy_notebook(HONEST))
    batch = grade_folder(tmp_path / "in", {1: release}, GradingSettings(workers=1, timeout_s=1))
    problems = [nb.problem or "" for nb in batch.notebooks if nb.student == "many"]
    assert sum("not read" in p and "27 notebooks were handed in" in p for p in problems) == 3
    full = sum(task.record.points for task in release.tasks)
    assert [nb.points for nb in batch.notebooks if nb.student == "one"] == [full]


def test_the_grader_keeps_only_the_code_of_a_prepared_notebook(toy_notebook) -> None:
    """Text and metadata a file carries beyond its code are not held for the whole batch."""
    import json

    from autograder.grading.read import parse_notebook, slim

    tree = toy_notebook(HONEST)
    tree["cells"][0]["source"] = "padding " * 500_000
    tree["cells"][3]["metadata"]["bulk"] = ["m"] * 100_000
    notebook = parse_notebook(json.dumps(tree).encode())
    kept = slim(notebook)
    assert [c.source for c in kept.cells if c.cell_type == "code"] == \
        [c.source for c in notebook.cells if c.cell_type == "code"]
    assert all(c.source == "" for c in kept.cells if c.cell_type != "code")
    assert all(not c.metadata for c in kept.cells)
    assert [c.index for c in kept.cells] == [c.index for c in notebook.cells]
