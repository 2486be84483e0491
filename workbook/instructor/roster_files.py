"""Reading a roster file: the workbook's own CSV, or an LMS's own export as it comes.

**Canvas: the gradebook export** (Grades > Export), as ``lib/gradebook_exporter.rb`` in
Canvas's source writes it: a header ``Student, ID, [SIS User ID,] SIS Login ID, [Integration
ID, Root Account,] Section, <custom columns>, <assignment> (<id>) ..., <totals>`` (or
``LastName, FirstName`` in place of ``Student``); then, when an assignment posts grades by
hand, a row of ``Manual Posting`` markers; then ``    Points Possible``; then one row per
student, the Student View user ("Student, Test") last. A name that starts with ``=`` is
written as ``="..."``. Canvas writes ``;`` between cells in some locales. Each student's
roster id is their SIS User ID, else their SIS Login ID (when it is a plain id), else
``canvas-<Canvas id>``; the Canvas id is the ``ID`` column. The marker rows and the Test
Student are left out (and listed in :attr:`Roster.skipped`).

**Moodle: the participants download** (Participants, select all, "Download table data
as" CSV): a header with the name (``First name``/``Last name`` or ``Full name``) and the
site's identity fields (``Email address``, ``ID number``, ``Username``). Each student's id
is their ID number, else their username, else their email address.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from workbook.instructor.roster import (
    COLUMNS,
    ID_PATTERN,
    MAX_ROSTER_BYTES,
    Roster,
    RosterError,
    Student,
    build_roster,
    check_id,
    parse_workbook_roster,
    table,
)

TEST_STUDENT = "Student, Test"   # Canvas's Student View user (sortable name)
_POINTS_POSSIBLE = "Points Possible"
_ASSIGNMENT_COLUMN = re.compile(r"(?P<title>.*) \((?P<id>\d+)\)")


def _cell(row: list[str], header: list[str], name: str) -> str:
    lowered = [h.lower() for h in header]
    if name.lower() not in lowered:
        return ""
    index = lowered.index(name.lower())
    return row[index].strip() if index < len(row) else ""


def _unquoted_name(name: str) -> str:
    """Canvas writes a name that starts with ``=`` as ``="name"``, against formulas."""
    if name.startswith('="') and name.endswith('"'):
        return name[2:-1]
    return name


def is_canvas_gradebook(header: list[str]) -> bool:
    lowered = [h.lower() for h in header]
    return ("id" in lowered and "sis login id" in lowered and
            ("student" in lowered or "lastname" in lowered))


def canvas_points_possible(header: list[str], rows: list[list[str]]) -> dict[str, float]:
    """Every assignment column of a Canvas gradebook export -> its points possible."""
    marker = next((row for row in rows if row and row[0].strip() == _POINTS_POSSIBLE), None)
    out: dict[str, float] = {}
    if marker is None:
        return out
    for index, title in enumerate(header):
        if _ASSIGNMENT_COLUMN.fullmatch(title) and index < len(marker):
            try:
                out[title] = float(marker[index].replace(",", "."))
            except ValueError:
                continue
    return out


def _canvas_id(line: int, row: list[str], header: list[str]) -> str:
    for column in ("SIS User ID", "SIS Login ID"):
        value = _cell(row, header, column)
        if value and ID_PATTERN.fullmatch(value):
            return value
    canvas = _cell(row, header, "ID")
    return check_id(line, f"canvas-{canvas}")


def parse_canvas_gradebook(header: list[str], rows: list[list[str]]) -> Roster:
    students: list[tuple[int, Student]] = []
    skipped: list[str] = []
    for line, row in enumerate(rows, start=2):
        first = row[0].strip() if row else ""
        canvas = _cell(row, header, "ID")
        if first == _POINTS_POSSIBLE or not canvas:
            continue   # the Points Possible and Manual Posting rows carry no student
        if not canvas.isdigit():
            raise RosterError(f"line {line}: Canvas's ID column holds {canvas!r}, not a "
                              "Canvas user id (a number)")
        if "student" in [h.lower() for h in header]:
            name = _unquoted_name(_cell(row, header, "Student"))
        else:
            name = ", ".join(_unquoted_name(_cell(row, header, c)) for c in
                             ("LastName", "FirstName"))
        if name == TEST_STUDENT:
            skipped.append(f"line {line}: Canvas's Test Student (Student View), not a student")
            continue
        students.append((line, Student(_canvas_id(line, row, header), name, canvas_id=canvas)))
    roster = build_roster(students, "Canvas gradebook export", tuple(skipped))
    return dataclasses.replace(roster, columns=tuple(canvas_points_possible(header, rows).items()))


def is_moodle_participants(header: list[str]) -> bool:
    lowered = {h.lower() for h in header}
    named = {"first name", "last name"} <= lowered or "full name" in lowered
    return named and bool(lowered & {"email address", "id number", "username"})


def parse_moodle_participants(header: list[str], rows: list[list[str]]) -> Roster:
    students: list[tuple[int, Student]] = []
    for line, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        email, idnumber = _cell(row, header, "Email address"), _cell(row, header, "ID number")
        username = _cell(row, header, "Username")
        name = _cell(row, header, "Full name") or " ".join(
            part for part in (_cell(row, header, "First name"),
                              _cell(row, header, "Last name")) if part)
        ident = next((v for v in (idnumber, username, email) if v), "")
        if not ident:
            raise RosterError(f"line {line}: {name or 'this participant'} has no ID number, "
                              "username or email address to be known by")
        students.append((line, Student(check_id(line, ident), name, email=email,
                                       idnumber=idnumber, username=username)))
    return build_roster(students, "Moodle participants download")


def parse_export(header: list[str], rows: list[list[str]]) -> Roster | None:
    """The roster of an LMS export, or None when ``header`` is no export this reads."""
    if is_canvas_gradebook(header):
        return parse_canvas_gradebook(header, rows)
    if is_moodle_participants(header):
        return parse_moodle_participants(header, rows)
    return None


def parse_roster(text: str) -> Roster:
    """The roster in ``text``, whichever supported form it has; RosterError otherwise."""
    header, rows = table(text)
    lowered = [name.lower() for name in header]
    if "id" in lowered and "student" not in lowered:
        return parse_workbook_roster(header, rows)
    exported = parse_export(header, rows)
    if exported is not None:
        return exported
    raise RosterError(
        "this is not a roster the workbook reads. Use one of: the workbook's own CSV (its "
        f"header must name an 'id' column, optional {', '.join(COLUMNS[1:])}); Canvas's "
        "gradebook export (Grades > Export > Export Entire Gradebook); Moodle's participants "
        "download (Participants > select all > 'Download table data as' CSV). Its header "
        f"has: {', '.join(header) or 'nothing'}")


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
