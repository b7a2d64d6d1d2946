"""Reading the JSON results into typed views: the readers every view is built with, and the
check each view runs on itself when built (:class:`Checked`).

A reader turns one JSON value into the type a view field declares, or ``None`` when the value
is missing or of another type; it never substitutes a placeholder.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Self

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.report._format import is_number

__all__ = [
    "Checked",
    "Number",
    "bool_or_none",
    "mapping_or_none",
    "name_or_none",
    "names",
    "number_or_none",
    "optional_view",
    "real_or_none",
    "require_mapping",
    "string_or_none",
    "text_or_none",
    "whole_or_none",
]

#: A count or a share as the JSON holds it: an int or a finite float, never a bool.
Number = int | float


# ------------------------------------------------------------------------------- readers
def number_or_none(value: Any) -> Number | None:
    return value if is_number(value) else None


def real_or_none(value: Any) -> Number | None:
    """A finite real number of any numeric type (numpy's too) as a plain ``int`` (a whole
    type) or ``float``; anything else (text, a bool, NaN) is ``None``. For a result still in
    memory, whose numbers may not have been through JSON yet."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    return number if math.isfinite(number) else None


def whole_or_none(value: Any) -> int | None:
    """A count of a whole numeric type (numpy's too) as a plain ``int``; a float (even
    ``5.0``) or anything else is ``None``."""
    number = real_or_none(value)
    return number if isinstance(number, int) else None


def string_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def text_or_none(value: Any) -> str | None:
    """A name the JSON may give as a number (a weight column, a model, a path): as text."""
    return None if value is None else str(value)


def bool_or_none(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def name_or_none(value: Any, limit: int) -> str | None:
    """A non-empty string cut to ``limit`` characters; anything else (a number, ``""``) is
    ``None``: unlike :func:`names`, a number is not taken for a name."""
    if not isinstance(value, str) or not value:
        return None
    return value[:limit]


def names(value: Any) -> tuple[str, ...]:
    """A list of names as strings; anything but a list or tuple gives none."""
    if not isinstance(value, list | tuple):
        return ()
    return tuple(str(v) for v in value)


def mapping_or_none(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def require_mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} is read from a result dict, got {type(value).__name__}")
    return value


_SCALARS: dict[str, Any] = {
    "Number": is_number,
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
}


class Checked:
    """Checks, when a view is built, that each field holds what its annotation says.

    The annotations name a closed set of shapes (``Number | None``, ``str | None``,
    ``bool | None``, tuples and nested views), so the check reads them as text rather than
    resolving them: a field annotated ``Number | None`` must hold an int or float (not a
    bool) or ``None``; one annotated ``str | None`` a string or ``None``; a ``tuple[...]``
    field a tuple; one naming a view an instance of that view.
    """

    @classmethod
    def read(cls, data: Mapping[str, Any], **given: Any) -> Self:
        """A view whose scalar fields are read from the keys of the same name in ``data``.

        A ``Number``, ``str`` or ``bool`` field takes the value of its key when it is of that
        type, else ``None``; ``given`` supplies the other fields (tuples, nested views) and
        any field whose reading is not the plain one.
        """
        readers = {"Number": number_or_none, "str": string_or_none, "bool": bool_or_none}
        values = dict(given)
        for f in fields(cls):  # type: ignore[arg-type]
            reader = readers.get(str(f.type).removesuffix(" | None"))
            if f.name not in values and reader is not None:
                values[f.name] = reader(data.get(f.name))
        return cls(**values)

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            kind = str(f.type)
            optional = kind.endswith("| None")
            if value is None:
                if not optional:
                    raise InvalidInputError(f"{type(self).__name__}.{f.name} may not be None")
                continue
            base = kind.removesuffix(" | None")
            if base.startswith("tuple["):
                ok = isinstance(value, tuple)
            elif base in _SCALARS:
                ok = _SCALARS[base](value)
            else:  # a nested view, named by its class
                ok = type(value).__name__ == base
            if not ok:
                raise InvalidInputError(
                    f"{type(self).__name__}.{f.name} must be {kind}, got {value!r}"
                )


def optional_view(build: Any, value: Any) -> Any:
    """``build(value)`` when ``value`` is a mapping, else ``None`` (not in the result)."""
    mapping = mapping_or_none(value)
    return None if mapping is None else build(mapping)
