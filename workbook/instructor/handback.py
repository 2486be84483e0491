"""Handing feedback back through the LMS the work came from, in one bulk upload.

**Canvas**: Submissions > "Re-Upload Submissions" takes a zip whose files are named as the
download names them; Canvas reads the first two parts of a name (split at ``_``) that are
only digits as the user id and the attachment id, and attaches the file as a comment to
that student's submission when the attachment is one of its files
(``Assignment#infer_comment_context_from_filename`` in Canvas's source). So each page is
written as ``feedback_<user id>_<attachment id>_chNN.html``, with the ids of the student's
own upload: ``canvas_feedback.zip``.

**Moodle**: Submissions > "Upload multiple feedback files in a zip" (the file feedback
plugin's ``assignfeedback_file_zip_importer``) splits each name at ``_`` into full name,
participant id, plugin type and plugin name, then the file's own name, and files it under
that participant when the assignment has the plugin. Each page is written as
``<Full Name>_<participant id>_assignsubmission_file_chNN.html`` with the prefix of the
student's own download entry, a form both the importer of Moodle 4.1 and later and the
earlier one read: ``moodle_feedback.zip``.

Only a student whose notebook came from that LMS's download gets a file; the pages are the
same as ``feedback/<student>/`` holds.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping
from pathlib import Path

from autograder.grading.discover import Discovery
from autograder.grading.feedback import folder_names, page_name
from autograder.grading.model import Batch
from workbook.instructor import lms_canvas, lms_moodle

CANVAS_ZIP = "canvas_feedback.zip"
MOODLE_ZIP = "moodle_feedback.zip"
_MOODLE_PREFIX = re.compile(r"[^_/]*_\d+_assignsubmission_file")
_STAMP = (2020, 1, 1, 0, 0, 0)   # a fixed time in the zip: the same pages, the same zip


def _canvas_name(top: str, students: Mapping[str, str], student: str) -> str:
    """``feedback_<user>_<attachment>`` for the upload ``top`` of ``student``."""
    for user, _, rest in lms_canvas.readings(top):
        if students.get(user) == student or f"{lms_canvas.NAME}-{user}" == student:
            attachment = top[: len(top) - len(rest) - 1].rsplit("_", 1)[-1]
            return f"feedback_{user}_{attachment}"
    return ""


def _entries(batch: Batch, discovery: Discovery, layout: str,
             students: Mapping[str, str]) -> dict[str, Path]:
    """Zip entry name -> page file (relative to the gradebook folder)."""
    folders = folder_names(nb.student for nb in batch.notebooks if nb.student)
    uploads: dict[str, str] = {}
    for found in discovery.found:
        uploads.setdefault(found.rel, found.student)
    out: dict[str, Path] = {}
    for notebook in batch.notebooks:
        if not notebook.student or notebook.path not in uploads or not notebook.exercises:
            continue
        top = notebook.path.split("/", 1)[0]
        if layout == lms_canvas.NAME:
            prefix = _canvas_name(top, students, notebook.student)
            separator = "_"
        else:
            named = _MOODLE_PREFIX.match(top)
            prefix, separator = (named.group(0), "_") if named else ("", "")
        if prefix:
            page = page_name(notebook)
            out[prefix + separator + page] = Path("feedback") / folders[notebook.student] / page
    return out


def write_lms_feedback(batch: Batch, discovery: Discovery, students: Mapping[str, str],
                       folder: Path) -> str:
    """Write the LMS's feedback zip into the gradebook ``folder`` (after the pages);
    returns its name, "" when the hand-in is no LMS download."""
    layout = discovery.layout
    if layout not in (lms_canvas.NAME, lms_moodle.NAME):
        return ""
    entries = _entries(batch, discovery, layout, students)
    name = CANVAS_ZIP if layout == lms_canvas.NAME else MOODLE_ZIP
    write_zip(folder / name, {entry: (folder / page).read_bytes()
                              for entry, page in entries.items() if (folder / page).is_file()})
    return name


def write_zip(path: Path, entries: Mapping[str, bytes]) -> None:
    """A zip of ``entries`` (name -> bytes) for an LMS upload, readable only by you, with a
    fixed time in every entry: the same files give the same zip."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry, data in sorted(entries.items()):
            info = zipfile.ZipInfo(entry, _STAMP)
            info.external_attr = 0o600 << 16
            archive.writestr(info, data, zipfile.ZIP_DEFLATED)
    path.chmod(0o600)
