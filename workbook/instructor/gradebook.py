"""Writing a term's gradebook: every output of one grading run, swapped in whole.

``grades.csv``, ``grades.json``, ``totals.csv``, ``feedback/`` and, for the LMS the class
is on, its import file: ``canvas_import.csv`` (Canvas's Grades > Import, one column titled
after the assignment, filling the existing column of that title when the roster is
Canvas's gradebook export, scaled to its points possible) and ``moodle_grading_worksheet.csv``
(the assignment's own grading worksheet with ``Grade`` filled in, for Moodle's "Upload
grading worksheet"), the class report (``class_report.csv`` and ``.html``, from
:mod:`workbook.instructor.class_report`), and the feedback pages zipped for the LMS's bulk upload
(:mod:`workbook.instructor.handback`). Everything is written into a new folder beside
``--out`` and swapped in for it in one step (:mod:`autograder.grading.swap`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from autograder.grading.discover import Discovery
from autograder.grading.feedback import folder_names, write_feedback
from autograder.grading.model import Batch
from autograder.grading.private_files import make_private_dir, write_private
from autograder.grading.report import batch_json, write_csv
from autograder.grading.safe_text import for_json
from autograder.grading.swap import discard, new_folder, swap_in
from autograder.grading.totals import Total, csv_text, totals
from autograder.personal import fingerprint
from workbook.instructor import lms_canvas, lms_moodle
from workbook.instructor.adjust import judged_handed
from workbook.instructor.class_report import class_report
from workbook.instructor.class_report_html import write_class_report
from workbook.instructor.handback import write_lms_feedback
from workbook.instructor.release import chapter_records
from workbook.instructor.term import Term, handed
from workbook.outline import CHAPTERS

CANVAS_IMPORT = "canvas_import.csv"
MOODLE_WORKSHEET = "moodle_grading_worksheet.csv"


def _totals(term: Term, batch: Batch, discovery: Discovery,
            chapter_points: Mapping[int, int]) -> list[Total]:
    integrity: dict[str, str] = {}
    if term.personaliser is not None:
        students = {nb.student for nb in batch.notebooks}
        integrity = {s: term.personaliser.integrity(s) for s in students}
    integrity = {**integrity, **term.kept_integrity}   # kept students: as before
    roster = list(term.roster.ids) if term.roster is not None else []
    times = handed(discovery)
    if term.policies is not None:
        times = judged_handed(term.policies, times)   # grace and extensions counted
    return totals(batch, chapter_points, roster, times, integrity)


def _json_extra(term: Term, discovery: Discovery, rows: list[Total],
                batch: Batch) -> dict[str, Any]:
    folders = folder_names(nb.student for nb in batch.notebooks if nb.student)
    return dict(layout=discovery.layout,
                ignored_reasons=dict(discovery.reasons),
                personal_numbers=(dict(secret_fingerprint=fingerprint(term.secret))
                                  if term.secret is not None else None),
                students=[dict(student=t.student, points=t.points, max_points=t.max_points,
                               late=t.late, submitted_at=t.submitted_at,
                               integrity=t.integrity,
                               policy=list(term.policy_notes.get(t.student, ())),
                               feedback_folder=folders.get(t.student, "")) for t in rows])


def write_gradebook(term: Term, batch: Batch, discovery: Discovery, out: Path,
                    chapter_points: Mapping[int, int],
                    before_swap: Callable[[Path], None] | None = None) -> list[str]:
    """Write every output into a new folder and swap it in for ``out``; returns the
    feedback pages that could not be written."""
    rows = _totals(term, batch, discovery, chapter_points)
    folder = new_folder(out)
    try:
        make_private_dir(folder)
        write_csv(batch, folder / "grades.csv")
        tree = for_json(batch_json(batch) | _json_extra(term, discovery, rows, batch))
        write_private(folder / "grades.json",
                      json.dumps(tree, indent=2, ensure_ascii=False) + "\n")
        write_private(folder / "totals.csv", csv_text(rows))
        _lms_files(term, rows, folder)
        failed: list[str] = []
        write_feedback(batch.notebooks, folder / "feedback", failed)
        write_lms_feedback(batch, discovery, term.lms_students, folder)
        _class_report(term, batch, folder, failed)
        if before_swap is not None:
            before_swap(folder)
        swap_in(folder, out)
    except BaseException:
        discard(folder)
        raise
    return failed


def _class_report(term: Term, batch: Batch, folder: Path, failed: list[str]) -> None:
    """The class at a glance; a report that cannot be written costs only itself."""
    chapters = term.assignment.chapters if term.assignment is not None else ()
    ids = [r.id for n in chapters for r in chapter_records(CHAPTERS[n])]
    try:
        write_class_report(class_report(batch, term.roster.ids if term.roster else (), ids),
                           folder)
    except Exception as error:  # noqa: BLE001 - never lose the gradebook for the report
        failed.append(f"the class report could not be written ({type(error).__name__}: "
                      f"{error})")


def canvas_column(term: Term) -> tuple[str, float | None]:
    """The Canvas import's column title, and its points possible when the roster (Canvas's
    gradebook export) already has a column of the assignment's title."""
    title = term.assignment.title if term.assignment is not None else "Workbook"
    columns = dict(term.roster.columns) if term.roster is not None else {}
    for column, possible in columns.items():
        if column == title or column.rsplit(" (", 1)[0] == title:
            return column, possible
    return title, None


def _lms_files(term: Term, rows: list[Total], folder: Path) -> None:
    if term.roster is None or not rows:
        return
    most = max(t.max_points for t in rows)
    # each student's share of their own maximum (an excused exercise lowers it), in the
    # LMS's points: the assignment's full points possible
    share = {t.student: t.points / t.max_points if t.max_points else 0.0 for t in rows}
    canvas_ids = {student: canvas for canvas, student in term.roster.by_lms("canvas_id").items()}
    if canvas_ids:
        column, possible = canvas_column(term)
        write_private(folder / CANVAS_IMPORT, lms_canvas.import_text(
            [(t.student, share[t.student] * (possible or most)) for t in rows], canvas_ids,
            term.roster.names(), column, possible or most))
    if term.worksheet is not None:
        write_private(folder / MOODLE_WORKSHEET, lms_moodle.filled_worksheet(
            term.worksheet, {s: value * most for s, value in share.items()}, most))
