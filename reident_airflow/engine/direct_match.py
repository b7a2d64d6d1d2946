"""Column Direct Match Protection (metrics.md §8; seed 000).

An original table ``X`` and its released ("avatar") table ``Y`` hold the same ``n``
individuals, row-aligned by position or by a key column. For each column ``c``::

    m_c = #{i : x_ic = y_ic}                 matches: the value was released unchanged
    u_c = #distinct values of c in Y         missing counts as one value
    P_c = 100 * (1 - m_c * u_c / n^2)

and the metric is ``min_c P_c``, with the columns ranked by ``P_c`` ascending and those below
the target listed.

Reading of the formula (it is what makes the target below defensible): an attacker who knows
an individual's true value ``x_ic`` looks it up in the released column and picks one of the
avatar rows carrying it. The individual's own avatar carries it with probability ``m_c / n``,
and a value is shared on average by ``n / u_c`` avatar rows, so the pick is right with
probability about ``u_c / n``. ``m_c * u_c / n^2`` is therefore the expected share of
individuals re-identified from column ``c`` alone, and ``P_c`` the percentage protected.
A forgotten identifier (``u_c = m_c = n``) gives exactly 0; a constant column gives
``100 * (1 - 1/n)``.

Equality is on values, not on their text: ``1``, ``1.0`` and a CSV's ``"1"`` are equal when the
two sides' types differ, or when both sides are text that parses as numbers; otherwise values
compare as they are. Missing equals missing (``NaN``, ``None``, ``pd.NA`` alike).

The arithmetic lives in :func:`column_protection` and the ranking in
:func:`direct_match_from_counts`, so that a database pushdown path that only *counts*
``(m_c, u_c)`` gives the same result as :func:`direct_match_protection` over DataFrames.

Source: Octopize, "Column Direct Match Protection" (avatar privacy metrics documentation),
as transcribed in ``seeds/000``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from reident_airflow.engine.defaults import DEFAULT_TARGET
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

__all__ = [
    "DEFAULT_TARGET",
    "SCHEMA",
    "ColumnProtection",
    "DirectMatchResult",
    "column_protection",
    "direct_match_from_counts",
    "direct_match_protection",
    "validate_target",
]

SCHEMA: Final = "reident.direct_match/v1"

# Text columns: how many leading non-missing values are cast first, so that a column of
# ordinary text is recognised as non-numeric without parsing all of it.
_PROBE_VALUES: Final = 1024
_PROBE_SCAN: Final = 65536

_Kind = Literal["number", "text", "other"]


@dataclass(frozen=True)
class ColumnProtection:
    """``P_c`` of one column with the counts it was computed from."""

    column: str
    protection: float
    matches: int
    distinct_avatar_values: int


@dataclass(frozen=True)
class DirectMatchResult:
    """Column Direct Match Protection of an avatar table against its original.

    ``columns`` is ranked by ``protection`` ascending (the most re-identifying column first;
    ties keep the column order of the original table); ``protection`` is the first one's.
    ``below_target`` lists, in the same order, the columns whose protection is below
    ``target``; ``passed`` is ``protection >= target``. ``only_in_original`` and
    ``only_in_avatar`` name the columns that could not be compared; ``key`` is the column the
    rows were aligned on (``None``: by position).
    """

    records: int
    protection: float
    target: float
    columns: tuple[ColumnProtection, ...]
    below_target: tuple[str, ...]
    passed: bool
    only_in_original: tuple[str, ...] = ()
    only_in_avatar: tuple[str, ...] = ()
    key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``reident.direct_match/v1`` document (contract.md), JSON-serialisable.

        Extends the contract with ``key``, ``only_in_original`` and ``only_in_avatar``.
        """
        return {
            "schema": SCHEMA,
            "records": int(self.records),
            "protection": float(self.protection),
            "target": float(self.target),
            "columns": [
                {
                    "column": c.column,
                    "protection": float(c.protection),
                    "matches": int(c.matches),
                    "distinct_avatar_values": int(c.distinct_avatar_values),
                }
                for c in self.columns
            ],
            "below_target": list(self.below_target),
            "passed": bool(self.passed),
            "key": self.key,
            "only_in_original": list(self.only_in_original),
            "only_in_avatar": list(self.only_in_avatar),
        }


# ---------------------------------------------------------------------------------------------
# The arithmetic and the ranking: shared by the DataFrame path and the database pushdown path.


def _count(value: object, name: str) -> int:
    if isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be an integer count, not a boolean")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(f"{name} must be an integer count") from None


def validate_target(target: object) -> float:
    """The protection target: a number between 0 and 100 (a percentage).

    Shared by every path that gates on it (DataFrame, SQL, operator), so that one rule and
    one message hold everywhere.
    """
    if isinstance(target, bool | np.bool_) or not isinstance(target, int | float | np.number):
        raise InvalidInputError("target must be a number between 0 and 100")
    value = float(target)
    if not math.isfinite(value) or not 0.0 <= value <= 100.0:
        raise InvalidInputError(f"target must be between 0 and 100, got {value}")
    return value


def column_protection(matches: int, distinct_avatar_values: int, records: int) -> float:
    """``P_c = 100 * (1 - m_c * u_c / n^2)`` for one column.

    ``matches`` is ``m_c`` (rows whose released value equals the original one),
    ``distinct_avatar_values`` is ``u_c`` (distinct released values, missing counted once) and
    ``records`` is ``n``. The product is formed on integers, so a leaked identifier
    (``m_c = u_c = n``) gives exactly ``0.0``.
    """
    n = _count(records, "records")
    m = _count(matches, "matches")
    u = _count(distinct_avatar_values, "distinct_avatar_values")
    if n <= 0:
        raise EmptyDatasetError("direct match protection needs at least one record")
    if not 0 <= m <= n:
        raise InvalidInputError(f"matches must be between 0 and {n} records, got {m}")
    if not 1 <= u <= n:
        raise InvalidInputError(
            f"distinct_avatar_values must be between 1 and {n} records, got {u}"
        )
    n2 = n * n
    return 100.0 * (n2 - m * u) / n2


def direct_match_from_counts(
    records: int,
    counts: Mapping[str, tuple[int, int]],
    *,
    target: float = DEFAULT_TARGET,
    key: str | None = None,
    only_in_original: Sequence[str] = (),
    only_in_avatar: Sequence[str] = (),
) -> DirectMatchResult:
    """Rank columns from their counts: ``counts`` maps a column to ``(m_c, u_c)``.

    The database pushdown path counts in SQL and calls this, so that it ranks and passes
    exactly as :func:`direct_match_protection`. Ties in protection keep the mapping's order.
    """
    target_value = validate_target(target)
    n = _count(records, "records")
    if n <= 0:
        raise EmptyDatasetError("direct match protection needs at least one record")
    if not counts:
        raise InvalidInputError("no column to compare: counts is empty")
    scored = []
    for column, pair in counts.items():
        try:
            m, u = pair
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"counts of column {column!r} must be a pair (matches, distinct_avatar_values)"
            ) from None
        m = _count(m, f"matches of column {column!r}")
        u = _count(u, f"distinct_avatar_values of column {column!r}")
        scored.append(ColumnProtection(str(column), column_protection(m, u, n), m, u))
    ranked = tuple(sorted(scored, key=lambda c: c.protection))  # stable: ties keep order
    lowest = ranked[0].protection
    return DirectMatchResult(
        records=n,
        protection=lowest,
        target=target_value,
        columns=ranked,
        below_target=tuple(c.column for c in ranked if c.protection < target_value),
        passed=lowest >= target_value,
        only_in_original=tuple(str(c) for c in only_in_original),
        only_in_avatar=tuple(str(c) for c in only_in_avatar),
        key=key,
    )


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


def _column_counts(x: pd.Series[Any], y: pd.Series[Any], column: str) -> tuple[int, int]:
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
# Tables: validation, key alignment, column selection.


def _label(column: object) -> str:
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


def _alignment(original: pd.DataFrame, avatar: pd.DataFrame, key: str) -> _NumArray | None:
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


def _check_table(table: object, name: str) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise InvalidInputError(f"the {name} table must be a pandas DataFrame")
    if table.columns.has_duplicates:
        repeated = sorted({_label(c) for c in table.columns[table.columns.duplicated()]})
        raise InvalidInputError(f"the {name} table has duplicated column names: {repeated}")
    return table


def direct_match_protection(
    original: pd.DataFrame,
    avatar: pd.DataFrame,
    *,
    key: str | None = None,
    target: float = DEFAULT_TARGET,
    columns: Sequence[str] | None = None,
) -> DirectMatchResult:
    """Column Direct Match Protection of ``avatar`` against ``original`` (metrics.md §8).

    Rows are aligned by position, or by ``key`` (a column of both tables, unique in each, and
    not scored). Every column present in both tables is scored, or only ``columns`` if given;
    columns present in one table only are reported in ``only_in_original`` /
    ``only_in_avatar``.

    Raises :class:`EmptyDatasetError` for a table without records and
    :class:`InvalidInputError` for different row counts, a missing, incomplete, non-unique or
    non-matching key, unknown ``columns``, or no column to compare. Messages carry counts and
    column names, never a record's values.
    """
    original = _check_table(original, "original")
    avatar = _check_table(avatar, "avatar")
    target_value = validate_target(target)
    for name, table in (("original", original), ("avatar", avatar)):
        if len(table) == 0:
            raise EmptyDatasetError(f"the {name} table has no records")
    if len(original) != len(avatar):
        raise InvalidInputError(
            f"the tables have different numbers of records: the original table has "
            f"{len(original)}, the avatar table has {len(avatar)}"
        )
    n = len(original)
    positions = None if key is None else _alignment(original, avatar, key)

    avatar_columns = set(avatar.columns)
    original_columns = set(original.columns)
    only_in_original = tuple(_label(c) for c in original.columns if c not in avatar_columns)
    only_in_avatar = tuple(_label(c) for c in avatar.columns if c not in original_columns)
    if columns is None:
        selected = [c for c in original.columns if c in avatar_columns and c != key]
    else:
        if isinstance(columns, str):
            raise InvalidInputError("columns must be a sequence of column names, not one string")
        selected = list(dict.fromkeys(columns))
        if key is not None and key in selected:
            raise InvalidInputError(f"the key column {key!r} cannot also be scored")
        for name, present in (("original", original_columns), ("avatar", avatar_columns)):
            absent = [_label(c) for c in selected if c not in present]
            if absent:
                raise InvalidInputError(f"columns missing from the {name} table: {absent}")
    if not selected:
        raise InvalidInputError(
            "no column to compare: the tables have no column in common"
            + ("" if key is None else f" besides the key {key!r}")
        )

    counts: dict[str, tuple[int, int]] = {}
    for column in selected:
        y = avatar[column]
        if positions is not None:
            y = y.take(positions)
        counts[_label(column)] = _column_counts(original[column], y, _label(column))
    return direct_match_from_counts(
        n,
        counts,
        target=target_value,
        key=key,
        only_in_original=only_in_original,
        only_in_avatar=only_in_avatar,
    )
