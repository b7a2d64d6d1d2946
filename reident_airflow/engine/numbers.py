"""Numbers given loosely -- a CLI flag, a rendered Airflow template, a JSON value -- read in one
place, with a message that names the parameter (a parameter's text, never a record's value)."""

from __future__ import annotations

import math
import numbers
from typing import Any

from reident_airflow.engine.errors import InvalidInputError

__all__ = [
    "as_number",
    "as_whole_number",
    "check_suppression_limit",
    "is_unset",
    "parse_suppression_limit",
]


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


def check_suppression_limit(limit: Any) -> int | float:
    """A suppression limit as Datafly takes it: a whole number of records ``>= 0`` (an int)
    or a fraction of the records in ``[0, 1)`` (a float); :class:`InvalidInputError` else."""
    if isinstance(limit, bool):
        raise InvalidInputError("suppression_limit must be a number of records or a fraction")
    if isinstance(limit, numbers.Integral):
        if int(limit) < 0:
            raise InvalidInputError(
                f"suppression_limit must be a number of records >= 0, got {int(limit)}"
            )
        return int(limit)
    if isinstance(limit, numbers.Real):
        f = float(limit)
        if not 0.0 <= f < 1.0:
            raise InvalidInputError(
                "suppression_limit as a fraction of the records must be in [0, 1), got "
                f"{f!r}; give a whole number for a count of records"
            )
        return f
    raise InvalidInputError("suppression_limit must be a number of records or a fraction")


def parse_suppression_limit(text: str) -> int | float:
    """A suppression limit as a person writes it: ``N`` (a count of records), ``F`` with a
    decimal point (a fraction of the records) or ``P%`` (a percentage)."""
    raw = text.strip().replace("_", "")
    try:
        if raw.endswith("%"):
            return float(raw[:-1]) / 100.0
        if raw.lstrip("+-").isdigit():
            return int(raw)
        return float(raw)
    except ValueError:
        raise InvalidInputError(
            f"must be a number of records (5) or a fraction of them (0.01, 1%), got {text!r}"
        ) from None
