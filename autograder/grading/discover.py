"""Find the notebooks in a submissions folder, in the layouts instructors actually get.

    folders   SUBMISSIONS/<student>/<notebook>.ipynb                collected by hand
              SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb   nbgrader's ``submitted/``
    canvas    SUBMISSIONS/<name>_[LATE_]<userid>_<submissionid>_<file>.ipynb   Canvas's
              "Download Submissions", one flat folder
    moodle    SUBMISSIONS/<Full Name>_<participantid>_assignsubmission_file_<file>.ipynb, or
              the same name as a folder holding the file ("Download submissions in folders")

:func:`detect` names the layout from the entries' names; an LMS id maps to a roster id
through ``students`` (from the roster's ``canvas_id`` / ``moodle_id``), else the student is
filed under ``canvas-<userid>`` / ``moodle-<participantid>``. Which chapter a notebook is
comes from its metadata later, never from these names.

Every entry becomes a notebook to grade, a problem row, or an ``ignored`` entry with the
reason: nothing is dropped silently (a student folder called ``.ada`` or ``__pycache__``
holding a notebook is a student like any other). Lateness: nbgrader's ``timestamp.txt``
(or one in a student's folder) gives the time handed in, compared with ``due``; Canvas's
``LATE`` marker is Canvas's own verdict.

Nothing here follows a symbolic link or opens anything but a folder and a timestamp file
of at most 200 bytes: a symlinked student folder, assignment folder or notebook, and a
``.ipynb`` that is not a regular file (a FIFO, a device), become refused rows that say why.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

NOTEBOOK_SUFFIX = ".ipynb"
Layout = Literal["folders", "canvas", "moodle"]
LAYOUTS: tuple[str, ...] = ("folders", "canvas", "moodle")
TIMESTAMP = "timestamp.txt"
_CANVAS = re.compile(r"(?P<name>[^_]*)_(?:(?P<late>LATE)_)?(?P<user>\d+)_(?P<sub>\d+)_"
                     r"(?P<file>.+)", re.DOTALL)
_MOODLE = re.compile(r"(?P<name>.*)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_"
                     r"(?P<file>.*)", re.DOTALL)
_WHY = {".ipynb_checkpoints": "Jupyter's autosave copies (the notebook itself is graded)",
        "__MACOSX": "macOS archive metadata, not a submission",
        ".DS_Store": "macOS folder metadata, not a submission",
        "Thumbs.db": "Windows thumbnail cache, not a submission"}


@dataclass(frozen=True)
class Found:
    """A notebook to grade."""

    student: str
    path: Path
    rel: str              # path relative to the submissions folder, for messages
    assignment: str = ""  # the nbgrader assignment folder, "" in the flat layout
    submitted_at: str = ""        # when it was handed in (ISO 8601, UTC), if known
    late: bool | None = None      # None: not known


@dataclass(frozen=True)
class Missing:
    """A student (or one of their assignment folders) with no notebook to grade."""

    student: str
    rel: str
    message: str
    assignment: str = ""


@dataclass
class Discovery:
    found: list[Found] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)   # ignored path -> why
    layout: str = "folders"

    def ignore(self, rel: str, why: str) -> None:
        self.ignored.append(rel)
        self.reasons[rel] = why


@dataclass(frozen=True)
class Options:
    """How to read a submissions folder: the layout, LMS id -> roster id, the deadline."""

    layout: Layout | None = None               # None: detect
    students: Mapping[str, str] = field(default_factory=dict)
    due: datetime | None = None


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError:
        return []


def _mode(path: Path) -> int:
    """The entry's own file type (never the target of a link); 0 when it vanished."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _is_dir(path: Path) -> bool:
    return stat.S_ISDIR(_mode(path))


def _is_notebook(path: Path) -> bool:
    return path.suffix.lower() == NOTEBOOK_SUFFIX and stat.S_ISREG(_mode(path))


def _holds_notebook(folder: Path, depth: int = 2) -> bool:
    for entry in _entries(folder):
        if _is_notebook(entry) or (depth > 1 and _is_dir(entry) and
                                   entry.name != ".ipynb_checkpoints" and
                                   _holds_notebook(entry, depth - 1)):
            return True
    return False


def refusal(path: Path) -> str:
    """Why an entry is refused outright ("" when it is an ordinary folder or file)."""
    mode = _mode(path)
    if stat.S_ISLNK(mode):
        return "a symbolic link; the grader does not follow links (submit the file itself)"
    if mode and not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        return "not a regular file (a device, pipe or socket); it was not opened"
    return ""


def _stray_reason(path: Path) -> str:
    """Why a file or folder that holds no notebook is not graded."""
    if path.name in _WHY:
        return _WHY[path.name]
    if path.name.startswith("._"):
        return "a macOS resource-fork copy (AppleDouble), not a notebook"
    if _is_dir(path):
        return "a folder without any notebook"
    return "not a notebook (.ipynb)"


def course_submissions(course: Path) -> Path:
    """The student folders of an nbgrader course folder: ``course/submitted``."""
    return course / "submitted"


def detect(folder: Path) -> Layout:
    """The layout whose names the folder's entries carry ("folders" when none does)."""
    names = [p.name for p in _entries(folder)]
    if any(_MOODLE.fullmatch(name) for name in names):
        return "moodle"
    files = [n for n in names if n.lower().endswith(NOTEBOOK_SUFFIX)]
    if files and sum(bool(_CANVAS.fullmatch(n)) for n in files) * 2 >= len(files):
        return "canvas"
    return "folders"


def discover(folder: Path, options: Options | None = None) -> Discovery:
    """Every notebook under ``folder``, every student folder without one, every stray file."""
    chosen = options or Options()
    layout = chosen.layout or detect(folder)
    out = Discovery(layout=layout)
    if layout == "folders":
        _folders(folder, chosen, out)
    else:
        _lms(folder, layout, chosen, out)
    return out


# --- per-student folders (and nbgrader's submitted/) ---------------------------------------

def _folders(root: Path, options: Options, out: Discovery) -> None:
    for entry in _entries(root):
        rel = entry.relative_to(root).as_posix()
        why = refusal(entry)
        if why:
            out.missing.append(Missing(entry.name, rel, f"{rel}: {why}"))
        elif _is_dir(entry) and entry.name not in _WHY and (
                _holds_notebook(entry) or not (entry.name.startswith(".") or
                                               entry.name == "__pycache__")):
            _student(root, entry, options, out)
        elif _is_notebook(entry) and not entry.name.startswith("._"):
            out.missing.append(Missing("", rel, f"{rel}: a notebook outside any student "
                                       "folder; put it in SUBMISSIONS/<student>/"))
        else:
            out.ignore(rel + ("/" if _is_dir(entry) else ""), _stray_reason(entry))


def _student(root: Path, folder: Path, options: Options, out: Discovery) -> None:
    student, before, reported = folder.name, len(out.found), len(out.missing)
    strays: list[Path] = []
    stamp = _timestamp(folder, options)
    for entry in _entries(folder):
        rel = entry.relative_to(root).as_posix()
        why = refusal(entry)
        if why:
            out.missing.append(Missing(student, rel, f"{rel}: {why}"))
        elif entry.name == TIMESTAMP:
            continue
        elif _is_notebook(entry) and not entry.name.startswith("._"):
            out.found.append(Found(student, entry, rel, "", *stamp))
        elif _is_dir(entry) and entry.name not in _WHY and (
                _holds_notebook(entry, 1) or not entry.name.startswith(".")):
            _assignment(root, student, entry, options, out)
        else:
            strays.append(entry)
    for stray in strays:
        out.ignore(stray.relative_to(root).as_posix() + ("/" if _is_dir(stray) else ""),
                   _stray_reason(stray))
    if len(out.found) == before and len(out.missing) == reported:
        shown = [s.relative_to(root).as_posix() for s in strays[:5]]
        seen = f" (found only: {', '.join(shown)})" if shown else ""
        out.missing.append(Missing(student, f"{student}/", f"{student}/: no notebook "
                                   f"(.ipynb) in this student's folder{seen}"))


def _assignment(root: Path, student: str, folder: Path, options: Options,
                out: Discovery) -> None:
    stamp, before = _timestamp(folder, options), len(out.found)
    for entry in _entries(folder):
        rel = entry.relative_to(root).as_posix()
        why = refusal(entry)
        if why:
            out.missing.append(Missing(student, rel, f"{rel}: {why}", folder.name))
        elif _is_notebook(entry) and not entry.name.startswith("._"):
            out.found.append(Found(student, entry, rel, folder.name, *stamp))
        elif entry.name != TIMESTAMP:
            out.ignore(rel + ("/" if _is_dir(entry) else ""), _stray_reason(entry))
    if len(out.found) == before:
        rel = folder.relative_to(root).as_posix()
        out.missing.append(Missing(student, rel + "/", f"{rel}/: no notebook (.ipynb) in "
                                   "this assignment folder", folder.name))


# --- lateness -------------------------------------------------------------------------------

def parse_time(text: str) -> datetime | None:
    """An nbgrader timestamp ("2024-03-01 17:59:12.345678 UTC") or ISO 8601 time, as UTC
    (a time without a zone is taken as UTC, as nbgrader writes it); None if unreadable."""
    cleaned = text.strip().removesuffix("UTC").strip().replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        return None
    utc = timezone.utc
    return moment.replace(tzinfo=utc) if moment.tzinfo is None else moment.astimezone(utc)


def _timestamp(folder: Path, options: Options) -> tuple[str, bool | None]:
    """(when handed in, late?) from ``folder/timestamp.txt``, ("", None) without one."""
    path = folder / TIMESTAMP
    if not stat.S_ISREG(_mode(path)):
        return "", None
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NONBLOCK)) as file:
            text = file.read(200).decode("utf-8", "replace")
    except OSError:
        return "", None
    moment = parse_time(text)
    if moment is None:
        return "", None
    late = None if options.due is None else moment > options.due
    return moment.isoformat(timespec="seconds"), late


# --- flat LMS exports -----------------------------------------------------------------------

def _lms_student(layout: str, user: str, options: Options) -> str:
    return options.students.get(user, f"{layout}-{user}")


def _lms(root: Path, layout: str, options: Options, out: Discovery) -> None:
    pattern = _CANVAS if layout == "canvas" else _MOODLE
    for entry in _entries(root):
        rel = entry.relative_to(root).as_posix()
        named = pattern.fullmatch(entry.name)
        why = refusal(entry)
        if named is None:
            if why:
                out.missing.append(Missing("", rel, f"{rel}: {why}"))
            else:
                out.ignore(rel + ("/" if _is_dir(entry) else ""),
                           f"its name is not a {layout} export name" if
                           entry.name not in _WHY else _WHY[entry.name])
            continue
        student = _lms_student(layout, named["user"], options)
        late = True if named.groupdict().get("late") else (False if layout == "canvas"
                                                            else None)
        if why:
            out.missing.append(Missing(student, rel, f"{rel}: {why}"))
        elif layout == "moodle" and named["plugin"] != "file":
            out.ignore(rel + ("/" if _is_dir(entry) else ""),
                       f"a Moodle {named['plugin']} submission, not a file")
        elif _is_dir(entry):
            _lms_folder(root, entry, student, late, out)
        elif _is_notebook(entry):
            out.found.append(Found(student, entry, rel, "", "", late))
        else:
            out.ignore(rel, _stray_reason(entry))


def _lms_folder(root: Path, folder: Path, student: str, late: bool | None,
                out: Discovery) -> None:
    before = len(out.found)
    for entry in _entries(folder):
        rel = entry.relative_to(root).as_posix()
        why = refusal(entry)
        if why:
            out.missing.append(Missing(student, rel, f"{rel}: {why}"))
        elif _is_notebook(entry) and not entry.name.startswith("._"):
            out.found.append(Found(student, entry, rel, "", "", late))
        else:
            out.ignore(rel + ("/" if _is_dir(entry) else ""), _stray_reason(entry))
    if len(out.found) == before:
        rel = folder.relative_to(root).as_posix()
        out.missing.append(Missing(student, rel + "/", f"{rel}/: no notebook (.ipynb) in "
                                   "this submission folder"))
