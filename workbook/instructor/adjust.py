"""Apply a term's policies to a freshly graded batch: partial credit, lateness, overrides.

:func:`apply_policies` is a pure function of the graded batch, the policies
(:mod:`workbook.instructor.policies`) and the times each student handed in. Each row's
points are worked out again from what the grader saw (its status, its partial-credit
score and what it is worth), never from the points it already carries, so applying the
same policies twice gives what applying them once gives. In order:

1. **Partial credit** (when on): a ``wrong`` row earns ``score`` of its points, rounded to
   two decimals (what a score means per answer kind: see the instructors' guide).
2. **Lateness**: every row of a late student loses the penalty's percentage of the points
   it earned; after the cut-off every row scores 0. The student's latest hand-in time
   counts; an extension moves their deadline (and the cut-off with it).
3. **Overrides**, last: the points the file gives (or ``excused``: 0 of 0 points), whatever
   the grader and the late policy said.

A row a policy touches says so in its ``policy`` text ("late 2 days: -20 %", "override: 1
of 1 point (graded 0) - regraded by hand"); a row nothing touches is returned as it was,
the very same object, and so is a notebook none of whose rows changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from autograder.grading.discover import parse_time
from autograder.grading.model import Batch, ExerciseResult, NotebookResult, Status
from autograder.grading.report import points_text, points_value
from autograder.grading.totals import Handed
from workbook.instructor.policies import Lateness, Policies


@dataclass(frozen=True)
class Adjusted:
    """The batch with the policies applied, and per student what was applied and why
    (in words, for the instructor's report and ``grades.json``)."""

    batch: Batch
    notes: Mapping[str, tuple[str, ...]]


def _plural(count: float, word: str) -> str:
    return f"{points_text(count)} {word}{'' if count == 1 else 's'}"


def _when(moment: datetime | None) -> str:
    return moment.isoformat(timespec="minutes") if moment is not None else "an unknown time"


def lateness(policies: Policies, student: str, handed: Handed | None) -> Lateness | None:
    """How late ``student`` handed in under the policies; None without a late policy or
    without a time handed in."""
    if policies.late is None or handed is None:
        return None
    submitted = parse_time(handed.submitted_at) if handed.submitted_at else None
    if submitted is None:
        return None
    return policies.late.assess(submitted, policies.extension(student))


def judged_handed(policies: Policies, handed: Mapping[str, Handed]) -> dict[str, Handed]:
    """``handed`` with each ``late`` as the policies judge it (grace and extensions
    included), for ``totals.csv``'s late column; a student without a time handed in keeps
    what the LMS said, and without a late policy nothing changes."""
    judged: dict[str, Handed] = {}
    for student, info in handed.items():
        late = lateness(policies, student, info)
        judged[student] = info if late is None else replace(
            info, late=bool(late.days or late.after_cutoff))
    return judged


def _late_text(late: Lateness) -> str:
    if late.after_cutoff:
        return "handed in after the cut-off: 0 points"
    return f"late {_plural(late.days, 'day')}: -{points_text(late.percent)} %"


def _graded(row: ExerciseResult, partial: bool) -> tuple[float, str]:
    """The row's points as graded (with partial credit when on), and what partial credit
    did in words ("" when nothing)."""
    if row.status == "correct":
        return row.max_points, ""
    if partial and row.status == "wrong" and row.score > 0:
        earned = points_value(row.max_points * min(row.score, 1.0))
        return earned, (f"partial credit: {points_text(earned)} of "
                        f"{_plural(row.max_points, 'point')}")
    return 0, ""


def _row(row: ExerciseResult, student: str, policies: Policies,
         late: Lateness | None) -> ExerciseResult:
    override = policies.override(student, row.exercise_id)
    if override is not None and override.excused:
        points: float = 0
        status: Status = "excused"
        done = [f"override: excused - {override.reason}"]
    else:
        status = row.status
        points, said = _graded(row, policies.partial_credit)
        done = [said] if said else []
        if late is not None and (late.days or late.after_cutoff):
            points = points_value(points * (1 - late.percent / 100))
            done.append(_late_text(late))
        if override is not None:
            given = override.points or 0
            done.append(f"override: {points_text(given)} of {_plural(row.max_points, 'point')}"
                        f" (graded {points_text(points)}) - {override.reason}")
            points = given
    policy = "; ".join(done)
    if points_value(points) == row.points and status == row.status and policy == row.policy:
        return row
    return replace(row, points=points_value(points), status=status, policy=policy)


def _notebook(notebook: NotebookResult, policies: Policies,
              late: Lateness | None) -> NotebookResult:
    rows = tuple(_row(row, notebook.student, policies, late) for row in notebook.exercises)
    if all(new is old for new, old in zip(rows, notebook.exercises, strict=True)):
        return notebook
    return replace(notebook, exercises=rows)


def _student_notes(student: str, notebooks: list[NotebookResult], policies: Policies,
                   handed: Handed | None, late: Lateness | None) -> list[str]:
    notes: list[str] = []
    extension = policies.extensions.get(student)
    if extension is not None:
        notes.append(f"extension to {_when(extension.deadline)}"
                     + (f" ({extension.reason})" if extension.reason else ""))
    if late is not None and handed is not None and (late.days or late.after_cutoff):
        notes.append(f"{_late_text(late)} (handed in {_when(parse_time(handed.submitted_at))}"
                     f", due {_when(late.due)})")
    elif policies.late is not None and late is None and handed is not None and handed.late:
        notes.append("marked late, but no time handed in is known: no late penalty applied")
    rows = {row.exercise_id: row for nb in notebooks for row in nb.exercises}
    for row in rows.values():
        if row.policy.startswith("partial credit"):
            notes.append(f"{row.exercise_id}: {row.policy.split(';')[0]}")
    for exercise, override in sorted(policies.overrides_of(student).items()):
        if exercise not in rows:
            notes.append(f"override {exercise} not applied: no graded notebook of this "
                         f"student holds exercise {exercise}")
        elif override.excused:
            notes.append(f"override {exercise}: excused - {override.reason}")
        else:
            notes.append(f"override {exercise}: {_plural(override.points or 0, 'point')} - "
                         f"{override.reason}")
    return notes


def apply_policies(batch: Batch, policies: Policies,
                   handed: Mapping[str, Handed]) -> Adjusted:
    """The batch with ``policies`` applied, and what was applied to each student.

    ``handed`` holds each student's hand-in (``submitted_at`` as ISO 8601, as
    :class:`~autograder.grading.totals.Handed` carries it). A student named nowhere in the
    policies and on time (or without a late policy) keeps every row as it was, unless
    partial credit is on and gives them points for a partly right answer.
    """
    notebooks: list[NotebookResult] = []
    notes: dict[str, tuple[str, ...]] = {}
    students = dict.fromkeys([*(nb.student for nb in batch.notebooks),
                              *(who for who, _ in policies.overrides),
                              *policies.extensions])
    lates = {s: lateness(policies, s, handed.get(s)) for s in students}
    for notebook in batch.notebooks:
        notebooks.append(_notebook(notebook, policies, lates.get(notebook.student)))
    by_student: dict[str, list[NotebookResult]] = {}
    for notebook in notebooks:
        by_student.setdefault(notebook.student, []).append(notebook)
    for student in students:
        said = _student_notes(student, by_student.get(student, []), policies,
                              handed.get(student), lates.get(student))
        if said:
            notes[student] = tuple(said)
    if all(new is old for new, old in zip(notebooks, batch.notebooks, strict=True)):
        return Adjusted(batch, notes)
    return Adjusted(replace(batch, notebooks=tuple(notebooks)), notes)
