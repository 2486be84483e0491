"""The learner-facing checking API: check, hint, solution and practice.

A wrong answer never raises in a learner's notebook (so "Run all" works). In grading
mode (nbgrader sets ``NBGRADER_EXECUTION``; ``workbook grade`` sets ``WORKBOOK_GRADING``)
a wrong or missing answer raises AssertionError with the feedback, and nothing is logged.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds.base import Verdict
from autograder.result import CheckResult
from autograder.template import fill
from workbook.learner import progress_log
from workbook.records import lookup

GRADING_FLAGS = ("NBGRADER_EXECUTION", "WORKBOOK_GRADING")

# Variants drawn by practice(), waiting for the learner's next check of that exercise.
_pending_variants: dict[str, dict[str, Any]] = {}


def grading_mode() -> bool:
    """True when a grader (nbgrader or ``workbook grade``) is executing the notebook."""
    return any(os.environ.get(flag) for flag in GRADING_FLAGS)


def check(exercise_id: str, answer: Any) -> CheckResult:
    """Check ``answer`` for exercise ``exercise_id`` and record the attempt.

    Uses the variant from the latest ``practice(exercise_id)`` if one is waiting,
    otherwise the canonical numbers shown in the notebook.
    """
    record = lookup(exercise_id)
    params = None if grading_mode() else _pending_variants.pop(record.id, None)
    return _check(record, answer, params)


def check_shown(exercise_id: str, answer: Any, params: dict[str, Any] | None) -> CheckResult:
    """Check ``answer`` against exactly the numbers the learner is looking at: ``params``
    (a variant shown on a card) or, with None, the printed ones. Used by the card, which
    keeps showing a variant until the learner draws another."""
    record = lookup(exercise_id)
    _pending_variants.pop(record.id, None)
    return _check(record, answer, None if grading_mode() else params)


def _check(record: Exercise, answer: Any, params: dict[str, Any] | None) -> CheckResult:
    if record.answer_kind.is_untouched(answer):
        result = _unanswered(record)
    elif grading_mode():  # graded without hints: the log is neither read nor written
        result = _result(record, record.grade(answer, params), params, hint="")
    else:
        return _check_and_record(record, answer, params)
    if grading_mode() and not result.passed:
        raise AssertionError(f"Exercise {record.id}: {result.status_line}: {result.message}")
    return result


def _check_and_record(record: Exercise, answer: Any,
                      params: dict[str, Any] | None) -> CheckResult:
    """A learner's check. What they have seen of the exercise is read from the log once,
    for the hint to offer and for the logged attempt."""
    verdict = record.grade(answer, params)
    seen = progress_log.seen(record.id)
    result = _result(record, verdict, params, _next_hint(record, verdict.passed, seen.hints))
    if result.attempt_counted:
        note = progress_log.record_check(record.id, params, answer, verdict, seen)
        if note:
            result = result.with_note(note)
    return result


def _result(record: Exercise, verdict: Verdict, params: dict[str, Any] | None,
            hint: str) -> CheckResult:
    return CheckResult(exercise_id=record.id, title=record.title, verdict=verdict, hint=hint,
                       params=params, attempt_counted=verdict.counts_as_attempt,
                       variant_prompt=fill(record.prompt, params) if params else "")


def _unanswered(record: Exercise) -> CheckResult:
    verdict = Verdict(status="invalid",
                      message=f"Nothing to check yet: expected {record.answer_kind.describe()}.")
    return CheckResult(exercise_id=record.id, title=record.title, verdict=verdict,
                       hint="", params=None, attempt_counted=False, unanswered=True)


def _next_hint(record: Exercise, passed: bool, hints_seen: int) -> str:
    """After a wrong answer, offer the next hint the learner has not seen yet."""
    if passed or not record.hints:
        return ""
    if hints_seen >= len(record.hints):
        return "You have seen every hint; the worked solution is next."
    return f"A hint is waiting: hint {hints_seen + 1} of {len(record.hints)}."


@dataclass(frozen=True)
class Text:
    """A titled block of text that renders in a notebook and in a terminal."""

    heading: str
    body: str

    def __str__(self) -> str:
        from autograder.markup import plain_text

        return f"{self.heading}\n{plain_text(self.body)}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html

        from autograder.markup import inline_markdown

        body = inline_markdown(self.body)
        return (f'<div class="dtw-text" role="note"><strong>{html.escape(self.heading)}</strong>'
                f"<div>{body}</div></div>")


def hint(exercise_id: str, params: dict[str, Any] | None = None) -> Text:
    """The next hint of the exercise's ladder (the last one again once all are seen), in
    the numbers of ``params`` (a card's variant), else of the variant :func:`practice`
    left waiting for the next check, else the printed ones."""
    record = lookup(exercise_id)
    params = _shown_params(record, params)
    index = min(progress_log.seen(record.id).hints, len(record.hints) - 1)
    if not grading_mode():
        progress_log.record_event("hint", record.id, value=str(index + 1))
    return Text(f"Hint {index + 1} of {len(record.hints)} for exercise {record.id}",
                fill(record.hints[index], record.params if params is None else params))


def solution(exercise_id: str, params: dict[str, Any] | None = None) -> Text:
    """The worked explanation (recorded as viewed), in the numbers of ``params`` (a card's
    variant), else of the variant :func:`practice` left waiting, else the printed ones."""
    record = lookup(exercise_id)
    params = _shown_params(record, params)
    if not grading_mode():
        progress_log.record_event("solution", record.id)
    return Text(f"Worked solution for exercise {record.id}: {record.title}",
                record.render_explanation(params))


def _shown_params(record: Exercise, params: dict[str, Any] | None) -> dict[str, Any] | None:
    """The numbers the learner is working on: given ones, or a waiting practice variant."""
    if params is not None or grading_mode():
        return params
    return _pending_variants.get(record.id)


@dataclass
class Practice:
    """A fresh variant of an exercise: new numbers, same question."""

    record: Exercise
    params: dict[str, Any]

    @property
    def prompt(self) -> str:
        """The variant's question, with its notes where they differ from the printed ones,
        and its options or code (a question pool deals its own options, a debug exercise
        shows another program), so the variant reads on its own."""
        record, params = self.record, self.params
        parts = [record.render_prompt(params)]
        if record.notes and record.render_notes(params) != record.render_notes():
            parts.append(record.render_notes(params))
        return "\n\n".join([*parts, *record.render_extras(params)])

    def check(self, answer: Any) -> CheckResult:
        """Check an answer against this variant's numbers."""
        _pending_variants.pop(self.record.id, None)
        return _check(self.record, answer, self.params)

    def __str__(self) -> str:
        from autograder.markup import plain_text

        return (f"Practice {self.record.id} ({self.record.title}), new numbers:\n"
                f"{plain_text(self.prompt)}\n"
                "Your next check of this exercise is marked against these numbers.")

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return Text(f"Practice {self.record.id}: {self.record.title} (new numbers)",
                    self.prompt + "\n\nYour next check of this exercise is marked against "
                    "these numbers.")._repr_html_()


def practice(exercise_id: str, seed: int | None = None) -> Practice:
    """Draw a fresh variant; the next ``check(exercise_id, ...)`` is checked against it."""
    record = lookup(exercise_id)
    draw_seed = random.SystemRandom().randrange(2**32) if seed is None else seed
    params = record.variant(draw_seed)
    _pending_variants[record.id] = params
    return Practice(record, params)
