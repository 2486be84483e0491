"""The sandbox's own tests again, as an ordinary user, when the suite runs as root (CI).

Most instructors are not root: bubblewrap then runs in a user namespace, jobs keep the
grader's uid, and every wall must hold all the same. Root runs the sandbox test files as
``nobody`` (``setpriv``); the interpreter of this project may sit under a folder closed to
others (``/root``), so in a private mount namespace that folder is covered by an open,
empty one with the interpreter's installation bound back into it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FILES = ["tests/autograder/sandbox/test_sandbox_world.py",
         "tests/autograder/sandbox/test_sandbox_diagnose.py",
         "tests/autograder/sandbox/test_sandbox_hostile.py",
         "tests/autograder/sandbox/test_sandbox_pool.py",
         "tests/autograder/sandbox/test_rank_host_walls.py",
         "tests/autograder/sandbox/test_kernel_objects.py",
         "tests/autograder/sandbox/test_job_footprint.py"]
NOBODY = 65534

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox"),
    pytest.mark.skipif(os.geteuid() != 0, reason="not root: the sandbox tests already run "
                                                 "as an ordinary user"),
    pytest.mark.skipif(not (shutil.which("unshare") and shutil.which("setpriv")),
                       reason="needs unshare and setpriv (util-linux)"),
]


def _closed_folder(path: str) -> str | None:
    """The first folder above ``path`` that others cannot enter, or None."""
    parts = Path(os.path.realpath(path)).parts
    for i in range(2, len(parts)):
        folder = Path(*parts[:i])
        if not os.stat(folder).st_mode & 0o001:
            return str(folder)
    return None


def _script(home: str) -> str:
    """Shell run in a private mount namespace: open the closed folder, drop to nobody."""
    lines = ["set -e", "mount --make-rprivate /"]
    closed = _closed_folder(sys.base_prefix)
    if closed is not None:
        keep = os.path.relpath(os.path.realpath(sys.base_prefix), closed).split("/")[0]
        lines += [f"mkdir -p {home}/keep", f"mount --rbind {closed}/{keep} {home}/keep",
                  f"mount -t tmpfs -o mode=0755 tmpfs {closed}",
                  f"mkdir -p {closed}/{keep}", f"mount --rbind {home}/keep {closed}/{keep}"]
    python = os.path.join(sys.prefix, "bin", "python")
    lines.append(f"cd {ROOT} && exec setpriv --reuid={NOBODY} --regid={NOBODY} "
                 f"--clear-groups env HOME={home} TMPDIR=/tmp {python} -m pytest -q "
                 f"-rs -p no:cacheprovider {' '.join(FILES)}")
    return "\n".join(lines)


def test_the_sandbox_holds_for_an_ordinary_user() -> None:
    home = tempfile.mkdtemp(prefix="wb-nobody-")
    os.chmod(home, 0o755)
    os.chown(home, NOBODY, NOBODY)
    try:
        done = subprocess.run(["unshare", "-m", "sh", "-c", _script(home)],
                              capture_output=True, text=True, timeout=600, check=False)
    finally:
        subprocess.run(["rm", "-rf", home], check=False)
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip(f"no mount namespace for the test itself: {done.stderr.strip()[-200:]}")
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, tail
    assert " passed" in done.stdout and "failed" not in done.stdout, tail
    # bubblewrap works as this user: none of its walls were skipped for want of it
    assert "bubblewrap does not work here" not in done.stdout, tail
