"""A term's policies: one text file beside the gradebook, re-applied on every regrade.

A gradebook is a pure function of the submissions, the roster and this file: every
``workbook grade`` grades the class afresh and then applies the policies
(:func:`workbook.instructor.adjust.apply_policies`), so nothing written by hand is lost
when the class is graded again. The file has four optional sections::

    # policies.ini: the term's rules for this assignment
    [late]
    deadline = 2026-03-01T18:00+01:00   # ISO 8601; without an offset it is UTC
    grace = 15 min                      # handed in this long after the deadline: on time
    penalty_per_day = 10 %              # of the points, per day started after deadline + grace
    penalty_cap = 30 %                  # the most the penalty takes (default 100 %)
    cutoff = 2026-03-08T18:00+01:00     # handed in after this: 0 points

    [grading]
    partial_credit = yes                # no (the default): all or nothing, as nbgrader

    [extensions]
    # student, new deadline, reason (optional)
    s1236, 2026-03-04T18:00+01:00, medical note

    [overrides]
    # student, exercise, points or "excused", reason (required)
    s1234, 0.4, 1, regraded by hand: the unit was written out in words
    s1235, 3.2, excused, joined the course after chapter 3 was due

Lines starting with ``#`` or ``;`` are comments; a setting may end in a ``#`` comment. The
rows of ``[extensions]`` and ``[overrides]`` are CSV (quote a field that holds a comma, or
let the reason run on: fields after the third are joined back into it). Every mistake is
a :class:`PolicyError` naming the file, the line and what was expected.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from autograder.grading.discover import parse_time

MAX_POLICY_BYTES = 4_000_000
SECTIONS = ("late", "grading", "extensions", "overrides")
LATE_KEYS = ("deadline", "grace", "penalty_per_day", "penalty_cap", "cutoff")
GRADING_KEYS = ("partial_credit",)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|"
                       r"d|days?)", re.IGNORECASE)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%?")
_YES, _NO = ("yes", "on", "true", "1"), ("no", "off", "false", "0")
DAY = timedelta(days=1)


class PolicyError(ValueError):
    """The policy file cannot be used; the message names the file, the line and why."""


@dataclass(frozen=True)
class Lateness:
    """How late one hand-in is under the policy: ``days`` started after the due time plus
    grace (0: on time), the ``percent`` of the points the penalty takes, and whether it came
    after the cut-off (then it scores 0)."""

    due: datetime
    days: int = 0
    percent: float = 0.0
    after_cutoff: bool = False


@dataclass(frozen=True)
class LatePolicy:
    """The deadline and what handing in after it costs (percentages of the points)."""

    deadline: datetime
    grace: timedelta = timedelta(0)
    penalty_per_day: float = 0.0
    penalty_cap: float = 100.0
    cutoff: datetime | None = None

    def assess(self, submitted: datetime, extension: datetime | None = None) -> Lateness:
        """The lateness of a hand-in at ``submitted``. An extension moves the due time and
        the cut-off with it (the late window keeps its length); grace counts from the due
        time, and each day started after due time plus grace costs ``penalty_per_day``, up
        to ``penalty_cap``."""
        due = extension or self.deadline
        cutoff = None if self.cutoff is None else self.cutoff + (due - self.deadline)
        if cutoff is not None and submitted > cutoff:
            return Lateness(due, self.days_late(submitted, due), 100.0, True)
        days = self.days_late(submitted, due)
        return Lateness(due, days, min(days * self.penalty_per_day, self.penalty_cap))

    def days_late(self, submitted: datetime, due: datetime) -> int:
        """Days started after ``due`` plus grace: 1 for a minute late, 2 for a day and a
        minute; 0 on time."""
        late = submitted - (due + self.grace)
        if late <= timedelta(0):
            return 0
        return -(-late // DAY)  # ceil: every started day counts


@dataclass(frozen=True)
class Override:
    """The points of one student's exercise set by hand (``points`` None: excused)."""

    student: str
    exercise: str
    points: float | None
    reason: str
    line: int = 0

    @property
    def excused(self) -> bool:
        return self.points is None


@dataclass(frozen=True)
class Extension:
    student: str
    deadline: datetime
    reason: str = ""
    line: int = 0


@dataclass(frozen=True)
class Policies:
    """Everything the file says; the empty default changes nothing."""

    late: LatePolicy | None = None
    partial_credit: bool = False
    extensions: Mapping[str, Extension] = field(default_factory=dict)
    overrides: Mapping[tuple[str, str], Override] = field(default_factory=dict)
    source: str = ""

    def override(self, student: str, exercise: str) -> Override | None:
        return self.overrides.get((student, exercise))

    def overrides_of(self, student: str) -> dict[str, Override]:
        """One student's overrides, keyed by exercise id."""
        return {exercise: o for (who, exercise), o in self.overrides.items() if who == student}

    def extension(self, student: str) -> datetime | None:
        found = self.extensions.get(student)
        return found.deadline if found is not None else None

    def describe(self) -> str:
        """The policies in one line, for the instructor's run summary."""
        parts = []
        if self.late is not None:
            late = self.late
            minutes = late.grace.total_seconds() / 60
            parts.append(f"due {late.deadline.isoformat(timespec='minutes')}"
                         + (f" (+{minutes:g} min grace)" if minutes else "")
                         + (f", -{late.penalty_per_day:g} % per day late" if late.penalty_per_day
                            else "")
                         + (f" (at most {late.penalty_cap:g} %)" if late.penalty_per_day
                            and late.penalty_cap < 100 else "")
                         + (f", nothing after {late.cutoff.isoformat(timespec='minutes')}"
                            if late.cutoff else ""))
        parts.append(f"partial credit {'on' if self.partial_credit else 'off'}")
        for count, word in ((len(self.extensions), "extension"),
                            (len(self.overrides), "override")):
            if count:
                parts.append(f"{count} {word}{'s' if count != 1 else ''}")
        return "; ".join(parts)


def _exercise_points(exercise: str) -> int:
    """The points of an exercise, from its record; KeyError naming valid ids if unknown."""
    from workbook.records import lookup

    return lookup(exercise).points


class _Reader:
    """One pass over the file's lines, keeping what each section said and where."""

    def __init__(self, source: str, students: Collection[str] | None,
                 points_of: Callable[[str], int]) -> None:
        self.source, self.students, self.points_of = source, students, points_of
        self.settings: dict[str, dict[str, tuple[str, int]]] = {"late": {}, "grading": {}}
        self.extensions: dict[str, Extension] = {}
        self.overrides: dict[tuple[str, str], Override] = {}
        self.seen: dict[str, int] = {}

    def error(self, line: int, text: str) -> PolicyError:
        return PolicyError(f"{self.source}, line {line}: {text}")

    def read(self, text: str) -> Policies:
        section = ""
        lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
        for number, raw in enumerate(lines, start=1):  # numbered as an editor numbers them
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = self._section(line, number)
            elif not section:
                raise self.error(number, f"expected a section heading first, one of "
                                 f"{', '.join(f'[{s}]' for s in SECTIONS)}; got {line!r}")
            elif section in self.settings:
                self._setting(section, line, number)
            elif section == "extensions":
                self._extension(self._fields(line, number, 2, 2, "student, new deadline[, "
                                             "reason]"), number)
            else:
                self._override(self._fields(line, number, 3, 4, "student, exercise, points "
                                            "or excused, reason"), number)
        return self._policies()

    def _section(self, line: str, number: int) -> str:
        name = line.removeprefix("[").removesuffix("]").strip().lower().replace(" ", "_")
        if not line.endswith("]") or name not in SECTIONS:
            raise self.error(number, f"expected a section heading, one of "
                             f"{', '.join(f'[{s}]' for s in SECTIONS)}; got {line!r}")
        if name in self.seen:
            raise self.error(number, f"[{name}] is already on line {self.seen[name]}")
        self.seen[name] = number
        return name

    def _setting(self, section: str, line: str, number: int) -> None:
        keys = LATE_KEYS if section == "late" else GRADING_KEYS
        key, equals, value = line.partition("=")
        key, value = key.strip().lower().replace(" ", "_"), value.split(" #")[0].strip()
        if not equals or key not in keys:
            raise self.error(number, f"expected 'name = value' with a name of [{section}] "
                             f"({', '.join(keys)}); got {line!r}")
        if key in self.settings[section]:
            raise self.error(number, f"{key} is already set on line "
                             f"{self.settings[section][key][1]}")
        self.settings[section][key] = (value, number)

    def _fields(self, line: str, number: int, fixed: int, least: int,
                shape: str) -> list[str]:
        """The first ``fixed`` fields, then the rest joined into one (the reason)."""
        fields = [f.strip() for f in next(csv.reader([line], skipinitialspace=True))]
        if len(fields) < least or not all(fields[:least]):
            raise self.error(number, f"expected {shape}; got {line!r}")
        rest = ", ".join(f for f in fields[fixed:] if f)
        return fields[:fixed] + ([rest] if rest else [])

    def _student(self, student: str, number: int) -> str:
        if self.students is not None and student not in self.students:
            near = difflib.get_close_matches(student, list(self.students), n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise self.error(number, f"no student {student!r} on the roster{hint}")
        return student

    def _time(self, value: str, number: int, what: str) -> datetime:
        moment = parse_time(value)
        if moment is None:
            raise self.error(number, f"expected {what} as a date and time such as "
                             f"2026-03-01T18:00+01:00; got {value!r}")
        return moment

    def _extension(self, fields: list[str], number: int) -> None:
        student = self._student(fields[0], number)
        if student in self.extensions:
            raise self.error(number, f"{student} already has an extension on line "
                             f"{self.extensions[student].line}")
        reason = fields[2] if len(fields) > 2 else ""
        self.extensions[student] = Extension(
            student, self._time(fields[1], number, "the new deadline"), reason, number)

    def _override(self, fields: list[str], number: int) -> None:
        student, exercise, given, reason = fields
        self._student(student, number)
        try:
            most = self.points_of(exercise)
        except KeyError:
            raise self.error(number, f"no exercise {exercise!r} (ids such as 0.1 or 5.3)"
                             ) from None
        if (student, exercise) in self.overrides:
            raise self.error(number, f"{student}'s exercise {exercise} is already overridden "
                             f"on line {self.overrides[student, exercise].line}")
        points: float | None = None
        if given.lower() != "excused":
            try:
                points = float(given)
            except ValueError:
                points = -1.0
            if not 0 <= points <= most or round(points, 2) != points:
                raise self.error(number, f"expected the points (0 to {most}, at most two "
                                 f"decimals) or 'excused' for exercise {exercise}; got "
                                 f"{given!r}")
        self.overrides[student, exercise] = Override(student, exercise, points, reason, number)

    def _late(self) -> LatePolicy | None:
        given = self.settings["late"]
        if "late" not in self.seen:
            return None
        if "deadline" not in given:
            raise self.error(self.seen["late"], "[late] needs a deadline = ... line")
        deadline = self._time(*given["deadline"], "the deadline")
        grace = self._duration(*given.get("grace", ("0", 0)))
        per_day = self._percent(*given.get("penalty_per_day", ("0", 0)), "penalty_per_day")
        cap = self._percent(*given.get("penalty_cap", ("100", 0)), "penalty_cap")
        cutoff = None
        if "cutoff" in given:
            cutoff = self._time(*given["cutoff"], "the cut-off")
            if cutoff <= deadline + grace:
                raise self.error(given["cutoff"][1], "the cut-off must come after the "
                                 "deadline and its grace")
        return LatePolicy(deadline, grace, per_day, cap, cutoff)

    def _duration(self, value: str, number: int) -> timedelta:
        if value.strip() == "0":
            return timedelta(0)
        found = _DURATION.fullmatch(value.strip())
        if found is None:
            raise self.error(number, f"expected grace as a duration such as 15 min, 2 h or "
                             f"1 day; got {value!r}")
        return timedelta(seconds=float(found[1]) * _SECONDS[found[2][0].lower()])

    def _percent(self, value: str, number: int, name: str) -> float:
        found = _PERCENT.fullmatch(value.strip())
        if found is None or not 0 <= float(found[1]) <= 100:
            raise self.error(number, f"expected {name} as a percentage from 0 to 100 "
                             f"(such as 10 %); got {value!r}")
        return float(found[1])

    def _policies(self) -> Policies:
        late = self._late()
        for extension in self.extensions.values():
            if late is None:
                raise self.error(extension.line, "an extension needs a [late] section with "
                                 "a deadline")
            if extension.deadline <= late.deadline:
                raise self.error(extension.line, f"{extension.student}'s new deadline is not "
                                 "after the deadline")
        partial = False
        if "partial_credit" in self.settings["grading"]:
            value, number = self.settings["grading"]["partial_credit"]
            if value.lower() not in _YES + _NO:
                raise self.error(number, f"expected partial_credit = yes or no; got "
                                 f"{value!r}")
            partial = value.lower() in _YES
        return Policies(late, partial, dict(self.extensions), dict(self.overrides),
                        self.source)


def parse_policies(text: str, source: str = "policies", *,
                   students: Collection[str] | None = None,
                   points_of: Callable[[str], int] = _exercise_points) -> Policies:
    """The policies in ``text`` (named ``source`` in messages). ``students``, the roster's
    ids, makes an unknown student an error; ``points_of`` gives an exercise's points, a
    KeyError for an unknown exercise (by default from the exercise records)."""
    return _Reader(source, students, points_of).read(text)


def read_policies(path: Path, students: Collection[str] | None = None) -> Policies:
    """The policy file at ``path``; PolicyError when it cannot be read or used."""
    try:
        data = path.read_bytes()[: MAX_POLICY_BYTES + 1]
    except OSError as error:
        raise PolicyError(f"cannot read the policy file {path}: {error.strerror}") from None
    if len(data) > MAX_POLICY_BYTES:
        raise PolicyError(f"the policy file {path} is larger than {MAX_POLICY_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PolicyError(f"the policy file {path} is not UTF-8 text") from None
    return parse_policies(text, str(path), students=students)
