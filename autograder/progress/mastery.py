"""Mastery levels: how well the log shows an exercise is known.

Each exercise is at exactly one of five levels, computed from the progress log alone.
Only the learner's own checks and solution views of that exercise count; hints do not
change the level. "Canonical numbers" are the ones printed in the notebook (an event
with ``variant=None``); a "fresh variant" is the same exercise with other numbers (a
check with a ``variant``). A "day" is the learner's local calendar date at the moment
of the event, so checking late at night does not shift it, and a change of time zone
never brings a later day sooner than real time does (:mod:`autograder.progress.calendar`).

``new``
    Nothing checked yet.
``attempted``
    At least one check, right or wrong.
``familiar``
    Correct at least once, on any numbers.
``proficient``
    Correct on the canonical numbers without having seen the solution first.
``mastered``
    Shown again on another day, in one of two ways:

    1. proficient, and then correct on a fresh variant on a *later day* than the first
       proficient check; or
    2. for a learner who viewed the solution: correct on a fresh variant, checked
       after viewing the solution and on a *later day* than the viewing.

Why these rules. Being right once on the printed numbers may be recall of a worked
example; being right again on new numbers after sleeping on it is the evidence of
learning that spaced retrieval practice looks for (Roediger & Karpicke 2006, "Test-
enhanced learning", Psychological Science 17(3); Cepeda et al. 2006, "Distributed
practice in verbal recall tasks", Psychological Bulletin 132(3)). A learner who read
the solution can still master the exercise, by working a fresh variant on a later day;
they skip "proficient", which means "solved the printed numbers unaided".

Details that follow from the rules:

- The solution counts as viewed from the first ``solution`` event of the exercise, or
  from the first check flagged ``solution_viewed`` if no such event was logged (the
  viewing then dates, at the latest, from that check's day).
- Levels never go down: a wrong answer after a right one leaves the level where it is.
- Events are taken in UTC order whatever order they are given in.

Everything here is a pure function of the event list: no files, no clock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

from autograder.progress.calendar import days as calendar_days
from autograder.progress.events import Event

Level = Literal["new", "attempted", "familiar", "proficient", "mastered"]
#: The levels from lowest to highest.
LEVELS: tuple[Level, ...] = ("new", "attempted", "familiar", "proficient", "mastered")


def level_rank(level: str) -> int:
    """0 for "new" up to 4 for "mastered"; ValueError for an unknown level."""
    try:
        return LEVELS.index(level)
    except ValueError:
        raise ValueError(f"unknown mastery level {level!r}; levels are {LEVELS}") from None


def at_least(level: str, threshold: str) -> bool:
    """True if ``level`` is ``threshold`` or higher."""
    return level_rank(level) >= level_rank(threshold)


@dataclass
class _Evidence:
    """What the log has shown so far for one exercise, read in time order."""

    checked: bool = False
    correct: bool = False
    proficient_day: date | None = None  # day of the first proficient check
    solution_day: date | None = None  # day the solution was (at the latest) first viewed
    mastered: bool = False

    def see(self, event: Event, day: date) -> None:
        if event.action == "solution":
            self._saw_solution(day)
        elif event.action == "check":
            self._saw_check(event, day)

    def _saw_solution(self, day: date) -> None:
        if self.solution_day is None:
            self.solution_day = day

    def _saw_check(self, event: Event, day: date) -> None:
        self.checked = True
        if event.solution_viewed:
            self._saw_solution(day)
        if event.status != "correct":
            return
        self.correct = True
        if event.variant is None:
            if self.solution_day is None and self.proficient_day is None:
                self.proficient_day = day
            return
        # A fresh variant: rule 1 (after proficiency) or rule 2 (after the solution).
        later_than_proficient = self.proficient_day is not None and day > self.proficient_day
        later_than_solution = self.solution_day is not None and day > self.solution_day
        if later_than_proficient or later_than_solution:
            self.mastered = True

    @property
    def level(self) -> Level:
        if self.mastered:
            return "mastered"
        if self.proficient_day is not None:
            return "proficient"
        if self.correct:
            return "familiar"
        return "attempted" if self.checked else "new"


def exercise_level(events: Iterable[Event], exercise_id: str) -> Level:
    """The mastery level of one exercise (see the module docstring for the rules)."""
    return _level_of([(e, day) for e, day in calendar_days(events) if e.exercise_id == exercise_id])


def levels(events: Iterable[Event], exercise_ids: Iterable[str]) -> dict[str, Level]:
    """The mastery level of each exercise in ``exercise_ids``, in that order."""
    by_exercise: dict[str, list[tuple[Event, date]]] = defaultdict(list)
    for event, day in calendar_days(events):  # days from the whole log: one clock
        by_exercise[event.exercise_id].append((event, day))
    return {eid: _level_of(by_exercise.get(eid, [])) for eid in exercise_ids}


def count_at_least(level_of: dict[str, Level], threshold: str) -> int:
    """How many exercises are at ``threshold`` or above."""
    rank = level_rank(threshold)
    return sum(1 for level in level_of.values() if level_rank(level) >= rank)


def _level_of(dated: Sequence[tuple[Event, date]]) -> Level:
    """The level from one exercise's events with their days, already in time order."""
    evidence = _Evidence()
    for event, day in dated:
        evidence.see(event, day)
    return evidence.level
