"""The JSON object of a result record: named fields, in the order the contract lists them.

Most results of the engine are frozen dataclasses whose JSON object (docs/contract.md) holds
some or all of their fields under the fields' own names. Reading the keys from the fields, or
from one tuple of names, keeps a record and its JSON from drifting apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any, ClassVar

__all__ = ["FieldRecord", "field_dict", "json_value"]


def field_dict(record: object, names: Iterable[str]) -> dict[str, Any]:
    """``{name: record.<name>}`` for each of ``names``, in that order."""
    return {name: getattr(record, name) for name in names}


def json_value(value: Any) -> Any:
    """A field's value as its JSON object holds it: a nested record (anything with
    ``to_dict``) as its JSON object, a mapping as a plain dict, anything else as it is."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return dict(value) if isinstance(value, Mapping) else value


class FieldRecord:
    """A base for result dataclasses whose JSON object is every field, in declared order
    (each value as :func:`json_value` gives it)."""

    # Declared so that type checkers accept ``fields(self)``; the dataclass sets it.
    __dataclass_fields__: ClassVar[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON object: each field under its name."""
        return {f.name: json_value(getattr(self, f.name)) for f in fields(self)}
