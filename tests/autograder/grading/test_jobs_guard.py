"""The job for a submission, the grader's guard cells, and reading the result back: run in
the real sandbox on the toy chapter."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from autograder.grading.compare import Context, grade_task
from autograder.grading.guard import Names
from autograder.grading.integrity import CodeCell, scan_cells
from autograder.grading.jobs import plan_job, runnable
from autograder.grading.match import match_cells
from autograder.grading.read import parse_notebook
from autograder.sandbox import CallRequest, ValueRequest, WorkerPool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
RIGHT_DOUBLE = "def double(x):\n    if x < 0:\n        raise ValueError('no')\n    return 2 * x"


def graded(pool: WorkerPool, release, tree, protected: tuple[str, ...] = ()):
    notebook = parse_notebook(json.dumps(tree).encode())
    match = match_cells(notebook, release)
    plan = plan_job("t", notebook, release, match, Names("test"), protected)
    result = pool.run(plan.job)
    runs = [CodeCell(i, match.answer_of(i), notebook.cells[i].source) for i in match.executed()]
    ctx = Context(plan, result, match, {c.index: c.source for c in notebook.cells},
                  scan_cells(runs, frozenset()), (), pool.limits)
    return plan, result, {t.record.id: grade_task(ctx, t) for t in release.tasks}


def test_only_answer_and_added_cells_run_between_the_grader_cells(release, toy_notebook) -> None:
    tree = toy_notebook({"1.1": "answer_1_1 = 2"})
    tree["cells"].insert(4, {"cell_type": "code", "id": "own", "metadata": {}, "source": "k = 1"})
    notebook = parse_notebook(json.dumps(tree).encode())
    plan = plan_job("t", notebook, release, match_cells(notebook, release), Names("n"), ())
    learner = [(o.index, o.exercise, o.source) for o in plan.origins if o is not None]
    assert learner == [(3, "1.1", "answer_1_1 = 2"), (4, "", "k = 1"),
                       (6, "1.2", "def double(x):\n    return None")]
    assert plan.job.cells[0].startswith("def __wb_n_load(") and "__wb_n_rt.install(" in \
        plan.job.cells[0]
    assert plan.job.cells[2] == ("try:\n    __wb_n_kept_1_1_answer_1_1 = answer_1_1\n"
                                 "except BaseException:\n    pass")
    requests = plan.job.requests
    assert requests[0] == ValueRequest("__wb_n_kept_1_1_answer_1_1")
    assert requests[1] == CallRequest("__wb_n_kept_1_2_double", [(3.0,), (-1.0,), (0.0,)] +
                                      [requests[1].args_list[i] for i in range(3, 6)])
    assert requests[-1] == ValueRequest("__wb_n_log")
    assert plan.cost == 3 + 1  # three learner cells, one function to call


def test_right_wrong_and_unanswered(pool, release, toy_notebook) -> None:
    _, _, rows = graded(pool, release, toy_notebook({"1.1": 'answer_1_1 = "2 GB"',
                                                     "1.2": RIGHT_DOUBLE}))
    assert [(r.status, r.points) for r in rows.values()] == [("correct", 1), ("correct", 1)]
    _, _, rows = graded(pool, release, toy_notebook({"1.1": "answer_1_1 = 3"}))
    assert (rows["1.1"].status, rows["1.2"].status) == ("wrong", "unanswered")


def test_the_answer_is_read_as_the_check_cell_right_below_would_see_it(
        pool, release, toy_notebook) -> None:
    tree = toy_notebook({"1.1": "answer_1_1 = 2", "1.2": RIGHT_DOUBLE})
    tree["cells"].append({"cell_type": "code", "id": "late", "metadata": {},
                          "source": "answer_1_1 = 99\ndel double"})
    _, _, rows = graded(pool, release, tree)
    assert (rows["1.1"].status, rows["1.2"].status) == ("correct", "correct")


def test_a_function_that_loops_costs_one_time_limit(pool, release, toy_notebook) -> None:
    looping = "def double(x):\n    while True:\n        pass"
    _, result, rows = graded(pool, release, toy_notebook({"1.2": looping}))
    types = [o.type for o in result.calls["__wb_test_kept_1_2_double"]]
    assert types[0] == "timeout" and set(types[1:]) == {"raised"}
    assert {o.type_name for o in result.calls["__wb_test_kept_1_2_double"][1:]} == {
        "__wb_test_rt.Skipped"}
    assert result.wall_s < 2
    assert rows["1.2"].message == "double(3.0) did not finish within 0.5 s (an endless loop?)."


def test_a_name_that_is_not_a_function(pool, release, toy_notebook) -> None:
    _, _, rows = graded(pool, release, toy_notebook({"1.2": "double = 6"}))
    assert rows["1.2"].status == "wrong"
    assert rows["1.2"].message.startswith("Pass the function itself")


def test_errors_say_what_happened_in_the_answer_cell(pool, release, toy_notebook) -> None:
    _, _, rows = graded(pool, release, toy_notebook({"1.1": "x = 1\nanswer_1_1 = 1 / 0",
                                                     "1.2": "def double(x:\n    pass"}))
    assert rows["1.1"].message == ("Your answer cell raised ZeroDivisionError: division by "
                                   "zero (line 2), so answer_1_1 was never set.")
    assert rows["1.2"].message.startswith("Your answer cell has a syntax error (line 1)")
    _, _, rows = graded(pool, release, toy_notebook({"1.1": "answer = 2"}))
    assert rows["1.1"].message == ("answer_1_1 is not defined after your answer cell: keep "
                                   "the line that defines answer_1_1 in the answer cell.")


def test_the_guard_reports_protected_folders_only(pool, release, toy_notebook,
                                                  tmp_path: Path) -> None:
    secret = tmp_path / "grader"
    secret.mkdir()
    (secret / "key.txt").write_text("answers")
    for path in (tmp_path, secret, secret / "key.txt"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # readable on the host, not inside
    key, folder = str(secret / "key.txt"), str(secret)
    own = "\n".join([
        "import os", "open('mine.txt', 'w').write('ok')", "mine = open('mine.txt').read()",
        f"try:\n    open({key!r}).read()\nexcept OSError:\n    pass",
        f"try:\n    os.listdir({folder!r})\nexcept OSError:\n    pass",
        f"try:\n    os.symlink({folder!r}, 'link')\n    open('link/key.txt').read()\n"
        "except OSError:\n    pass",
        "try:\n    import ctypes\n    ctypes.CDLL(None)\nexcept OSError:\n    pass"])
    tree = toy_notebook({"1.1": "answer_1_1 = 2"})
    tree["cells"].insert(1, {"cell_type": "code", "id": "own", "metadata": {}, "source": own})
    plan, result, rows = graded(pool, release, tree, protected=(str(secret),))
    log = result.values["__wb_test_log"].value
    assert [entry[1:] for entry in log] == [
        ["open", str(secret / "key.txt")], ["os.listdir", str(secret)],
        ["os.symlink", str(secret)], ["open", str(secret / "key.txt")],  # through the link
        ["ctypes.dlopen", ""]]
    assert {entry[0] for entry in log} == {1}  # job cell 1: the learner's own cell
    assert plan.origin(1).index == 1
    assert [e for e in result.cell_errors if e.cell == 1] == []  # its own files are fine
    assert rows["1.1"].status == "correct"  # cells of one's own that try do not sink answers


def test_ipython_magics_do_not_break_a_cell() -> None:
    assert runnable("%time x = 1\n!ls\ny = 2") == (
        "pass  # IPython magic, skipped\npass  # IPython magic, skipped\ny = 2")
    assert runnable("x = 5 % 2") == "x = 5 % 2"
    assert runnable("def f(:\n%time") == "def f(:\n%time"


@pytest.mark.parametrize("source", [
    "\n" * 100_000 + "answer = (",            # newlines, then a syntax error
    " \t" * 50_000 + "\n!ls\nanswer = (",     # one long line of blanks
    "\n".join([" " * 40] * 5_000) + "\nx = (",
])
def test_looking_for_magics_takes_linear_time(source: str) -> None:
    import time
    started = time.perf_counter()
    assert runnable(source) == source  # a real syntax error stays for the sandbox to report
    assert time.perf_counter() - started < 0.5  # was ~57 s for the first, quadratic
