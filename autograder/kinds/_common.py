"""Small helpers the answer kinds share: tolerant comparison, safe display, imports."""

from __future__ import annotations

import inspect
import math
import numbers
import re
from typing import Any

from autograder.units import format_value


class Unreadable(ValueError):
    """The answer cannot be read in the kind's form; the message says what was expected."""


# Digits, optionally grouped by commas ("2,048"); what whole_number reads in text by default.
DIGITS = re.compile(r"\s*(\d{1,3}(?:,\d{3})+|\d+)\s*", re.ASCII)


def whole_number(value: Any, text: re.Pattern[str] = DIGITS) -> int | None:
    """``value`` as an int when it is one: an integer (not a bool), a float with no fraction,
    or a short string that ``text`` matches whole, its first group the digits (commas
    ignored). None otherwise. Linear time: strings of 40 characters or more are not read."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and len(value) < 40:
        match = text.fullmatch(value)
        return int(match.group(1).replace(",", "")) if match else None
    return None


def close(value: float, expected: float, rel_tol: float, abs_tol: float = 0.0) -> bool:
    """True when ``value`` is within ``rel_tol`` of ``expected`` (relative to the expected
    value, so the tolerance does not grow with a wrong answer) or within ``abs_tol``."""
    if math.isnan(expected):
        return math.isnan(value)
    if math.isinf(expected) or math.isinf(value):
        return value == expected
    diff = abs(value - expected)
    return diff <= rel_tol * abs(expected) or diff <= abs_tol


def show(value: Any, limit: int = 60) -> str:
    """A short, safe display of any value: numbers as people write them, the rest by repr."""
    try:
        if isinstance(value, float):
            text = repr(value) if len(repr(value)) <= 12 else format_value(value)
        elif isinstance(value, (tuple, list)):
            inner = ", ".join(show(v, limit) for v in value)
            text = f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
        else:
            text = repr(value)
    except Exception:  # a learner's object whose __repr__ is broken
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_text(exc: BaseException) -> str:
    """ "ZeroDivisionError: division by zero" -- the type and message, no traceback."""
    try:
        message = str(exc)
    except Exception:
        message = ""
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


def reference_import(function: Any, name: str) -> str:
    """The line an instructor's solution cell uses to bind the reference as ``name``."""
    module = inspect.getmodule(function)
    module_name = module.__name__ if module else "solutions"
    alias = "" if function.__name__ == name else f" as {name}"
    return f"from {module_name} import {function.__name__}{alias}  # the reference solution"
