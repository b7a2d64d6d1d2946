"""Rendered operator parameters: templating turns lists and numbers into text, so each is
converted back here with a message naming the parameter (never a record's value)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.numbers import as_number, as_whole_number, is_unset
from reident_airflow.engine.options import parse_flag as flag_value
from reident_airflow.outcomes import ReidentConfigurationError

__all__ = [
    "ON_BREACH_CHOICES",
    "check_choice",
    "parse_columns",
    "parse_flag",
    "parse_number",
]

#: What an operator does on a breach: fail (no retries), skip downstream, or warn and succeed.
ON_BREACH_CHOICES = ("fail", "skip", "warn")


def parse_columns(value: str | Sequence[str] | None, field: str) -> list[str]:
    """A rendered column list: a list, or a comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, Sequence):
        items = [str(v).strip() for v in value]
    else:
        raise ReidentConfigurationError(f"{field} must be a list of column names")
    if not items or any(not i for i in items):
        raise ReidentConfigurationError(f"{field} needs one or more column names")
    return items


def parse_number(value: Any, field: str, *, integer: bool = False) -> float | int | None:
    """A rendered numeric parameter (templating turns numbers into strings); ``None`` when
    unset (:func:`~reident_airflow.engine.numbers.is_unset`)."""
    if is_unset(value):
        return None
    try:
        return as_whole_number(value, field) if integer else as_number(value, field)
    except InvalidInputError as exc:  # a configuration error of the task: no retries
        raise ReidentConfigurationError(str(exc)) from exc


def check_choice(value: str, field: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ReidentConfigurationError(
            f"{field} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        )
    return value


def parse_flag(value: Any, field: str) -> bool:
    """A rendered on/off parameter: a boolean, or its text (``"True"``, ``"false"``, ``"1"``,
    ``"no"``, ...; templating turns booleans into text)."""
    try:
        return flag_value(value, field)
    except InvalidInputError as exc:  # a configuration error of the task: no retries
        raise ReidentConfigurationError(str(exc)) from exc
