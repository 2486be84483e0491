"""Turn one submission into one sandbox Job: which cells run, and what the grader asks back.

The job runs, in notebook order, the answer cells and the cells the learner added, and
nothing of the release: not the setup, explorers, narration, widgets or check cells (the
grader compares answers itself, so a learner's edit to any of those changes nothing).
Around them go the grader's own cells (:mod:`autograder.grading.guard`): the guard first,
a snapshot after each answer cell, the guard's log last, and a lab's runtime when asked.

What comes back is what each exercise's answer kind asks for (``Task.asks``, see
:mod:`autograder.kinds.trip`), translated here into sandbox requests on the names the
snapshot kept: a value, a function's calls on its test cases, a function run by a lab's
runner on each job, a function's source.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from autograder.grading.guard import (
    Names,
    compiled,
    guard_cell,
    lab_cell,
    report_cell,
    snapshot_cell,
)
from autograder.grading.integrity import CodeCell, parse_cell
from autograder.grading.match import Match
from autograder.grading.model import Release, Task
from autograder.grading.read import Notebook
from autograder.kinds.trip import Ask, AskCalls, AskRun, AskValue
from autograder.sandbox import CallRequest, Job, Request, SourceRequest, ValueRequest

# A line starting (after spaces or tabs) with % or !: linear time, since neither the
# indentation nor the rest of the line can cross a newline.
_MAGIC = re.compile(r"^([ \t]*)[%!][^\n]*$", re.MULTILINE)


@dataclass(frozen=True)
class Plan:
    """A job and what is needed to read its result: which learner cell each job cell is
    (None for the grader's cells), the grader's names, and which exercises were asked for."""

    job: Job
    origins: tuple[CodeCell | None, ...]
    names: Names
    asked: frozenset[str]
    tasks: Mapping[str, Task] = field(default_factory=dict)

    @property
    def cost(self) -> int:
        """How many time limits the job may use up: one per non-empty learner cell and one
        per function the grader calls."""
        cells = sum(1 for origin in self.origins if origin is not None and origin.source.strip())
        calls = sum(1 for r in self.job.requests if isinstance(r, CallRequest))
        return cells + calls

    def args_of(self, exercise: str, name: str) -> tuple[tuple[Any, ...], ...]:
        """The argument tuples exercise ``exercise`` asked ``name`` to be called on."""
        task = self.tasks.get(exercise)
        asks = task.asks if task is not None else ()
        return next((ask.args_list for ask in asks
                     if isinstance(ask, AskCalls) and ask.name == name), ())

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
@cache
def module_sources(modules: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(name, source) of each module, in order, once each, read in the grader's process
    (once per batch): what a lab's harness needs in the sandbox, where the packages may not
    be readable."""
    sources = []
    for name in dict.fromkeys(modules):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"the lab runtime module {name} cannot be found")
        sources.append((name, Path(spec.origin).read_text(encoding="utf-8")))
    return tuple(sources)


@cache
def module_codes(modules: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(name, compiled code) of each module of :func:`module_sources`, as a job loads it."""
    return tuple((name, compiled(source, f"<{name}>"))
                 for name, source in module_sources(modules))


def _kept(ask: Ask) -> tuple[str, bool] | None:
    """Whether the snapshot keeps the learner's name for this ask, and as a function."""
    if isinstance(ask, AskValue):
        return ask.name, False
    if isinstance(ask, (AskCalls, AskRun)):
        return ask.name, isinstance(ask, AskCalls)
    return None


def _bindings(task: Task, names: Names) -> list[tuple[str, str, bool]]:
    kept = dict(k for ask in task.asks if (k := _kept(ask)) is not None)
    return [(name, names.snapshot(task.record.id, name), wrap) for name, wrap in kept.items()]


def _requests(task: Task, names: Names) -> list[Request]:
    exercise, requests = task.record.id, list[Request]()
    for ask in task.asks:
        kept = names.snapshot(exercise, ask.name)
        if isinstance(ask, AskValue):
            requests.append(ValueRequest(kept))
        elif isinstance(ask, AskCalls):
            requests += [CallRequest(kept, ask.args_list), ValueRequest(kept)]
        elif isinstance(ask, AskRun):
            requests.append(CallRequest(names.harness(exercise, ask.name),
                                        [(job,) for job in ask.jobs]))
        else:
            requests.append(SourceRequest(ask.name))
    return requests


def _runs(tasks: list[Task], names: Names) -> str | None:
    """The cell loading every asked lab runtime and binding each run's harness."""
    runs = [(task, ask) for task in tasks for ask in task.asks if isinstance(ask, AskRun)]
    if not runs:
        return None
    modules = module_codes(tuple(m for _, ask in runs for m in ask.modules))
    return lab_cell(names, modules, [(names.harness(task.record.id, ask.name),
                                      names.snapshot(task.record.id, ask.name), ask.entry)
                                     for task, ask in runs])


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
    asked_tasks = [task for task in release.tasks if task.record.id in asked]
    runs = _runs(asked_tasks, names)
    if runs is not None:
        cells.append(runs)
        origins.append(None)
    requests: list[Request] = []
    for task in asked_tasks:
        requests += [r for r in _requests(task, names) if r not in requests]
    requests.append(ValueRequest(names.log))
    return Plan(Job(job_id, cells, requests), tuple(origins), names, frozenset(asked),
                {task.record.id: task for task in asked_tasks})
