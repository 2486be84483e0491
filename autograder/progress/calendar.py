"""The learner's calendar: each event's day, one calendar day at a time across time zones.

A "day" for streaks and for mastery's "come back on a later day" is the learner's local
calendar date (``Event.local_date``). Taken as it is, a change of time zone could make a day
in a minute: a check at noon in Honolulu and, a minute later with the clock set to
Kiritimati, one at 12:01 the next day would be two practice days. So the days come from a
clock that never runs ahead of real time:

* each event's local time is its UTC time in the zone it recorded (``Event.tz``, an IANA
  name or an offset such as ``+05:30``);
* read in time order, each event moves an effective clock. In the zone of the event before
  it, by as much as the local clock moved (the zone's own summer-time changes included).
  In another zone: to the event's local time when
  that is no further ahead of the previous event's effective time than the real time
  between the two, else by exactly that real time. So the effective clock never gains on
  real time, and no more calendar days pass on it than on any one fixed clock. Flying
  east, the days follow the clock the learner left, one a day, until two whole days pass
  with nothing logged (a gap that already ends any streak, after which the clock is the
  learner's own again) or the learner's clock falls behind it again; flying west, a date
  may come twice and counts once, as it always did.

In one time zone this is the local date, exactly. ``today`` is read on the same clock
(:func:`today_on_calendar`): the learner's date, less however far the last event's day
lags its own local date.

Pure functions of the events; no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from autograder.progress.events import Event

_OFFSET = re.compile(r"([+-])(\d\d):(\d\d)")
_GAP = timedelta(days=2)


def _offset(event: Event) -> timedelta | None:
    """The UTC offset of the zone the event recorded, at its moment; None if unknown."""
    zone = event.tz
    if zone in ("UTC", "GMT", "Z"):
        return timedelta()
    match = _OFFSET.fullmatch(zone)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        return sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3)))
    try:
        return ZoneInfo(zone).utcoffset(event.utc)
    except (ValueError, OSError, KeyError):  # an unknown or malformed zone name
        return None


def local_time(event: Event) -> datetime:
    """The event's wall-clock time (naive), on its recorded local date: from its zone when
    that agrees with the date, else noon of the date."""
    offset = _offset(event)
    if offset is not None:
        wall = (event.utc.astimezone(timezone.utc) + offset).replace(tzinfo=None)
        if wall.date() == event.day:
            return wall
    return datetime.combine(event.day, time(12))


def days(events: Iterable[Event]) -> list[tuple[Event, date]]:
    """Each event with its day on the learner's calendar, in time order (events logged at
    the same UTC time keep their given order)."""
    out: list[tuple[Event, date]] = []
    clock = before = datetime.min
    last, zone = None, ""
    for event in sorted(events, key=lambda e: e.utc):
        wall = local_time(event)
        moved = clock + max(event.utc - last, timedelta()) if last is not None else wall
        if last is None or moved.date() - clock.date() >= _GAP:
            clock = wall  # the first event, or after a gap that ends any streak
        elif event.tz == zone:  # the same zone: its own clock, summer time and all
            clock = clock + (wall - before)
        else:
            clock = min(wall, moved)
        before, last, zone = wall, event.utc, event.tz
        out.append((event, clock.date()))
    return out


def today_on_calendar(dated: list[tuple[Event, date]], today: date) -> date:
    """``today`` (the learner's local date) on the calendar of :func:`days`: earlier by as
    many days as the last event's day lags behind its own local date."""
    if not dated:
        return today
    event, day = dated[-1]
    return today - max(event.day - day, timedelta())
