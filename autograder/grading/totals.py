"""``totals.csv``: one row per student, the form an LMS gradebook import takes.

    student,points,max_points,percent,late,submitted_at,notebooks,integrity
    s1234,61,67,91.0,no,2026-03-01T17:59:12+00:00,ch00_ring_allreduce.ipynb,

Moodle's "Import grades > CSV file" reads it as is: map ``student`` to the user's "ID
number" (or username) and ``points`` to the grade item (an LMS's own import format is
written by the caller, which knows the LMS). ``max_points`` is what the graded chapters
are worth, also for a student who handed in nothing (so a missing notebook counts as zero,
not as "excused").
``late`` is ``yes``/``no``, or empty when nothing said when it was handed in. Points are
whole unless a term's policies made them fractional (two decimals at most, no trailing
zeros); an exercise a term's override excuses leaves that student's ``max_points``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autograder.grading.model import Batch, NotebookResult
from autograder.grading.report import points_text, points_value
from autograder.grading.safe_text import for_csv

COLUMNS = ("student", "points", "max_points", "percent", "late", "submitted_at",
           "notebooks", "integrity")


@dataclass(frozen=True)
class Handed:
    """What the collection step knows about one student's hand-in."""

    submitted_at: str = ""
    late: bool | None = None


@dataclass(frozen=True)
class Total:
    student: str
    points: float
    max_points: int
    late: bool | None
    submitted_at: str
    notebooks: tuple[str, ...]
    integrity: str

    @property
    def percent(self) -> float:
        return round(100.0 * self.points / self.max_points, 1) if self.max_points else 0.0


def _late_word(late: bool | None) -> str:
    return "" if late is None else "yes" if late else "no"


def _excused(notebooks: Sequence[NotebookResult], chapter_points: Mapping[int, int]) -> int:
    """The points of the exercises a term excused this student from."""
    return sum(e.max_points for nb in notebooks if nb.chapter in chapter_points
               for e in nb.exercises if e.status == "excused")


def totals(batch: Batch, chapter_points: Mapping[int, int], students: Sequence[str],
           handed: Mapping[str, Handed], integrity: Mapping[str, str]) -> list[Total]:
    """A total per student: everyone in ``students`` (the roster) and everyone who handed
    something in. Each student is out of every chapter graded (``chapter_points``), less
    the exercises a term excused them from."""
    everyone = list(dict.fromkeys([*students, *(nb.student for nb in batch.notebooks
                                                if nb.student)]))
    most = sum(chapter_points.values())
    rows = []
    for student in everyone:
        mine = [nb for nb in batch.notebooks if nb.student == student]
        points = points_value(sum(nb.points for nb in mine if nb.chapter in chapter_points))
        info = handed.get(student, Handed())
        files = tuple(sorted({nb.path.rsplit("/", 1)[-1] for nb in mine if nb.path}))
        rows.append(Total(student, points, most - _excused(mine, chapter_points), info.late,
                          info.submitted_at, files, integrity.get(student, "")))
    return sorted(rows, key=lambda t: t.student)


def csv_text(rows: Sequence[Total]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for t in rows:
        writer.writerow([for_csv(v) for v in (
            t.student, points_text(t.points), t.max_points, t.percent, _late_word(t.late),
            t.submitted_at, " ".join(t.notebooks), t.integrity)])
    return buffer.getvalue()
