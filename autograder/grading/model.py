"""The batch grader's vocabulary: what a release holds, what a file yields, what a row says.

The grader knows no particular exercise. The content package describes each chapter's
release notebook as a :class:`Release` (its cells and one :class:`Task` per exercise,
holding the exercise record and the names the learner assigns) and hands the releases in.
Everything here is plain, frozen data so that each step of the pipeline can be tested on
its own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Literal

from autograder.exercise import Exercise
from autograder.kinds.base import SandboxRun
from autograder.kinds.function import Function

Status = Literal["correct", "wrong", "unanswered", "error", "integrity"]
STATUSES: tuple[str, ...] = ("correct", "wrong", "unanswered", "error", "integrity")
# Cell roles in a release: the learner's answer, the check that grades it, anything else locked.
Role = Literal["answer", "check", "locked"]


def checksum(source: str) -> str:
    """SHA-256 of a cell's source with line endings and trailing blanks normalised, so that
    re-saving a notebook in another editor does not count as an edit."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").strip().split("\n")]
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


@cache
def _sandbox_run(record: Exercise) -> SandboxRun | None:
    return record.answer_kind.sandbox_run(record.params)


@dataclass(frozen=True)
class Task:
    """One exercise as the grader asks for it.

    The record's answer kind says what the learner provides: a value assigned to
    ``value_name`` (``answer_5_1``), a function (``function``), or both (a debug exercise's
    line and fixed function). Which requests go to the sandbox follows from that.
    """

    record: Exercise

    @property
    def value_name(self) -> str | None:
        """The variable the learner assigns, or None when the answer is a function only."""
        return self.record.answer_kind.value_name(self.record.names)

    @property
    def mode(self) -> Literal["value", "function", "debug", "lab"]:
        """"value", "function", "debug" for a value and a function together, or "lab" for
        a function run through a harness in the sandbox."""
        if self.lab is not None:
            return "lab"
        if self.function is None:
            return "value"
        return "function" if self.value_name is None else "debug"

    @property
    def lab(self) -> SandboxRun | None:
        """How the sandbox runs a lab's function (its jobs for the canonical params)."""
        return _sandbox_run(self.record)

    @property
    def function(self) -> Function | None:
        """The function spec whose test cases the learner's function is called on."""
        return self.record.answer_kind.function_spec()

    @property
    def function_name(self) -> str | None:
        lab = self.lab
        if lab is not None:
            return lab.function_name
        spec = self.function
        return spec.function_name if spec is not None else None


@dataclass(frozen=True)
class ReleaseCell:
    """One cell of the release notebook, as handed out."""

    cell_id: str
    cell_type: str          # "code" or "markdown"
    role: Role
    exercise: str = ""      # the exercise id for exercise cells
    grade_id: str = ""      # nbgrader's grade id (from the instructor notebook), if any
    source: str = ""
    tag: str = ""           # the role its exercise metadata names: prompt, answer, check, widget

    @cached_property
    def checksum(self) -> str:
        return checksum(self.source)


@dataclass(frozen=True)
class Release:
    """A chapter's release notebook and its exercises (``tasks`` in notebook order)."""

    chapter: int
    title: str
    stem: str                           # the notebook's file stem, e.g. "ch05_pipeline"
    cells: tuple[ReleaseCell, ...]
    tasks: tuple[Task, ...]

    def answer_cell(self, exercise: str) -> ReleaseCell | None:
        return next((c for c in self.cells if c.role == "answer" and c.exercise == exercise),
                    None)

    @property
    def max_points(self) -> int:
        return sum(task.record.points for task in self.tasks)


@dataclass(frozen=True)
class Finding:
    """Something the integrity checks noticed.

    ``exercise`` is empty for a finding about the whole notebook. A ``serious`` finding
    makes the exercise's status ``integrity`` with zero points; the others are notes.
    """

    exercise: str
    kind: str
    message: str
    serious: bool = False
    cell: int = -1          # the submitted cell it is about, when there is one


@dataclass(frozen=True)
class ExerciseResult:
    """One row of the gradebook: one exercise of one student's notebook."""

    exercise_id: str
    title: str
    kind: str
    points: int
    max_points: int
    status: Status
    message: str
    yours: str = ""
    expected: str = ""
    details: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    answer_source: str = ""  # the learner's own answer cell, for the feedback page
    picture: str = ""        # a text drawing of the learner's work (a lab's trace)


@dataclass(frozen=True)
class NotebookResult:
    """Everything graded in one file (or why it could not be)."""

    student: str
    path: str                           # relative to the submissions folder
    chapter: int | None
    title: str
    exercises: tuple[ExerciseResult, ...] = ()
    notes: tuple[str, ...] = ()
    problem: str = ""                   # non-empty: the file could not be graded
    seconds: float = 0.0

    @property
    def points(self) -> int:
        return sum(e.points for e in self.exercises)

    @property
    def max_points(self) -> int:
        return sum(e.max_points for e in self.exercises)


@dataclass(frozen=True)
class Batch:
    """The result of grading a submissions folder."""

    notebooks: tuple[NotebookResult, ...]
    ignored: tuple[str, ...] = ()       # files that are not notebooks, skipped on purpose
    problems: tuple[str, ...] = field(default_factory=tuple)  # batch-level messages
    seconds: float = 0.0
    isolation: str = ""                 # how learner code was isolated, in words

    @property
    def all_graded(self) -> bool:
        return not self.problems and not any(nb.problem for nb in self.notebooks)
