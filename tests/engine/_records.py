"""Records and classes matched by their QI values (the class order is the source's own)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from reident_airflow.engine.classes import ClassTable


def _value(v: Any) -> Any:
    """A value as a dictionary key: every missing value (None, NaN, NA) as ``None``."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def class_values(table: ClassTable) -> list[tuple[Any, ...]]:
    """The QI values of each class, decoded with the table's dictionaries."""
    assert table.dictionaries is not None
    columns = []
    for i, dictionary in enumerate(table.dictionaries):
        values = (
            dictionary.to_pylist()
            if isinstance(dictionary, pa.Array)
            else np.asarray(dictionary).tolist()
        )
        columns.append([_value(values[c]) for c in table.codes[:, i].tolist()])
    return list(zip(*columns, strict=True))


def record_classes(table: ClassTable, frame: pd.DataFrame) -> np.ndarray:
    """The class index of each record of ``frame`` in ``table`` (``-1``: excluded)."""
    index = {values: j for j, values in enumerate(class_values(table))}
    assert len(index) == table.classes  # distinct classes, distinct values
    rows = frame[list(table.quasi_identifiers)].astype(object).itertuples(index=False, name=None)
    return np.array([index.get(tuple(_value(v) for v in row), -1) for row in rows], dtype=np.int64)
