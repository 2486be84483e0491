"""The exercise widget wired to this workbook's records, checker and progress log."""

from __future__ import annotations

from typing import Any

from autograder.widgets import Actions, ExerciseWidget
from workbook.learner import checking
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
    kind = record.answer_kind
    function_only = kind.function_spec() is not None and kind.value_name(record.names) is None
    can_vary = not function_only and _has_variant(record)
    return ExerciseWidget(record, actions, note=challenge_note(record.id), can_vary=can_vary)


def _has_variant(record: Any, draws: int = 4) -> bool:
    """Whether "Try a variant" shows the learner something new: a question whose printed
    numbers change. A lab or a question without numbers has nothing to vary."""
    from autograder.exercise import NoVariantError

    def shown(params: Any = None) -> tuple[str, ...]:
        return (record.render_prompt(params), *record.render_extras(params))

    printed = shown()
    try:
        return any(shown(record.variant(seed)) != printed for seed in range(draws))
    except NoVariantError:
        return False
