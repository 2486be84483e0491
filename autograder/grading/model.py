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
from autograder.kinds.trip import Ask, AskCalls, AskRun, AskValue

Status = Literal["correct", "wrong", "unanswered", "error", "integrity", "excused"]
STATUSES: tuple[str, ...] = ("correct", "wrong", "unanswered", "error", "integrity", "excused")
# Cell roles in a release: the learner's answer, the check that grades it, anything else locked.
Role = Literal["answer", "check", "locked"]


def checksum(source: str) -> str:
    """SHA-256 of a cell's source with line endings and trailing blanks normalised, so that
    re-saving a notebook in another editor does not count as an edit."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").strip().split("\n")]
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


@cache
def _asks(record: Exercise) -> tuple[Ask, ...]:
    return record.answer_kind.requests(record.params, record.names)


@dataclass(frozen=True)
class Task:
    """One exercise as the grader asks for it: its answer kind says what to ask the sandbox
    for (:attr:`asks`) and reads the reply itself (``answer_kind.collect``)."""

    record: Exercise

    @property
    def asks(self) -> tuple[Ask, ...]:
        """What the sandbox is asked for, in the learner's names (fixed per record)."""
        return _asks(self.record)

    @property
    def value_name(self) -> str | None:
        """The first variable whose value is asked for (``answer_5_1``), if any."""
        return next((ask.name for ask in self.asks if isinstance(ask, AskValue)), None)

    @property
    def function_name(self) -> str | None:
        """The first learner function the asks run, if any."""
        return next((ask.name for ask in self.asks if isinstance(ask, (AskCalls, AskRun))),
                    None)

    @property
    def calls(self) -> int:
        """How many of the asks call the learner's code (each may use up a time limit)."""
        return sum(1 for ask in self.asks if isinstance(ask, (AskCalls, AskRun)))


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
    ``rule`` names the check that noticed it ("imports_reference", "locked_cells",
    "edited_check", "blocked", ...).
    """

    exercise: str
    rule: str
    message: str
    serious: bool = False
    cell: int = -1          # the submitted cell it is about, when there is one


@dataclass(frozen=True)
class ExerciseResult:
    """One row of the gradebook: one exercise of one student's notebook.

    ``points`` is a whole number as graded; a term's policies (late penalty, partial
    credit, an override) may make it a float with at most two decimals. ``score`` is the
    fraction of the points partial credit would give: the verdict's score for an answer
    kind graded in parts or cases, else 1 for a pass and 0 otherwise. ``policy`` says in
    words what the term's policies changed in this row ("" when nothing). An ``excused``
    row (set only by a term's override) counts 0 of 0 points (:attr:`counted_max`) while
    ``max_points`` keeps what the exercise is worth.
    """

    exercise_id: str
    title: str
    category: str           # what the learner does: derive, trace, build, debug, design
    points: float
    max_points: int
    status: Status
    message: str
    yours: str = ""
    expected: str = ""
    details: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    answer_source: str = ""  # the learner's own answer cell, for the feedback page
    picture: str = ""        # a text drawing of the learner's work (a lab's trace)
    score: float = 0.0
    policy: str = ""
    misconceptions: tuple[str, ...] = ()  # the named known mistakes a wrong answer matches

    @property
    def counted_max(self) -> int:
        """The points this row is out of in a total: 0 when excused."""
        return 0 if self.status == "excused" else self.max_points


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
    def points(self) -> float:
        """The exercises' points added up (a float only when a row is fractional)."""
        total = sum(e.points for e in self.exercises)
        return total if isinstance(total, int) else round(total, 2)

    @property
    def max_points(self) -> int:
        return sum(e.counted_max for e in self.exercises)


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
