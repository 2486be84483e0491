"""Grading each student against their own numbers (``workbook grade --secret-file KEY``).

For a notebook filed under student S, :class:`Personaliser` gives the pipeline S's release:
every exercise in S's numbers (seed = HMAC(secret, S), never read from the notebook), S's
prompts, and S's numbers cell, so an untouched personalised notebook matches its release
cell for cell. It also answers the integrity questions, for the instructor:

* whose numbers the notebook carries (its numbers cell names a seed; a notebook handed in
  under S carrying classmate C's seed is graded against S's numbers and flagged);
* whose numbers a wrong answer is right for (an answer copied from C gets no points, and
  the row's status becomes ``integrity``).

Feedback pages never name the classmate; ``grades.csv``, ``grades.json`` and ``totals.csv``
(which only the instructor sees) do.
"""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from autograder.exercise import Exercise
from autograder.grading.model import (
    Batch,
    ExerciseResult,
    NotebookResult,
    Release,
    ReleaseCell,
    Task,
)
from autograder.grading.read import Notebook
from autograder.kinds.base import Params, Verdict
from autograder.personal import (
    Classmates,
    carries_numbers,
    grading_seed,
    personalised,
    student_seed,
)
from autograder.template import fill
from workbook.instructor.evidence import Weighed, explained, weigh
from workbook.instructor.release import (
    NUMBERS_ROLE,
    numbers_cell_id,
    numbers_source,
    personal_source,
)
from workbook.records import printed

_CARRIED = re.compile(r"wb\.your_numbers\(\s*\"[^\"\n]{0,200}\"\s*,\s*\"([0-9a-f]{32})\"\s*\)")
COPIED_NOTE = ("Integrity: this is the right answer for a classmate's numbers, not for yours, "
               "so it earns no points.")


@dataclass(frozen=True, eq=False)
class _Watched(Exercise):
    """A student's own record that, on a wrong answer, asks whose numbers it fits."""

    student: str = ""
    base: Exercise | None = None
    watcher: Personaliser | None = None

    def grade(self, answer: Any, params: Params | None = None) -> Verdict:
        verdict = self._with_numbers(super().grade(answer, params), params)
        if verdict.status != "wrong" or params is not None or self.watcher is None \
                or self.base is None:
            return verdict  # right, or unreadable (then it is nobody's right answer)
        who = self.watcher.classmates.whose_answer(self.base, self.student, answer)
        if not who:
            return verdict
        if explained(self, answer, verdict.message):
            # one of the student's own known mistakes: no evidence, but the row is the
            # classmate's answer if other evidence against the pair is strong
            self.watcher.explained.add((self.student, self.id))
        self.watcher.copied[(self.student, self.id)] = who
        return dataclasses.replace(verdict, message=f"{verdict.message} {COPIED_NOTE}")


    def _with_numbers(self, verdict: Verdict, params: Params | None) -> Verdict:
        """The verdict with the numbers it was graded in, for the student's feedback page:
        only numbers the prompt gives (a param that the prompt does not show, such as the
        right option's key or an option's feedback, is part of the answer; a text the
        prompt shows is no number to grade in)."""
        if params is not None or not self.params or not carries_numbers(self):
            return verdict
        shown = ", ".join(f"{name} = {fill('{' + name + '}', self.params)}"
                          for name in prompt_fields(self.prompt) if _number(self.params, name))
        if not shown:
            return verdict
        return dataclasses.replace(verdict, details=(*verdict.details,
                                                     f"Graded in your numbers: {shown}."))


def _number(params: Params, name: str) -> bool:
    value = params.get(name)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def prompt_fields(template: str) -> tuple[str, ...]:
    """The params a prompt template shows, in the order it first shows them."""
    names: list[str] = []
    for _, field_name, _, _ in string.Formatter().parse(template):
        name = (field_name or "").split(".")[0].split("[")[0]
        if name and name not in names:
            names.append(name)
    return tuple(names)


@dataclass
class Personaliser:
    """The pipeline's ``personalise`` step, and what it noticed."""

    secret: bytes
    classmates: Classmates
    carried: dict[tuple[str, int], str] = field(default_factory=dict)   # -> whose numbers
    copied: dict[tuple[str, str], str] = field(default_factory=dict)    # (student, ex) -> who
    explained: set[tuple[str, str]] = field(default_factory=set)  # matches a slip explains
    seen: dict[str, int] = field(default_factory=dict)  # notebooks carrying "own"/"foreign"
    weighed: list[Weighed] = field(default_factory=list)  # matches to classmates, weighed
    _releases: dict[tuple[str, int], Release] = field(default_factory=dict)

    @classmethod
    def for_class(cls, secret: bytes, students: Iterable[str]) -> Personaliser:
        seeds = {s: student_seed(secret, s) for s in set(students) if s.strip()}
        return cls(secret, Classmates(seeds))

    def seed(self, student: str) -> str:
        return self.classmates.seeds.get(student) or student_seed(self.secret, student)

    def __call__(self, student: str, notebook: Notebook, release: Release
                 ) -> tuple[Release, tuple[str, ...]]:
        key = (student, release.chapter)
        if key not in self._releases:
            self._releases[key] = self._personal(student, release)
        return self._releases[key], self._carried(student, notebook, release.chapter)

    def _record(self, student: str, record: Exercise) -> Exercise:
        base = printed(record.id)
        mine = personalised(base, self.seed(student))
        values = {f.name: getattr(mine, f.name) for f in dataclasses.fields(Exercise)}
        if not carries_numbers(base):  # a lab draws its graded cases from grading_seed
            values["params"] = {**mine.params, "grading_seed": grading_seed(
                self.secret, student, record.id)}
        return _Watched(**values, student=student, base=base, watcher=self)

    def _personal(self, student: str, release: Release) -> Release:
        seed = self.seed(student)
        tasks = tuple(Task(self._record(student, t.record)) for t in release.tasks)
        records = {t.record.id: t.record for t in tasks}
        cells: list[ReleaseCell] = []
        for cell in release.cells:
            source = personal_source(cell.tag, records[cell.exercise]) \
                if cell.exercise in records else None
            if source is not None:  # its prompt and the answer cell it starts from
                cell = dataclasses.replace(cell, source=source)
            cells.append(cell)
            if cell.cell_id == f"ch{release.chapter:02d}-001":  # the setup cell
                cells.append(ReleaseCell(numbers_cell_id(release.chapter), "code", "locked",
                                         source=numbers_source(student, seed),
                                         tag=NUMBERS_ROLE))
        return dataclasses.replace(release, cells=tuple(cells), tasks=tasks)

    def _carried(self, student: str, notebook: Notebook, chapter: int) -> tuple[str, ...]:
        """Notes on whose numbers the notebook's numbers cell names."""
        cell_id = numbers_cell_id(chapter)
        sources = [c.source[:1000] for c in notebook.cells if c.cell_id == cell_id]
        found = _CARRIED.search(sources[0]) if sources else None
        if found is None:
            return (f"This notebook carries no personal numbers (a release without them, or "
                    f"its numbers cell was removed); it was graded in {student}'s numbers.",)
        own = found.group(1) == self.seed(student)
        self.seen["own" if own else "foreign"] = self.seen.get("own" if own else "foreign",
                                                               0) + 1
        if own:
            return ()
        who = self.classmates.whose_seed(found.group(1)) or "someone outside this class"
        self.carried[(student, chapter)] = who
        return ("Integrity: this notebook carries another student's numbers; it was graded "
                f"against {student}'s own numbers.",)

    def flag(self, batch: Batch) -> Batch:
        """The batch with every copied answer's row given status ``integrity`` where the
        evidence is strong (:mod:`workbook.instructor.evidence`); a weak coincidence stays
        an ordinary wrong answer, and its feedback does not mention a classmate."""
        self.weighed = weigh(self.copied, self.classmates.seeds, self.explained)
        strong = {(w.student, exercise) for w in self.weighed if w.strong
                  for exercise in w.exercises}
        self.copied = {key: who for key, who in self.copied.items() if key in strong}
        notebooks = tuple(self._flag_notebook(nb) for nb in batch.notebooks)
        return dataclasses.replace(batch, notebooks=notebooks)

    def _flag_notebook(self, notebook: NotebookResult) -> NotebookResult:
        rows = tuple(self._flag_row(notebook.student, row) for row in notebook.exercises)
        return dataclasses.replace(notebook, exercises=rows)

    def _flag_row(self, student: str, row: ExerciseResult) -> ExerciseResult:
        who = self.copied.get((student, row.exercise_id))
        if who is None:
            if COPIED_NOTE in row.message:
                return dataclasses.replace(row, message=row.message.replace(
                    COPIED_NOTE, "").strip())
            return row
        if row.status not in ("wrong", "integrity"):
            return row
        return dataclasses.replace(row, status="integrity", points=0)

    def integrity(self, student: str) -> str:
        """For the instructor: whose numbers this student handed in, in words ("" if none)."""
        parts = [f"notebook of chapter {chapter} carries the numbers of {who}"
                 for (s, chapter), who in sorted(self.carried.items()) if s == student]
        parts += [w.words() for w in self.weighed if w.student == student and w.strong]
        return "; ".join(parts)


@dataclass
class PrintedNumbers:
    """The ``personalise`` step without a secret: a personalised notebook is graded in the
    printed numbers (there is no other choice), its numbers cell is kept from running, and
    the instructor is told to grade with the secret."""

    seen: int = 0

    def __call__(self, student: str, notebook: Notebook, release: Release
                 ) -> tuple[Release, tuple[str, ...]]:
        cell_id = numbers_cell_id(release.chapter)
        carried = [c for c in notebook.cells if c.cell_id == cell_id]
        if not carried:
            return release, ()
        self.seen += 1
        cell = ReleaseCell(cell_id, "code", "locked", source=carried[0].source[:1000],
                           tag=NUMBERS_ROLE)
        return (dataclasses.replace(release, cells=(*release.cells, cell)),
                ("This notebook is in a student's own numbers, but it was graded without the "
                 "course secret, so in the printed numbers; grade it with --secret-file.",))
