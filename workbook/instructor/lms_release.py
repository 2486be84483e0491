"""Giving each student their own notebooks through Moodle, in one upload.

Moodle's "Upload multiple feedback files in a zip" (Submissions, on an assignment with the
"Feedback files" type on) files every entry under the participant its name names, read
as Moodle's own importer reads it (``assignfeedback_file_zip_importer``): the name split at
``_`` into full name, participant id, plugin type, plugin name and the file's own name.
A personalised release (``workbook release --roster ... --secret-file ...``) is zipped so,
using the assignment's grading worksheet to find each student's participant id:

    handout/moodle_release.zip
        Ada Lovelace_877_assignsubmission_file_ch00_ring_allreduce.ipynb

Students then find their notebook under the assignment's feedback. Canvas has no such
upload: its "Re-Upload Submissions" attaches files to submissions that already exist, so
on Canvas each student's folder is handed out another way (see the instructors' guide).
"""

from __future__ import annotations

from pathlib import Path

from workbook.instructor.handback import write_zip
from workbook.instructor.lms_moodle import FULL_NAME, IDENTIFIER, Worksheet, participant

MOODLE_RELEASE = "moodle_release.zip"


def _full_names(sheet: Worksheet) -> dict[str, str]:
    """Participant id -> the full name the worksheet gives (with ``_`` as a space, as
    Moodle writes names into file names)."""
    ident, name = sheet.column(IDENTIFIER), sheet.column(FULL_NAME)
    out = {}
    for row in sheet.rows:
        if 0 <= ident < len(row):
            pid = participant(row[ident])
            full = row[name] if 0 <= name < len(row) else ""
            out[pid] = (full.replace("_", " ").replace("/", " ").strip() or "Participant")
    return out


def moodle_release_zip(students_folder: Path, sheet: Worksheet, out: Path) -> list[str]:
    """Zip every student's released notebooks under their participant id; returns the ids
    of students on the roster the worksheet has no participant for (they get nothing)."""
    names = _full_names(sheet)
    by_student = {student: pid for pid, student in sheet.students.items()}
    missing: list[str] = []
    entries: dict[str, bytes] = {}
    for folder in sorted(p for p in students_folder.iterdir() if p.is_dir()):
        pid = by_student.get(folder.name)
        if pid is None:
            missing.append(folder.name)
            continue
        prefix = f"{names.get(pid, 'Participant')}_{pid}_assignsubmission_file_"
        entries.update({prefix + nb.name: nb.read_bytes() for nb in folder.glob("*.ipynb")})
    write_zip(out, entries)
    return missing
