"""Hierarchies given to the Datafly operator as specs: an ARX CSV file (local or object
storage) or a builder made from the column's own values."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.hierarchies import Hierarchy
from reident_airflow.operators.params import local_file

__all__ = ["HIERARCHY_BUILDERS", "hierarchy_files", "resolve_hierarchies"]

#: The ``"type"`` of a hierarchy spec given as a dict, and the keys each one takes.
HIERARCHY_BUILDERS: dict[str, tuple[str, ...]] = {
    "arx": ("path", "sep"),
    "interval": ("widths", "top"),
    "masking": ("mask_char", "steps"),
    "date": ("top",),
}


def hierarchy_files(specs: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """The files the hierarchy specs read, as ``(description, path)`` pairs."""
    files: list[tuple[str, str | None]] = []
    for column, spec in specs.items():
        path = spec.get("path") if isinstance(spec, Mapping) else spec
        if isinstance(path, str | os.PathLike):
            files.append((f"the hierarchy file of {column}", os.fspath(path)))
    return files


def resolve_hierarchies(
    specs: Mapping[str, Any],
    frame: pd.DataFrame | Any,
    qis: Sequence[str],
    *,
    sep: str = ";",
    distinct: Callable[[str], Any] | None = None,
) -> dict[str, Hierarchy]:
    """Build the hierarchy of each QI from its spec.

    A spec is one of: a path (local or object storage) to a hierarchy in ARX's CSV format
    (``sep``-separated); ``{"type": "arx", "path": ..., "sep": ";"}``; a builder made from
    the column's own values -- ``{"type": "interval", "widths": [5, 10, 20], "top": "*"}``
    (integers), ``{"type": "masking", "mask_char": "*", "steps": [1, 2]}`` (codes such as
    postcodes), ``{"type": "date", "top": "*"}`` (day -> month -> year); or a
    :class:`~reident_airflow.engine.hierarchies.Hierarchy`. Specs of columns that are not
    QIs are ignored (one mapping can serve runs on different QIs); a QI without a spec is an
    error of :func:`~reident_airflow.engine.datafly.datafly`, which also catches a typo.

    ``frame`` gives the column names (``frame.columns``); a builder's values are
    ``distinct(column)``, by default ``frame[column].unique()`` (a Spark DataFrame passes a
    function that has Spark count them).
    """
    values = distinct or (lambda column: frame[column].unique())
    out: dict[str, Hierarchy] = {}
    for column, spec in specs.items():
        if column not in qis:
            continue  # a library of hierarchies may cover more columns than this run's QIs
        if isinstance(spec, Hierarchy):
            out[column] = spec
            continue
        checked = _checked_spec(column, spec)
        if checked["type"] == "arx":
            out[column] = _arx_hierarchy(column, checked, sep)
        elif column in frame.columns:  # an unknown QI is reported by Datafly
            out[column] = _built_hierarchy(column, checked, values(column))
    return out


def _checked_spec(column: str, spec: Any) -> Mapping[str, Any]:
    """``spec`` as a builder spec whose type and keys are known (a path is an ARX file)."""
    if isinstance(spec, str):
        spec = {"type": "arx", "path": spec}
    if not isinstance(spec, Mapping):
        raise InvalidInputError(
            f"the hierarchy of {column!r} must be a path or a builder spec (a dict)"
        )
    kind = spec.get("type")
    if kind not in HIERARCHY_BUILDERS:
        raise InvalidInputError(
            f"the hierarchy of {column!r} has type {kind!r}; use one of "
            f"{', '.join(map(repr, HIERARCHY_BUILDERS))}"
        )
    extra = sorted(set(spec) - {"type", *HIERARCHY_BUILDERS[kind]})
    if extra:
        raise InvalidInputError(
            f"the {kind} hierarchy of {column!r} does not take {', '.join(extra)}"
        )
    return spec


def _arx_hierarchy(column: str, spec: Mapping[str, Any], sep: str) -> Hierarchy:
    from reident_airflow.engine.hierarchies import load_hierarchy

    path = spec.get("path")
    if not isinstance(path, str) or not path:
        raise InvalidInputError(f"the arx hierarchy of {column!r} needs a path")
    with local_file(path) as local:
        return load_hierarchy(local, sep=spec.get("sep", sep), column=column)


def _built_hierarchy(column: str, spec: Mapping[str, Any], values: Any) -> Hierarchy:
    """A hierarchy built from the column's own values."""
    from reident_airflow.engine.hierarchies import (
        date_hierarchy,
        interval_hierarchy,
        masking_hierarchy,
    )

    kind = spec["type"]
    if kind == "interval":
        return interval_hierarchy(
            values, widths=spec.get("widths", (5, 10, 20)), top=spec.get("top", "*"), column=column
        )
    if kind == "masking":
        return masking_hierarchy(
            values, mask_char=spec.get("mask_char", "*"), steps=spec.get("steps"), column=column
        )
    return date_hierarchy(values, top=spec.get("top", "*"), column=column)
