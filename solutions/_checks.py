"""Input validation shared by the calculators: impossible inputs raise ValueError."""

from __future__ import annotations

import math


def positive(name: str, value: float) -> float:
    """Return ``value`` if it is a finite number > 0, else raise ValueError naming it."""
    _finite(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def non_negative(name: str, value: float) -> float:
    """Return ``value`` if it is a finite number >= 0, else raise ValueError naming it."""
    _finite(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def fraction(name: str, value: float) -> float:
    """Return ``value`` if 0 < value <= 1, else raise ValueError."""
    _finite(name, value)
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return value


def positive_int(name: str, value: float) -> int:
    """Return ``value`` if it is an integer >= 1 (bools rejected), else raise ValueError."""
    if type(value) is int and value >= 1:  # the common case, first (a bool's type is bool)
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return int(value)


def _finite(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
