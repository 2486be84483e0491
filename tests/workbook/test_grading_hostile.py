"""Hostile submissions: each is contained with the right message, and the batch goes on.

One batch of chapter-0 notebooks (one of chapter 8), one student per attack, plus an honest
student graded last. Limits are tight to keep the suite quick: 0.5 s per cell and per call,
256 MB of memory, 100,000 characters of output.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autograder.grading import Batch, ExerciseResult, grade_folder
from autograder.grading.fill import fill_answers
from workbook.instructor import grading

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CHAPTER = grading.CHAPTERS[0]
# 0.1: 8 GPUs, 1 GB gradient: 2(N-1)/N x 1 GB = 14/8 = 1.75 GB per GPU
RIGHT_0_1 = "answer_0_1 = 1.75"
LOOP = "while True:\n    pass"

Edit = Callable[[dict[str, Any]], None]


def _role(cell: dict[str, Any]) -> tuple[str, str]:
    meta = cell["metadata"].get("workbook", {})
    return meta.get("exercise", ""), meta.get("role", "")


def edit_check_cell(notebook: dict[str, Any]) -> None:
    for cell in notebook["cells"]:
        if _role(cell) == ("0.1", "check"):
            cell["source"] = "pass"


def delete_check_cells(notebook: dict[str, Any]) -> None:
    notebook["cells"] = [c for c in notebook["cells"] if _role(c)[1] != "check"]


def add_cell(source: str) -> Edit:
    """A cell of the learner's own, before the first exercise."""
    def edit(notebook: dict[str, Any]) -> None:
        first = next(i for i, c in enumerate(notebook["cells"]) if _role(c)[0])
        notebook["cells"].insert(first, {"cell_type": "code", "id": "mine", "metadata": {},
                                         "source": source, "outputs": [],
                                         "execution_count": None})
    return edit


INSTRUCTOR = str(grading.instructor_path(CHAPTER))

# student -> (answers by exercise, edit of the notebook or None)
ATTACKS: dict[str, tuple[dict[str, str], Edit | None]] = {
    "infinite_loop": ({"0.1": LOOP, "0.2": "answer_0_2 = 70"}, None),
    # bytes(n) comes from calloc: address space runs out at once, without touching pages
    "allocation": ({"0.1": "x = []\nwhile True:\n    x.append(bytes(10**8))"}, None),
    "sys_exit": ({"0.1": "import sys\nsys.exit(3)", "0.4": 'answer_0_4 = "A"'}, None),
    "os_exit": ({"0.1": "import os\nos._exit(0)"}, None),
    "fork_bomb": ({"0.1": "import os, time\nfor _ in range(200):\n    if os.fork() == 0:\n"
                          "        time.sleep(20)\n        os._exit(0)"}, None),
    "print_flood": ({"0.1": "while True:\n    print('x' * 10**6)"}, None),
    "always_equal": ({"0.1": "class Anything:\n    def __eq__(self, other):\n        return True"
                             "\nanswer_0_1 = Anything()"}, None),
    "float_subclass": ({"0.1": "class F(float):\n    def __eq__(self, other):\n"
                               "        return True\nanswer_0_1 = F(99.0)"}, None),
    "redefine_checker": ({"0.1": "answer_0_1 = 99"}, add_cell(
        "import builtins\ndef check(*args):\n    return True\nclass wb:\n"
        "    check = staticmethod(check)\nbuiltins.isinstance = lambda *a: True\n"
        "builtins.float = lambda *a: 1.75\nprint = lambda *a, **k: None")),
    "edited_check": ({"0.1": "answer_0_1 = 99"}, edit_check_cell),
    "deleted_checks": ({"0.1": RIGHT_0_1}, delete_check_cells),
    "imports_solutions": ({"0.5": "from solutions.collectives import ring_allreduce_time_ms"},
                          None),
    "reads_release": ({"0.1": f"import json\nanswer_0_1 = json.load(open({INSTRUCTOR!r}))"},
                      None),
    "time_limit_patch": ({"0.1": "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)"
                                 "\n" + LOOP}, None),
    "returns_generator": ({"0.5": "def ring_allreduce_time_ms(*args):\n"
                                  "    yield 70.07"}, None),
    "sleeps": ({"0.5": "import time\ndef ring_allreduce_time_ms(*args):\n    time.sleep(5)"},
               None),
    "recursion": ({"0.1": "def deeper(n):\n    return deeper(n + 1)\nanswer_0_1 = deeper(0)"},
                  None),
    "runs_programs": ({"0.1": "import os\nos.system('cat /etc/passwd')\nanswer_0_1 = 1.75"},
                      None),
    "ellipsis": ({"0.1": "answer_0_1 = ..."}, None),
}
# Chapter 8's 8.6 takes a list: this function computes the right scale, then empties the
# list and leaves garbage in it. Every call gets its own copy of the arguments, so nothing
# leaks into the next case or into the reference's inputs.
MUTATES = """
import math

def dynamic_loss_scale(overflows, init_scale=65536.0, growth_interval=2000):
    if (isinstance(init_scale, bool) or not isinstance(init_scale, (int, float))
            or not math.isfinite(init_scale) or init_scale <= 0):
        raise ValueError("init_scale")
    if isinstance(growth_interval, float) and growth_interval.is_integer():
        growth_interval = int(growth_interval)
    if (isinstance(growth_interval, bool) or not isinstance(growth_interval, int)
            or growth_interval < 1):
        raise ValueError("growth_interval")
    scale, good = float(init_scale), 0
    for overflow in overflows:
        if overflow:
            scale, good = scale / 2, 0
        else:
            good += 1
            if good == growth_interval:
                scale = scale * 2 if scale * 2 <= 3.4028234663852886e38 else scale
                good = 0
    overflows.clear()
    overflows.extend([True] * 1000)
    return scale
"""
HONEST = ({"0.1": RIGHT_0_1, "0.4": 'answer_0_4 = "A"'}, None)


def write(root: Path, student: str, answers: dict[str, str], edit: Edit | None,
          chapter: int = 0) -> None:
    notebook = json.loads(grading.learner_path(grading.CHAPTERS[chapter]).read_text())
    filled = fill_answers(notebook, answers)
    if edit is not None:
        edit(filled)
    (root / student).mkdir(parents=True)
    (root / student / "ch00.ipynb").write_text(json.dumps(filled))


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    root = tmp_path_factory.mktemp("hostile")
    for student, (answers, edit) in ATTACKS.items():
        write(root / "in", student, answers, edit)
    write(root / "in", "mutates_args", {"8.6": MUTATES}, None, chapter=8)
    write(root / "in", "zz_honest", *HONEST)
    settings = dataclasses.replace(
        grading.settings(2, 0.5, root / "in", root / "out"), memory_mb=256,
        output_bytes=100_000)
    return grade_folder(root / "in", grading.releases(), settings)


def row(batch: Batch, student: str, exercise: str) -> ExerciseResult:
    notebook = next(nb for nb in batch.notebooks if nb.student == student)
    return next(e for e in notebook.exercises if e.exercise_id == exercise)


def notes(batch: Batch, student: str) -> str:
    notebook = next(nb for nb in batch.notebooks if nb.student == student)
    return " ".join(notebook.notes + tuple(n for e in notebook.exercises for n in e.notes))


def test_every_file_was_graded_and_the_honest_student_last(batch: Batch) -> None:
    assert batch.all_graded
    assert len(batch.notebooks) == len(ATTACKS) + 2
    assert row(batch, "zz_honest", "0.1").status == "correct"
    assert row(batch, "zz_honest", "0.4").status == "correct"
    assert row(batch, "zz_honest", "0.2").status == "unanswered"


def test_no_attack_earns_a_point_it_did_not_earn(batch: Batch) -> None:
    earned = {(nb.student, e.exercise_id) for nb in batch.notebooks for e in nb.exercises
              if e.points}
    assert earned == {("zz_honest", "0.1"), ("zz_honest", "0.4"), ("sys_exit", "0.4"),
                      ("infinite_loop", "0.2"), ("deleted_checks", "0.1"),
                      ("mutates_args", "8.6")}


def test_infinite_loop_stops_its_cell_only(batch: Batch) -> None:
    result = row(batch, "infinite_loop", "0.1")
    assert result.status == "error"
    assert "ran longer than 0.5 s and was stopped (an endless loop?)" in result.message
    assert row(batch, "infinite_loop", "0.2").status == "correct"


def test_unbounded_allocation_runs_out_of_memory(batch: Batch) -> None:
    result = row(batch, "allocation", "0.1")
    assert (result.status, result.message) == (
        "error", "Your answer cell ran out of memory, so answer_0_1 was never set.")


def test_sys_exit_is_an_error_and_later_cells_still_count(batch: Batch) -> None:
    assert "called sys.exit()" in row(batch, "sys_exit", "0.1").message
    assert row(batch, "sys_exit", "0.4").status == "correct"
    assert "Calls sys.exit() to end the process; ignored" in notes(batch, "sys_exit")


def test_os_exit_loses_the_whole_notebook_with_a_message(batch: Batch) -> None:
    result = row(batch, "os_exit", "0.4")
    assert result.status == "error"
    assert "os._exit or similar" in result.message


def test_fork_bomb_meets_the_process_limit(batch: Batch) -> None:
    result = row(batch, "fork_bomb", "0.1")
    assert result.status == "error"
    assert "raised BlockingIOError" in result.message or "raised OSError" in result.message


def test_printing_without_end_stops_at_the_output_limit(batch: Batch) -> None:
    assert row(batch, "print_flood", "0.1").message == (
        "Your answer cell printed more than the output limit allows, so answer_0_1 was "
        "never set.")


def test_an_object_equal_to_everything_is_not_accepted(batch: Batch) -> None:
    result = row(batch, "always_equal", "0.1")
    assert (result.status, result.points) == ("integrity", 0)
    assert "an instance of Anything, a class that defines its own comparison" in result.message


def test_a_float_subclass_is_not_accepted(batch: Batch) -> None:
    result = row(batch, "float_subclass", "0.1")
    assert (result.status, result.points) == ("integrity", 0)
    assert "custom subclass: __main__.F (a subclass of float)" in result.message


def test_redefined_checker_and_builtins_change_nothing(batch: Batch) -> None:
    result = row(batch, "redefine_checker", "0.1")
    assert result.status == "wrong"
    text = notes(batch, "redefine_checker")
    for fragment in ("Redefines check;", "Redefines wb;", "Replaces builtins.isinstance;",
                     "Replaces builtins.float;", "Redefines the builtin print;"):
        assert fragment in text


def test_an_edited_check_cell_is_reported_and_ignored(batch: Batch) -> None:
    result = row(batch, "edited_check", "0.1")
    assert result.status == "wrong"
    assert result.notes == ("The check cell of exercise 0.1 was edited (its checksum differs "
                            "from the release); the grader never runs check cells, so the "
                            "answer was graded by the release's rules.",)


def test_deleted_check_cells_are_reported_and_the_answer_still_graded(batch: Batch) -> None:
    assert row(batch, "deleted_checks", "0.1").status == "correct"
    assert all("was deleted" in row(batch, "deleted_checks", ex).notes[0]
               for ex in ("0.1", "0.2", "0.3", "0.4", "0.5", "0.6"))


def test_importing_the_reference_is_not_possible_and_not_credited(batch: Batch) -> None:
    result = row(batch, "imports_solutions", "0.5")
    assert (result.status, result.points) == ("integrity", 0)
    assert "Imports the reference code `solutions.collectives`" in result.message
    # the import itself failed: the package is not inside the sandbox
    assert "raised ModuleNotFoundError" in result.message


def test_reading_the_release_notebooks_is_reported_and_not_credited(batch: Batch) -> None:
    result = row(batch, "reads_release", "0.1")
    assert (result.status, result.points) == ("integrity", 0)
    assert f"Tried to read the grader's files ({INSTRUCTOR})" in result.message


def test_ignoring_the_alarm_meets_the_cpu_limit(batch: Batch) -> None:
    result = row(batch, "time_limit_patch", "0.1")
    assert result.status == "error"
    assert "limit" in result.message and "could not read your answers" in result.message
    assert "Calls signal.signal()" in " ".join(result.notes)


def test_a_generator_is_not_a_number(batch: Batch) -> None:
    result = row(batch, "returns_generator", "0.5")
    assert result.status == "wrong"
    assert "returned <not plain data: generator>" in result.message


def test_a_function_that_sleeps_costs_one_time_limit(batch: Batch) -> None:
    result = row(batch, "sleeps", "0.5")
    assert result.status == "wrong"
    assert "did not finish within 0.5 s" in result.message
    assert "The other 27 cases were not run after the time-out." in result.details
    sleeper = next(nb for nb in batch.notebooks if nb.student == "sleeps")
    assert sleeper.seconds < 3  # one half-second call, not 28 of them


def test_a_function_that_mutates_its_arguments_is_graded_on_its_results(batch: Batch) -> None:
    result = row(batch, "mutates_args", "8.6")
    assert (result.status, result.yours) == ("correct", "dynamic_loss_scale: 31 of 31 cases")


def test_recursion_bomb_is_a_recursion_error(batch: Batch) -> None:
    assert "raised RecursionError" in row(batch, "recursion", "0.1").message


def test_starting_programs_is_blocked_and_not_credited(batch: Batch) -> None:
    result = row(batch, "runs_programs", "0.1")
    assert (result.status, result.points) == ("integrity", 0)
    assert "Tried to start another program (os.system)" in result.message


def test_an_ellipsis_placeholder_is_unanswered(batch: Batch) -> None:
    assert row(batch, "ellipsis", "0.1").status == "unanswered"
