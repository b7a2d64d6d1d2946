"""Column Direct Match Protection counted by Spark (docs/metrics.md §8): rows stay in Spark.

The original and released ("avatar") tables are two ``pyspark.sql.DataFrame`` (classic or
Spark Connect) aligned by a key column. Spark counts, as the SQL pushdown of
:mod:`~reident_airflow.sources.direct_match_sql` does, and only counts reach the driver:

- per table, one aggregation: records, keys present, distinct keys;
- one join on the key, counting its rows and each column's matches
  (``sum(CASE WHEN o.c <=> a.c THEN 1 ELSE 0 END)``);
- one aggregation of the avatar table: each column's distinct values (``count(DISTINCT c)``,
  plus one when the column has a missing value).

The counts go to :func:`~reident_airflow.engine.direct_match.direct_match_from_counts`, so the
result ranks and passes exactly as the engine's
:func:`~reident_airflow.engine.direct_match.direct_match_protection` does over DataFrames, and
errors carry the engine's messages in the engine's order.

Type semantics, as close to the engine's as Spark allows:

- a float ``NaN`` is a missing value, as in the engine (missing equals missing and is one
  distinct value);
- text is compared and counted by its exact characters (``UTF8_BINARY``), whatever the
  column's collation;
- a number against text: the text is read as a number where it is one (``try_cast``, so
  other text never raises and never matches); a boolean against a number: as 0/1;
- any other pair of different types is compared as text.

Known difference from the DataFrame path, as on the SQL path: two *text* columns that both hold
numbers are compared as text (``'1'`` and ``'1.0'`` differ).

Spark is imported only when a function here runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.direct_match import (
    DEFAULT_TARGET,
    DirectMatchResult,
    direct_match_from_counts,
    validate_target,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources.direct_match_sql import NO_KEY_MESSAGE

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["direct_match_spark"]

_NUMBER = "number"
_FLOAT = "float"
_TEXT = "text"
_BOOLEAN = "boolean"


def _kind(data_type: Any) -> str:
    from pyspark.sql import types as T

    if isinstance(data_type, T.FloatType | T.DoubleType):
        return _FLOAT
    if isinstance(data_type, T.NumericType):
        return _NUMBER
    if isinstance(data_type, T.StringType | T.VarcharType | T.CharType):
        return _TEXT
    if isinstance(data_type, T.BooleanType):
        return _BOOLEAN
    return str(data_type.simpleString())


def _ref(name: str, alias: str | None = None) -> Column:
    """A column by its name (backticks doubled), of an aliased DataFrame when given."""
    from pyspark.sql import functions as F

    quoted = "`" + name.replace("`", "``") + "`"
    return F.col(quoted if alias is None else f"{alias}.{quoted}")


def _value(frame: DataFrame, name: str, alias: str | None = None) -> Column:
    """A column as it is compared and counted: NaN missing, text by its exact characters."""
    from pyspark.sql import functions as F

    column = _ref(name, alias)
    kind = _kind(frame.schema[name].dataType)
    if kind == _FLOAT:
        return F.when(F.isnan(column), F.lit(None)).otherwise(column)
    if kind == _TEXT:
        return F.collate(column.cast("string"), "UTF8_BINARY")
    return column


def _same(o: DataFrame, a: DataFrame, name: str) -> Column:
    """Equal values, or missing on both sides (module docstring); ``o`` and ``a`` are the
    DataFrames aliased ``reident_o`` and ``reident_a``."""
    ko, ka = _kind(o.schema[name].dataType), _kind(a.schema[name].dataType)
    left, right = _value(o, name, "reident_o"), _value(a, name, "reident_a")
    numeric = {_NUMBER, _FLOAT}
    if ko == ka or {ko, ka} <= numeric:
        return left.eqNullSafe(right)
    if {ko, ka} <= numeric | {_BOOLEAN}:
        return left.cast("double").eqNullSafe(right.cast("double"))
    if {ko, ka} <= numeric | {_BOOLEAN, _TEXT}:
        return left.try_cast("double").eqNullSafe(right.try_cast("double"))
    return left.cast("string").eqNullSafe(right.cast("string"))


def _table_counts(frame: DataFrame, key: str) -> tuple[int, int, int]:
    """Records, keys present and distinct keys, in one aggregation."""
    from pyspark.sql import functions as F

    if key not in frame.columns:
        total = int(frame.count())
        return total, total, total
    value = _value(frame, key)
    row = frame.agg(F.count(F.lit(1)), F.count(value), F.count_distinct(value)).first()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def _raise_for_key(frame: DataFrame, key: str, name: str, counts: tuple[int, int, int]) -> None:
    from pyspark.sql import functions as F

    total, present, distinct = counts
    if present < total:
        raise InvalidInputError(
            f"key column {key!r} has {total - present} missing values in the {name} table"
        )
    if distinct == present:
        return
    size = F.count(F.lit(1)).alias("reident_n")
    repeated = frame.groupBy(_value(frame, key)).agg(size).where(F.col("reident_n") > 1)
    row = repeated.agg(F.count(F.lit(1)), F.sum("reident_n")).first()
    assert row is not None
    raise InvalidInputError(
        f"key column {key!r} is not unique in the {name} table: {int(row[0])} key values occur "
        f"more than once, on {int(row[1])} records"
    )


def _check_tables(original: DataFrame, avatar: DataFrame, key: str) -> int:
    """The engine's checks, in its order; returns the number of records."""
    sides = (("original", original), ("avatar", avatar))
    scanned = {name: _table_counts(frame, key) for name, frame in sides}
    for name, _ in sides:
        if scanned[name][0] == 0:
            raise EmptyDatasetError(f"the {name} table has no records")
    n, n_avatar = scanned["original"][0], scanned["avatar"][0]
    if n != n_avatar:
        raise InvalidInputError(
            f"the tables have different numbers of records: the original table has "
            f"{n}, the avatar table has {n_avatar}"
        )
    for name, frame in sides:
        if key not in frame.columns:
            raise InvalidInputError(f"key column {key!r} is missing from the {name} table")
    for name, frame in sides:
        _raise_for_key(frame, key, name, scanned[name])
    return n


def _selected(
    original: Sequence[str], avatar: Sequence[str], key: str, columns: Sequence[str] | None
) -> list[str]:
    """The columns to score, chosen (and refused) as the engine does."""
    in_avatar, in_original = set(avatar), set(original)
    if columns is None:
        selected = [c for c in original if c in in_avatar and c != key]
    else:
        if isinstance(columns, str):
            raise InvalidInputError("columns must be a sequence of column names, not one string")
        selected = list(dict.fromkeys(str(c) for c in columns))
        if key in selected:
            raise InvalidInputError(f"the key column {key!r} cannot also be scored")
        for name, present in (("original", in_original), ("avatar", in_avatar)):
            absent = [c for c in selected if c not in present]
            if absent:
                raise InvalidInputError(f"columns missing from the {name} table: {absent}")
    if not selected:
        raise InvalidInputError(
            f"no column to compare: the tables have no column in common besides the key {key!r}"
        )
    return selected


def direct_match_spark(
    original: DataFrame,
    avatar: DataFrame,
    *,
    key: str | None,
    target: float = DEFAULT_TARGET,
    columns: Sequence[str] | None = None,
) -> DirectMatchResult:
    """Column Direct Match Protection of two Spark DataFrames aligned on ``key``, counted by
    Spark; only counts reach the driver (module docstring)."""
    from pyspark.sql import functions as F

    target_value = validate_target(target)
    if not isinstance(key, str) or not key:
        raise InvalidInputError(NO_KEY_MESSAGE)
    n = _check_tables(original, avatar, key)
    o, a = original.alias("reident_o"), avatar.alias("reident_a")
    joined = o.join(a, _same(o, a, key))
    try:
        selected = _selected(original.columns, avatar.columns, key, columns)
    except InvalidInputError:
        _raise_unmatched(key, n, int(joined.count()))
        raise
    matches = [F.sum(F.when(_same(o, a, c), 1).otherwise(0)) for c in selected]
    row = joined.agg(F.count(F.lit(1)), *matches).first()
    assert row is not None
    _raise_unmatched(key, n, int(row[0]))
    distinct: list[Column] = []
    for c in selected:
        value = _value(avatar, c)
        distinct += [F.count_distinct(value), F.max(F.when(value.isNull(), 1).otherwise(0))]
    u = avatar.agg(*distinct).first()
    assert u is not None
    counts = {
        c: (int(row[1 + i] or 0), int(u[2 * i] or 0) + int(u[2 * i + 1] or 0))
        for i, c in enumerate(selected)
    }
    in_avatar, in_original = set(avatar.columns), set(original.columns)
    return direct_match_from_counts(
        n,
        counts,
        target=target_value,
        key=key,
        only_in_original=tuple(c for c in original.columns if c not in in_avatar),
        only_in_avatar=tuple(c for c in avatar.columns if c not in in_original),
    )


def _raise_unmatched(key: str, n: int, matched: int) -> None:
    if matched != n:
        missing = n - matched
        raise InvalidInputError(
            f"key column {key!r} does not match between the tables: {missing} key values of "
            f"the original table are not in the avatar table, and {missing} key values of "
            f"the avatar table are not in the original table"
        )
