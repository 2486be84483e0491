"""One entry in the progress log: the :class:`Event` record.

Every check, hint, solution view, prediction and design choice becomes one immutable
``Event``. The log is append-only; everything the learner sees about their progress
(levels, streaks, the dashboard) is computed from the list of events, never stored.

Time is recorded twice on purpose. ``utc`` orders events across machines and time
zones; ``local_date`` is the calendar day on the learner's wall clock at that moment,
which is what a "day" means for streaks and for the "come back on a later day" rule of
mastery. Storing the local date, rather than recomputing it later, keeps a streak
correct when the learner travels: a check at 23:30 in Los Angeles belongs to that
evening even though it is already the next day in UTC.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

Action = Literal["check", "hint", "solution", "prediction", "choice", "reflection"]
ACTIONS: tuple[str, ...] = ("check", "hint", "solution", "prediction", "choice",
                             "reflection")
CheckStatus = Literal["correct", "wrong", ""]
CHECK_STATUSES: tuple[str, ...] = ("correct", "wrong")

#: Longer answers (a pasted function, say) are cut to this many characters: the log
#: records what was tried, it is not an archive of submissions.
MAX_ANSWER_CHARS = 2000

#: The field names of an event, in storage and export order.
FIELDS: tuple[str, ...] = (
    "uid", "action", "exercise_id", "variant", "answer", "status", "score",
    "hints_used", "solution_viewed", "utc", "local_date", "tz", "value",
)


@dataclass(frozen=True)
class Event:
    """One thing the learner did, at one moment.

    ``variant`` is ``None`` for the canonical numbers printed in the notebook, or the
    dict of parameters of a fresh variant. ``status`` is ``"correct"`` or ``"wrong"``
    for a check and empty for every other action. ``hints_used`` and
    ``solution_viewed`` describe what the learner had seen of this exercise *before*
    this check. ``value`` holds free JSON text for predictions and design choices.
    """

    uid: str
    action: str
    exercise_id: str
    variant: dict[str, Any] | None
    answer: str
    status: str
    score: float
    hints_used: int
    solution_viewed: bool
    utc: datetime
    local_date: str
    tz: str
    value: str = ""

    def __post_init__(self) -> None:
        _validate(self)
        # Normalise rather than reject: any aware time is converted to UTC, long answers
        # are cut, and the variant is copied so the caller's dict cannot change the log.
        object.__setattr__(self, "utc", self.utc.astimezone(timezone.utc))
        object.__setattr__(self, "answer", self.answer[:MAX_ANSWER_CHARS])
        object.__setattr__(self, "score", float(self.score))
        if self.variant is not None:
            # Store the JSON round trip, so an event equals itself read back from disk.
            object.__setattr__(self, "variant", json.loads(variant_text(self.variant) or "{}"))

    @classmethod
    def now(
        cls,
        action: str,
        exercise_id: str,
        *,
        variant: Mapping[str, Any] | None = None,
        answer: str = "",
        status: str = "",
        score: float = 0.0,
        hints_used: int = 0,
        solution_viewed: bool = False,
        value: str = "",
        clock: Callable[[], datetime] | None = None,
        tz: tzinfo | str | None = None,
    ) -> Event:
        """An event happening now, with a fresh uid and the time filled in.

        ``clock`` returns an aware datetime (default: the system clock). ``tz`` is the
        learner's zone, as a ``tzinfo`` or an IANA name (default: the system zone).
        """
        moment = (clock or _utc_now)()
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise ValueError("the clock must return an aware datetime (with a time zone)")
        local, tz_name = local_time(moment, tz)
        return cls(
            uid=uuid.uuid4().hex, action=action, exercise_id=exercise_id,
            variant=None if variant is None else dict(variant), answer=answer,
            status=status, score=score, hints_used=hints_used,
            solution_viewed=solution_viewed, utc=moment, local_date=local.date().isoformat(),
            tz=tz_name, value=value,
        )

    @property
    def day(self) -> date:
        """The learner's local calendar day of this event."""
        return date.fromisoformat(self.local_date)

    @property
    def is_correct_check(self) -> bool:
        return self.action == "check" and self.status == "correct"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the time as ISO 8601 text with microseconds)."""
        return {
            "uid": self.uid, "action": self.action, "exercise_id": self.exercise_id,
            "variant": self.variant, "answer": self.answer, "status": self.status,
            "score": self.score, "hints_used": self.hints_used,
            "solution_viewed": self.solution_viewed, "utc": utc_text(self.utc),
            "local_date": self.local_date, "tz": self.tz, "value": self.value,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """Rebuild an event from :meth:`to_dict` output; ValueError on a bad shape."""
        if not isinstance(data, Mapping):
            raise ValueError(f"an event must be a JSON object, not {type(data).__name__}")
        missing = [name for name in FIELDS if name not in data]
        if missing:
            raise ValueError(f"an event is missing the field(s) {', '.join(missing)}")
        utc = data["utc"]
        if not isinstance(utc, str):
            raise ValueError("an event's 'utc' must be ISO 8601 text")
        try:
            moment = datetime.fromisoformat(utc)
        except ValueError as err:
            raise ValueError(f"an event's 'utc' is not an ISO 8601 time: {utc!r}") from err
        fields = {name: data[name] for name in FIELDS}
        fields["utc"] = moment
        return cls(**fields)


def utc_text(moment: datetime) -> str:
    """Fixed-width ISO 8601 text for a UTC time, so text order is time order."""
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def variant_text(variant: Mapping[str, Any] | None) -> str | None:
    """Canonical JSON text for a variant (None stays None)."""
    if variant is None:
        return None
    return json.dumps(dict(variant), sort_keys=True, separators=(",", ":"), default=_plain)


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as plain numbers and lists (duck-typed: no numpy import)."""
    for method in ("tolist", "item"):
        convert = getattr(value, method, None)
        if callable(convert):
            return convert()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def local_time(moment: datetime, tz: tzinfo | str | None = None) -> tuple[datetime, str]:
    """``moment`` on the learner's wall clock, and the name to record for the zone.

    The name is the IANA key when known ("Europe/Paris"), "UTC" for UTC, and otherwise
    the UTC offset at that moment ("+05:30").
    """
    if isinstance(tz, str):
        try:
            tz = ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError) as err:
            raise ValueError(f"unknown time zone {tz!r}: use an IANA name such as "
                             "'Europe/Paris'") from err
    local = moment.astimezone(tz)
    if tz is None:
        return local, _system_zone_name(local) or offset_text(local.utcoffset())
    return local, _zone_name(tz, local)


def offset_text(offset: timedelta | None) -> str:
    """A UTC offset as "+05:30" / "-08:00"."""
    minutes = round((offset or timedelta()).total_seconds() / 60)
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{mins:02d}"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _zone_name(tz: tzinfo, local: datetime) -> str:
    if isinstance(tz, ZoneInfo):
        return tz.key
    if local.utcoffset() == timedelta() and tz.tzname(local) in ("UTC", "GMT"):
        return "UTC"
    return offset_text(local.utcoffset())


def _system_zone_name(local: datetime) -> str | None:
    """The IANA name of the system zone, if it can be found and agrees with ``local``."""
    for name in _candidate_zone_names():
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
        # Only trust a name that gives the offset the C library actually used.
        if local.astimezone(zone).utcoffset() == local.utcoffset():
            return name
    return None


def _candidate_zone_names() -> list[str]:
    """Where POSIX systems say which zone they are in: $TZ, /etc/localtime, /etc/timezone."""
    names = []
    env = os.environ.get("TZ", "").lstrip(":")
    if env and not env.startswith("/"):
        names.append(env)
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            names.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    try:
        with open("/etc/timezone", encoding="utf-8") as handle:
            names.append(handle.read().strip())
    except OSError:
        pass
    return [name for name in names if name]


def _validate(event: Event) -> None:
    """Reject an event no part of the workbook could have produced."""
    if not isinstance(event.uid, str) or not event.uid:
        raise ValueError("an event needs a non-empty text uid")
    if event.action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, not {event.action!r}")
    if not isinstance(event.exercise_id, str) or not event.exercise_id:
        raise ValueError("an event needs a non-empty text exercise_id")
    if event.variant is not None and not isinstance(event.variant, Mapping):
        raise ValueError("variant must be a dict of parameters or None (canonical numbers)")
    allowed = CHECK_STATUSES if event.action == "check" else ("",)
    if event.status not in allowed:
        raise ValueError(f"status of a {event.action!r} event must be one of {allowed}, "
                         f"not {event.status!r}")
    _validate_numbers(event)
    _validate_texts(event)


def _validate_numbers(event: Event) -> None:
    score = event.score
    if isinstance(score, bool) or not isinstance(score, (int, float)) or math.isnan(score) \
            or not 0.0 <= score <= 1.0:
        raise ValueError(f"score must be a number from 0 to 1, not {score!r}")
    hints = event.hints_used
    if isinstance(hints, bool) or not isinstance(hints, int) or hints < 0:
        raise ValueError(f"hints_used must be a whole number >= 0, not {hints!r}")
    if not isinstance(event.solution_viewed, bool):
        raise ValueError("solution_viewed must be True or False")


def _validate_texts(event: Event) -> None:
    if not isinstance(event.utc, datetime) or event.utc.utcoffset() is None:
        raise ValueError("utc must be an aware datetime (with a time zone)")
    for name in ("answer", "tz", "value", "local_date"):
        if not isinstance(getattr(event, name), str):
            raise ValueError(f"{name} must be text")
    try:
        if date.fromisoformat(event.local_date).isoformat() != event.local_date:
            raise ValueError("not in YYYY-MM-DD form")
    except ValueError as err:
        raise ValueError(f"local_date must be an ISO date like 2025-03-14, "
                         f"not {event.local_date!r}") from err
    if event.variant is not None:
        try:
            variant_text(event.variant)
        except (TypeError, ValueError) as err:
            raise ValueError(f"variant must be JSON-serialisable: {err}") from err
