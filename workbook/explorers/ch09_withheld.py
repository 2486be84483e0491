"""What chapter 9's tables hold back until the learner has answered the exercise that asks it.

The capstone's tables set the rebuilt run beside the paper's, and several of their cells are
the answers of the chapter's exercises: the paper's data-parallel degree is 9.1, its layers
per stage 9.2, its training FLOPs 9.4, its rank order 9.8. A table shows such a cell only
once the exercise is answered, that is once the progress log holds a correct check of the
printed numbers (a variant does not count: its answer is another number) or a view of the
exercise's solution, which states the answer anyway. Until then the cell says which
exercise to answer first, so rerunning the cell after answering fills it in.
"""

from __future__ import annotations

from collections.abc import Iterable

from workbook.learner import progress_log


def answered_ids() -> frozenset[str]:
    """The exercises whose printed numbers the learner has answered or seen solved."""
    return frozenset(
        e.exercise_id for e in progress_log.events()
        if (e.action == "check" and e.status == "correct" and e.variant is None)
        or e.action == "solution")


def withheld(exercise_ids: Iterable[str], done: frozenset[str]) -> tuple[str, ...]:
    """The exercises of ``exercise_ids`` not yet in ``done``, in order."""
    return tuple(i for i in exercise_ids if i not in done)


def listed(exercise_ids: Iterable[str]) -> str:
    """"exercise 9.1", "exercises 9.1 and 9.10", "exercises 9.1, 9.4 and 9.8"."""
    ids = list(exercise_ids)
    if not ids:
        raise ValueError("expected at least one exercise id, e.g. ['9.1']")
    if len(ids) == 1:
        return f"exercise {ids[0]}"
    return "exercises " + ", ".join(ids[:-1]) + " and " + ids[-1]


def placeholder(exercise_ids: Iterable[str]) -> str:
    """What a withheld cell shows: "after 9.1" (or "after 9.1, 9.4 and 9.8")."""
    return "after " + listed(exercise_ids).split(" ", 1)[1]
