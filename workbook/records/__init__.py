"""The 58 exercise records, one module per chapter, in the workbook's order."""

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


def _challenges_of(chapter_module: str) -> tuple[Exercise, ...]:
    """The records of ``<chapter module>_challenge``, if the chapter has one."""
    name = f"{chapter_module}_challenge"
    if importlib.util.find_spec(name) is None:
        return ()
    return tuple(importlib.import_module(name).CHALLENGES)


@lru_cache(maxsize=1)
def all_challenges() -> tuple[Exercise, ...]:
    """Extra records beyond the 58 (e.g. the capstone's open design task, 9.10)."""
    return tuple(record for name in CHAPTER_MODULES for record in _challenges_of(name))


@lru_cache(maxsize=1)
def by_id() -> dict[str, Exercise]:
    table: dict[str, Exercise] = {}
    for record in (*all_exercises(), *all_challenges()):
        if record.id in table:
            raise RuntimeError(f"two exercise records share the id {record.id!r}")
        table[record.id] = record
    return table


@cache
def _chapter_table(chapter: str) -> dict[str, Exercise]:
    name = CHAPTER_MODULES[int(chapter)]
    records = (*importlib.import_module(name).EXERCISES, *_challenges_of(name))
    return {record.id: record for record in records}


def lookup(exercise_id: object) -> Exercise:
    """The record for ``exercise_id`` ("5.3"); a clear KeyError naming valid ids if unknown.

    Only the exercise's own chapter module is imported, so a first check stays fast.
    """
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
