"""Find the notebooks in a submissions folder, in the layouts instructors actually get.

    folders   SUBMISSIONS/<student>/<notebook>.ipynb                collected by hand
              SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb   nbgrader's ``submitted/``
    an LMS    SUBMISSIONS/<entry named by the LMS>                  a download, unzipped

An LMS's naming is not known here: the caller hands in one :class:`LmsLayout` per LMS,
which reads an entry's name into a :class:`Claim` (whose upload it is, in the LMS's own
ids). :func:`detect` names the layout from the entries' names. An LMS id maps to a roster
id through ``Options.students``; with a roster (``Options.roster_only``) an id the roster
does not vouch for is an error row for that file, never a new student; without one the
student is filed under ``<layout>-<id>``. Which chapter a notebook is comes from its
metadata later, never from these names.

Every entry becomes a notebook to grade, a problem row, or an ``ignored`` entry with the
reason: nothing is dropped silently (a student folder called ``.ada`` or ``__pycache__``
holding a notebook is a student like any other). Lateness: nbgrader's ``timestamp.txt``
(or one in a student's folder) gives the time handed in, compared with ``due``; an LMS
layout's claim may carry the LMS's own verdict.

Nothing here follows a symbolic link or opens anything but a folder and a timestamp file
of at most 200 bytes: a symlinked student folder, assignment folder or notebook, and a
``.ipynb`` that is not a regular file (a FIFO, a device), become refused rows that say why.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

NOTEBOOK_SUFFIX = ".ipynb"
FOLDERS = "folders"
TIMESTAMP = "timestamp.txt"
_WHY = {".ipynb_checkpoints": "Jupyter's autosave copies (the notebook itself is graded)",
        "__MACOSX": "macOS archive metadata, not a submission",
        ".DS_Store": "macOS folder metadata, not a submission",
        "Thumbs.db": "Windows thumbnail cache, not a submission"}


@dataclass(frozen=True)
class Claim:
    """What an LMS's name for an entry says about it."""

    user: str                 # the LMS's id of the uploader, as the name carries it
    late: bool | None = None  # the LMS's own verdict, when its names carry one
    folder: bool = False      # a submission folder: the notebooks in it are the upload
    ignore: str = ""          # not a file submission, graded by nobody (and why)
    problem: str = ""         # the upload cannot be attributed to anyone (and why)


class LmsLayout(Protocol):
    """How one LMS names the entries of its submissions download."""

    @property
    def name(self) -> str:
        """The layout's name ("canvas")."""
        ...  # pragma: no cover

    def claim(self, entry: str, is_dir: bool, known: Collection[str]) -> Claim | None:
        """The claim of an entry's name (``known``: the LMS ids the roster vouches for,
        which settle a name that reads two ways); None when it is no name of this LMS."""
        ...  # pragma: no cover

    def detect(self, names: Sequence[str]) -> bool:
        """Whether a folder holding entries of these names is this LMS's download."""
        ...  # pragma: no cover


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

    layout: str | None = None                  # None: detect
    students: Mapping[str, str] = field(default_factory=dict)   # LMS id -> roster id
    due: datetime | None = None
    layouts: Mapping[str, LmsLayout] = field(default_factory=dict)
    roster_only: bool = False     # only the roster's students: an unknown LMS id is an error


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


def detect(folder: Path, layouts: Mapping[str, LmsLayout]) -> str:
    """The layout whose names the folder's entries carry ("folders" when none does)."""
    names = [p.name for p in _entries(folder)]
    return next((name for name, layout in layouts.items() if layout.detect(names)), FOLDERS)


def discover(folder: Path, options: Options | None = None) -> Discovery:
    """Every notebook under ``folder``, every student folder without one, every stray file."""
    chosen = options or Options()
    layout = chosen.layout or detect(folder, chosen.layouts)
    out = Discovery(layout=layout)
    if layout == FOLDERS:
        _folders(folder, chosen, out)
    else:
        _lms(folder, chosen.layouts[layout], chosen, out)
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


# --- LMS downloads ---------------------------------------------------------------------------

def _lms(root: Path, layout: LmsLayout, options: Options, out: Discovery) -> None:
    known = frozenset(options.students)
    for entry in _entries(root):
        rel = entry.relative_to(root).as_posix()
        shown = rel + ("/" if _is_dir(entry) else "")
        claim = layout.claim(entry.name, _is_dir(entry), known)
        why = refusal(entry)
        if claim is None:
            if why:
                out.missing.append(Missing("", rel, f"{rel}: {why}"))
            elif _is_notebook(entry) or (_is_dir(entry) and _holds_notebook(entry)):
                out.missing.append(Missing("", shown, f"{shown}: its name is not one "
                                           f"{layout.name} gives a submission, so it "
                                           "belongs to no student; it was not graded"))
            else:
                out.ignore(shown, _WHY.get(entry.name, f"its name is not a {layout.name} "
                                           "download name"))
            continue
        if claim.ignore:
            out.ignore(shown, claim.ignore)
            continue
        student = options.students.get(claim.user, "")
        if claim.problem or not student and options.roster_only:
            problem = claim.problem or (f"{layout.name} user {claim.user} is not on the "
                                        "roster, so this upload belongs to no student on it")
            out.missing.append(Missing("", shown, f"{shown}: {problem}; it was not graded"))
            continue
        student = student or f"{layout.name}-{claim.user}"
        if why:
            out.missing.append(Missing(student, rel, f"{rel}: {why}"))
        elif claim.folder and _is_dir(entry):
            _lms_folder(root, entry, student, claim.late, out)
        elif not claim.folder and _is_notebook(entry):
            out.found.append(Found(student, entry, rel, "", "", claim.late))
        else:
            out.ignore(shown, _stray_reason(entry))


def _lms_folder(root: Path, folder: Path, student: str, late: bool | None,
                out: Discovery) -> None:
    """A submission folder: every notebook in it, in sub-folders too (a file submission
    keeps the folders the student uploaded), to a depth of three."""
    before = len(out.found)
    _lms_walk(root, folder, student, late, out, 3)
    if len(out.found) == before:
        rel = folder.relative_to(root).as_posix()
        out.missing.append(Missing(student, rel + "/", f"{rel}/: no notebook (.ipynb) in "
                                   "this submission folder"))


def _lms_walk(root: Path, folder: Path, student: str, late: bool | None, out: Discovery,
              depth: int) -> None:
    for entry in _entries(folder):
        rel = entry.relative_to(root).as_posix()
        why = refusal(entry)
        if why:
            out.missing.append(Missing(student, rel, f"{rel}: {why}"))
        elif _is_notebook(entry) and not entry.name.startswith("._"):
            out.found.append(Found(student, entry, rel, "", "", late))
        elif _is_dir(entry) and depth > 1 and entry.name not in _WHY:
            _lms_walk(root, entry, student, late, out, depth - 1)
        else:
            out.ignore(rel + ("/" if _is_dir(entry) else ""), _stray_reason(entry))
