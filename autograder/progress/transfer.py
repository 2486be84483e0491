"""Carry a progress log between machines as one line of text.

A Colab session forgets its files when it ends, and a learner may move between a laptop
and a lab machine. :func:`export_code` turns the events into a code the learner can
copy anywhere (a note, an e-mail to themselves); :func:`import_code` reads it back, and
``ProgressStore.merge`` adds only the events not already in the log, so importing the
same code twice, or codes from two machines, never counts anything twice.

Format, version 1::

    DTW1:<body>:<checksum>

``body`` is the compact JSON list of events (``Event.to_dict``), compressed with zlib
and written in URL-safe base64 without padding (letters, digits, ``-`` and ``_``: it
survives copying, e-mail and URLs). ``checksum`` is the CRC-32 of the body text as 8
lower-case hex digits; it catches a code cut short or mistyped before anything is
decoded. The checksum guards against accidents, not forgery: the log is the learner's
own record and is not used for grading.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Iterable
from typing import Any

from autograder.progress.events import Event

PREFIX = "DTW1"
#: A decoded code larger than this is refused (a guard against a zip bomb pasted in).
MAX_DECODED_BYTES = 8 * 1024 * 1024  # ~30,000 events; a real log holds far fewer
# A real event is a JSON object of a dozen fields (well over 100 bytes); a code packed with
# tiny objects or lists (``[{},{},...]``) would cost the parser ~20x its size in memory.
MIN_BYTES_PER_CONTAINER = 40

_COPY_AGAIN = "copy the whole code again, from the first 'D' to the last character"


class ProgressCodeError(ValueError):
    """A progress code cannot be read; the message says why and what to do."""


def export_code(events: Iterable[Event]) -> str:
    """The events as a ``DTW1:...`` progress code (order preserved)."""
    payload = json.dumps([event.to_dict() for event in events], separators=(",", ":"),
                         ensure_ascii=False).encode("utf-8")
    body = base64.urlsafe_b64encode(zlib.compress(payload, 9)).decode("ascii").rstrip("=")
    return f"{PREFIX}:{body}:{_checksum(body)}"


def import_code(code: str) -> list[Event]:
    """The events in a progress code; :class:`ProgressCodeError` if it is damaged.

    Spaces, line breaks and surrounding quotes (which copying can add) are ignored.
    """
    body = _checked_body(code)
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


def _checked_body(code: str) -> str:
    """Check prefix, parts and checksum; return the body text."""
    if not isinstance(code, str):
        raise ProgressCodeError(f"a progress code is text, not {type(code).__name__}")
    text = "".join(code.split()).strip("'\"`")
    if not text:
        raise ProgressCodeError(f"the code is empty — {_COPY_AGAIN}")
    newer = re.match(r"DTW(\d+):", text)
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
    if len(parts) != 3 or not re.fullmatch(r"[0-9a-fA-F]{8}", parts[2]):
        raise ProgressCodeError(f"the code is damaged or cut short: its checksum is missing "
                                f"— {_COPY_AGAIN}")
    body, checksum = parts[1], parts[2].lower()
    if _checksum(body) != checksum:
        raise ProgressCodeError(f"the code is damaged: checksum mismatch — {_COPY_AGAIN}")
    return body


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
