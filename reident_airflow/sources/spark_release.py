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
    KeyCounts,
    count_keyed,
    validate_target,
)
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.direct_match_sql import NO_KEY_MESSAGE
from reident_airflow.sources.spark_grouping import column_of, functions

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


def _value(frame: DataFrame, name: str, alias: str | None = None) -> Column:
    """A column as it is compared and counted: NaN missing, text by its exact characters."""
    F = functions(frame)
    column: Column = column_of(frame, name, alias)
    kind = _kind(frame.schema[name].dataType)
    if kind == _FLOAT:
        column = F.when(F.isnan(column), F.lit(None)).otherwise(column)
    elif kind == _TEXT:
        column = F.collate(column.cast("string"), "UTF8_BINARY")
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


def _table_counts(frame: DataFrame, key: str, name: str) -> KeyCounts:
    """Records, keys present and distinct keys, in one aggregation."""
    F = functions(frame)
    if key not in frame.columns:
        total = int(frame.count())
        return KeyCounts(name, total, False, total, total)
    value = _value(frame, key)
    row = frame.agg(F.count(F.lit(1)), F.count(value), F.count_distinct(value)).first()
    assert row is not None
    return KeyCounts(name, int(row[0]), True, int(row[1]), int(row[2]))


def _repeated_keys(frame: DataFrame, key: str) -> tuple[int, int]:
    """The key values occurring more than once, and the records holding them."""
    F = functions(frame)
    size = F.count(F.lit(1)).alias("reident_n")
    repeated = frame.groupBy(_value(frame, key)).agg(size).where(F.col("reident_n") > 1)
    row = repeated.agg(F.count(F.lit(1)), F.sum("reident_n")).first()
    assert row is not None
    return int(row[0]), int(row[1])


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
    target_value = validate_target(target)
    if not isinstance(key, str) or not key:
        raise InvalidInputError(NO_KEY_MESSAGE)
    counted = count_keyed(_SparkCounter(original, avatar, key), key, columns)
    return counted.result(target=target_value, key=key)


class _SparkCounter:
    """:class:`~reident_airflow.engine.direct_match.KeyedCounter` on Spark (module docstring)."""

    def __init__(self, original: DataFrame, avatar: DataFrame, key: str) -> None:
        self._frames = {"original": original, "avatar": avatar}
        self._key = key
        self._o, self._a = original.alias("reident_o"), avatar.alias("reident_a")

    def _joined(self) -> DataFrame:
        """The join on the key (built once the key is known to be in both tables)."""
        return self._o.join(self._a, _same(self._o, self._a, self._key))

    def columns(self, name: str) -> list[str]:
        return list(self._frames[name].columns)

    def key_counts(self, name: str) -> KeyCounts:
        return _table_counts(self._frames[name], self._key, name)

    def repeated_keys(self, name: str) -> tuple[int, int]:
        return _repeated_keys(self._frames[name], self._key)

    def joined_rows(self) -> int:
        return int(self._joined().count())

    def matches(self, selected: Sequence[str]) -> Any:
        o, a = self._o, self._a
        F = functions(o)
        matches = [F.sum(F.when(_same(o, a, c), 1).otherwise(0)) for c in selected]
        row = self._joined().agg(F.count(F.lit(1)), *matches).first()
        assert row is not None
        return row

    def distinct(self, selected: Sequence[str]) -> Any:
        avatar = self._frames["avatar"]
        F = functions(avatar)
        distinct: list[Column] = []
        for c in selected:
            value = _value(avatar, c)
            distinct += [F.count_distinct(value), F.max(F.when(value.isNull(), 1).otherwise(0))]
        row = avatar.agg(*distinct).first()
        assert row is not None
        return row
