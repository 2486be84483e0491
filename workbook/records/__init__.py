"""The 58 exercise records, one module per chapter, in the workbook's order.

Records beyond the 58 live beside their chapter: ``<chapter>_challenge`` (CHALLENGES, the
capstone's open design task) and ``<chapter>_labs`` (LABS, algorithms written on the
simulated cluster). They are looked up like any exercise but never counted in the 58.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import cache, lru_cache

from autograder.exercise import Exercise
from workbook.outline import CHAPTERS

CHAPTER_MODULES: tuple[str, ...] = tuple(f"workbook.records.ch{c.number:02d}" for c in CHAPTERS)


@lru_cache(maxsize=1)
def all_exercises() -> tuple[Exercise, ...]:
    records: list[Exercise] = []
    for name in CHAPTER_MODULES:
        records.extend(importlib.import_module(name).EXERCISES)
    return tuple(records)


def _extras_of(chapter_module: str, suffix: str, attribute: str) -> tuple[Exercise, ...]:
    """The records of ``<chapter module>_<suffix>``, if the chapter has that module."""
    name = f"{chapter_module}_{suffix}"
    if importlib.util.find_spec(name) is None:
        return ()
    return tuple(getattr(importlib.import_module(name), attribute))


def _challenges_of(chapter_module: str) -> tuple[Exercise, ...]:
    """The records of ``<chapter module>_challenge``, if the chapter has one."""
    return _extras_of(chapter_module, "challenge", "CHALLENGES")


def _labs_of(chapter_module: str) -> tuple[Exercise, ...]:
    """The records of ``<chapter module>_labs``, if the chapter has labs."""
    return _extras_of(chapter_module, "labs", "LABS")


@lru_cache(maxsize=1)
def all_challenges() -> tuple[Exercise, ...]:
    """Extra records beyond the 58 (e.g. the capstone's open design task, 9.10)."""
    return tuple(record for name in CHAPTER_MODULES for record in _challenges_of(name))


@lru_cache(maxsize=1)
def all_labs() -> tuple[Exercise, ...]:
    """The simulator labs beyond the 58 (0.7 ring AllReduce, 1.7 ZeRO-3, ...)."""
    return tuple(record for name in CHAPTER_MODULES for record in _labs_of(name))


@lru_cache(maxsize=1)
def by_id() -> dict[str, Exercise]:
    table: dict[str, Exercise] = {}
    for record in (*all_exercises(), *all_challenges(), *all_labs()):
        if record.id in table:
            raise RuntimeError(f"two exercise records share the id {record.id!r}")
        table[record.id] = record
    return table


@cache
def _chapter_table(chapter: str) -> dict[str, Exercise]:
    name = CHAPTER_MODULES[int(chapter)]
    records = (*importlib.import_module(name).EXERCISES, *_challenges_of(name), *_labs_of(name))
    return {record.id: record for record in records}


def lookup(exercise_id: object) -> Exercise:
    """The record for ``exercise_id`` ("5.3"); a clear KeyError naming valid ids if unknown.

    Only the exercise's own chapter module is imported, so a first check stays fast. In a
    personalised notebook (after ``wb.your_numbers``) the record is in the student's numbers.
    """
    from workbook.learner.personal_numbers import in_your_numbers

    return in_your_numbers(printed(exercise_id))


def printed(exercise_id: object) -> Exercise:
    """The record in its printed numbers, whatever numbers this kernel uses."""
    key = str(exercise_id).strip()
    chapter = key.split(".", 1)[0]
    if chapter.isdigit() and len(chapter) <= 2 and int(chapter) < len(CHAPTER_MODULES):
        found = _chapter_table(chapter).get(key)
        if found is not None:
            return found
    table = by_id()
    if key not in table:
        raise KeyError(
            f"no exercise {exercise_id!r}; valid ids are {', '.join(table)}"
        )
    return table[key]
