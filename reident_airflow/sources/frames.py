"""In-memory frames -- pandas and polars DataFrames, Arrow tables -- as a source.

A frame is read by the embedded DuckDB in place, as a file is (:class:`FrameSource` is a
:class:`~reident_airflow.sources.files.FileSource` whose table is the frame), after it is
turned into an Arrow table under the reading contract (``docs/reading.md``):

pandas keeps a missing value as ``None``, ``NaN``, ``pd.NA`` or ``NaT`` depending on the
column: in a column of text, ``NaN`` is pandas' marker for a missing value; in a numeric column
it is a NaN value, and ``pd.NA`` is missing. An object column that mixes kinds of values (``1``
and ``"1"``) cannot be compared by one rule and is an error naming the column. A polars
DataFrame, or any frame that exports an Arrow stream, is typed column by column already.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.file_source import FileTable, arrow_kinds
from reident_airflow.sources.files import FileSource

if TYPE_CHECKING:
    from reident_airflow.engine.aggregates import ClassAggregates
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.sources.fingerprint import InputFingerprint

__all__ = [
    "FrameSource",
    "aggregates_from_frame",
    "class_table_from_frame",
    "frame_to_arrow",
    "histogram_from_frame",
    "open_frame",
]


def _kind(value: Any) -> str | None:
    """The kind of one object-column value; ``None`` for pandas' missing markers."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes"
    if isinstance(value, int):
        return "number"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else "number"
    import pandas as pd

    if value is pd.NA or value is pd.NaT:
        return None
    return type(value).__name__


def _object_column(values: Any, name: str, label: str) -> Any:
    import pyarrow as pa

    each = [_kind(v) for v in values]
    kinds: set[str] = {k for k in each if k is not None}
    # NaN beside text or bytes is pandas' missing marker there; beside numbers, a number
    nan_missing = "nan" in kinds and bool(kinds - {"nan", "number"})
    if "nan" in kinds:
        kinds = (kinds - {"nan"}) | (set() if nan_missing else {"number"})
    if len(kinds) > 1:
        raise InvalidInputError(
            f"{label}: column {name!r} holds values of different kinds ({', '.join(sorted(kinds))})"
            ": they cannot be compared by one rule; convert the column to one type first"
        )
    kind = next(iter(kinds), "text")
    clean = [
        None
        if k is None or (nan_missing and k == "nan")
        else bytes(v)
        if isinstance(v, bytearray | memoryview)
        else v
        for v, k in zip(values, each, strict=True)
    ]
    if kind == "text":
        return pa.array(clean, type=pa.large_string())
    if kind == "bytes":
        return pa.array(clean, type=pa.large_binary())
    if kind == "bool":
        return pa.array(clean, type=pa.bool_())
    if kind == "number":
        if all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in clean):
            try:
                return pa.array(clean, type=pa.int64())
            except OverflowError:
                pass
        return pa.array([None if v is None else float(v) for v in clean], type=pa.float64())
    try:
        return pa.array(clean)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise InvalidInputError(
            f"{label}: column {name!r} holds values of a kind that cannot be grouped ({kind})"
        ) from None


def _all_text(series: Any) -> Any:
    """An object column whose values are all text or missing, as Arrow text; else ``None``.

    pandas' type inference (in C) skips ``None``, ``NaN``, ``pd.NA`` and ``NaT``, all missing
    in a column of text, so a column of text is turned over without a Python loop; any other
    column is checked value by value (:func:`_object_column`).
    """
    import pandas as pd
    import pyarrow as pa

    if pd.api.types.infer_dtype(series, skipna=True) != "string":
        return None
    try:  # from_pandas: a NaN here is pandas' missing text marker
        return pa.array(series.to_numpy(), type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _python_values(series: Any) -> list[Any]:
    """The values of a pandas column as Python objects, pandas' missing markers as they are."""
    return list(series.array)


def _arrow_stream(frame: Any, label: str) -> Any:
    """A frame of another library (polars, ...) through the Arrow stream it exports.

    Such a frame is typed column by column, as an Arrow table is: null is missing and a NaN
    in a float column is a value (polars keeps the two apart), so no rule of pandas applies.
    """
    import pyarrow as pa

    if not hasattr(frame, "__arrow_c_stream__"):
        lazy = " (a lazy frame: call .collect() first)" if hasattr(frame, "collect") else ""
        raise InvalidInputError(
            f"{label}: expected a pandas or polars DataFrame or an Arrow table, got "
            f"{type(frame).__name__}{lazy}"
        )
    return pa.table(frame)


def frame_to_arrow(frame: Any, label: str = "the DataFrame") -> Any:
    """The columns of ``frame`` as an Arrow table, missing values as the contract says."""
    import pyarrow as pa

    if isinstance(frame, pa.Table):
        return frame
    if isinstance(frame, pa.RecordBatch):
        return pa.Table.from_batches([frame])
    import numpy as np
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        return _arrow_stream(frame, label)
    arrays = []
    for i in range(frame.shape[1]):
        series = frame.iloc[:, i]
        name = str(frame.columns[i])
        dtype = series.dtype
        if isinstance(dtype, pd.ArrowDtype):
            arrays.append(pa.array(series.array))  # Arrow-backed: NaN and NA stay apart
        elif isinstance(dtype, pd.StringDtype):
            # every value is text or missing (None, NaN, NA): nothing to check value by value
            arrays.append(pa.array(series.array, type=pa.large_string()))
        elif dtype.kind == "O":
            text = _all_text(series)
            if text is None:
                text = _object_column(_python_values(series), name, label)
            arrays.append(text)
        elif isinstance(dtype, pd.CategoricalDtype):
            arrays.append(_object_column(_python_values(series.astype(object)), name, label))
        elif isinstance(dtype, np.dtype):
            arrays.append(pa.array(series.to_numpy(), from_pandas=False))  # NaN is a value
        else:
            # nullable extension dtypes (Int64, Float64, boolean) carry pd.NA as a mask beside
            # their values, where a Float64 NaN stays a NaN value (their __arrow_array__)
            arrays.append(pa.array(series.array))
    names = [str(c) for c in frame.columns]
    return pa.Table.from_arrays(arrays, names=names) if arrays else pa.table({})


def open_frame(frame: Any, *, label: str = "the DataFrame") -> FileTable:
    """Describe a pandas or polars DataFrame or an Arrow table for reading (``docs/reading.md``)."""
    table = frame_to_arrow(frame, label)
    names = tuple(str(n) for n in table.column_names)
    renamed = table.rename_columns([f"c{i}" for i in range(len(names))])
    types = table.schema.types
    return FileTable(
        label, "arrow", names, renamed, ",", arrow_kinds(types), types=tuple(str(t) for t in types)
    )


# ------------------------------------------------------------------------------- the source
class FrameSource(FileSource):
    """A pandas or polars DataFrame or an Arrow table, read by the embedded DuckDB in place:
    the :class:`~reident_airflow.sources.Source` of frames in memory. It counts as a file
    source does, and reads its rows as a file's (its columns turned over under the reading
    contract: :func:`frame_to_arrow`); it has no file to fingerprint. ``sep`` is that of the
    CSV files read beside it (:meth:`~reident_airflow.sources.files.FileSource.sibling`)."""

    def __init__(self, frame: Any, *, label: str = "the DataFrame", sep: str = ",") -> None:
        super().__init__(None, label=label, sep=sep)
        self.frame = frame

    def _opened(self) -> FileTable:
        return open_frame(self.frame, label=self.label)

    def fingerprint(self, rows: int | None = None) -> InputFingerprint | None:
        """``None``: a frame in memory has no file or table to identify it."""
        return None


# ------------------------------------------------------------------------------ functions
def histogram_from_frame(frame: Any, qis: Sequence[str]) -> ClassSizes:
    """The class-size histogram of a pandas or polars DataFrame or an Arrow table."""
    return FrameSource(frame).histogram(qis)


def aggregates_from_frame(
    frame: Any, qis: Sequence[str], *, weight: str | None = None, sensitive: Sequence[str] = ()
) -> ClassAggregates:
    """:func:`~reident_airflow.sources.files.aggregates_from_file` for a frame in memory."""
    return FrameSource(frame).aggregates(qis, weight=weight, sensitive=sensitive)


def class_table_from_frame(frame: Any, qis: Sequence[str]) -> ClassTable:
    """The class table of a pandas or polars DataFrame or an Arrow table on the given QIs."""
    return FrameSource(frame).class_table(qis)
