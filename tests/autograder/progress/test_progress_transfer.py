"""Progress codes: round trips, damaged codes, and importing the same code twice."""

from __future__ import annotations

import base64
import re
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.progress.events import Event
from autograder.progress.store import ProgressStore
from autograder.progress.transfer import ProgressCodeError, export_code, import_code

T0 = datetime(2025, 3, 1, 12, tzinfo=timezone.utc)


def event(n: int, **overrides) -> Event:
    fields = dict(
        uid=f"{n:032x}", action="check", exercise_id="2.3", variant=None, answer="24 GB",
        status="correct", score=1.0, hints_used=1, solution_viewed=False,
        utc=T0 + timedelta(hours=n), local_date="2025-03-01", tz="Asia/Tokyo",
    )
    fields.update(overrides)
    return Event(**fields)


EVENTS = [
    event(1),
    event(2, variant={"N": 16, "M_GB": 7}, status="wrong", score=0.0, answer="ünïcødé 🚀"),
    event(3, action="prediction", exercise_id="ch05/predict", status="", score=0.0,
          value='{"answer": "B", "confidence": 0.7}'),
    event(4, action="solution", status="", score=0.0, solution_viewed=True),
]


def body_with_checksum(body: str) -> str:
    """A code whose checksum matches ``body``, to reach the checks after the checksum."""
    return f"DTW1:{body}:{zlib.crc32(body.encode()) & 0xFFFFFFFF:08x}"


def encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


def test_round_trip_keeps_every_field_and_the_order() -> None:
    code = export_code(EVENTS)
    assert import_code(code) == EVENTS
    # One line of URL-safe characters, safe to paste anywhere.
    assert re.fullmatch(r"DTW1:[A-Za-z0-9_-]+:[0-9a-f]{8}", code)


def test_an_empty_log_round_trips() -> None:
    assert import_code(export_code([])) == []


def test_spaces_line_breaks_and_quotes_from_copying_are_ignored() -> None:
    code = export_code(EVENTS)
    wrapped = "\n".join(code[i:i + 40] for i in range(0, len(code), 40))
    assert import_code(f'  "{wrapped}"\n') == EVENTS


def test_a_truncated_code_asks_for_the_whole_code() -> None:
    code = export_code(EVENTS)
    for cut in (len(code) - 1, len(code) - 9, len(code) // 2, 6):
        with pytest.raises(ProgressCodeError, match="copy the whole code"):
            import_code(code[:cut])


def test_a_changed_character_is_a_checksum_mismatch() -> None:
    code = export_code(EVENTS)
    position = 20
    swapped = "A" if code[position] != "A" else "B"
    damaged = code[:position] + swapped + code[position + 1:]
    with pytest.raises(ProgressCodeError, match="checksum mismatch"):
        import_code(damaged)


def test_not_a_code_at_all() -> None:
    with pytest.raises(ProgressCodeError, match="not a workbook progress code"):
        import_code("hello world")
    with pytest.raises(ProgressCodeError, match="empty"):
        import_code("   ")
    with pytest.raises(ProgressCodeError, match="text"):
        import_code(b"DTW1:abc:00000000")  # type: ignore[arg-type]


def test_a_code_from_another_format_version() -> None:
    with pytest.raises(ProgressCodeError, match="DTW2.*Upgrade"):
        import_code("DTW2:abcd:00000000")


@pytest.mark.parametrize("body, message", [
    ("not*base64", "characters a code never contains"),
    (encode(b"[1, 2]")[:-4], "does not decompress|ends too early"),
    ("QUJD", "does not decompress"),  # base64 of b"ABC": not zlib data
    (encode(b"\xff\xfe"), "not readable"),
    (encode(b'{"events": []}'), "list of events"),
    (encode(b'[{"uid": "x"}]'), "event 1 is unreadable"),
])
def test_damage_behind_a_valid_checksum_is_still_caught(body: str, message: str) -> None:
    with pytest.raises(ProgressCodeError, match=message):
        import_code(body_with_checksum(body))


def test_the_error_is_a_value_error() -> None:
    assert issubclass(ProgressCodeError, ValueError)


def test_importing_a_code_twice_adds_nothing_the_second_time(tmp_path: Path) -> None:
    laptop = ProgressStore(tmp_path / "laptop.sqlite3")
    for e in EVENTS[:2]:
        laptop.append(e)
    colab = ProgressStore(tmp_path / "colab.sqlite3")
    for e in EVENTS[1:]:
        colab.append(e)
    code = export_code(colab.events())
    # The laptop already has events 1 and 2; the code holds 2, 3 and 4: 2 new ones.
    assert laptop.merge(import_code(code)) == 2
    assert laptop.merge(import_code(code)) == 0
    assert laptop.events() == EVENTS
