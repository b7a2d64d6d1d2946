"""Numbers given loosely -- a CLI flag, a rendered Airflow template, a JSON value -- read in one
place, with a message that names the parameter (a parameter's text, never a record's value)."""

from __future__ import annotations

import math
from typing import Any

from reident_airflow.engine.errors import InvalidInputError

__all__ = ["as_number", "as_whole_number", "is_unset"]


def is_unset(value: Any) -> bool:
    """``None``, ``""`` or ``"none"`` (any case, surrounding spaces ignored): not given."""
    return value is None or (isinstance(value, str) and value.strip().lower() in {"", "none"})


def as_number(value: Any, name: str, *, kind: str = "a number") -> float:
    """``value`` (a number or its text) as a float; a boolean is not a number here.

    ``kind`` completes the message "``name`` must be ``kind``" of :class:`InvalidInputError`.
    """
    if isinstance(value, bool):
        raise InvalidInputError(f"{name} must be {kind}, got a boolean")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be {kind}, got {value!r}") from None


def as_whole_number(value: Any, name: str) -> int:
    """``value`` as an int: ``2``, ``2.0`` and ``"2"`` are 2; ``1.5`` and ``inf`` are errors."""
    number = as_number(value, name)
    if not (math.isfinite(number) and number.is_integer()):
        raise InvalidInputError(f"{name} must be a whole number, got {value!r}")
    return int(number)
