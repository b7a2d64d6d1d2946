"""Counting ``(m_c, u_c)`` of one column over two pandas tables, and aligning their rows.

The internals of :func:`~reident_airflow.engine.direct_match.direct_match_protection`
(docs/metrics.md §8): :func:`column_counts` compares an original column with its released one
value by value, :func:`alignment` lines the released rows up with the original ones by a key
column, and :func:`label` names a column in messages.

An internal module of the engine: its names are imported by the engine's modules only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from reident_airflow.engine.errors import InvalidInputError

__all__ = ["alignment", "column_counts", "label"]

# Text columns: how many leading non-missing values are cast first, so that a column of
# ordinary text is recognised as non-numeric without parsing all of it.
_PROBE_VALUES: Final = 1024
_PROBE_SCAN: Final = 65536

_Kind = Literal["number", "text", "other"]


# ---------------------------------------------------------------------------------------------
# Counting (m_c, u_c) over two pandas columns.
#
# Each column is first brought to one of three forms: "number" (a numpy bool/int/float array,
# NaN = missing), "text" (a pyarrow string ChunkedArray, null = missing) or "other" (the
# pandas Series, compared through pandas). Numbers compare with numpy and count distinct
# values by sorting (faster than hashing for high-cardinality columns, and about as fast for
# low ones); text compares and counts distinct values with Arrow's hash kernels. Nothing here
# loops over rows in Python, and numeric and Arrow-backed string columns are never copied to
# object arrays.

_NumArray = npt.NDArray[Any]


@dataclass(frozen=True)
class _Prepared:
    kind: _Kind
    values: Any  # _NumArray for "number", pa.ChunkedArray for "text", None for "other"
    series: pd.Series[Any]  # the column as given (categories decoded), positional index


def _chunked(values: Any) -> Any:
    arr = values.__arrow_array__() if hasattr(values, "__arrow_array__") else pa.array(values)
    return arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])


def _arrow_number(arr: Any) -> _NumArray:
    """A numeric (or boolean, or decimal) Arrow array as numpy; nulls become NaN."""
    if pa.types.is_decimal(arr.type) or (arr.null_count > 0 and not pa.types.is_floating(arr.type)):
        arr = pc.cast(arr, pa.float64())
    out: _NumArray = np.asarray(arr.to_numpy())
    return out


def _is_arrow_numeric(t: Any) -> bool:
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_boolean(t)
    )


def _is_arrow_text(t: Any) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _prepare(column: pd.Series[Any]) -> _Prepared:
    s = pd.Series(column.array, copy=False)
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        s = pd.Series(np.asarray(s.array), copy=False)
        dtype = s.dtype
    if isinstance(dtype, np.dtype):
        if dtype.kind in "biuf":
            return _Prepared("number", s.to_numpy(), s)
        if dtype == np.dtype(object):
            try:
                arr = _chunked(pa.array(s.to_numpy(), from_pandas=True))
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return _Prepared("other", None, s)  # mixed types: compared through pandas
            if _is_arrow_numeric(arr.type):
                return _Prepared("number", _arrow_number(arr), s)
            if _is_arrow_text(arr.type):
                return _Prepared("text", arr, s)
            if pa.types.is_null(arr.type):  # every value missing
                return _Prepared("text", pc.cast(arr, pa.string()), s)
        return _Prepared("other", None, s)
    if isinstance(dtype, pd.StringDtype) or (
        isinstance(dtype, pd.ArrowDtype) and _is_arrow_text(dtype.pyarrow_dtype)
    ):
        return _Prepared("text", _chunked(s.array), s)
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        try:
            arr = _chunked(s.array)
        except (pa.ArrowException, TypeError, ValueError, AttributeError):
            return _Prepared("other", None, s)
        if _is_arrow_numeric(arr.type):
            return _Prepared("number", _arrow_number(arr), s)
    return _Prepared("other", None, s)


def _as_number(prepared: _Prepared) -> _NumArray | None:
    """The column as numbers: numeric columns, or text whose every value parses as a number."""
    if prepared.kind == "number":
        number: _NumArray = prepared.values
        return number
    if prepared.kind == "text":
        return _parse_text(prepared.values)
    return None


def _cast_number(arr: Any, *, trim: bool) -> Any:
    """``arr`` cast to int64 (else float64) if every non-missing value parses, else None."""
    probe = pc.drop_null(arr.slice(0, _PROBE_SCAN)).slice(0, _PROBE_VALUES)
    if trim:
        probe = pc.utf8_trim_whitespace(probe)
    for target in (pa.int64(), pa.float64()):
        try:
            pc.cast(probe, target)
        except pa.ArrowException:
            continue
        try:
            return pc.cast(pc.utf8_trim_whitespace(arr) if trim else arr, target)
        except pa.ArrowException:
            continue
    return None


def _parse_text(arr: Any) -> _NumArray | None:
    """Text as numbers when every non-missing value parses as one, else None."""
    parsed = _cast_number(arr, trim=False)
    if parsed is None:
        parsed = _cast_number(arr, trim=True)
    return None if parsed is None else _arrow_number(parsed)


def _distinct_numbers(values: _NumArray) -> int:
    """Distinct values of a numeric array, NaN counted once (sort-based)."""
    if values.size == 0:
        return 0
    ordered = np.sort(values)
    extra = 0
    if ordered.dtype.kind == "f":
        valid = int(np.searchsorted(ordered, np.nan))  # NaN sorts last
        extra = int(valid < ordered.size)
        ordered = ordered[:valid]
    if ordered.size == 0:
        return extra
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1])) + extra


def _number_counts(x: _NumArray, y: _NumArray) -> tuple[int, int]:
    matches = int(np.count_nonzero(x == y))
    if x.dtype.kind == "f" and y.dtype.kind == "f":
        matches += int(np.count_nonzero(np.isnan(x) & np.isnan(y)))
    return matches, _distinct_numbers(y)


def _text_counts(x: Any, y: Any) -> tuple[int, int] | None:
    try:
        y_cmp = pc.cast(y, x.type) if x.type != y.type else y
        equal = pc.equal(x, y_cmp)  # null where either side is missing
    except pa.ArrowException:
        return None
    matches = int(pc.sum(equal).as_py() or 0)
    if x.null_count and y.null_count:
        both = pc.and_(pc.is_null(x), pc.is_null(y))
        matches += int(pc.sum(both).as_py() or 0)
    distinct = len(pc.unique(y))  # null kept as one value; faster than count_distinct
    return matches, distinct


def _numeric_or_nan(s: pd.Series[Any]) -> _NumArray | None:
    try:
        parsed = pd.to_numeric(s, errors="coerce")
        out: _NumArray = np.asarray(parsed.to_numpy(dtype=np.float64, na_value=np.nan))
    except (TypeError, ValueError, OverflowError):
        return None
    return out


def _generic_counts(
    x: pd.Series[Any], y: pd.Series[Any], *, numeric: bool, column: str
) -> tuple[int, int]:
    """Element-wise through pandas: as-is equality, or numeric equality where both parse."""
    same = np.asarray(x.isna().to_numpy(dtype=bool) & y.isna().to_numpy(dtype=bool))
    try:
        equal = (x == y).to_numpy(dtype=bool, na_value=False)
    except (TypeError, ValueError):
        equal = np.zeros(len(x), dtype=bool)
    same |= equal
    if numeric:
        xn, yn = _numeric_or_nan(x), _numeric_or_nan(y)
        if xn is not None and yn is not None:
            same |= xn == yn
    try:
        codes, uniques = pd.factorize(y, use_na_sentinel=True)
    except TypeError:
        raise InvalidInputError(
            f"column {column!r} of the avatar table holds values that cannot be compared"
        ) from None
    distinct = len(uniques) + int(bool(np.any(codes < 0)))
    return int(np.count_nonzero(same)), distinct


def column_counts(x: pd.Series[Any], y: pd.Series[Any], column: str) -> tuple[int, int]:
    """``(m_c, u_c)`` of one column; ``x`` and ``y`` are row-aligned by position."""
    px, py = _prepare(x), _prepare(y)
    kinds = {px.kind, py.kind}
    if kinds == {"number"}:
        return _number_counts(px.values, py.values)
    if kinds == {"text"}:
        # Same kind: numbers only if both sides parse; otherwise the text as it is.
        nx = _as_number(px)
        ny = _as_number(py) if nx is not None else None
        if nx is not None and ny is not None:
            return _number_counts(nx, ny)
        counted = _text_counts(px.values, py.values)
        if counted is not None:
            return counted
    elif kinds == {"number", "text"}:
        # Different kinds: numbers, value by value if the text does not parse throughout.
        nx, ny = _as_number(px), _as_number(py)
        if nx is not None and ny is not None:
            return _number_counts(nx, ny)
    # Partly numeric text against numbers, mixed object columns, dates and the like.
    numeric = all(p.kind != "other" or p.series.dtype == np.dtype(object) for p in (px, py))
    return _generic_counts(px.series, py.series, numeric=numeric, column=column)


# ---------------------------------------------------------------------------------------------
# Key alignment.


def label(column: object) -> str:
    return column if isinstance(column, str) else str(column)


def _key_index(prepared: _Prepared, key: str, name: str, numeric: bool) -> pd.Index[Any]:
    missing = int(prepared.series.isna().sum())
    if missing:
        raise InvalidInputError(
            f"key column {key!r} has {missing} missing values in the {name} table"
        )
    number = _as_number(prepared) if numeric else None
    if number is not None:
        index: pd.Index[Any] = pd.Index(np.asarray(number, dtype=np.float64))
    else:
        index = pd.Index(prepared.series.array)
    if not index.is_unique:
        repeated = index.duplicated(keep=False)
        keys = int(index[repeated].nunique())
        rows = int(np.count_nonzero(repeated))
        raise InvalidInputError(
            f"key column {key!r} is not unique in the {name} table: {keys} key values occur "
            f"more than once, on {rows} records"
        )
    return index


def alignment(original: pd.DataFrame, avatar: pd.DataFrame, key: str) -> _NumArray | None:
    """Positions of the avatar rows matching the original rows, or None if already aligned."""
    if not isinstance(key, str):
        raise InvalidInputError("key must be a column name")
    for name, table in (("original", original), ("avatar", avatar)):
        if key not in table.columns:
            raise InvalidInputError(f"key column {key!r} is missing from the {name} table")
    px, py = _prepare(original[key]), _prepare(avatar[key])
    # Keys compare like values: numerically when the two sides are of different kinds or
    # types, or are both text that parses as numbers; as they are otherwise.
    same_type = px.kind == py.kind == "number" and px.values.dtype == py.values.dtype
    numeric = not same_type and _as_number(px) is not None and _as_number(py) is not None
    x_index = _key_index(px, key, "original", numeric)
    y_index = _key_index(py, key, "avatar", numeric)
    positions = np.asarray(y_index.get_indexer(x_index))
    unmatched = int(np.count_nonzero(positions < 0))
    if unmatched:
        # Both keys are unique and the tables have the same number of rows, so as many avatar
        # keys are missing from the original table as the other way round.
        raise InvalidInputError(
            f"key column {key!r} does not match between the tables: {unmatched} key values of "
            f"the original table are not in the avatar table, and {unmatched} key values of "
            f"the avatar table are not in the original table"
        )
    if np.array_equal(positions, np.arange(len(positions))):
        return None
    return positions
