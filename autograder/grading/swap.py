"""Replace a whole output folder at once: a regrade never mixes with the previous run.

The new gradebook is written into a private temporary folder beside ``--out``; when it is
complete the two are exchanged in one step (Linux ``renameat2(RENAME_EXCHANGE)``; where that
is missing, two renames a moment apart) and the previous run is deleted. A reader sees the
old folder or the new one, never a mixture, and stale feedback pages cannot survive.

Only an empty folder or a previous gradebook is ever replaced: a folder holding anything
else (you pointed ``--out`` at your home folder) is refused before grading starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import tempfile
from pathlib import Path

from autograder.grading.private_files import FOLDER_MODE, make_private_dir

# What a gradebook folder holds (an older one: totals_canvas.csv), LMS imports included.
OUTPUT_ENTRIES = frozenset({"grades.csv", "grades.json", "totals.csv", "totals_canvas.csv",
                            "canvas_import.csv", "moodle_grading_worksheet.csv",
                            "canvas_feedback.zip", "moodle_feedback.zip",
                            "class_report.csv", "class_report.html", "feedback"})
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def replace_problem(out: Path) -> str:
    """Why ``out`` may not be replaced by a new gradebook ("" when it may)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        return f"--out {out} exists and is not a folder"
    if not out.exists():
        return ""
    try:
        entries = {entry.name for entry in out.iterdir()}
    except OSError as error:
        return f"--out {out} cannot be read ({error.strerror})"
    strangers = sorted(entries - OUTPUT_ENTRIES)
    if strangers:
        return (f"--out {out} holds files that are not a gradebook ({', '.join(strangers[:3])}"
                f"{', ...' if len(strangers) > 3 else ''}); a regrade replaces the whole "
                "folder, so give a new or empty folder, or a previous gradebook")
    return ""


def new_folder(out: Path) -> Path:
    """A private temporary folder beside ``out`` to write the new gradebook into."""
    make_private_dir(out.parent)
    folder = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    os.chmod(folder, FOLDER_MODE)
    return folder


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically; False where the system cannot."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        rename = libc.renameat2
    except (OSError, AttributeError):
        return False
    rename.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                       ctypes.c_uint]
    status: int = rename(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return status == 0


def swap_in(new: Path, out: Path) -> None:
    """Put the finished ``new`` folder in the place of ``out`` and delete the old one."""
    if not out.exists():
        os.rename(new, out)
        return
    if not _exchange(new, out):
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / "previous")
        os.rename(new, out)
        new = old
    shutil.rmtree(new, ignore_errors=True)


def discard(new: Path) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(new)
