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


CHALLENGE_NOTE = ("A challenge beyond the 58: checked like the others, not counted in "
                  "your mastery.")


def challenge_note(exercise_id: str) -> str:
    """The label for a record outside the 58 (such as 9.10), "" for the 58 themselves."""
    from workbook.records import all_challenges

    return CHALLENGE_NOTE if any(r.id == exercise_id for r in all_challenges()) else ""


def widget(exercise_id: str) -> ExerciseWidget:
    """An interactive card for one exercise: answer, Check, Hint, solution, variant."""
    record = lookup(exercise_id)
    actions = Actions(
        check=lambda answer, params: checking.check_shown(record.id, answer, params),
        hint=lambda params: checking.hint(record.id, params),
        solution=lambda params: checking.solution(record.id, params),
        variant=lambda: checking.practice(record.id),
        lookup=_learner_namespace_lookup,
    )
    card = ExerciseWidget(record, actions, note=challenge_note(record.id))
    kind = record.answer_kind
    function_only = kind.function_spec() is not None and kind.value_name(record.names) is None
    if function_only or not _has_variant(record):
        card.buttons["variant"].disabled = True
        card.buttons["variant"].tooltip = "This question has no numbers to vary."
    return card


def _has_variant(record: Any) -> bool:
    from autograder.exercise import NoVariantError

    try:
        record.variant(0)
    except NoVariantError:
        return False
    return True
