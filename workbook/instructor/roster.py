"""The class list, read from the workbook's own CSV or straight from an LMS's export.

The workbook's own form, UTF-8 with a header row::

    id,name,canvas_id,email,idnumber,username
    s1234,Ada Lovelace,50113,ada@uni.example,20231234,alovelace

``id`` (required) is the student's id in your gradebook: it names their personalised
notebook, their feedback folder and their row of ``totals.csv``, and (with the course
secret) chooses their numbers. Every other column is optional:

* ``name``: shown on their notebook and in the Canvas import;
* ``canvas_id``: the Canvas user id, which Canvas writes into every file name of
  "Download Submissions";
* ``email``, ``idnumber``, ``username``: Moodle's identity fields. Moodle's downloads carry
  only a participant id that Moodle allocates *per assignment*, so a Moodle download is
  mapped to students through that assignment's grading worksheet, whose rows pair each
  participant id with these fields (:mod:`workbook.instructor.lms_moodle`);
* ``moodle_id``: a participant id, for a course with a single Moodle assignment only.

Two LMS exports are read as they come (:mod:`workbook.instructor.roster_files`):
Canvas's gradebook export (Grades > Export) and Moodle's participants download. A roster
in which two rows share an id, a Canvas id, an email, an ID number, a username or a
participant id is refused, naming both lines: such a roster would file one student's work
under another.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

MAX_ROSTER_BYTES = 8_000_000
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
COLUMNS = ("id", "name", "canvas_id", "moodle_id", "email", "idnumber", "username")
UNIQUE = ("canvas_id", "moodle_id", "email", "idnumber", "username")


class RosterError(ValueError):
    """The roster file cannot be used; the message says which line and why."""


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""
    canvas_id: str = ""
    moodle_id: str = ""
    email: str = ""
    idnumber: str = ""
    username: str = ""


@dataclass(frozen=True)
class Roster:
    students: tuple[Student, ...]
    source: str = "workbook roster"          # which kind of file it was read from
    skipped: tuple[str, ...] = field(default=())   # rows left out on purpose, and why
    columns: tuple[tuple[str, float], ...] = field(default=())  # LMS grade column, points

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.students)

    def by_lms(self, column: str) -> dict[str, str]:
        """An identity field's value -> roster id (emails compared without case)."""
        out: dict[str, str] = {}
        for s in self.students:
            value = getattr(s, column)
            if value:
                out[value.lower() if column == "email" else value] = s.id
        return out

    def names(self) -> dict[str, str]:
        return {s.id: s.name for s in self.students}


def check_id(line: int, value: str) -> str:
    if not ID_PATTERN.fullmatch(value):
        raise RosterError(f"line {line}: the id {value!r} is not a plain id (letters, "
                          "digits and . _ @ + -, starting with a letter or digit, at most 100)")
    return value


def build_roster(rows: list[tuple[int, Student]], source: str,
                 skipped: tuple[str, ...] = ()) -> Roster:
    """The roster of ``rows`` (line number, student); RosterError when two rows share an
    id or an identity field, or when there is nobody."""
    seen: dict[tuple[str, str], int] = {}
    for line, student in rows:
        for column in ("id", *UNIQUE):
            value = getattr(student, column)
            if not value:
                continue
            key = (column, value.lower() if column == "email" else value)
            if key in seen:
                raise RosterError(f"line {line}: the {column} {value} is already on line "
                                  f"{seen[key]}; each student needs their own")
            seen[key] = line
    if not rows:
        raise RosterError("the roster lists no students")
    return Roster(tuple(student for _, student in rows), source, skipped)


def table(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of a CSV text, comma- or semicolon-separated (Canvas writes
    semicolons for some locales), with a byte-order mark allowed."""
    text = text.lstrip("\ufeff")
    first = text.split("\n", 1)[0]
    delimiter = ";" if first.count(";") > first.count(",") else ","
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        return [], []
    return [cell.strip() for cell in rows[0]], rows[1:]


def parse_workbook_roster(header: list[str], rows: list[list[str]]) -> Roster:
    names = [name.lower() for name in header]
    students: list[tuple[int, Student]] = []
    for line, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        values = {key: (row[names.index(key)].strip() if key in names and
                        names.index(key) < len(row) else "") for key in COLUMNS}
        check_id(line, values["id"])
        students.append((line, Student(**values)))
    return build_roster(students, "workbook roster")
