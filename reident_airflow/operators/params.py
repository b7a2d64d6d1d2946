"""Rendered operator parameters: templating turns lists, numbers and mappings into text, so
each is converted back here with a message naming the parameter (never a record's value); and
the local copy of a path parameter that names object storage (:func:`local_file`)."""

from __future__ import annotations

import ast
import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.numbers import as_number, as_whole_number, is_unset
from reident_airflow.engine.options import parse_flag as flag_value
from reident_airflow.outcomes import ReidentConfigurationError

__all__ = [
    "ON_BREACH_CHOICES",
    "check_choice",
    "local_file",
    "parse_columns",
    "parse_flag",
    "parse_mapping",
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


def parse_mapping(value: Any, field: str) -> dict[str, Any]:
    """A rendered mapping: a dict, or its JSON (or Python literal) text."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        text = value.strip()
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(parsed, Mapping):
                return dict(parsed)
    raise ReidentConfigurationError(
        f"{field} must be a mapping {{column: hierarchy}} (a dict, or its JSON text)"
    )


@contextmanager
def local_name(name: str) -> Iterator[str]:
    """``name`` as given -- a local path, or a table a source finds beside itself -- or the
    local copy of an object-storage URL (:func:`local_file`); a URL that names nothing is
    given back as is, for the source to find nothing there
    (:meth:`~reident_airflow.sources.HasSiblings.sibling`)."""
    if "://" not in name:
        yield name
        return
    from reident_airflow._compat import ObjectStoragePath

    if not ObjectStoragePath(name).exists():
        yield name
        return
    with local_file(name) as local:
        yield str(local)


@contextmanager
def local_file(path: str) -> Iterator[Path]:
    """A local path for ``path``; object-storage URLs are streamed to a temporary file."""
    if "://" not in path:
        yield Path(path)
        return
    from reident_airflow._compat import ObjectStoragePath

    remote = ObjectStoragePath(path)
    suffix = "".join(Path(remote.name).suffixes)
    with tempfile.TemporaryDirectory(prefix="reident-") as tmp:
        target = Path(tmp) / f"staged{suffix}"
        with remote.open("rb") as src, target.open("wb") as dst:  # type: ignore[no-untyped-call]
            shutil.copyfileobj(src, dst, length=1 << 20)
        yield target
