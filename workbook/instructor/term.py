"""What ``workbook grade`` adds around the batch grader for a term: the class, the hand-in.

* **Collect**: the roster (``--roster``, the workbook's CSV or an LMS's own export) says
  who is in the class; the layout (``--layout``, else detected) says how SUBMISSIONS is
  organised, and each LMS layout maps its own ids to roster ids (Canvas user ids from the
  roster; Moodle participant ids, allocated per assignment, from that assignment's grading
  worksheet, ``--lms-worksheet``). With a roster, an upload no roster entry vouches for is
  an error row, never a new student.
* **The assignment** (``--chapters``/``--release``, ``--assignment``): every student is out
  of its chapters' points; another chapter's notebook is an error row
  (:mod:`workbook.instructor.assignment`). An LMS download must name it.
* **Per-student numbers**: with ``--secret-file`` each notebook is graded against the
  numbers of the student it was handed in under (:mod:`workbook.instructor.personal_grading`).
* **Hand back**: :mod:`workbook.instructor.gradebook` writes the outputs.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from autograder.grading.discover import (
    FOLDERS,
    Discovery,
    Found,
    LmsLayout,
    Options,
    detect,
    discover,
    parse_time,
)
from autograder.grading.model import Batch
from autograder.grading.totals import Handed
from autograder.personal import read_secret
from workbook.instructor import lms_canvas, lms_moodle
from workbook.instructor.adjust import apply_policies
from workbook.instructor.assignment import Assignment, bind
from workbook.instructor.assignment import from_arguments as assignment_from
from workbook.instructor.personal_grading import Personaliser, PrintedNumbers
from workbook.instructor.policies import Policies, PolicyError, read_policies
from workbook.instructor.roster import Roster
from workbook.instructor.roster_files import read_roster

LAYOUTS: dict[str, LmsLayout] = {lms_moodle.NAME: lms_moodle.LAYOUT,
                                 lms_canvas.NAME: lms_canvas.LAYOUT}
LAYOUT_NAMES = (FOLDERS, *LAYOUTS)


@dataclass(frozen=True)
class TermArguments:
    """The command line's words about the term, as given (None: not given)."""

    roster: str | None = None
    secret_file: str | None = None
    layout: str | None = None
    due: str | None = None
    chapters: str | None = None
    assignment: str | None = None
    release: str | None = None
    worksheet: str | None = None
    timezone: str = "UTC"
    policies: str | None = None
    only: str | None = None          # "s1,s2": regrade these students, keep the others
    handed_in: str | None = None     # CSV student,submitted_at from the collection step


@dataclass
class Term:
    """The class and the hand-in, as the command line gave them."""

    roster: Roster | None = None
    secret: bytes | None = None
    layout: str | None = None
    due: datetime | None = None
    assignment: Assignment | None = None
    worksheet: lms_moodle.Worksheet | None = None
    notes: list[str] = field(default_factory=list)
    policies: Policies | None = None
    only: tuple[str, ...] = ()
    policy_notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    kept_integrity: dict[str, str] = field(default_factory=dict)
    lms_students: dict[str, str] = field(default_factory=dict)   # LMS id -> roster id
    times: dict[str, str] = field(default_factory=dict)   # student -> ISO time handed in
    personaliser: Personaliser | None = field(default=None, repr=False)
    printed: PrintedNumbers = field(default_factory=PrintedNumbers, repr=False)

    @classmethod
    def from_arguments(cls, args: TermArguments) -> Term:
        """Raises ValueError (with what was expected) for anything unusable."""
        moment = None
        if args.due is not None:
            moment = parse_time(args.due)
            if moment is None:
                raise ValueError(f"--due must be a date and time such as 2026-03-01T18:00 "
                                 f"(UTC, or with an offset such as +01:00), got {args.due!r}")
        if args.layout is not None and args.layout not in LAYOUT_NAMES:
            raise ValueError(f"--layout must be one of {', '.join(LAYOUT_NAMES)}")
        roster = read_roster(Path(args.roster)) if args.roster else None
        worksheet = None
        if args.worksheet is not None:
            if roster is None:
                raise ValueError("--lms-worksheet maps Moodle's participant ids to the "
                                 "roster: give the roster too (--roster)")
            try:
                worksheet = lms_moodle.read_worksheet(Path(args.worksheet), roster,
                                                      args.timezone)
            except Exception as error:  # a bad time zone name too
                raise ValueError(str(error)) from None
        policies = None
        if args.policies is not None:
            try:
                policies = read_policies(Path(args.policies), roster.ids if roster else None)
            except PolicyError as error:
                raise ValueError(str(error)) from None
        only = tuple(s.strip() for s in (args.only or "").split(",") if s.strip())
        if args.only is not None and not only:
            raise ValueError("--only names the students to regrade, separated by commas")
        return cls(roster, read_secret(Path(args.secret_file)) if args.secret_file else None,
                   args.layout, moment,
                   assignment_from(args.chapters, args.assignment, args.release), worksheet,
                   policies=policies, only=only,
                   times=read_times(Path(args.handed_in)) if args.handed_in else {})

    def _students(self, layout: str) -> dict[str, str]:
        """The chosen LMS's ids -> roster ids; ValueError when the roster cannot say."""
        if self.roster is None or layout == FOLDERS:
            return {}
        if layout == lms_canvas.NAME:
            found = self.roster.by_lms("canvas_id")
            if not found:
                raise ValueError("this is a Canvas download, and the roster has no Canvas "
                                 "ids: read the roster from Canvas's gradebook export "
                                 "(Grades > Export), or add a canvas_id column")
            return found
        if self.worksheet is not None:
            return dict(self.worksheet.students)
        found = self.roster.by_lms("moodle_id")
        if not found:
            raise ValueError(
                "this is a Moodle download: Moodle names each upload by a participant id it "
                "allocates per assignment. Give this assignment's grading worksheet "
                "(Submissions > 'Download grading worksheet') with --lms-worksheet, and a "
                "roster with the same identity field (email, idnumber or username)")
        self.notes.append("participant ids were taken from the roster's moodle_id column; "
                          "Moodle allocates them per assignment, so they fit one "
                          "assignment only (use --lms-worksheet for each assignment)")
        return found

    def discover(self, folder: Path) -> Discovery:
        """The hand-in; ValueError when the layout needs what the command line lacks."""
        layout = self.layout or detect(folder, LAYOUTS)
        if layout != FOLDERS and self.assignment is None:
            raise ValueError(f"this is a {layout} download, which holds one assignment: say "
                             "which chapters it holds with --chapters (e.g. --chapters 0), "
                             "or --release FOLDER")
        self.lms_students = self._students(layout)
        options = Options(layout, self.lms_students, self.due, LAYOUTS,
                          roster_only=self.roster is not None and layout != FOLDERS)
        discovery = discover(folder, options)
        if self.worksheet is not None and layout == lms_moodle.NAME:
            discovery.found[:] = [self._timed(f, self.worksheet.submitted)
                                  for f in discovery.found]
        if self.times:
            discovery.found[:] = [self._timed(f, self.times) for f in discovery.found]
        if self.secret is not None:
            ids = [f.student for f in discovery.found] + list(self.roster.ids if self.roster
                                                              else ())
            self.personaliser = Personaliser.for_class(self.secret, ids)
        return discovery

    def _timed(self, found: Found, times: Mapping[str, str]) -> Found:
        """``found`` with the time the instructor's side recorded for its student."""
        when = times.get(found.student, "")
        if not when:
            return found
        moment = parse_time(when)
        late = None if self.due is None or moment is None else moment > self.due
        return dataclasses.replace(found, submitted_at=when, late=late)

    def finish(self, batch: Batch, discovery: Discovery) -> Batch:
        """The graded batch as the term has it: copies flagged, bound to the assignment,
        the policies applied (to the fresh batch, so a regrade applies them afresh)."""
        if self.personaliser is not None:
            batch = self.personaliser.flag(batch)
        if self.assignment is not None:
            batch = bind(batch, self.assignment)
        if self.policies is not None:
            adjusted = apply_policies(batch, self.policies, handed(discovery))
            batch, self.policy_notes = adjusted.batch, adjusted.notes
        return batch

    def personalise(self) -> Personaliser | PrintedNumbers:
        """The pipeline's personalise step: each student's numbers, or the printed ones."""
        return self.personaliser if self.personaliser is not None else self.printed

    def flagged(self) -> list[str]:
        """The students this run found integrity evidence against, in order."""
        if self.personaliser is None:
            return []
        students = {s for (s, _) in self.personaliser.carried} | {
            w.student for w in self.personaliser.weighed if w.strong}
        return sorted(students)

    def warnings(self) -> list[str]:
        """What the instructor should hear about the run as a whole."""
        said = list(self.notes)
        if self.printed.seen:
            said.append(f"{self.printed.seen} notebook(s) are in students' own numbers but "
                        "were graded in the printed ones: grade them with --secret-file")
        seen = self.personaliser.seen if self.personaliser is not None else {}
        if seen.get("foreign", 0) and not seen.get("own", 0):
            said.append(f"none of the {seen['foreign']} personalised notebook(s) carries the "
                        "numbers this secret gives its student: is --secret-file the secret "
                        "the notebooks were released with? (every such notebook was graded "
                        "in the numbers of this secret)")
        return said


def handed(discovery: Discovery) -> dict[str, Handed]:
    """Per student: the latest time handed in, and late if any notebook was."""
    out: dict[str, Handed] = {}
    for found in discovery.found:
        before = out.get(found.student, Handed())
        lates = [v for v in (before.late, found.late) if v is not None]
        out[found.student] = Handed(max(before.submitted_at, found.submitted_at),
                                    any(lates) if lates else None)
    return out


def read_times(path: Path) -> dict[str, str]:
    """``student,submitted_at`` rows (ISO 8601, UTC unless an offset is given) -> student
    -> ISO time; ValueError naming the line for a time that cannot be read."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read --handed-in {path}: {error}") from None
    out: dict[str, str] = {}
    for line, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not row[0].strip() or (line == 1 and row[0].strip() == "student"):
            continue
        moment = parse_time(row[1]) if len(row) > 1 else None
        if moment is None:
            raise ValueError(f"--handed-in {path}, line {line}: expected student,time with an "
                             f"ISO 8601 time (2026-03-01T17:59:12Z), got {','.join(row)!r}")
        out[row[0].strip()] = moment.isoformat(timespec="seconds")
    return out
