"""Find the notebooks in a submissions folder, in either of the two layouts instructors use.

    SUBMISSIONS/<student>/<notebook>.ipynb                 collected by hand or by an LMS
    SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb    nbgrader's ``submitted/`` folder

The folder given is always the folder of student folders: a student folder that happens
to be called ``submitted`` is a student (an nbgrader course is graded only when the
instructor says so, :func:`course_submissions`). Which chapter a notebook is comes from
its metadata later, never from these names; the assignment folder is kept only to notice
a notebook filed under the wrong assignment. Hidden files, Jupyter checkpoints and
nbgrader's ``timestamp.txt`` are skipped silently; other files that are not notebooks are
listed as ignored. A student folder without any notebook is a problem to report.

Nothing here follows a symbolic link or opens anything but a folder: a symlinked student
folder, assignment folder or notebook, and a ``.ipynb`` that is not a regular file (a
FIFO, a device), become refused rows that say why, so that a submission can neither point
the grader (running with the instructor's rights) at other files nor make it block.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

NOTEBOOK_SUFFIX = ".ipynb"
_SILENT = {".ipynb_checkpoints", "__pycache__", "timestamp.txt", "Thumbs.db"}


@dataclass(frozen=True)
class Found:
    """A notebook to grade."""

    student: str
    path: Path
    rel: str              # path relative to the submissions folder, for messages
    assignment: str = ""  # the nbgrader assignment folder, "" in the flat layout


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


def _skipped(path: Path) -> bool:
    return path.name.startswith(".") or path.name in _SILENT


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted((p for p in folder.iterdir() if not _skipped(p)), key=lambda p: p.name)
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


def refusal(path: Path) -> str:
    """Why an entry is refused outright ("" when it is an ordinary folder or file)."""
    mode = _mode(path)
    if stat.S_ISLNK(mode):
        return "a symbolic link; the grader does not follow links (submit the file itself)"
    if mode and not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        return "not a regular file (a device, pipe or socket); it was not opened"
    return ""


def course_submissions(course: Path) -> Path:
    """The student folders of an nbgrader course folder: ``course/submitted``."""
    return course / "submitted"


def discover(folder: Path) -> Discovery:
    """Every notebook under ``folder``, every student folder without one, every stray file."""
    root = folder
    out = Discovery()
    for entry in _entries(root):
        rel = entry.relative_to(root).as_posix()
        why = refusal(entry)
        if why:
            out.missing.append(Missing(entry.name, rel, f"{rel}: {why}"))
        elif _is_dir(entry):
            _student(root, entry, out)
        elif _is_notebook(entry):
            out.missing.append(Missing("", rel, f"{rel}: a notebook outside any student "
                                       "folder; put it in SUBMISSIONS/<student>/"))
        else:
            out.ignored.append(rel)
    return out


def _student(root: Path, folder: Path, out: Discovery) -> None:
    student, before, reported = folder.name, len(out.found), len(out.missing)
    strays: list[str] = []
    for entry in _entries(folder):
        rel = entry.relative_to(root).as_posix()
        why = refusal(entry)
        if why:
            out.missing.append(Missing(student, rel, f"{rel}: {why}"))
        elif _is_notebook(entry):
            out.found.append(Found(student, entry, rel))
        elif _is_dir(entry):
            _assignment(root, student, entry, out, strays)
        else:
            strays.append(rel)
    out.ignored.extend(strays)
    if len(out.found) == before and len(out.missing) == reported:
        seen = f" (found only: {', '.join(strays[:5])})" if strays else ""
        out.missing.append(Missing(student, f"{student}/", f"{student}/: no notebook "
                                   f"(.ipynb) in this student's folder{seen}"))


def _assignment(root: Path, student: str, folder: Path, out: Discovery,
                strays: list[str]) -> None:
    notebooks = [e for e in _entries(folder) if _is_notebook(e)]
    for entry in _entries(folder):
        why = refusal(entry)
        if why:
            rel = entry.relative_to(root).as_posix()
            out.missing.append(Missing(student, rel, f"{rel}: {why}", folder.name))
        elif not _is_notebook(entry):
            strays.append(entry.relative_to(root).as_posix() + ("/" if _is_dir(entry) else ""))
    rel = folder.relative_to(root).as_posix()
    for notebook in notebooks:
        out.found.append(Found(student, notebook, notebook.relative_to(root).as_posix(),
                               folder.name))
    if not notebooks:
        out.missing.append(Missing(student, rel + "/", f"{rel}/: no notebook (.ipynb) in "
                                   "this assignment folder", folder.name))
