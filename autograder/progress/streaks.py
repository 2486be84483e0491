"""Day streaks: consecutive days with at least one correct check.

A day is the learner's local calendar date at the moment of the check
(``Event.local_date``), not the UTC date: a check at 23:30 in California is that
evening's work even though UTC has already moved to the next day. A change of time zone
never makes a day sooner than real time does (:mod:`autograder.progress.calendar`): a
check at noon and another a minute later with the clock set a day ahead are one day's
work. Several correct checks on one day count once.

The current streak stays alive until the day ends: on a day with no correct check yet,
the run that ended yesterday is still shown (the learner can extend it today). Only
once a whole local day has passed with no correct check does it drop to 0.

Stated exactly: the current streak is the run of consecutive practice days that
contains today, or else the run that contains yesterday, or else 0. For an ordinary log
that is the run ending today (or yesterday). It also covers a learner who flies west and
so has a check logged on a local date *later* than "today" where they now are (Tokyo on
the 2nd, then Los Angeles, where it is still the 1st): that later day extends the run
containing today rather than being ignored.

Pure functions of the event list: no files, no clock (``today`` is passed in).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

from autograder.progress.calendar import days as calendar_days
from autograder.progress.calendar import today_on_calendar
from autograder.progress.events import Event

_ONE_DAY = timedelta(days=1)


def practice_days(events: Iterable[Event]) -> set[date]:
    """The days (on the learner's calendar) on which at least one check was correct."""
    return {day for event, day in calendar_days(events) if event.is_correct_check}


def current_streak(events: Iterable[Event], today: date) -> int:
    """Length in days of the streak still alive on ``today`` (0 if it has lapsed)."""
    dated = calendar_days(events)
    days = {day for event, day in dated if event.is_correct_check}
    today = today_on_calendar(dated, today)
    for anchor in (today, today - _ONE_DAY):
        if anchor in days:
            # The run through ``anchor``: days back to its start plus days on to its end,
            # counting ``anchor`` itself once.
            return _run_ending(days, anchor) + _run_starting(days, anchor) - 1
    return 0  # a whole day passed with nothing correct: the streak is over


def best_streak(events: Iterable[Event]) -> int:
    """The longest run of consecutive practice days in the whole log."""
    days = practice_days(events)
    best = 0
    for day in days:
        if day - _ONE_DAY not in days:  # ``day`` starts a run: walk to its end
            best = max(best, _run_starting(days, day))
    return best


def _run_ending(days: set[date], last: date) -> int:
    """How many consecutive days in ``days`` end at ``last`` (which is in ``days``)."""
    length = 0
    while last - timedelta(days=length) in days:
        length += 1
    return length


def _run_starting(days: set[date], first: date) -> int:
    """How many consecutive days in ``days`` start at ``first``."""
    length = 0
    while first + timedelta(days=length) in days:
        length += 1
    return length
