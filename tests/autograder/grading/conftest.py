"""A toy chapter for the grading engine's tests: two exercises, eight cells, no workbook.

Exercise 1.1 asks for a number in GB (2 GB); exercise 1.2 asks for ``double(x)``, which
returns 2x and raises ValueError for a negative x.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from autograder.exercise import Exercise
from autograder.grading import Release, ReleaseCell, Task
from autograder.kinds import Function, Numeric
from autograder.sandbox import Limits, WorkerPool


def double(x: float) -> float:
    if x < 0:
        raise ValueError("x must be >= 0")
    return 2 * x


def _record(exercise_id: str, answer: Any, reference: Callable[[Any], Any]) -> Exercise:
    return Exercise(id=exercise_id, chapter=1, category="derive", title=f"Toy {exercise_id}",
                    prompt="", params={}, vary=lambda rng: {}, answer_kind=answer,
                    reference=reference, hints=("think",), explanation="", sources=())


DOUBLE = Function(function_name="double", signature="(x)",
                  cases=lambda rng: (rng.choice([1.0, 2.5, 4.0]),),
                  edge_cases=((3.0,), (-1.0,), (0.0,)), n_random=3, time_limit_s=0.5)
RECORDS = (_record("1.1", Numeric(unit="GB"), lambda p: 2.0),
           _record("1.2", DOUBLE, lambda p: double))

CELLS = (
    ReleaseCell("t-0", "markdown", "locked", source="# A toy chapter"),
    ReleaseCell("t-1", "code", "locked", grade_id="ch01_cell_001", source="import workbook as wb"),
    ReleaseCell("t-2", "markdown", "locked", "1.1", "prompt_1_1", "### Exercise 1.1",
                "prompt"),
    ReleaseCell("t-3", "code", "answer", "1.1", "answer_1_1", "answer_1_1 = None", "answer"),
    ReleaseCell("t-4", "code", "check", "1.1", "check_1_1", 'wb.check("1.1", answer_1_1)',
                "check"),
    ReleaseCell("t-5", "code", "answer", "1.2", "answer_1_2",
                "def double(x):\n    return None", "answer"),
    ReleaseCell("t-6", "code", "check", "1.2", "check_1_2", 'wb.check("1.2", double)', "check"),
    ReleaseCell("t-7", "code", "locked", grade_id="ch01_cell_007", source="explorer()"),
)


@pytest.fixture
def release() -> Release:
    return Release(1, "Toy", "ch01_toy", CELLS,
                   (Task(RECORDS[0]), Task(RECORDS[1])))


def notebook_tree(answers: dict[str, str] | None = None) -> dict[str, Any]:
    """The toy release as learner notebook JSON, with ``answers`` written in."""
    answers = answers or {}
    cells = []
    for cell in CELLS:
        meta: dict[str, Any] = {}
        if cell.exercise:
            meta["workbook"] = {"exercise": cell.exercise, "role": cell.tag}
        source = answers.get(cell.exercise, cell.source) if cell.role == "answer" else \
            cell.source
        cells.append({"cell_type": cell.cell_type, "id": cell.cell_id, "metadata": meta,
                      "source": source, **({"outputs": [], "execution_count": None}
                                           if cell.cell_type == "code" else {})})
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
            "metadata": {"workbook": {"chapter": 1, "role": "learner"}}}


@pytest.fixture
def write_notebook(tmp_path: Path) -> Callable[..., Path]:
    def write(relative: str, tree: Any) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tree if isinstance(tree, str) else json.dumps(tree))
        return path
    return write


@pytest.fixture(scope="package")
def pool() -> Iterator[WorkerPool]:
    limits = Limits(cpu_s=4, wall_s=6, cell_timeout_s=0.5, call_timeout_s=0.5, memory_mb=128)
    with WorkerPool(2, limits) as started:
        yield started


@pytest.fixture
def toy_notebook() -> Callable[..., dict[str, Any]]:
    return notebook_tree
