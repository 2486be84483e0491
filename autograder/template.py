"""Filling text templates: prompts, hints, explanations and feedback.

A template is a ``str.format`` string over an exercise's parameters. A number given
without a format spec is shown as people write it, by the same
:func:`autograder.units.format_value` that writes numbers in feedback: ``12345678.9``
reads "12,345,679" in the prompt and in the verdict alike.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from autograder.units import format_value


class _Friendly(string.Formatter):
    """``str.format`` that shows numbers without a format spec as people write them."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if not format_spec and isinstance(value, (int, float)) and not isinstance(value, bool):
            return format_value(value)
        return str(super().format_field(value, format_spec))


_FORMATTER = _Friendly()


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with its fields filled from ``values``; KeyError for an unknown field
    (a record's prompt or hint naming a parameter it does not have is a bug)."""
    return _FORMATTER.vformat(template, (), dict(values))


def fill_leniently(template: str, values: Mapping[str, Any]) -> str:
    """Like :func:`fill`, but a template that cannot be filled is shown as written: for
    feedback that mixes parameters with the learner's own values."""
    try:
        return fill(template, values)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return template
