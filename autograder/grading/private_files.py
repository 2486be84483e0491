"""Writing the grader's output: private to the instructor, complete or not there at all.

Grades and feedback pages hold every student's answers and, for a wrong one, the expected
value, so folders are created 0700 and files 0600 whatever the umask. Each file is written
under a temporary name in its own folder and renamed into place, so an interrupted run
or a full disk leaves the previous version (or nothing), never half a gradebook. (No
fsync per file: a power cut may lose a run, which is simply run again.)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) as 0700; refuse a symbolic link."""
    if path.is_symlink():
        raise OSError(f"{path} is a symbolic link; the grader writes only into real folders")
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=FOLDER_MODE, exist_ok=True)
        os.chmod(folder, FOLDER_MODE)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically, as a 0600 file."""
    fd, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as file:
            os.fchmod(file.fileno(), FILE_MODE)
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
