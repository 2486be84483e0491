"""Small helpers the answer kinds share: tolerant comparison, safe display, imports."""

from __future__ import annotations

import inspect
import math
from typing import Any

from autograder.units import format_value


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
