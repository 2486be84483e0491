"""Carry a progress log between machines as one line of text.

A Colab session forgets its files when it ends, and a learner may move between a laptop
and a lab machine. :func:`export_code` turns the events into a code the learner can
copy anywhere (a note, an e-mail to themselves); :func:`import_code` reads it back, and
``ProgressStore.merge`` adds only the events not already in the log, so importing the
same code twice, or codes from two machines, never counts anything twice.

Format, version 2::

    DTW2:<body>:<checksum>:<tag>

``body`` is the compact JSON list of events (``Event.to_dict``), compressed with zlib
and written in URL-safe base64 without padding (letters, digits, ``-`` and ``_``: it
survives copying, e-mail and URLs). ``checksum`` is the CRC-32 of the body text as 8
lower-case hex digits; it catches a code cut short or mistyped before anything is
decoded. ``tag`` is the HMAC of ``DTW2:<body>`` under the learner's progress key
(:mod:`autograder.progress.signing`): a code imports only where that key is in use, so a
code written by hand or made by someone else never imports. Version 1 codes carried no
tag and are refused.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Iterable
from typing import Any

from autograder.progress import signing
from autograder.progress.events import Event
from autograder.progress.location import data_folder

PREFIX = "DTW2"
#: A decoded code larger than this is refused (a guard against a zip bomb pasted in).
MAX_DECODED_BYTES = 8 * 1024 * 1024  # ~30,000 events; a real log holds far fewer
# A real event is a JSON object of a dozen fields (well over 100 bytes); a code packed with
# tiny objects or lists (``[{},{},...]``) would cost the parser ~20x its size in memory.
MIN_BYTES_PER_CONTAINER = 40

_COPY_AGAIN = "copy the whole code again, from the first 'D' to the last character"


class ProgressCodeError(ValueError):
    """A progress code cannot be read; the message says why and what to do."""


def _key(key: bytes | None) -> bytes:
    """``key``, or the learner's own (from the data folder) when None."""
    if key is not None:
        return key
    try:
        return signing.load_key(data_folder())
    except (signing.ProgressKeyError, OSError) as err:
        raise ProgressCodeError(f"the progress key cannot be used: {err}") from None


def export_code(events: Iterable[Event], key: bytes | None = None) -> str:
    """The events as a signed ``DTW2:...`` progress code (order preserved); ``key``: the
    learner's progress key (by default the one in their data folder)."""
    payload = json.dumps([event.to_dict() for event in events], separators=(",", ":"),
                         ensure_ascii=False).encode("utf-8")
    body = base64.urlsafe_b64encode(zlib.compress(payload, 9)).decode("ascii").rstrip("=")
    return f"{PREFIX}:{body}:{_checksum(body)}:{signing.tag(_key(key), f'{PREFIX}:{body}')}"


def import_code(code: str, key: bytes | None = None) -> list[Event]:
    """The events in a progress code signed with ``key`` (by default the learner's own);
    :class:`ProgressCodeError` if it is damaged or was signed with another key.

    Spaces, line breaks and surrounding quotes (which copying can add) are ignored.
    """
    body, claimed = _checked_body(code)
    if not signing.verify(_key(key), f"{PREFIX}:{body}", claimed):
        raise ProgressCodeError(
            "this code was not made with your progress key, so it cannot be imported here. "
            "A code imports only where the progress key of the machine that made it is in "
            "use: to move progress between your own machines, show the key there "
            "(wb.progress_key() in a notebook, `workbook progress-key` in a terminal) and "
            "use it here (wb.use_progress_key(KEY), `workbook progress-key KEY`), then "
            "import again. A code made by someone else, or written by hand, never "
            "imports.")
    payload = _decompress(_decode_base64(body))
    containers = payload.count(b"{") + payload.count(b"[")
    if containers > len(payload) // MIN_BYTES_PER_CONTAINER + 2:
        raise ProgressCodeError("the code is damaged: it does not hold workbook events — "
                                f"{_COPY_AGAIN}")
    try:
        data = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ProgressCodeError(f"the code is damaged: its contents are not readable "
                                f"({err}) — {_COPY_AGAIN}") from err
    return _events_from(data)


def _checksum(body: str) -> str:
    return f"{zlib.crc32(body.encode('ascii')) & 0xFFFFFFFF:08x}"


def _checked_body(code: str) -> tuple[str, str]:
    """Check prefix, parts and checksum; return the body text and the claimed tag."""
    if not isinstance(code, str):
        raise ProgressCodeError(f"a progress code is text, not {type(code).__name__}")
    text = "".join(code.split()).strip("'\"`")
    if not text:
        raise ProgressCodeError(f"the code is empty — {_COPY_AGAIN}")
    version = re.match(r"DTW(\d+):", text)
    if version and version.group(1) == "1":
        raise ProgressCodeError(
            "this code was made by an older version of the workbook, which did not sign "
            "its codes, so it cannot show that it is yours; export it again with this "
            "version on the machine that made it")
    newer = version
    if newer and newer.group(1) != PREFIX[3:]:
        raise ProgressCodeError(
            f"this code was made by a different version of the workbook (format "
            f"DTW{newer.group(1)}; this version reads {PREFIX}). Upgrade the workbook to "
            "import it.")
    if not text.startswith(PREFIX + ":"):
        raise ProgressCodeError(
            f"this is not a workbook progress code: a code starts with '{PREFIX}:'. "
            f"If it is one, {_COPY_AGAIN}.")
    parts = text.split(":")
    if len(parts) != 4 or not re.fullmatch(r"[0-9a-fA-F]{8}", parts[2]) \
            or not re.fullmatch(f"[0-9a-fA-F]{{{signing.TAG_HEX}}}", parts[3]):
        raise ProgressCodeError(f"the code is damaged or cut short: its checksum or "
                                f"signature is missing — {_COPY_AGAIN}")
    body, checksum = parts[1], parts[2].lower()
    if _checksum(body) != checksum:
        raise ProgressCodeError(f"the code is damaged: checksum mismatch — {_COPY_AGAIN}")
    return body, parts[3]


def _decode_base64(body: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", body):
        raise ProgressCodeError(f"the code is damaged: it holds characters a code never "
                                f"contains — {_COPY_AGAIN}")
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError) as err:
        raise ProgressCodeError(f"the code is damaged ({err}) — {_COPY_AGAIN}") from err


def _decompress(data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(data, MAX_DECODED_BYTES)
    except zlib.error as err:
        raise ProgressCodeError(f"the code is damaged: it does not decompress ({err}) — "
                                f"{_COPY_AGAIN}") from err
    if inflater.unconsumed_tail:
        raise ProgressCodeError("the code is too large to be a progress code "
                                f"(over {MAX_DECODED_BYTES // 2**20} MiB once decoded)")
    if not inflater.eof:
        raise ProgressCodeError(f"the code is damaged: it ends too early — {_COPY_AGAIN}")
    return payload


def _events_from(data: Any) -> list[Event]:
    if not isinstance(data, list):
        raise ProgressCodeError("the code is damaged: it does not hold a list of events — "
                                f"{_COPY_AGAIN}")
    events = []
    for number, item in enumerate(data, start=1):
        try:
            events.append(Event.from_dict(item))
        except (ValueError, TypeError) as err:
            raise ProgressCodeError(f"the code is damaged: event {number} is unreadable "
                                    f"({err}) — {_COPY_AGAIN}") from err
    return events
