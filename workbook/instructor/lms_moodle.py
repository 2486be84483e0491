"""Moodle: how "Download all submissions" names each upload, and the grading worksheet.

From Moodle's source (``mod/assign/classes/downloader.php`` since 4.1, the same names in
``mod/assign/locallib.php`` before), each student's prefix is their full name with every
``_`` turned into a space, then ``_`` and their *participant id*, through
``clean_filename``. A file submission is then written

    <Full Name>_<participant id>_assignsubmission_file/<file>       4.1 and later, in folders
    <Full Name>_<participant id>_assignsubmission_file_/<file>      3.1 to 4.0, in folders
    <Full Name>_<participant id>_assignsubmission_file_<file>       without folders

(other plugins, such as ``assignsubmission_onlinetext``, hold no notebook). Because the
name never holds ``_``, the first ``_`` ends it, and a file the student named like another
student's upload stays theirs. With blind marking the name is ``Participant``. A team
submission is named after its group and is not supported.

The participant id is allocated *per assignment* (table ``assign_user_mapping``), so one
roster id per student cannot map two assignments. The grading worksheet of the same
assignment (Assignment > Submissions > "Download grading worksheet", the offline-grading
feedback plugin) pairs every participant id (``Identifier``: "Participant 877") with the
site's identity fields (``Email address``, ``ID number``, ``Username``) and holds
``Last modified (submission)``, the time Moodle recorded for the upload. Given with
``--lms-worksheet``, it maps the download to the roster through an identity field both
share, and the same worksheet, with ``Grade`` filled in, is written back for Moodle's
"Upload grading worksheet".
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from autograder.grading.discover import Claim
from autograder.grading.safe_text import for_csv
from workbook.instructor.roster import MAX_ROSTER_BYTES, Roster, table

NAME = "moodle"
_ENTRY = re.compile(r"(?P<name>[^_]*)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z0-9]+)"
                    r"(?P<rest>(?:_.*)?)", re.DOTALL)
IDENTIFIER, GRADE, MAXIMUM = "Identifier", "Grade", "Maximum grade"
FULL_NAME = "Full name"
SUBMITTED = "Last modified (submission)"
IDENTITY = (("idnumber", "ID number"), ("email", "Email address"), ("username", "Username"))
_MOODLE_TIME = "%A, %d %B %Y, %I:%M %p"     # Moodle's strftimedatetime, in English


@dataclass(frozen=True)
class MoodleLayout:
    name: str = NAME

    def claim(self, entry: str, is_dir: bool, known: Collection[str]) -> Claim | None:
        named = _ENTRY.fullmatch(entry)
        if named is None:
            return None
        user, plugin, rest = named["user"], named["plugin"], named["rest"]
        if plugin != "file":
            return Claim(user, ignore=f"a Moodle {plugin} submission, not a file")
        if is_dir:
            if rest not in ("", "_"):
                return Claim(user, problem="a folder named like a Moodle file, not a "
                             "submission folder")
            return Claim(user, folder=True)
        if len(rest) < 2:
            return Claim(user, problem="a Moodle file name without the file's own name")
        return Claim(user)

    def detect(self, names: Sequence[str]) -> bool:
        return any(_ENTRY.fullmatch(name) for name in names)


LAYOUT = MoodleLayout()


class WorksheetError(ValueError):
    """The grading worksheet cannot be used; the message says why."""


@dataclass(frozen=True)
class Worksheet:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    students: Mapping[str, str]        # participant id -> roster id
    submitted: Mapping[str, str]       # roster id -> ISO time Moodle recorded, when read
    field: str                         # the identity field that matched

    def column(self, name: str) -> int:
        return self.header.index(name) if name in self.header else -1


def participant(identifier: str) -> str:
    """``Participant 877`` (any language) -> ``877``; "" when no id ends it."""
    found = re.search(r"(\d+)\s*$", identifier)
    return found.group(1) if found else ""


def _moodle_time(text: str, zone: ZoneInfo) -> str:
    try:
        moment = datetime.strptime(text.strip(), _MOODLE_TIME).replace(tzinfo=zone)
    except ValueError:
        return ""
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def read_worksheet(path: Path, roster: Roster, zone: str = "UTC") -> Worksheet:
    """The worksheet at ``path`` mapped onto ``roster``; WorksheetError when it cannot be."""
    try:
        data = path.read_bytes()[: MAX_ROSTER_BYTES + 1]
        header, rows = table(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise WorksheetError(f"cannot read the grading worksheet {path}: {error}") from None
    if IDENTIFIER not in header:
        raise WorksheetError(f"{path} is not a Moodle grading worksheet: its header has no "
                             f"'{IDENTIFIER}' column (download it with Moodle's interface in "
                             "English: Submissions > 'Download grading worksheet')")
    shared = [(field, title) for field, title in IDENTITY
              if title in header and roster.by_lms(field)]
    if not shared:
        raise WorksheetError(
            f"{path} and the roster share no identity field: the worksheet has "
            f"{', '.join(t for _, t in IDENTITY if t in header) or 'none of them'}, the "
            "roster needs the same ('idnumber', 'email' or 'username'); read the roster "
            "from Moodle's participants download, or add the column. With blind marking "
            "the worksheet hides them: reveal student identities first")
    field, title = shared[0]
    known, index, when = roster.by_lms(field), header.index(title), header.index(
        SUBMITTED) if SUBMITTED in header else -1
    students: dict[str, str] = {}
    submitted: dict[str, str] = {}
    tz = ZoneInfo(zone)
    for row in rows:
        if not row or index >= len(row):
            continue
        pid = participant(row[header.index(IDENTIFIER)])
        value = row[index].strip()
        student = known.get(value.lower() if field == "email" else value, "")
        if pid and student:
            students[pid] = student
            if 0 <= when < len(row) and _moodle_time(row[when], tz):
                submitted[student] = _moodle_time(row[when], tz)
    return Worksheet(tuple(header), tuple(tuple(r) for r in rows), students, submitted, field)


def filled_worksheet(sheet: Worksheet, points: Mapping[str, float],
                     max_points: float) -> str:
    """The worksheet with each mapped student's ``Grade`` filled in, scaled to the row's
    ``Maximum grade`` (the assignment's maximum in Moodle) when the worksheet has one."""
    grade, most, ident = sheet.column(GRADE), sheet.column(MAXIMUM), sheet.column(IDENTIFIER)
    if grade < 0:
        raise WorksheetError("the grading worksheet has no 'Grade' column; the assignment "
                             "must be graded by points in Moodle")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(sheet.header)
    for row in sheet.rows:
        cells = list(row) + [""] * (len(sheet.header) - len(row))
        student = sheet.students.get(participant(cells[ident]), "")
        if student in points:
            scale = 1.0
            if most >= 0 and max_points:
                try:
                    scale = float(cells[most].replace(",", ".")) / max_points
                except ValueError:
                    scale = 1.0
            cells[grade] = f"{points[student] * scale:.2f}"
        writer.writerow([for_csv(cell) for cell in cells])
    return buffer.getvalue()
