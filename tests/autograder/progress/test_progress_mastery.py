"""Mastery levels, one rule at a time (the rules are in autograder/progress/mastery.py)."""

from __future__ import annotations

import itertools
from datetime import date, datetime, time, timedelta, timezone

import pytest

from autograder.progress.events import Event
from autograder.progress.mastery import (
    LEVELS,
    at_least,
    count_at_least,
    exercise_level,
    level_rank,
    levels,
)

_uids = itertools.count()
DAY1, DAY2, DAY3, DAY4 = (date(2025, 3, d) for d in (1, 2, 3, 4))
FRESH = {"N": 16, "M_GB": 2}


def at(day: date, hour: int = 12, *, action: str = "check", correct: bool = True,
       variant: dict | None = None, solution_viewed: bool = False, exercise_id: str = "0.1",
       hints_used: int = 0) -> Event:
    """An event logged in UTC (local date = UTC date) at ``hour`` on ``day``."""
    status = ("correct" if correct else "wrong") if action == "check" else ""
    return Event(
        uid=f"{next(_uids):032x}", action=action, exercise_id=exercise_id, variant=variant,
        answer="", status=status, score=1.0 if status == "correct" else 0.0,
        hints_used=hints_used, solution_viewed=solution_viewed,
        utc=datetime.combine(day, time(hour), tzinfo=timezone.utc),
        local_date=day.isoformat(), tz="UTC",
    )


def level(*events: Event) -> str:
    return exercise_level(events, "0.1")


def test_levels_are_ordered() -> None:
    assert LEVELS == ("new", "attempted", "familiar", "proficient", "mastered")
    assert [level_rank(x) for x in LEVELS] == [0, 1, 2, 3, 4]
    assert at_least("mastered", "proficient") and not at_least("familiar", "proficient")
    with pytest.raises(ValueError, match="unknown mastery level"):
        level_rank("expert")


def test_new_when_nothing_was_checked() -> None:
    assert level() == "new"
    # Hints, and checks of other exercises, are not attempts at this one.
    assert level(at(DAY1, action="hint"), at(DAY1, exercise_id="0.2")) == "new"


def test_attempted_after_a_wrong_check() -> None:
    assert level(at(DAY1, correct=False)) == "attempted"


def test_familiar_when_correct_only_on_a_variant() -> None:
    assert level(at(DAY1, variant=FRESH)) == "familiar"


def test_familiar_when_the_canonical_answer_came_after_the_solution() -> None:
    by_event = (at(DAY1, 9, action="solution"), at(DAY1, 10))
    by_flag = (at(DAY1, 10, solution_viewed=True),)
    assert level(*by_event) == "familiar"
    assert level(*by_flag) == "familiar"


def test_proficient_on_the_canonical_numbers_unaided() -> None:
    assert level(at(DAY1, 9, correct=False), at(DAY1, 10)) == "proficient"
    # Hints do not hold the level back.
    assert level(at(DAY1, hints_used=3)) == "proficient"


def test_viewing_the_solution_after_proficiency_keeps_it() -> None:
    assert level(at(DAY1, 10), at(DAY1, 11, action="solution")) == "proficient"


def test_a_variant_on_the_same_day_is_not_enough() -> None:
    assert level(at(DAY1, 9), at(DAY1, 22, variant=FRESH)) == "proficient"


def test_mastered_by_a_variant_on_a_later_day() -> None:
    assert level(at(DAY1, 9), at(DAY2, 8, variant=FRESH)) == "mastered"
    # A wrong variant first, then a right one, three days on.
    assert level(at(DAY1), at(DAY4, 8, variant=FRESH, correct=False),
                 at(DAY4, 9, variant=FRESH)) == "mastered"


def test_a_wrong_variant_the_next_day_does_not_master() -> None:
    assert level(at(DAY1), at(DAY2, variant=FRESH, correct=False)) == "proficient"


def test_a_variant_before_proficiency_does_not_count() -> None:
    # Variant right on day 2, canonical right only on day 3: the variant came first.
    events = [at(DAY2, variant=FRESH), at(DAY3)]
    assert level(*events) == "proficient"
    assert level(*events, at(DAY4, variant=FRESH)) == "mastered"


def test_later_day_is_measured_from_the_first_proficient_check() -> None:
    # Proficient on day 1 and again on day 2; a day-2 variant is later than day 1.
    assert level(at(DAY1), at(DAY2, 9), at(DAY2, 10, variant=FRESH)) == "mastered"


def test_mastered_after_the_solution_by_a_variant_on_a_later_day() -> None:
    viewed = at(DAY1, 9, action="solution")
    assert level(viewed, at(DAY1, 20, variant=FRESH)) == "familiar"  # same day: not yet
    assert level(viewed, at(DAY2, 8, variant=FRESH)) == "mastered"


def test_solution_flag_without_a_solution_event_dates_the_viewing() -> None:
    # The flag on a day-2 check says the solution was seen by day 2 at the latest.
    flagged = at(DAY2, 9, correct=False, solution_viewed=True)
    assert level(flagged, at(DAY2, 10, variant=FRESH)) == "familiar"
    assert level(flagged, at(DAY3, 10, variant=FRESH)) == "mastered"


def test_a_variant_solved_before_the_solution_was_viewed_does_not_count() -> None:
    # Correct variant on day 2, solution viewed on day 3: day 2 is not after the viewing.
    events = [at(DAY1, correct=False), at(DAY2, variant=FRESH), at(DAY3, action="solution")]
    assert level(*events) == "familiar"
    assert level(*events, at(DAY3, 18, variant=FRESH)) == "familiar"
    assert level(*events, at(DAY4, variant=FRESH)) == "mastered"


def test_the_solution_path_needs_a_fresh_variant_not_the_canonical_numbers() -> None:
    assert level(at(DAY1, action="solution"), at(DAY2), at(DAY3)) == "familiar"


def test_levels_never_go_down() -> None:
    assert level(at(DAY1), at(DAY2, 9, variant=FRESH),
                 at(DAY3, correct=False), at(DAY3, 10, variant=FRESH, correct=False)) \
        == "mastered"


def test_input_order_does_not_matter() -> None:
    events = [at(DAY1, 9), at(DAY2, variant=FRESH)]
    assert level(*reversed(events)) == "mastered"
    # Reversed solution path: the viewing (day 1) still precedes the day-2 variant.
    assert level(at(DAY2, variant=FRESH), at(DAY1, action="solution")) == "mastered"


def test_the_local_day_decides_not_the_utc_day() -> None:
    la = timezone(timedelta(hours=-8))
    # 10:00 and 20:00 on 1 March in Los Angeles are 18:00 on the 1st and 04:00 on the
    # 2nd in UTC: different UTC days, one local day, so not yet mastered.
    morning = Event.now("check", "0.1", status="correct", score=1.0, tz=la,
                        clock=lambda: datetime(2025, 3, 1, 18, tzinfo=timezone.utc))
    evening = Event.now("check", "0.1", variant=FRESH, status="correct", score=1.0, tz=la,
                        clock=lambda: datetime(2025, 3, 2, 4, tzinfo=timezone.utc))
    assert (morning.local_date, evening.local_date) == ("2025-03-01", "2025-03-01")
    assert level(morning, evening) == "proficient"
    # 23:30 on 1 March and 00:30 on 2 March local are one hour apart but a day apart.
    late = Event.now("check", "0.1", status="correct", score=1.0, tz=la,
                     clock=lambda: datetime(2025, 3, 2, 7, 30, tzinfo=timezone.utc))
    after_midnight = Event.now("check", "0.1", variant=FRESH, status="correct", score=1.0,
                               tz=la, clock=lambda: datetime(2025, 3, 2, 8, 30,
                                                             tzinfo=timezone.utc))
    assert level(late, after_midnight) == "mastered"


def test_levels_for_many_exercises() -> None:
    events = [
        at(DAY1, exercise_id="0.1"), at(DAY2, exercise_id="0.1", variant=FRESH),
        at(DAY1, exercise_id="0.2"),
        at(DAY1, exercise_id="0.3", correct=False),
        at(DAY1, exercise_id="0.4", variant=FRESH),
        at(DAY1, exercise_id="ch00/predict", action="prediction"),
    ]
    result = levels(events, ["0.5", "0.4", "0.3", "0.2", "0.1"])
    assert list(result) == ["0.5", "0.4", "0.3", "0.2", "0.1"]
    assert result == {"0.5": "new", "0.4": "familiar", "0.3": "attempted",
                      "0.2": "proficient", "0.1": "mastered"}
    # Cumulative counts: 1 mastered; 2 at proficient or above; 4 attempted or above.
    assert [count_at_least(result, x) for x in ("mastered", "proficient", "attempted")] \
        == [1, 2, 4]


def test_a_time_zone_hop_is_not_a_later_day() -> None:
    """Proficient at noon in Honolulu; a fresh variant a minute later with the clock set to
    Kiritimati, where it is already the next day: still the same day's work."""
    from zoneinfo import ZoneInfo

    noon = datetime(2025, 3, 1, 22, tzinfo=timezone.utc)
    first = Event.now("check", "0.1", status="correct", score=1.0, clock=lambda: noon,
                      tz=ZoneInfo("Pacific/Honolulu"))
    later = noon + timedelta(minutes=1)
    hop = Event.now("check", "0.1", status="correct", score=1.0, variant=FRESH,
                    clock=lambda: later, tz=ZoneInfo("Pacific/Kiritimati"))
    assert (first.local_date, hop.local_date) == ("2025-03-01", "2025-03-02")
    assert level(first, hop) == "proficient"
    assert levels([first, hop], ["0.1"]) == {"0.1": "proficient"}
    # A day later for real, in Kiritimati: now it is a later day.
    next_day = noon + timedelta(days=1, minutes=2)
    again = Event.now("check", "0.1", status="correct", score=1.0, variant=FRESH,
                      clock=lambda: next_day, tz=ZoneInfo("Pacific/Kiritimati"))
    assert level(first, hop, again) == "mastered"
