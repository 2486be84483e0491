"""The learner's progress key: what signs a progress code, so that only the learner's own
codes import.

A progress code (:mod:`autograder.progress.transfer`) carries the learner's events; anyone
could write one by hand that says every exercise was mastered. So each code carries an
HMAC-SHA256 tag made with a key that lives in the learner's data folder
(``progress.key``, created at random on first use, readable by its owner only), and a code
imports only where the same key is in use. A code found on the web, made by a classmate or
written by hand does not import anywhere else.

Moving progress between one's own machines means carrying the key once: :func:`key_text`
shows it (``DTWK-`` and 64 hex digits), :func:`use_key` puts it in place on the other
machine (``workbook.progress_key()`` and ``workbook.use_progress_key(...)`` in a notebook).

What it does not do: the key is in the learner's own folder, as is the log itself, so a
learner who sets out to edit their own files can still write whatever they like. The log
is a self-record: mastery and streaks are for the learner, and grading never reads it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

KEY_FILE = "progress.key"
KEY_PREFIX = "DTWK-"
KEY_BYTES = 32
TAG_HEX = 32  # 128 bits of the HMAC: far beyond guessing, short enough to copy


class ProgressKeyError(ValueError):
    """A progress key cannot be read or used; the message says why."""


def key_path(folder: Path) -> Path:
    return folder / KEY_FILE


def load_key(folder: Path) -> bytes:
    """The key in ``folder``, made (at random, mode 0600) if there is none yet. Two
    processes making it at once end with the same key: only one file is ever created."""
    path = key_path(folder)
    try:
        return parse_key(path.read_text(encoding="ascii"))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as err:
        raise ProgressKeyError(f"the progress key {path} cannot be read ({err})") from None
    folder.mkdir(parents=True, exist_ok=True)
    fresh = key_text(secrets.token_bytes(KEY_BYTES))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return parse_key(path.read_text(encoding="ascii"))
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(fresh + "\n")
    return parse_key(fresh)


def key_text(key: bytes) -> str:
    """The key as the learner copies it."""
    return KEY_PREFIX + key.hex()


def parse_key(text: str) -> bytes:
    """A key from its text (:func:`key_text`); spaces and quotes around it are ignored."""
    cleaned = "".join(str(text).split()).strip("'\"`")
    if not re.fullmatch(re.escape(KEY_PREFIX) + r"[0-9a-fA-F]{64}", cleaned):
        raise ProgressKeyError(f"not a progress key: a key is {KEY_PREFIX} followed by "
                               "64 hexadecimal digits; copy it again whole")
    return bytes.fromhex(cleaned[len(KEY_PREFIX):])


def use_key(folder: Path, text: str) -> Path:
    """Put the key ``text`` in place in ``folder`` (replacing the one there, atomically);
    returns the key file's path. Events already in the log stay as they are."""
    key = parse_key(text)
    folder.mkdir(parents=True, exist_ok=True)
    path = key_path(folder)
    temporary = folder / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(key_text(key) + "\n")
    os.replace(temporary, path)
    return path


def tag(key: bytes, text: str) -> str:
    """The tag of ``text`` under ``key`` (hex)."""
    return hmac.new(key, text.encode("ascii"), hashlib.sha256).hexdigest()[:TAG_HEX]


def verify(key: bytes, text: str, claimed: str) -> bool:
    return hmac.compare_digest(tag(key, text), claimed.lower())
