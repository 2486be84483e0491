"""Find the notebooks in a submissions folder, in either of the two layouts instructors use.

    SUBMISSIONS/<student>/<notebook>.ipynb                 collected by hand or by an LMS
    SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb    nbgrader's ``submitted/`` folder

An nbgrader course folder (holding ``submitted/``) is accepted too. Which chapter a
notebook is comes from its metadata later, never from these names; the assignment folder
is kept only to notice a notebook filed under the wrong assignment. Hidden files, Jupyter
checkpoints and nbgrader's ``timestamp.txt`` are skipped silently; other files that are
not notebooks are listed as ignored. A student folder without any notebook is a problem
to report, not something to skip.
"""

from __future__ import annotations

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


def _is_notebook(path: Path) -> bool:
    return path.suffix.lower() == NOTEBOOK_SUFFIX and path.is_file()


def submissions_root(folder: Path) -> Path:
    """The folder holding the student folders (an nbgrader course's ``submitted/``)."""
    nested = folder / "submitted"
    return nested if nested.is_dir() else folder


def discover(folder: Path) -> Discovery:
    """Every notebook under ``folder``, every student folder without one, every stray file."""
    root = submissions_root(folder)
    out = Discovery()
    for entry in _entries(root):
        rel = entry.relative_to(root).as_posix()
        if entry.is_dir():
            _student(root, entry, out)
        elif _is_notebook(entry):
            out.missing.append(Missing("", rel, f"{rel}: a notebook outside any student "
                                       "folder; put it in SUBMISSIONS/<student>/"))
        else:
            out.ignored.append(rel)
    return out


def _student(root: Path, folder: Path, out: Discovery) -> None:
    student, before = folder.name, len(out.found)
    strays: list[str] = []
    for entry in _entries(folder):
        rel = entry.relative_to(root).as_posix()
        if _is_notebook(entry):
            out.found.append(Found(student, entry, rel))
        elif entry.is_dir():
            _assignment(root, student, entry, out, strays)
        else:
            strays.append(rel)
    out.ignored.extend(strays)
    if len(out.found) == before and not _has_assignment_message(out, student):
        seen = f" (found only: {', '.join(strays[:5])})" if strays else ""
        out.missing.append(Missing(student, f"{student}/", f"{student}/: no notebook "
                                   f"(.ipynb) in this student's folder{seen}"))


def _assignment(root: Path, student: str, folder: Path, out: Discovery,
                strays: list[str]) -> None:
    notebooks = [e for e in _entries(folder) if _is_notebook(e)]
    for entry in _entries(folder):
        if not _is_notebook(entry):
            strays.append(entry.relative_to(root).as_posix() + ("/" if entry.is_dir() else ""))
    rel = folder.relative_to(root).as_posix()
    for notebook in notebooks:
        out.found.append(Found(student, notebook, notebook.relative_to(root).as_posix(),
                               folder.name))
    if not notebooks:
        out.missing.append(Missing(student, rel + "/", f"{rel}/: no notebook (.ipynb) in "
                                   "this assignment folder", folder.name))


def _has_assignment_message(out: Discovery, student: str) -> bool:
    return any(m.student == student and m.assignment for m in out.missing)
