"""Day streaks across day boundaries, time zones, duplicates and gaps."""

from __future__ import annotations

import itertools
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from autograder.progress.events import Event
from autograder.progress.streaks import best_streak, current_streak, practice_days

_uids = itertools.count()
LOS_ANGELES = ZoneInfo("America/Los_Angeles")
TOKYO = ZoneInfo("Asia/Tokyo")


def on(day: int, *, correct: bool = True, action: str = "check", month: int = 3) -> Event:
    """A check logged at noon UTC on ``day`` March 2025 (local date = that day)."""
    status = ("correct" if correct else "wrong") if action == "check" else ""
    when = date(2025, month, day)
    return Event(uid=f"{next(_uids):032x}", action=action, exercise_id="1.1", variant=None,
                 answer="", status=status, score=1.0 if correct else 0.0, hints_used=0,
                 solution_viewed=False, utc=datetime(2025, month, day, 12, tzinfo=timezone.utc),
                 local_date=when.isoformat(), tz="UTC")


def correct_at(utc: datetime, zone: ZoneInfo) -> Event:
    """A correct check made at ``utc`` by a learner whose clock is in ``zone``."""
    return Event.now("check", "1.1", status="correct", score=1.0, clock=lambda: utc, tz=zone)


def march(day: int) -> date:
    return date(2025, 3, day)


def test_no_correct_check_no_streak() -> None:
    assert current_streak([], march(5)) == 0 and best_streak([]) == 0
    # Wrong checks, hints and solutions do not make a day count.
    others = [on(4, correct=False), on(5, action="hint"), on(5, action="solution")]
    assert current_streak(others, march(5)) == 0 and best_streak(others) == 0


def test_a_run_ending_today() -> None:
    events = [on(3), on(4), on(5)]
    assert current_streak(events, march(5)) == 3
    assert best_streak(events) == 3


def test_the_streak_survives_until_the_day_ends() -> None:
    events = [on(3), on(4), on(5)]
    # Nothing yet on the 6th: the run 3-5 is still alive.
    assert current_streak(events, march(6)) == 3
    # A whole day (the 6th) passed with nothing correct: on the 7th it is over.
    assert current_streak(events, march(7)) == 0
    assert best_streak(events) == 3


def test_many_checks_on_one_day_count_once() -> None:
    events = [on(4), on(4), on(4), on(5), on(5)]
    assert practice_days(events) == {march(4), march(5)}
    assert current_streak(events, march(5)) == 2 and best_streak(events) == 2


def test_gaps_split_runs() -> None:
    # Runs: 1-3 (3 days), 5-6 (2 days), 9 (1 day).
    events = [on(d) for d in (9, 1, 2, 6, 3, 5)]
    assert best_streak(events) == 3
    assert current_streak(events, march(6)) == 2
    assert current_streak(events, march(7)) == 2
    assert current_streak(events, march(9)) == 1
    assert current_streak(events, march(8)) == 0


def test_a_wrong_check_does_not_bridge_a_gap() -> None:
    events = [on(1), on(2, correct=False), on(3)]
    assert current_streak(events, march(3)) == 1 and best_streak(events) == 1


def test_across_a_month_and_a_year_boundary() -> None:
    events = [on(28, month=2), on(1), on(2)]  # 2025 is not a leap year: 28 Feb -> 1 Mar
    assert current_streak(events, march(2)) == 3
    new_year = [Event.from_dict({**on(1).to_dict(), "uid": f"{n:032x}", "local_date": d})
                for n, d in enumerate(("2024-12-30", "2024-12-31", "2025-01-01"))]
    assert current_streak(new_year, date(2025, 1, 1)) == 3


def test_a_late_evening_in_california_counts_on_the_local_date() -> None:
    # 23:30 on 1 March in Los Angeles (PST, UTC-8) is 07:30 on 2 March in UTC.
    evening = correct_at(datetime(2025, 3, 2, 7, 30, tzinfo=timezone.utc), LOS_ANGELES)
    # 12:00 on 2 March in Los Angeles is 20:00 on 2 March in UTC.
    next_noon = correct_at(datetime(2025, 3, 2, 20, tzinfo=timezone.utc), LOS_ANGELES)
    assert (evening.local_date, next_noon.local_date) == ("2025-03-01", "2025-03-02")
    # Both fall on 2 March in UTC, which would make a 1-day streak; locally it is 2 days.
    assert current_streak([evening, next_noon], march(2)) == 2


def test_daylight_saving_change_does_not_break_the_streak() -> None:
    # US clocks went forward on 9 March 2025: 22:00 PST on the 8th is 06:00 UTC on the
    # 9th, and 22:00 PDT (UTC-7) on the 9th is 05:00 UTC on the 10th.
    before = correct_at(datetime(2025, 3, 9, 6, tzinfo=timezone.utc), LOS_ANGELES)
    after = correct_at(datetime(2025, 3, 10, 5, tzinfo=timezone.utc), LOS_ANGELES)
    assert (before.local_date, after.local_date) == ("2025-03-08", "2025-03-09")
    assert current_streak([before, after], march(9)) == 2


def test_flying_west_keeps_one_local_day() -> None:
    # 20:00 on 1 March in Tokyo (UTC+9) = 11:00 UTC; the learner flies to Los Angeles
    # and checks again at 18:00 on 1 March there (UTC-8) = 02:00 UTC on 2 March.
    tokyo = correct_at(datetime(2025, 3, 1, 11, tzinfo=timezone.utc), TOKYO)
    la = correct_at(datetime(2025, 3, 2, 2, tzinfo=timezone.utc), LOS_ANGELES)
    assert tokyo.local_date == la.local_date == "2025-03-01"
    assert current_streak([tokyo, la], march(1)) == 1
    assert current_streak([tokyo, la], march(2)) == 1  # alive, nothing yet on the 2nd


def test_a_logged_day_later_than_today_after_flying_west() -> None:
    # A check at 09:00 on 2 March in Tokyo (00:00 UTC on the 2nd) after one on 1 March;
    # then the learner lands in Los Angeles, where it is still 1 March (16:00 PST).
    first = correct_at(datetime(2025, 3, 1, 3, tzinfo=timezone.utc), TOKYO)
    second = correct_at(datetime(2025, 3, 2, 0, tzinfo=timezone.utc), TOKYO)
    assert (first.local_date, second.local_date) == ("2025-03-01", "2025-03-02")
    assert current_streak([first, second], march(1)) == 2


def test_flying_east_over_the_date_line_counts_the_days_that_passed() -> None:
    # 10:00 on 1 March in Los Angeles (18:00 UTC); the flight lands in Tokyo on the 3rd
    # at 09:00 local (00:00 UTC on the 3rd). Thirty hours passed: on the clock the learner
    # left, 1 March and 2 March, two days; the Tokyo calendar's jump over 2 March gives
    # neither a day more nor a day less.
    la = correct_at(datetime(2025, 3, 1, 18, tzinfo=timezone.utc), LOS_ANGELES)
    tokyo = correct_at(datetime(2025, 3, 3, 0, tzinfo=timezone.utc), TOKYO)
    assert (la.local_date, tokyo.local_date) == ("2025-03-01", "2025-03-03")
    assert current_streak([la, tokyo], march(3)) == 2
    assert best_streak([la, tokyo]) == 2


HONOLULU, KIRITIMATI = ZoneInfo("Pacific/Honolulu"), ZoneInfo("Pacific/Kiritimati")


def test_a_time_zone_hop_does_not_make_a_second_day_in_a_minute() -> None:
    # Noon on 1 March in Honolulu (UTC-10); a minute later the clock is set to Kiritimati
    # (UTC+14), where it is already 12:01 on 2 March.
    noon = datetime(2025, 3, 1, 22, tzinfo=timezone.utc)
    first = correct_at(noon, HONOLULU)
    hop = correct_at(noon.replace(minute=1), KIRITIMATI)
    assert (first.local_date, hop.local_date) == ("2025-03-01", "2025-03-02")
    assert current_streak([first, hop], march(2)) == 1
    assert best_streak([first, hop]) == 1
    assert practice_days([first, hop]) == {march(1)}


def test_hopping_back_and_forth_gains_nothing() -> None:
    start = datetime(2025, 3, 1, 22, tzinfo=timezone.utc)
    events = [correct_at(start.replace(minute=m), (HONOLULU, KIRITIMATI)[m % 2])
              for m in range(30)]
    assert best_streak(events) == 1 and current_streak(events, march(2)) == 1


def test_after_the_hop_a_day_a_day_keeps_the_streak() -> None:
    # Then the learner stays in Kiritimati and checks at 09:00 local each morning.
    noon = datetime(2025, 3, 1, 22, tzinfo=timezone.utc)
    events = [correct_at(noon, HONOLULU)]
    events += [correct_at(datetime(2025, 3, day, 19, tzinfo=timezone.utc), KIRITIMATI)
               for day in range(2, 7)]  # 09:00 on the 3rd ... 7th in Kiritimati
    assert events[-1].local_date == "2025-03-07"
    assert best_streak(events) == 6
    assert current_streak(events, march(7)) == 6  # today, on the clock the days follow


def test_offsets_written_as_text_are_read_too() -> None:
    def at(minute: int, offset: str, local_date: str) -> Event:
        return Event(uid=f"{next(_uids):032x}", action="check", exercise_id="1.1",
                     variant=None, answer="", status="correct", score=1.0, hints_used=0,
                     solution_viewed=False,
                     utc=datetime(2025, 3, 1, 22, minute, tzinfo=timezone.utc),
                     local_date=local_date, tz=offset)
    assert best_streak([at(0, "-10:00", "2025-03-01"), at(1, "+14:00", "2025-03-02")]) == 1


def test_no_more_days_than_real_time_allows_whatever_the_zones() -> None:
    """Random checks in random zones: the practice days never outnumber the calendar days
    that one fixed clock can show over the same real time (the span in days, rounded up,
    plus one)."""
    import random

    zones = [ZoneInfo(z) for z in ("Pacific/Honolulu", "Pacific/Kiritimati", "Asia/Tokyo",
                                   "America/Los_Angeles", "Europe/Berlin", "UTC",
                                   "Asia/Kolkata", "Pacific/Chatham")]
    rng = random.Random(7)
    for _ in range(300):
        start = datetime(2025, 3, 1, tzinfo=timezone.utc)
        moments = sorted(start + timedelta(minutes=rng.randrange(0, 4 * 24 * 60))
                         for _ in range(rng.randrange(1, 12)))
        events = [correct_at(moment, rng.choice(zones)) for moment in moments]
        span = moments[-1] - moments[0]
        assert len(practice_days(events)) <= -(-span // timedelta(days=1)) + 1


def test_in_one_zone_the_days_are_the_local_dates() -> None:
    import random

    rng = random.Random(3)
    start = datetime(2025, 3, 1, tzinfo=timezone.utc)
    for zone in (LOS_ANGELES, TOKYO, ZoneInfo("Europe/Berlin")):  # Berlin: summer time
        moments = sorted(start + timedelta(minutes=rng.randrange(0, 60 * 24 * 60))
                         for _ in range(200))
        events = [correct_at(moment, zone) for moment in moments]
        assert practice_days(events) == {e.day for e in events}
