"""A new answer kind that needs the sandbox is one class: it says what to ask for and how to
read the reply, and the grader (which knows no answer kind) runs it in the real sandbox."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from autograder.exercise import Exercise
from autograder.grading import Release, Task
from autograder.grading.compare import Context, grade_task
from autograder.grading.guard import Names
from autograder.grading.integrity import CodeCell, scan_cells
from autograder.grading.jobs import plan_job
from autograder.grading.match import match_cells
from autograder.grading.read import parse_notebook
from autograder.kinds.base import AnswerKind, CellNames, Params, Verdict
from autograder.kinds.trip import Ask, AskCalls, AskSource, Reason, Recorded, Reply, Unread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")


@dataclass(frozen=True)
class Tabulated(AnswerKind):
    """A function judged by its table on 0..4 and by the length of its source: at most
    ``max_lines`` lines (a toy rule only the source can show)."""

    function_name: str
    max_lines: int

    def requests(self, params: Params, names: CellNames) -> tuple[Ask, ...]:
        return (AskCalls(self.function_name, tuple((x,) for x in range(5))),
                AskSource(self.function_name))

    def collect(self, reply: Reply, params: Params, names: CellNames) -> Any | Unread:
        function = reply.function(self.function_name)
        if isinstance(function, Unread):
            return function
        if not isinstance(function, Recorded):
            return Unread(Reason.NOT_FUNCTION, self.function_name, type(function).__name__)
        if function.only_none:
            return Unread(Reason.UNANSWERED, self.function_name,
                          f"{self.function_name} still returns None")
        table = []
        for x in range(5):
            try:
                table.append(function(x))
            except Exception as error:  # noqa: BLE001 - the learner's own error, replayed
                table.append(type(error).__name__)
        return table, (reply.source(self.function_name) or "").strip().count("\n") + 1

    def grade(self, answer: Any, expected: Any, params: Params,
              misconceptions: tuple[tuple[Any, str], ...]) -> Verdict:
        table, lines = answer
        if table != expected:
            return Verdict("wrong", f"table {table}, expected {expected}")
        if lines > self.max_lines:
            return Verdict("wrong", f"{lines} lines, at most {self.max_lines}")
        return Verdict("correct", "right table, short source", score=1.0)

    def describe(self) -> str:
        return f"a function {self.function_name}(x)"

    def placeholder(self, names: CellNames) -> str:
        return f"def {self.function_name}(x):\n    return None"

    def solution_source(self, expected: Any, names: CellNames) -> str:
        return f"def {self.function_name}(x):\n    return x + x"


TOY = Exercise(id="1.2", chapter=1, category="build", title="Toy table", prompt="",
               params={}, vary=lambda rng: {}, answer_kind=Tabulated("double", 3),
               reference=lambda p: [x + x for x in range(5)],  # 2x by addition, by hand
               hints=("think",), explanation="", sources=())


@pytest.fixture
def row(pool, release, toy_notebook):
    """Exercise 1.2 of the toy chapter, answered with ``source`` and graded as a Tabulated."""
    toy = Release(release.chapter, release.title, release.stem, release.cells,
                  (release.tasks[0], Task(TOY)))

    def grade(source: str) -> Any:
        notebook = parse_notebook(json.dumps(toy_notebook({"1.2": source})).encode())
        match = match_cells(notebook, toy)
        plan = plan_job("t", notebook, toy, match, Names("new"), ())
        cells = [CodeCell(i, match.answer_of(i), notebook.cells[i].source)
                 for i in match.executed()]
        ctx = Context(plan, pool.run(plan.job), match,
                      {c.index: c.source for c in notebook.cells},
                      scan_cells(cells, frozenset()), (), pool.limits)
        return grade_task(ctx, toy.tasks[1])
    return grade


def test_the_new_kind_grades_through_the_sandbox(row) -> None:
    graded = row("def double(x):\n    return 2 * x")
    assert (graded.status, graded.points, graded.message) == (
        "correct", 1, "right table, short source")


def test_its_own_rules_see_the_source_and_the_calls(row) -> None:
    long = "def double(x):\n    y = x\n    y = y + x\n    return y"
    assert row(long).message == "4 lines, at most 3"
    raises = "def double(x):\n    if x == 3:\n        raise KeyError(x)\n    return 2 * x"
    assert row(raises).message == \
        "table [0, 2, 4, 'KeyError', 8], expected [0, 2, 4, 6, 8]"


def test_its_reasons_become_rows(row) -> None:
    stub = row("def double(x):\n    return None")
    assert (stub.status, stub.message) == ("unanswered", "Not answered: double still returns None.")
    assert row("double = 4").status == "wrong" and "not a function" in row("double = 4").message
    gone = row("pass")
    assert gone.status == "error" and "double is not defined" in gone.message
