"""What ``workbook grade`` adds around the batch grader for a term: the class, the hand-in.

* **Collect**: the roster (``--roster``) maps LMS ids to student ids; the layout
  (``--layout``, else detected) says how SUBMISSIONS is organised; ``--due`` turns the times
  handed in into ``late``.
* **Per-student numbers**: with ``--secret-file`` each notebook is graded against the
  numbers of the student it was handed in under (:mod:`workbook.grading_personal`).
* **Hand back**: ``grades.csv``, ``grades.json``, ``totals.csv`` (``totals_canvas.csv``
  too when the roster names Canvas ids) and ``feedback/`` are written into a new folder and
  swapped in for ``--out`` in one step (:mod:`autograder.grading.swap`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from autograder.grading.discover import Discovery, Layout, Options, discover, parse_time
from autograder.grading.feedback import folder_names, write_feedback
from autograder.grading.model import Batch
from autograder.grading.private_files import make_private_dir, write_private
from autograder.grading.report import batch_json, write_csv
from autograder.grading.safe_text import for_json
from autograder.grading.swap import discard, new_folder, swap_in
from autograder.grading.totals import Handed, Total, canvas_text, csv_text, totals
from autograder.personal import fingerprint, read_secret
from workbook.grading_personal import Personaliser, PrintedNumbers
from workbook.instructor.roster import Roster
from workbook.instructor.roster_files import read_roster


@dataclass
class Term:
    """The class and the hand-in, as the command line gave them."""

    roster: Roster | None = None
    secret: bytes | None = None
    layout: Layout | None = None
    due: datetime | None = None
    personaliser: Personaliser | None = field(default=None, repr=False)
    printed: PrintedNumbers = field(default_factory=PrintedNumbers, repr=False)

    @classmethod
    def from_arguments(cls, roster: str | None, secret_file: str | None, layout: str | None,
                       due: str | None) -> Term:
        """Raises ValueError (with what was expected) for anything unusable."""
        moment = None
        if due is not None:
            moment = parse_time(due)
            if moment is None:
                raise ValueError(f"--due must be a date and time such as 2026-03-01T18:00 "
                                 f"(UTC, or with an offset such as +01:00), got {due!r}")
        return cls(read_roster(Path(roster)) if roster else None,
                   read_secret(Path(secret_file)) if secret_file else None,
                   layout if layout in ("folders", "canvas", "moodle") else None,  # type: ignore[arg-type]
                   moment)

    def options(self) -> Options:
        students: dict[str, str] = {}
        if self.roster is not None:
            students = {**self.roster.by_lms("canvas_id"), **self.roster.by_lms("moodle_id")}
        return Options(self.layout, students, self.due)

    def discover(self, folder: Path) -> Discovery:
        discovery = discover(folder, self.options())
        if self.secret is not None:
            ids = [f.student for f in discovery.found] + list(self.roster.ids if self.roster
                                                              else ())
            self.personaliser = Personaliser.for_class(self.secret, ids)
        return discovery

    def finish(self, batch: Batch) -> Batch:
        return self.personaliser.flag(batch) if self.personaliser is not None else batch

    def personalise(self) -> Personaliser | PrintedNumbers:
        """The pipeline's personalise step: each student's numbers, or the printed ones."""
        return self.personaliser if self.personaliser is not None else self.printed

    def warnings(self) -> list[str]:
        """What the instructor should hear about the run as a whole."""
        if self.printed.seen:
            return [f"{self.printed.seen} notebook(s) are in students' own numbers but "
                    "were graded in the printed ones: grade them with --secret-file"]
        seen = self.personaliser.seen if self.personaliser is not None else {}
        if seen.get("foreign", 0) and not seen.get("own", 0):
            return [f"none of the {seen['foreign']} personalised notebook(s) carries the "
                    "numbers this secret gives its student: is --secret-file the secret the "
                    "notebooks were released with? (every such notebook was graded in the "
                    "numbers of this secret)"]
        return []


def _handed(discovery: Discovery) -> dict[str, Handed]:
    """Per student: the latest time handed in, and late if any notebook was."""
    out: dict[str, Handed] = {}
    for found in discovery.found:
        before = out.get(found.student, Handed())
        lates = [v for v in (before.late, found.late) if v is not None]
        out[found.student] = Handed(max(before.submitted_at, found.submitted_at),
                                    any(lates) if lates else None)
    return out


def _totals(term: Term, batch: Batch, discovery: Discovery,
            chapter_points: Mapping[int, int]) -> list[Total]:
    integrity: dict[str, str] = {}
    if term.personaliser is not None:
        students = {nb.student for nb in batch.notebooks}
        integrity = {s: term.personaliser.integrity(s) for s in students}
    roster = list(term.roster.ids) if term.roster is not None else []
    return totals(batch, chapter_points, roster, _handed(discovery), integrity)


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
                               feedback_folder=folders.get(t.student, "")) for t in rows])


def write_gradebook(term: Term, batch: Batch, discovery: Discovery, out: Path,
                    chapter_points: Mapping[int, int]) -> list[str]:
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
        canvas_ids = term.roster.by_lms("canvas_id") if term.roster is not None else {}
        if canvas_ids:
            inverse = {student: canvas for canvas, student in canvas_ids.items()}
            names = {s.id: s.name for s in term.roster.students} if term.roster else {}
            write_private(folder / "totals_canvas.csv",
                          canvas_text(rows, inverse, "Distributed Training Workbook", names))
        failed: list[str] = []
        write_feedback(batch.notebooks, folder / "feedback", failed)
        swap_in(folder, out)
    except BaseException:
        discard(folder)
        raise
    return failed
