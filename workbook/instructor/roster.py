"""The class list: ``ROSTER.csv`` with a header row and one student per row.

    id,name,canvas_id,moodle_id
    s1234,Ada Lovelace,50113,877
    s1235,Alan Turing,50114,878

``id`` (required) is the student's id in your gradebook: it names their personalised
notebook, their feedback folder and their row of ``totals.csv``, and (with the course
secret) chooses their numbers. ``name`` is shown on their notebook. ``canvas_id`` is the
Canvas user id that Canvas writes into the file names of "Download Submissions"
(``name_userid_submissionid_file.ipynb``); ``moodle_id`` is the participant id Moodle
writes into the names of "Download all submissions" (``Full Name_877_assignsubmission_file_``).
Either is needed only to grade that LMS's export; without them a file is filed under the
id in its name.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

MAX_ROSTER_BYTES = 8_000_000
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
COLUMNS = ("id", "name", "canvas_id", "moodle_id")


class RosterError(ValueError):
    """The roster file cannot be used; the message says which line and why."""


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""
    canvas_id: str = ""
    moodle_id: str = ""


@dataclass(frozen=True)
class Roster:
    students: tuple[Student, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.students)

    def by_lms(self, column: str) -> dict[str, str]:
        """LMS id -> roster id, for ``canvas_id`` or ``moodle_id``."""
        return {getattr(s, column): s.id for s in self.students if getattr(s, column)}


def _row(line: int, row: dict[str, str | None]) -> Student:
    values = {key: (row.get(key) or "").strip() for key in COLUMNS}
    if not _ID.fullmatch(values["id"]):
        raise RosterError(f"line {line}: the id {values['id']!r} is not a plain id (letters, "
                          "digits and . _ @ + -, starting with a letter or digit, at most 100)")
    return Student(**values)


def parse_roster(text: str) -> Roster:
    """The roster in ``text``; RosterError on a missing ``id`` column, a bad or repeated id."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = [name.strip().lower() for name in reader.fieldnames or []]
    if "id" not in header:
        raise RosterError(f"the roster's header must name an 'id' column (optional: "
                          f"{', '.join(COLUMNS[1:])}); it has {', '.join(header) or 'nothing'}")
    reader.fieldnames = header
    students: list[Student] = []
    seen: dict[str, int] = {}
    for line, row in enumerate(reader, start=2):
        student = _row(line, row)
        if student.id in seen:
            raise RosterError(f"line {line}: the id {student.id} is already on line "
                              f"{seen[student.id]}")
        seen[student.id] = line
        students.append(student)
    if not students:
        raise RosterError("the roster lists no students")
    return Roster(tuple(students))


def read_roster(path: Path) -> Roster:
    try:
        data = path.read_bytes()[: MAX_ROSTER_BYTES + 1]
    except OSError as error:
        raise RosterError(f"cannot read the roster {path}: {error.strerror}") from None
    if len(data) > MAX_ROSTER_BYTES:
        raise RosterError(f"the roster {path} is larger than {MAX_ROSTER_BYTES} bytes")
    try:
        return parse_roster(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise RosterError(f"the roster {path} is not UTF-8 text (save it as CSV UTF-8)") from None
