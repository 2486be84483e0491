"""Turn one submission into one sandbox Job: which cells run, and what the grader asks back.

The job runs, in notebook order, the answer cells and the cells the learner added, and
nothing of the release: not the setup, explorers, narration, widgets or check cells (the
grader compares answers itself, so a learner's edit to any of those changes nothing).
Around them go the grader's own cells (:mod:`autograder.grading.guard`): the guard first,
a snapshot after each answer cell, the guard's log last.

What comes back, per exercise kind:

* a value exercise (derive, trace, design): the value of ``answer_N_M`` as plain data;
* a build exercise: one call of the learner's function per argument tuple of
  ``Function.test_cases()`` (the very inputs the notebook's own check uses), and the value
  bound to the name, to explain an answer that is not a function;
* a debug exercise: the bug line's value, and the fixed function called as for a build.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from autograder.grading.guard import Names, guard_cell, lab_cell, report_cell, snapshot_cell
from autograder.grading.integrity import CodeCell, parse_cell
from autograder.grading.match import Match
from autograder.grading.model import Release, Task
from autograder.grading.read import Notebook
from autograder.sandbox import CallRequest, Job, Request, SourceRequest, ValueRequest

_MAGIC = re.compile(r"^(\s*)[%!].*$", re.MULTILINE)


@dataclass(frozen=True)
class Plan:
    """A job and what is needed to read its result: which learner cell each job cell is
    (None for the grader's cells), the grader's names, and which exercises were asked for."""

    job: Job
    origins: tuple[CodeCell | None, ...]
    names: Names
    asked: frozenset[str]

    @property
    def cost(self) -> int:
        """How many time limits the job may use up: one per non-empty learner cell and one
        per function the grader calls."""
        cells = sum(1 for origin in self.origins if origin is not None and origin.source.strip())
        calls = sum(1 for r in self.job.requests if isinstance(r, CallRequest))
        return cells + calls

    def origin(self, job_cell: int) -> CodeCell | None:
        return self.origins[job_cell] if 0 <= job_cell < len(self.origins) else None


def runnable(source: str) -> str:
    """The cell as plain Python: IPython line magics and shell escapes (``%time``,
    ``!pip``) become ``pass``, only when the cell does not parse as it is."""
    if parse_cell(source) is not None:
        return source
    cleaned = _MAGIC.sub(lambda m: f"{m.group(1)}pass  # IPython magic, skipped", source)
    if parse_cell(cleaned) is None:
        return source  # a real syntax error: the sandbox reports it with its line
    return cleaned


@cache
def module_sources(modules: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(name, source) of each module, in order, once each, read in the grader's process:
    what a lab's harness needs in the sandbox, where the packages may not be readable."""
    sources = []
    for name in dict.fromkeys(modules):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"the lab runtime module {name} cannot be found")
        sources.append((name, Path(spec.origin).read_text(encoding="utf-8")))
    return tuple(sources)


@cache
def test_args(task: Task) -> tuple[tuple[Any, ...], ...]:
    """The argument tuples the learner's function is called on (fixed per record)."""
    spec = task.function
    return tuple(spec.test_cases()) if spec is not None else ()


def _bindings(task: Task, names: Names) -> list[tuple[str, str, bool]]:
    bindings = []
    if task.value_name:
        bindings.append((task.value_name, names.snapshot(task.record.id, "value"), False))
    if task.function_name:
        bindings.append((task.function_name, names.snapshot(task.record.id, "function"), True))
    return bindings


def _requests(task: Task, names: Names) -> list[Request]:
    requests: list[Request] = []
    lab = task.lab
    if lab is not None:
        harness = names.harness(task.record.id)
        return [CallRequest(harness, [(job,) for job in lab.jobs]),
                ValueRequest(names.snapshot(task.record.id, "function")),
                SourceRequest(lab.function_name)]
    if task.value_name:
        requests.append(ValueRequest(names.snapshot(task.record.id, "value")))
    if task.function_name:
        name = names.snapshot(task.record.id, "function")
        requests += [CallRequest(name, test_args(task)), ValueRequest(name)]
    return requests


def plan_job(job_id: str, notebook: Notebook, release: Release, match: Match, names: Names,
             protected: tuple[str, ...], *, enforce: bool = False) -> Plan:
    """The job for one submission; exercises with a missing or doubled answer cell are not
    asked for (they are errors whatever the code does). ``enforce``: the guard also
    refuses what it reports (only without bubblewrap, where it is the last wall left)."""
    tasks = {task.record.id: task for task in release.tasks}
    cells = [guard_cell(names, protected, enforce)]
    origins: list[CodeCell | None] = [None]
    asked: set[str] = set()
    for index in match.executed():
        exercise = match.answer_of(index)
        source = runnable(notebook.cells[index].source)
        cells.append(source)
        origins.append(CodeCell(index, exercise, source))
        task = tasks.get(exercise)
        if task is not None and len(match.answers[exercise]) == 1:
            cells.append(snapshot_cell(names, _bindings(task, names)))
            origins.append(None)
            asked.add(exercise)
    cells.append(report_cell(names))
    origins.append(None)
    labs = [task.lab for task in release.tasks if task.record.id in asked and task.lab]
    if labs:
        cells.append(lab_cell(names, module_sources(tuple(m for lab in labs for m in lab.modules)),
                              [(t.record.id, t.lab.entry) for t in release.tasks
                               if t.record.id in asked and t.lab is not None]))
        origins.append(None)
    requests: list[Request] = []
    for task in release.tasks:
        if task.record.id in asked:
            requests += _requests(task, names)
    requests.append(ValueRequest(names.log))
    return Plan(Job(job_id, cells, requests), tuple(origins), names, frozenset(asked))
