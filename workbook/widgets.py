"""The exercise widget wired to this workbook's records, checker and progress log."""

from __future__ import annotations

from typing import Any

from autograder.widgets import Actions, ExerciseWidget
from workbook import checking
from workbook.records import lookup


def _learner_namespace_lookup(name: str) -> Any:
    """Find ``name`` in the notebook's namespace (where the learner defined it)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    shell = get_ipython()
    return None if shell is None else shell.user_ns.get(name)


def widget(exercise_id: str) -> ExerciseWidget:
    """An interactive card for one exercise: answer, Check, Hint, solution, variant."""
    record = lookup(exercise_id)
    actions = Actions(
        check=lambda answer: checking.check(record.id, answer),
        hint=lambda: checking.hint(record.id),
        solution=lambda: checking.solution(record.id),
        variant=lambda: checking.practice(record.id),
        lookup=_learner_namespace_lookup,
    )
    return ExerciseWidget(record, actions)
