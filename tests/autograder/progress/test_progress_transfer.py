"""Progress codes: round trips, damaged codes, importing the same code twice, and codes
signed with another key (or none) that never import."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.progress import signing
from autograder.progress.events import Event
from autograder.progress.store import ProgressStore
from autograder.progress.transfer import ProgressCodeError
from autograder.progress.transfer import export_code as _export
from autograder.progress.transfer import import_code as _import

T0 = datetime(2025, 3, 1, 12, tzinfo=timezone.utc)
KEY = bytes(range(32))


def export_code(events) -> str:
    return _export(events, KEY)


def import_code(code: str) -> list[Event]:
    return _import(code, KEY)


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


def body_with_checksum(body: str, key: bytes = KEY) -> str:
    """A code whose checksum and tag match ``body``, to reach the checks after them."""
    tag = hmac.new(key, f"DTW2:{body}".encode(), hashlib.sha256).hexdigest()[:32]
    return f"DTW2:{body}:{zlib.crc32(body.encode()) & 0xFFFFFFFF:08x}:{tag}"


def encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


def test_round_trip_keeps_every_field_and_the_order() -> None:
    code = export_code(EVENTS)
    assert import_code(code) == EVENTS
    # One line of URL-safe characters, safe to paste anywhere.
    assert re.fullmatch(r"DTW2:[A-Za-z0-9_-]+:[0-9a-f]{8}:[0-9a-f]{32}", code)


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
        import_code(b"DTW2:abc:00000000:" + b"0" * 32)  # type: ignore[arg-type]


def test_a_code_from_another_format_version() -> None:
    with pytest.raises(ProgressCodeError, match="DTW3.*Upgrade"):
        import_code("DTW3:abcd:00000000")


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


def _mastered_everything() -> str:
    """What a forger writes: a correct check of every exercise on five days each."""
    events = [event(n, exercise_id=f"{n // 10}.{n % 10 + 1}", local_date=f"2025-03-0{d}",
                    utc=T0 + timedelta(days=d, minutes=n), variant={"seed": d},
                    uid=f"{n:016x}{d:016x}")
              for n in range(58) for d in range(1, 6)]
    return json.dumps([e.to_dict() for e in events], separators=(",", ":"))


def test_a_code_written_by_hand_does_not_import() -> None:
    """A forger who knows the format but not the learner's key: checksum right, tag made
    up (or made with a key of their own)."""
    body = encode(_mastered_everything().encode())
    crc = f"{zlib.crc32(body.encode()) & 0xFFFFFFFF:08x}"
    for forged in (f"DTW2:{body}:{crc}:{'0' * 32}", body_with_checksum(body, b"x" * 32)):
        with pytest.raises(ProgressCodeError, match="not made with your progress key"):
            import_code(forged)


def test_a_code_made_with_another_key_does_not_import() -> None:
    code = _export(EVENTS, b"\x01" * 32)
    with pytest.raises(ProgressCodeError, match="not made with your progress key"):
        import_code(code)
    assert _import(code, b"\x01" * 32) == EVENTS  # with that key in use, it does


def test_an_unsigned_code_of_the_first_format_does_not_import() -> None:
    body = encode(_mastered_everything().encode())
    with pytest.raises(ProgressCodeError, match="did not sign"):
        import_code(f"DTW1:{body}:{zlib.crc32(body.encode()) & 0xFFFFFFFF:08x}")


def test_a_changed_event_breaks_the_signature() -> None:
    code = export_code(EVENTS)
    prefix, body, _, tag = code.split(":")
    payload = json.loads(zlib.decompress(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))))
    payload[1]["status"] = "correct"
    changed = encode(json.dumps(payload).encode())
    crc = f"{zlib.crc32(changed.encode()) & 0xFFFFFFFF:08x}"
    with pytest.raises(ProgressCodeError, match="not made with your progress key"):
        import_code(f"{prefix}:{changed}:{crc}:{tag}")


def test_the_key_is_made_once_private_and_carried_by_its_text(tmp_path: Path) -> None:
    first = signing.load_key(tmp_path / "a")
    assert signing.load_key(tmp_path / "a") == first and len(first) == 32
    assert (signing.key_path(tmp_path / "a").stat().st_mode & 0o777) == 0o600
    assert signing.load_key(tmp_path / "b") != first  # another machine, another key
    signing.use_key(tmp_path / "b", f"  '{signing.key_text(first)}'\n")
    assert signing.load_key(tmp_path / "b") == first
    code = _export(EVENTS, signing.load_key(tmp_path / "a"))
    assert _import(code, signing.load_key(tmp_path / "b")) == EVENTS
    with pytest.raises(signing.ProgressKeyError):
        signing.use_key(tmp_path / "b", "DTWK-1234")
