"""Canvas: how "Download Submissions" names each file, and the gradebook import it takes.

From Canvas's source (``lib/content_zipper.rb``, ``ContentZipper#add_upload_submission``
and ``#get_filename``), every uploaded file of a submission is written into one flat zip as

    <name>[_LATE]_<user id>_<attachment id>_<file name>
    <name>[_LATE]_anon_<anonymous id>_<attachment id>_<file name>     (anonymous grading)

* ``<name>`` is the student's sortable name ("Lovelace, Ada"), with every ``_<digits>_``
  run turned into its digits, lowercased, and with every character that is not a word
  character removed: ``lovelaceada``, ``obrienmary``, ``o_brien_anne`` (``_`` is a word
  character and stays);
* ``LATE`` is Canvas's own verdict that the submission came after the due date;
* the user id is Canvas's, the attachment id the uploaded file's; the file name is what the
  student uploaded (Canvas renames a second upload of the same name ``name-1.ipynb``),
  with ``/ \\ : * ? " < > |`` turned into ``_``.

Because a name may hold ``_`` and digits and a file name anything, a name can read more
than one way; the first reading whose user id the roster vouches for wins (the true one
is always the leftmost, since the name part never holds ``_<digits>_``). An anonymous
submission names no user and cannot be attributed until the instructor unmasks it.

The import: Canvas's Grades > Import takes a CSV with ``Student, ID, SIS User ID, SIS Login
ID, Section`` and one column per assignment, titled ``<title> (<assignment id>)`` to fill an
existing assignment or ``<title>`` to create one, and an optional ``Points Possible`` row
(``lib/gradebook_importer.rb``); rows are matched on ``ID``.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from autograder.grading.discover import NOTEBOOK_SUFFIX, Claim
from autograder.grading.report import points_text
from autograder.grading.safe_text import for_csv

NAME = "canvas"
_READING = re.compile(r"(?=_(?:(?P<late>LATE)_)?(?P<user>\d+|anon_[A-Za-z0-9]+)_"
                      r"(?P<attachment>\d+)_(?P<file>.+))", re.DOTALL)
_NAME_PART = re.compile(r"[^\s/\\]*")   # Canvas keeps word characters, marks included


def readings(entry: str) -> list[tuple[str, bool, str]]:
    """Every way ``entry`` reads as a Canvas name: (user id, late, file name), leftmost
    first."""
    out: list[tuple[str, bool, str]] = []
    for match in _READING.finditer(entry):
        if _NAME_PART.fullmatch(entry[:match.start()]):
            out.append((match["user"], bool(match["late"]), match["file"]))
    return out


@dataclass(frozen=True)
class CanvasLayout:
    name: str = NAME

    def claim(self, entry: str, is_dir: bool, known: Collection[str]) -> Claim | None:
        found = readings(entry)
        if not found:
            return None
        user, late, _ = next((r for r in found if r[0] in known), found[0])
        if user.startswith("anon_"):
            return Claim(user, late, problem="an anonymous Canvas submission names no "
                         "student; turn off anonymous grading for the assignment (or "
                         "unmask it) and download the submissions again")
        if is_dir:
            return Claim(user, late, problem="Canvas's download holds files only; this "
                         "folder is no Canvas upload")
        return Claim(user, late)

    def detect(self, names: Sequence[str]) -> bool:
        files = [n for n in names if n.lower().endswith(NOTEBOOK_SUFFIX)]
        return bool(files) and sum(bool(readings(n)) for n in files) * 2 >= len(files)


LAYOUT = CanvasLayout()


def import_text(rows: Sequence[tuple[str, float]], canvas_ids: Mapping[str, str],
                names: Mapping[str, str], column: str, points_possible: float) -> str:
    """Canvas's gradebook import: one row per (roster id, points) whose student has a
    Canvas id, the points in ``column``, the column's points possible in the second row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                     for_csv(column)])
    writer.writerow(["Points Possible", "", "", "", "", points_text(points_possible)])
    for student, points in rows:
        if student in canvas_ids:
            writer.writerow([for_csv(names.get(student, "")), canvas_ids[student],
                             for_csv(student), "", "", points_text(points)])
    return buffer.getvalue()
