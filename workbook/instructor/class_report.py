"""The class at a glance: per exercise, how many students tried it, got it right, and which
known mistakes they made; per student, the total that the score distribution is drawn from.

:func:`class_report` is a pure function of the graded batch and the class list. The class
is the roster's students when there is a roster (a student who handed in nothing counts
as not attempted, with 0 points), else every student the batch holds; a batch student who
is not on the roster is listed in :attr:`ClassReport.unlisted` and counted nowhere.

For each exercise:

* ``students``: the class, less those the term's policies excused from this exercise;
* ``attempted``: a row whose status is not ``unanswered`` (an answer that could not be
  graded, ``error`` or ``integrity``, was still attempted); no row at all is not attempted;
* ``correct``, ``wrong`` and ``failed`` (``error`` or ``integrity``) count statuses;
* ``median_points`` and ``mean_points`` are over the whole class, 0 for no row, points
  as the gradebook has them after the term's policies;
* ``share_correct`` is ``correct / students``;
* ``misconceptions``: for each known mistake of the exercise record (its
  :attr:`~autograder.kinds.base.Misconception.label`), the number of students whose wrong
  answer it explains. An answer two mistakes explain counts for both; ``unexplained`` is
  the number of wrong answers no known mistake explains.

A student with several rows for one exercise (two files of the same chapter) is counted
once, by the row with the most points. :func:`write_csv` writes ``class_report.csv``; the
HTML page with figures is :mod:`workbook.instructor.class_report_html`.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.model import Batch, ExerciseResult
from autograder.grading.private_files import write_private
from autograder.grading.safe_text import for_csv
from workbook.records import lookup

CSV_NAME = "class_report.csv"
HTML_NAME = "class_report.html"
CSV_COLUMNS = ("exercise_id", "title", "category", "max_points", "students", "attempted",
               "correct", "wrong", "failed", "median_points", "mean_points", "share_correct",
               "unexplained", "misconceptions")
BINS = 10  # the score distribution: tenths of the maximum, the last one closed (100 %)


@dataclass(frozen=True)
class ExerciseStats:
    """One exercise across the class (see the module's docstring for each number)."""

    exercise_id: str
    title: str
    category: str
    max_points: int
    students: int
    attempted: int
    correct: int
    wrong: int
    failed: int
    median_points: float
    mean_points: float
    misconceptions: tuple[tuple[str, int], ...]   # (label, students), the record's order
    unexplained: int

    @property
    def share_correct(self) -> float:
        return self.correct / self.students if self.students else 0.0


@dataclass(frozen=True)
class StudentTotal:
    """One student's points over the report's exercises (excused ones left out)."""

    student: str
    points: float
    max_points: int

    @property
    def share(self) -> float | None:
        """Points over the maximum, 0 to 1; None when every exercise was excused."""
        return self.points / self.max_points if self.max_points else None


@dataclass(frozen=True)
class ClassReport:
    exercises: tuple[ExerciseStats, ...]
    totals: tuple[StudentTotal, ...]            # the class, in roster (or batch) order
    unlisted: tuple[str, ...] = ()              # in the batch, not on the roster

    @property
    def students(self) -> int:
        return len(self.totals)

    def score_bins(self) -> tuple[int, ...]:
        """How many students scored in each tenth of the maximum: [0, 10 %), ...,
        [90 %, 100 %]. Students with nothing to score (all excused) are left out."""
        counts = [0] * BINS
        for total in self.totals:
            if total.share is not None:
                counts[min(BINS - 1, int(total.share * BINS + 1e-9))] += 1
        return tuple(counts)


def _id_key(exercise_id: str) -> tuple[tuple[int, int | str], ...]:
    """Exercise ids in the workbook's order: "5.2" before "5.10", numbers before words."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in re.split(r"[._]", exercise_id))


def _known_labels(exercise_id: str) -> tuple[str, ...]:
    """The labels of the exercise record's misconceptions; none for an unknown id."""
    try:
        record = lookup(exercise_id)
    except (KeyError, ValueError, IndexError):
        return ()
    return tuple(dict.fromkeys(m.label for m in record.misconceptions))


def _best(rows: Iterable[ExerciseResult]) -> ExerciseResult:
    return max(rows, key=lambda r: (r.points, r.status == "correct", r.status != "unanswered"))


def _class(batch: Batch, roster: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The students counted, and those in the batch but not on the roster."""
    in_batch = tuple(dict.fromkeys(nb.student for nb in batch.notebooks))
    if not roster:
        return in_batch, ()
    listed = tuple(dict.fromkeys(roster))
    known = set(listed)
    return listed, tuple(s for s in in_batch if s not in known)


def _stats(exercise_id: str, rows: dict[str, ExerciseResult], students: Sequence[str],
           labels: tuple[str, ...], max_points: int, title: str, category: str,
           ) -> ExerciseStats:
    counted = [s for s in students if not (s in rows and rows[s].status == "excused")]
    mine = [rows[s] for s in counted if s in rows]
    points = [float(rows[s].points) if s in rows else 0.0 for s in counted]
    hits: dict[str, int] = dict.fromkeys(labels, 0)
    for row in mine:
        if row.status == "wrong":
            for label in dict.fromkeys(row.misconceptions):
                hits[label] = hits.get(label, 0) + 1
    return ExerciseStats(
        exercise_id=exercise_id, title=title, category=category, max_points=max_points,
        students=len(counted),
        attempted=sum(1 for r in mine if r.status != "unanswered"),
        correct=sum(1 for r in mine if r.status == "correct"),
        wrong=sum(1 for r in mine if r.status == "wrong"),
        failed=sum(1 for r in mine if r.status in ("error", "integrity")),
        median_points=round(statistics.median(points), 2) if points else 0.0,
        mean_points=round(statistics.fmean(points), 2) if points else 0.0,
        misconceptions=tuple(hits.items()),
        unexplained=sum(1 for r in mine if r.status == "wrong" and not r.misconceptions))


def class_report(batch: Batch, roster: Sequence[str] = (),
                 exercise_ids: Sequence[str] = ()) -> ClassReport:
    """The class report of a graded ``batch``.

    ``roster`` lists the class's student ids (empty: the students in the batch).
    ``exercise_ids`` are the assignment's exercises in order (empty: every exercise the
    batch has a row for, in the workbook's order); an exercise nobody handed in still
    gets its line, with the record's points and title.
    """
    students, unlisted = _class(batch, roster)
    counted = set(students)
    rows: dict[str, dict[str, list[ExerciseResult]]] = {}
    for notebook in batch.notebooks:
        if notebook.student not in counted:
            continue
        for row in notebook.exercises:
            if row.exercise_id:
                rows.setdefault(row.exercise_id, {}).setdefault(
                    notebook.student, []).append(row)
    ids = tuple(dict.fromkeys(exercise_ids)) or tuple(sorted(rows, key=_id_key))
    stats: list[ExerciseStats] = []
    best: dict[str, dict[str, ExerciseResult]] = {}
    for exercise_id in ids:
        best[exercise_id] = {s: _best(r) for s, r in rows.get(exercise_id, {}).items()}
        stats.append(_stats(exercise_id, best[exercise_id], students,
                            _known_labels(exercise_id), *_about(exercise_id, best)))
    totals = tuple(_total(student, best, stats) for student in students)
    return ClassReport(tuple(stats), totals, unlisted)


def _about(exercise_id: str, best: dict[str, dict[str, ExerciseResult]],
           ) -> tuple[int, str, str]:
    """The exercise's points, title and category: from a graded row, else its record."""
    rows = sorted(best[exercise_id].values(), key=lambda r: r.status == "excused")
    if rows:
        return max(r.max_points for r in rows), rows[0].title, rows[0].category
    try:
        record = lookup(exercise_id)
    except (KeyError, ValueError, IndexError):
        return 0, "", ""
    return record.points, record.title, record.category


def _total(student: str, best: dict[str, dict[str, ExerciseResult]],
           stats: Sequence[ExerciseStats]) -> StudentTotal:
    points, most = 0.0, 0
    for exercise in stats:
        row = best[exercise.exercise_id].get(student)
        if row is not None and row.status == "excused":
            continue
        most += exercise.max_points
        points += float(row.points) if row is not None else 0.0
    return StudentTotal(student, round(points, 2), most)


# --- class_report.csv ----------------------------------------------------------------------

def number(value: float) -> int | float:
    """A number as the gradebook writes one: whole when it is, else two decimals at most."""
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def misconception_cell(exercise: ExerciseStats) -> str:
    """The known mistakes that were made, most often first: "label: n; label: n"."""
    made = sorted((pair for pair in exercise.misconceptions if pair[1]),
                  key=lambda pair: -pair[1])
    return "; ".join(f"{label}: {count}" for label, count in made)


def csv_text(report: ClassReport) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for e in report.exercises:
        writer.writerow([for_csv(cell) for cell in (
            e.exercise_id, e.title, e.category, e.max_points, e.students, e.attempted,
            e.correct, e.wrong, e.failed, number(e.median_points), number(e.mean_points),
            round(e.share_correct, 4), e.unexplained, misconception_cell(e))])
    return buffer.getvalue()


def write_csv(report: ClassReport, path: Path) -> None:
    write_private(path, csv_text(report))
