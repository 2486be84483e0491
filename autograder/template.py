"""Filling text templates: prompts, hints, explanations and feedback.

A template is a ``str.format`` string over an exercise's parameters. A number given
without a format spec is shown as people write it, by the same
:func:`autograder.units.format_value` that writes numbers in feedback: ``12345678.9``
reads "12,345,679" in the prompt and in the verdict alike.

A parameter that is an earlier exercise's answer (:class:`Earlier`) is a number to every
calculation but reads "your answer to 7.1" in text, its unit included: a question that
builds on another never prints the other's answer.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from autograder.units import format_value


class Earlier(float):
    """A parameter whose value is exercise ``exercise_id``'s answer in ``unit``: it
    computes as the number and is written as a reference to that answer."""

    exercise_id: str
    unit: str

    def __new__(cls, value: float, exercise_id: str, unit: str = "") -> Earlier:
        made = super().__new__(cls, value)
        made.exercise_id, made.unit = exercise_id, unit
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return (Earlier, (float(self), self.exercise_id, self.unit))

    @property
    def phrase(self) -> str:
        return f"your answer to {self.exercise_id}"


class _Friendly(string.Formatter):
    """``str.format`` that shows numbers without a format spec as people write them."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, Earlier):
            return value.phrase
        if not format_spec and isinstance(value, (int, float)) and not isinstance(value, bool):
            return format_value(value)
        return str(super().format_field(value, format_spec))


_FORMATTER = _Friendly()


def _refer(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each field of an :class:`Earlier` value, the "$" before it and the
    unit written after it, replaced by the reference ("{size_gb} GB" -> "your answer to
    7.1")."""
    for name, value in values.items():
        if isinstance(value, Earlier):
            unit = rf"(?:[ \t]*{re.escape(value.unit)}(?![\w/]))?" if value.unit else ""
            field = re.compile(r"\$?\{" + re.escape(name) + r"(?:[!:][^{}]*)?\}" + unit)
            template = field.sub(value.phrase.replace("\\", "\\\\"), template)
    return template


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with its fields filled from ``values``; KeyError for an unknown field
    (a record's prompt or hint naming a parameter it does not have is a bug)."""
    return _FORMATTER.vformat(_refer(template, values), (), dict(values))


def fill_leniently(template: str, values: Mapping[str, Any]) -> str:
    """Like :func:`fill`, but a template that cannot be filled is shown as written: for
    feedback that mixes parameters with the learner's own values."""
    try:
        return fill(template, values)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return template
