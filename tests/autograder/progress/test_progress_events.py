"""The Event record: what it accepts, how it fills in time, how it round-trips."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.progress.events import MAX_ANSWER_CHARS, Event, offset_text

# 2025-03-02 07:30 UTC is 23:30 on 2025-03-01 in Los Angeles (PST = UTC-8).
LATE_EVENING_LA = datetime(2025, 3, 2, 7, 30, tzinfo=timezone.utc)


def fixed_clock(moment: datetime):
    return lambda: moment


def make(**overrides) -> Event:
    fields = dict(
        uid="a" * 32, action="check", exercise_id="0.1", variant=None, answer="2 GB",
        status="correct", score=1.0, hints_used=0, solution_viewed=False,
        utc=datetime(2025, 3, 1, 12, tzinfo=timezone.utc), local_date="2025-03-01", tz="UTC",
    )
    fields.update(overrides)
    return Event(**fields)


def test_now_uses_the_learners_zone_for_the_local_date() -> None:
    event = Event.now("check", "0.1", status="correct", score=1.0,
                      clock=fixed_clock(LATE_EVENING_LA), tz="America/Los_Angeles")
    assert event.utc == LATE_EVENING_LA
    assert event.local_date == "2025-03-01"  # the UTC date is already the 2nd
    assert event.tz == "America/Los_Angeles"
    assert len(event.uid) == 32 and int(event.uid, 16) >= 0


def test_now_with_a_fixed_offset_records_the_offset() -> None:
    india = timezone(timedelta(hours=5, minutes=30))
    # 20:00 UTC + 5:30 = 01:30 the next day.
    event = Event.now("hint", "3.2", clock=fixed_clock(datetime(2025, 3, 1, 20,
                                                               tzinfo=timezone.utc)), tz=india)
    assert (event.local_date, event.tz) == ("2025-03-02", "+05:30")
    utc_event = Event.now("hint", "3.2", clock=fixed_clock(LATE_EVENING_LA), tz=timezone.utc)
    assert (utc_event.local_date, utc_event.tz) == ("2025-03-02", "UTC")


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="time.tzset is POSIX only")
def test_now_defaults_to_the_system_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        # 20:00 UTC is 01:30 the next day in India (UTC+5:30, no daylight saving).
        event = Event.now("check", "0.1", status="wrong",
                          clock=fixed_clock(datetime(2025, 3, 1, 20, tzinfo=timezone.utc)))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert (event.local_date, event.tz) == ("2025-03-02", "Asia/Kolkata")


def test_now_rejects_a_naive_clock_and_an_unknown_zone() -> None:
    with pytest.raises(ValueError, match="aware"):
        Event.now("check", "0.1", status="wrong", clock=lambda: datetime(2025, 3, 1))
    with pytest.raises(ValueError, match="unknown time zone"):
        Event.now("check", "0.1", status="wrong", tz="Mars/Olympus_Mons")


def test_offset_text() -> None:
    assert offset_text(timedelta(hours=-8)) == "-08:00"
    assert offset_text(timedelta(hours=5, minutes=45)) == "+05:45"
    assert offset_text(None) == "+00:00"


def test_utc_is_normalised_and_long_answers_are_cut() -> None:
    paris = timezone(timedelta(hours=1))
    event = make(utc=datetime(2025, 3, 1, 13, tzinfo=paris), answer="x" * 5000)
    assert event.utc == datetime(2025, 3, 1, 12, tzinfo=timezone.utc)
    assert event.utc.tzinfo is timezone.utc
    assert len(event.answer) == MAX_ANSWER_CHARS == 2000
    assert event.day == date(2025, 3, 1)


def test_variant_is_copied_and_stored_as_json() -> None:
    params = {"N": 8, "sizes": (1, 2)}
    event = make(variant=params)
    params["N"] = 16
    assert event.variant == {"N": 8, "sizes": [1, 2]}  # a tuple comes back as a JSON list


def test_numpy_numbers_in_a_variant_become_plain_numbers() -> None:
    np = pytest.importorskip("numpy")
    event = make(variant={"N": np.int64(8), "M_GB": np.float32(0.5), "dims": np.arange(3)})
    assert event.variant == {"N": 8, "M_GB": 0.5, "dims": [0, 1, 2]}
    assert type(event.variant["N"]) is int


@pytest.mark.parametrize("overrides, message", [
    ({"action": "peek"}, "action"),
    ({"action": "check", "status": ""}, "status"),
    ({"action": "check", "status": "invalid"}, "status"),
    ({"action": "hint", "status": "correct"}, "status"),
    ({"score": 1.5}, "score"),
    ({"score": float("nan")}, "score"),
    ({"hints_used": -1}, "hints_used"),
    ({"hints_used": 1.0}, "hints_used"),
    ({"solution_viewed": 1}, "solution_viewed"),
    ({"utc": datetime(2025, 3, 1)}, "aware"),
    ({"local_date": "2025/03/01"}, "local_date"),
    ({"local_date": "20250301"}, "local_date"),
    ({"exercise_id": ""}, "exercise_id"),
    ({"uid": ""}, "uid"),
    ({"variant": {"f": object()}}, "JSON"),
    ({"variant": [1, 2]}, "variant"),
])
def test_impossible_events_are_rejected(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(**overrides)


def test_dict_round_trip_through_json() -> None:
    event = make(variant={"N": 64, "M_GB": 0.5}, answer="1.75 GB", status="wrong", score=0.0,
                 hints_used=2, solution_viewed=True, value='{"pick": "B"}',
                 utc=datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=timezone.utc))
    text = json.dumps(event.to_dict())
    assert Event.from_dict(json.loads(text)) == event
    assert event.to_dict()["utc"] == "2025-03-01T12:00:00.123456+00:00"


def test_from_dict_names_what_is_missing() -> None:
    data = make().to_dict()
    del data["local_date"], data["tz"]
    with pytest.raises(ValueError, match="local_date, tz"):
        Event.from_dict(data)
    with pytest.raises(ValueError, match="JSON object"):
        Event.from_dict([1, 2])  # type: ignore[arg-type]


def test_predictions_and_choices_carry_a_value() -> None:
    event = Event.now("prediction", "ch05/predict", value=json.dumps({"answer": "B"}),
                      clock=fixed_clock(LATE_EVENING_LA), tz="UTC")
    assert event.status == "" and json.loads(event.value) == {"answer": "B"}
    assert not event.is_correct_check


def test_package_imports_no_heavy_dependencies() -> None:
    # A fresh interpreter, so modules other tests loaded do not count.
    probe = ("import sys, autograder.progress; "
             "print(sorted(m for m in ('matplotlib', 'numpy', 'IPython') if m in sys.modules))")
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(root)})
    assert out.stdout.strip() == "[]"
