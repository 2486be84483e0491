"""A batch's time budget, shared fairly: bounded files per student, turns in rounds, a share each.

``--batch-timeout`` bounds the whole batch, reading and preparing the files included, and
no student may spend it for the others:

* :func:`bounded` caps what one student hands in before anything is read: at most
  :data:`MAX_NOTEBOOKS` notebooks and :data:`MAX_STUDENT_BYTES` bytes in all (files beyond
  either are not read, each with a row saying why). A chapter notebook is well under 100
  kB; with outputs a few MB.
* :func:`in_rounds` orders the work in rounds: every student's first file, then every
  student's second, and so on, so that where a student's files sort decides nothing.
* :func:`first_pass`: every file first runs within a short cap, the same for all; a file
  stopped at it (:func:`stopped_at`) runs again with its full limits after all the others.
* :class:`Share` gives each student an equal share of the budget (per lane: the grader
  reads files one at a time, the sandbox runs as many jobs as it has workers). A student
  whose files have used up their share waits: their remaining files come after everyone
  else's, while the budget lasts. An honest student's files take a fraction of a second
  each, so a class in which several students stall in every chapter still grades everyone
  else within the budget.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TypeVar

from autograder.grading.discover import Found
from autograder.sandbox import JobResult, JobStatus, Limits

MAX_NOTEBOOKS = 24                 # ten chapters, each handed in twice over, and then some
MAX_STUDENT_BYTES = 48 * 1024 * 1024
T = TypeVar("T")


def _size(path: os.PathLike[str] | str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0  # reading it says what is wrong


def bounded(found: Sequence[Found], max_notebooks: int = MAX_NOTEBOOKS,
            max_bytes: int = MAX_STUDENT_BYTES) -> tuple[list[Found], list[tuple[Found, str]]]:
    """The files to read, and (file, why not) for each one past its student's bounds. A
    student's files are taken in the order of their paths."""
    kept: list[Found] = []
    over: list[tuple[Found, str]] = []
    handed = Counter(f.student for f in found)
    count: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for item in sorted(found, key=lambda f: (f.student, f.rel)):
        student = item.student
        count[student] += 1
        if count[student] > max_notebooks:
            over.append((item, f"not read: {handed[student]} notebooks were handed in, "
                               f"more than the {max_notebooks} the grader reads from one "
                               f"student (it read the first {max_notebooks} by name)"))
            continue
        size = _size(item.path)
        if total[student] + size > max_bytes:
            over.append((item, f"not read: with this file ({size / 1e6:.1f} MB) the "
                               f"student's notebooks would pass {max_bytes / 2**20:g} MB "
                               "together, more than the grader reads for one student"))
            continue
        total[student] += size
        kept.append(item)
    return kept, over


def in_rounds(items: Iterable[T], student_of: Callable[[T], str]) -> list[T]:
    """``items`` reordered in rounds: each student's first item (students in the order
    they first appear), then each one's second, and so on; a student's own items keep
    their order."""
    queues: dict[str, list[T]] = {}
    for item in items:
        queues.setdefault(student_of(item), []).append(item)
    ordered: list[T] = []
    depth = max((len(q) for q in queues.values()), default=0)
    for turn in range(depth):
        ordered += [queue[turn] for queue in queues.values() if turn < len(queue)]
    return ordered


class Share:
    """Each student's equal share of a time budget: ``budget_s`` x ``lanes`` (work done
    side by side) split over ``students``. No budget, no shares: nobody ever waits."""

    def __init__(self, budget_s: float | None, students: Iterable[str], lanes: int = 1) -> None:
        names = set(students)
        self.each = float("inf") if budget_s is None or not names else \
            budget_s * max(lanes, 1) / len(names)
        self.spent: dict[str, float] = {}

    def charge(self, student: str, seconds: float) -> None:
        self.spent[student] = self.spent.get(student, 0.0) + max(seconds, 0.0)

    def used_up(self, student: str) -> bool:
        return self.spent.get(student, 0.0) >= self.each

    def turns(self, items: Sequence[T], student_of: Callable[[T], str], deadline: float,
              late: list[T]) -> Iterator[T]:
        """``items`` (already in rounds) one by one while the deadline lasts: a student
        whose share is used up waits until everyone else's items have had their turn.
        Whatever the deadline leaves goes to ``late``. Shares are read at each step, so
        what the caller charges between two items counts at once."""
        waiting: list[T] = []
        for queue in (list(items), waiting):
            for position, item in enumerate(queue):
                if time.monotonic() > deadline:
                    late.extend(queue[position:])
                    if queue is not waiting:
                        late.extend(waiting)
                    return
                if queue is not waiting and self.used_up(student_of(item)):
                    waiting.append(item)
                    continue
                yield item


def first_pass(limits: Limits, cap_s: float) -> Limits:
    """The limits of the first pass under a batch budget: every file gets this much first,
    so that files which stall cannot keep the others from their turn."""
    cap = min(limits.wall_s, cap_s)
    return replace(limits, wall_s=cap, cpu_s=min(limits.cpu_s, cap))


def stopped_at(result: JobResult, limits: Limits) -> bool:
    """Whether the job was stopped at the whole job's wall-clock or CPU limit."""
    return result.status is JobStatus.TIMEOUT and (
        result.wall_s >= limits.wall_s * 0.95 or result.cpu_s >= limits.cpu_s - 0.2)
