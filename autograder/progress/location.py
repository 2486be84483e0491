"""Where the progress log lives.

On a learner's own machine the log goes in the per-user data folder that the operating
system expects (``~/.local/share/...`` on Linux, ``~/Library/Application Support/...``
on macOS, ``%LOCALAPPDATA%\\...`` on Windows), found with ``platformdirs``. Setting
``WORKBOOK_HOME`` moves it anywhere, e.g. into a synced folder or a class share.

Google Colab is different: its virtual machine, and every file on it, is deleted when
the session ends. There the learner either keeps the log on their Google Drive
(:func:`drive_store_path`) or carries it between sessions as a text code
(:mod:`autograder.progress.transfer`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: The application name: the data folder's name and the ``app`` entry of the log.
APP_NAME = "distributed-training-workbook"
#: The log's file name inside whichever folder holds it.
FILE_NAME = "progress.sqlite3"
#: Environment variable naming the folder that holds the log (overrides the default).
HOME_ENV = "WORKBOOK_HOME"
#: Where ``google.colab.drive.mount`` mounts Drive by convention.
COLAB_DRIVE_MOUNT = "/content/drive"

MOUNT_HELP = (
    "Mount your Google Drive first by running, in a notebook cell:\n"
    "    from google.colab import drive; drive.mount('/content/drive')\n"
    "then try again."
)


class ProgressFolderError(OSError):
    """The folder for the progress log cannot be created; the message says what to do."""


def make_folder(folder: Path) -> None:
    """Create the log's folder, or raise :class:`ProgressFolderError` saying why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        why = err.strerror or type(err).__name__
        raise ProgressFolderError(
            f"cannot create the progress folder {folder} ({why}); set {HOME_ENV} to a "
            "folder you may write to. Checking still works; progress is not saved.") from None


class DriveNotMountedError(RuntimeError):
    """Google Drive is not mounted where the progress log should go."""


def data_folder() -> Path:
    """The learner's data folder: ``$WORKBOOK_HOME`` (surrounding spaces ignored), else
    the per-user data folder of this operating system. Not created here.

    Everything the workbook keeps for a learner lives under it: the progress log here,
    rendered narration audio in ``narration/`` (the workbook passes it to the narration
    package, which does not know this folder on its own).
    """
    home = os.environ.get(HOME_ENV, "").strip()
    if home:
        return Path(home).expanduser()
    # Imported here so that importing this package stays quick when the path is given
    # explicitly. appauthor=False: no vendor sub-folder on Windows.
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_log_path() -> Path:
    """The log's path: ``progress.sqlite3`` in :func:`data_folder`, which is created if
    it does not exist yet (:class:`ProgressFolderError`, saying what to do, if it cannot
    be)."""
    folder = data_folder()
    make_folder(folder)
    return folder / FILE_NAME


def in_colab() -> bool:
    """True inside Google Colab (its module is loaded, or its runtime variable is set)."""
    return "google.colab" in sys.modules or bool(os.environ.get("COLAB_RELEASE_TAG"))


def drive_store_path(mount: str | os.PathLike[str] = COLAB_DRIVE_MOUNT) -> Path:
    """The log's path on a mounted Google Drive: ``MyDrive/distributed-training-workbook/``.

    Raises :class:`DriveNotMountedError`, saying how to mount Drive, when ``mount``
    holds no ``MyDrive`` folder. The workbook folder on Drive is created if needed.
    """
    my_drive = Path(mount) / "MyDrive"
    if not my_drive.is_dir():
        raise DriveNotMountedError(
            f"Google Drive is not mounted at {Path(mount)} (no {my_drive} folder), so the "
            f"progress log cannot be kept there.\n{MOUNT_HELP}"
        )
    folder = my_drive / APP_NAME
    folder.mkdir(exist_ok=True)
    return folder / FILE_NAME


def describe_location(path: str | os.PathLike[str]) -> str:
    """One sentence for the learner about where their progress is kept and for how long."""
    where = Path(path)
    if in_colab() and not str(where).startswith(str(Path(COLAB_DRIVE_MOUNT))):
        return (
            f"Progress is saved to {where}, which Colab deletes when this session ends. "
            "Keep it with drive_store_path() on Google Drive, or copy an export code."
        )
    return f"Progress is saved to {where}."
