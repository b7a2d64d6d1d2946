"""Column Direct Match Protection counted by the database (docs/metrics.md §8): rows never travel.

When the original and the released ("avatar") tables live in the same database and share a
key column, ``n``, ``m_c`` and ``u_c`` are counted where the data is, in four statements::

    SELECT count(*), count(key), count(DISTINCT key) FROM original      -- and FROM avatar
    SELECT count(*),
           SUM(CASE WHEN o.c = a.c OR (o.c IS NULL AND a.c IS NULL) THEN 1 ELSE 0 END), ...
      FROM original AS o JOIN avatar AS a ON o.key = a.key
    SELECT count(DISTINCT a.c) + MAX(CASE WHEN a.c IS NULL THEN 1 ELSE 0 END), ... FROM avatar

(missing counts as one value, as in the engine). They make the engine's checks: both tables
have records and the same number of them; the key is in both, has no missing value and is
unique in each (``count(DISTINCT key)`` is skipped when a primary key or unique constraint on
the key column guarantees it; on a duplicate, a ``GROUP BY key HAVING count(*) > 1`` counts the
repeated keys for the message); every key of one table is in the other (the join has ``n``
rows). The counts go to :func:`~reident_airflow.engine.direct_match.direct_match_from_counts`,
so the result ranks and passes exactly as
:func:`~reident_airflow.engine.direct_match.direct_match_protection` does over DataFrames, and
errors carry the same messages, in the same order. Only aggregates are fetched.

A database table has no row order, so without a key nothing can be aligned: that is an input
error here (:data:`NO_KEY_MESSAGE`), not a silent ``ORDER BY`` of our choosing.

Identifiers (tables, schemas, columns) are reflected, checked against the reflected columns and
quoted by SQLAlchemy; nothing a user gives is formatted into SQL text.

Type semantics (the engine compares values, not their text; the database does what it can):

* columns of the same kind (numbers, text, booleans, dates) compare as the database compares
  them: an integer ``1`` equals a float ``1.0`` or a ``NUMERIC`` ``1.00``;
* a number (or boolean) against text: on PostgreSQL the text is cast to ``NUMERIC`` where it
  looks like a number (a regular expression guards the cast, so other text never raises and
  never matches), as the engine does; on SQLite the column affinities do the same; on other
  databases (MySQL, MariaDB, ...) both sides are compared as text, so ``1`` equals ``'1'`` but
  not ``'1.0'``;
* any other pair of different kinds is compared as text;
* text is compared and counted by its exact value: by its bytes on MySQL and MariaDB, so
  ``Male`` and ``male`` (or ``'a'`` and ``'a '``) stay different whatever the collation says;
  under ``COLLATE "C"`` on PostgreSQL (the same as any deterministic collation, and faster).

Known differences from the DataFrame path, all on unusual data: two *text* columns that both
hold numbers are compared as text (``'1'`` and ``'1.0'`` differ; the engine parses both and
finds them equal), and distinct values of a text column are counted by their text; a float
``NaN`` is a value in the database (equal to ``NaN``, distinct from ``NULL``), while the engine
treats ``NaN`` as missing.

MariaDB joins unindexed tables with a nested loop unless told otherwise: the join statement runs
with hash joins enabled for that statement only (``SET STATEMENT join_cache_level = 4 ... FOR``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.sqltypes import NullType

from reident_airflow.engine.direct_match import (
    DEFAULT_TARGET,
    DirectMatchCounts,  # counted here, also by Spark: the engine's, named here as before
    DirectMatchResult,
    KeyCounts,
    count_keyed,
    validate_target,  # one validation of the target, shared with the DataFrame path
)
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.connect import connect, make_engine, read_only, reflect_table
from reident_airflow.sources.db_errors import database_errors

__all__ = [
    "NO_KEY_MESSAGE",
    "DirectMatchCounts",
    "direct_match_counts_sql",
    "direct_match_in_database",
    "read_table_frame",
]

NO_KEY_MESSAGE = (
    "a database table has no row order: give a key column (present and unique in both tables) "
    "to align the released records with the original ones"
)

FETCH_ROWS = 100_000

# Text that PostgreSQL's NUMERIC input accepts (an exponent of at most 3 digits, so that the
# cast never overflows): what the engine would parse as a number.
_NUMBER_TEXT = r"^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]{1,3})?\s*$"
_MYSQL = frozenset({"mysql", "mariadb"})


# ------------------------------------------------------------------------------ comparisons
def _kind(sql_type: Any) -> str:
    if isinstance(sql_type, NullType):
        return "unknown"
    if isinstance(sql_type, sa.Boolean):
        return "boolean"
    if isinstance(sql_type, sa.Integer | sa.Numeric | sa.Float):  # Float: not a Numeric in 2.1
        return "number"
    if isinstance(sql_type, sa.String):  # Text, VARCHAR, CHAR, Enum
        return "text"
    if isinstance(sql_type, sa.Date | sa.DateTime):
        return "datetime"
    return type(sql_type).__name__


def _exact(dialect: str, column: sa.ColumnElement[Any], kind: str) -> sa.ColumnElement[Any]:
    """Text compared and counted by its exact value, whatever the column's collation.

    MySQL/MariaDB: by its bytes (their collations fold case and trailing spaces). PostgreSQL:
    under the ``"C"`` collation, which is byte equality like any deterministic collation (so
    nothing changes for those) but never case-insensitive, and sorts much faster than a
    linguistic collation for ``COUNT(DISTINCT ...)``.
    """
    if kind == "text":
        if dialect in _MYSQL:
            return sa.cast(column, sa.LargeBinary)
        if dialect == "postgresql" and not isinstance(column.type, sa.Enum):
            return column.collate("C")
    return column


def _as_number(column: sa.ColumnElement[Any], kind: str) -> sa.ColumnElement[Any]:
    """PostgreSQL: the column as NUMERIC; text only where it looks like a number, else NULL."""
    if kind == "text":
        return sa.case((column.regexp_match(_NUMBER_TEXT), sa.cast(column, sa.Numeric)), else_=None)
    if kind == "boolean":
        return sa.cast(sa.cast(column, sa.Integer), sa.Numeric)
    return sa.cast(column, sa.Numeric)


def _equal(
    dialect: str, o: sa.ColumnElement[Any], a: sa.ColumnElement[Any]
) -> sa.ColumnElement[bool]:
    """``o = a`` with the type semantics of the module docstring (NULLs are not handled here)."""
    ko, ka = _kind(o.type), _kind(a.type)
    if ko == ka or "unknown" in (ko, ka):
        return _exact(dialect, o, ko) == _exact(dialect, a, ka)
    kinds = {ko, ka}
    if kinds == {"number", "boolean"}:
        o_cmp = sa.cast(o, sa.Integer) if ko == "boolean" else o
        a_cmp = sa.cast(a, sa.Integer) if ka == "boolean" else a
        return o_cmp == a_cmp
    if kinds <= {"number", "boolean", "text"}:
        if dialect == "postgresql":
            return _as_number(o, ko) == _as_number(a, ka)
        if dialect == "sqlite":  # numeric affinity converts the text side
            return o == a
    # Different kinds: compare their text.
    return _exact(dialect, sa.cast(o, sa.String), "text") == _exact(
        dialect, sa.cast(a, sa.String), "text"
    )


def _same(dialect: str, o: sa.ColumnElement[Any], a: sa.ColumnElement[Any]) -> Any:
    """Equal values, or missing on both sides."""
    return sa.or_(_equal(dialect, o, a), sa.and_(o.is_(None), a.is_(None)))


# ---------------------------------------------------------------------------------- checks
def _declared_unique(table: sa.FromClause, key: str) -> bool:
    """A primary key, unique constraint or unique index on exactly the key column.

    Only a reflected table declares any: a query (a Great Expectations batch) checks its keys.
    """
    if not isinstance(table, sa.Table):
        return False
    if [c.name for c in table.primary_key.columns] == [key]:
        return True
    for constraint in table.constraints:
        if isinstance(constraint, sa.UniqueConstraint) and [c.name for c in constraint.columns] == [
            key
        ]:
            return True
    return any(index.unique and [c.name for c in index.columns] == [key] for index in table.indexes)


def _table_counts(conn: Connection, table: sa.FromClause, key: str, name: str) -> KeyCounts:
    """Records, non-missing keys and distinct keys of a table, in one scan.

    The distinct keys are only counted when no primary key or unique constraint on the key
    column guarantees them (then they equal the non-missing keys).
    """
    if key not in table.c:
        total = int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())
        return KeyCounts(name, total, False, total, total)
    k = table.c[key]
    unique = _declared_unique(table, key)
    exact = _exact(conn.dialect.name, k, _kind(k.type))
    row = conn.execute(
        sa.select(
            sa.func.count(),
            sa.func.count(k),
            sa.func.count(k) if unique else sa.func.count(sa.distinct(exact)),
        )
    ).one()
    total, present, distinct = (int(v) for v in row)
    return KeyCounts(name, total, True, present, distinct)


def _repeated_keys(conn: Connection, table: sa.FromClause, key: str) -> tuple[int, int]:
    """The key values occurring more than once, and the records holding them."""
    groups = (
        sa.select(sa.func.count().label("n"))
        .select_from(table)
        .group_by(_exact(conn.dialect.name, table.c[key], _kind(table.c[key].type)))
        .having(sa.func.count() > 1)
        .subquery()
    )
    keys, rows = conn.execute(sa.select(sa.func.count(), sa.func.sum(groups.c.n))).one()
    return int(keys), int(rows)


def direct_match_counts_sql(
    conn: Connection,
    original: sa.FromClause,
    avatar: sa.FromClause,
    *,
    key: str,
    columns: Sequence[str] | None = None,
) -> DirectMatchCounts:
    """Check the two tables as the engine would, then count ``n`` and ``(m_c, u_c)`` in SQL.

    ``original`` and ``avatar`` are reflected tables of the database ``conn`` is connected to
    (they may be the same table), or subqueries with typed columns (a Great Expectations batch,
    :mod:`reident_airflow.gx.metrics`). Raises :class:`EmptyDatasetError` /
    :class:`InvalidInputError` with the engine's messages, in the engine's order.

    Statements: one scan per table (records, keys present, distinct keys), one join counting
    its rows and each column's matches, and one scan of the avatar table counting each column's
    distinct values (``COUNT(DISTINCT a.c)``, plus one if the column has a missing value).
    Two statements rather than one join doing both: PostgreSQL runs the join in parallel
    only without ``DISTINCT`` aggregates, and sorts narrower rows for them without the join.
    """
    if not isinstance(key, str) or not key:
        raise InvalidInputError(NO_KEY_MESSAGE)
    return count_keyed(_SqlCounter(conn, original, avatar, key), key, columns)


class _SqlCounter:
    """:class:`~reident_airflow.engine.direct_match.KeyedCounter` in SQL (module docstring)."""

    def __init__(
        self, conn: Connection, original: sa.FromClause, avatar: sa.FromClause, key: str
    ) -> None:
        self._conn, self._key, self._dialect = conn, key, conn.dialect.name
        self._tables = {"original": original, "avatar": avatar}
        self._o, self._a = original.alias("reident_original"), avatar.alias("reident_avatar")

    def columns(self, name: str) -> list[str]:
        return [c.name for c in self._tables[name].columns]

    def key_counts(self, name: str) -> KeyCounts:
        return _table_counts(self._conn, self._tables[name], self._key, name)

    def repeated_keys(self, name: str) -> tuple[int, int]:
        return _repeated_keys(self._conn, self._tables[name], self._key)

    def _joined(self) -> sa.Join:
        o, a, key = self._o, self._a, self._key
        return sa.join(o, a, _equal(self._dialect, o.c[key], a.c[key]))

    def joined_rows(self) -> int:
        stmt = sa.select(sa.func.count()).select_from(self._joined())
        return int(_execute_join(self._conn, stmt)[0])

    def matches(self, selected: Sequence[str]) -> sa.Row[Any]:
        o, a = self._o, self._a
        same = [_same(self._dialect, o.c[c], a.c[c]) for c in selected]
        matches = [sa.func.sum(sa.case((m, 1), else_=0)) for m in same]
        return _execute_join(
            self._conn, sa.select(sa.func.count(), *matches).select_from(self._joined())
        )

    def distinct(self, selected: Sequence[str]) -> sa.Row[Any]:
        avatar = self._tables["avatar"]
        distinct: list[sa.ColumnElement[Any]] = []
        for c in selected:
            column = avatar.c[c]
            distinct += [
                sa.func.count(sa.distinct(_exact(self._dialect, column, _kind(column.type)))),
                sa.func.max(sa.case((column.is_(None), 1), else_=0)),
            ]
        return self._conn.execute(sa.select(*distinct).select_from(avatar)).one()


# MariaDB joins two unindexed tables with a block nested loop (quadratic) unless hash joins are
# enabled; they are, for our join statements only (``SET STATEMENT ... FOR``), with buffers
# large enough to need few passes. MySQL 8 hash-joins by itself.
_MARIADB_JOIN = (
    "SET STATEMENT join_cache_level = 4, join_buffer_size = 268435456, "
    "join_buffer_space_limit = 536870912 FOR "
)


def _execute_join(conn: Connection, stmt: Any) -> sa.Row[Any]:
    """Run a statement over the join; one row."""
    if getattr(conn.dialect, "is_mariadb", False):
        # Only integers are bound (the CASE's 1 and 0); identifiers are quoted by SQLAlchemy.
        sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        return conn.exec_driver_sql(_MARIADB_JOIN + sql).one()
    return conn.execute(stmt).one()


def direct_match_in_database(
    url: str | Engine,
    original_table: str,
    avatar_table: str,
    *,
    key: str | None,
    target: float = DEFAULT_TARGET,
    columns: Sequence[str] | None = None,
    schema: str | None = None,
    avatar_schema: str | None = None,
) -> DirectMatchResult:
    """Column Direct Match Protection of two tables of one database, counted by the database.

    ``avatar_schema`` defaults to ``schema``. A ``key`` is required (a table has no row order).
    """
    target_value = validate_target(target)
    if key is None or key == "":
        raise InvalidInputError(NO_KEY_MESSAGE)
    engine = make_engine(url)
    what = f"tables {original_table!r} and {avatar_table!r}"
    with database_errors(what), connect(engine) as conn, read_only(conn):
        original = _reflect(conn, original_table, schema)
        avatar = _reflect(conn, avatar_table, avatar_schema if avatar_schema else schema)
        counted = direct_match_counts_sql(conn, original, avatar, key=key, columns=columns)
    return counted.result(target=target_value, key=key)


def _reflect(conn: Connection, table: str, schema: str | None) -> sa.Table:
    """:func:`reflect_table`, with an unknown schema an input error on every database."""
    if schema and schema not in sa.inspect(conn).get_schema_names():
        raise InvalidInputError(f"schema {schema!r} does not exist")
    return reflect_table(conn, table, schema)


# ------------------------------------------------------------------------- whole-table reads
def _arrow_type(sql_type: Any) -> pa.DataType | None:
    kind = _kind(sql_type)
    if kind == "boolean":
        return pa.bool_()
    if isinstance(sql_type, sa.Integer):
        return pa.int64()
    if isinstance(sql_type, sa.Float):
        return pa.float64()
    if kind == "text":
        return pa.string()
    return None  # decimals, dates, ...: inferred


def _column_array(values: Sequence[Any], arrow_type: pa.DataType | None) -> pa.Array:
    """The fetched values of one column; a driver's unexpected Python type falls back to
    Arrow's inference (then the reflected type, if the values cast to it)."""
    if arrow_type is not None:
        try:
            return pa.array(values, type=arrow_type, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            pass
    inferred = pa.array(values, from_pandas=True)
    if arrow_type is not None:
        try:
            return inferred.cast(arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    return inferred


def read_table_frame(url: str | Engine, table: str, schema: str | None = None) -> pd.DataFrame:
    """A whole table as a DataFrame (Arrow-backed columns), for the engine's DataFrame path.

    Used when the two tables are not in one database (or one side is a file). Rows are fetched
    in chunks and typed from the reflected column types.
    """
    engine = make_engine(url)
    with database_errors(f"table {table!r}"), connect(engine) as conn, read_only(conn):
        source = _reflect(conn, table, schema)
        names = [c.name for c in source.columns]
        types = [_arrow_type(c.type) for c in source.columns]
        result = conn.execution_options(stream_results=True).execute(sa.select(source))
        chunks: list[pa.Table] = []
        while True:
            rows = result.fetchmany(FETCH_ROWS)
            if not rows:
                break
            values = list(zip(*rows, strict=True))
            chunks.append(
                pa.table(
                    [_column_array(v, t) for v, t in zip(values, types, strict=True)],
                    names=names,
                )
            )
    if not chunks:
        empty = pa.table(
            [pa.array([], type=t or pa.null()) for t in types],
            names=names,
        )
        frame: pd.DataFrame = empty.to_pandas(types_mapper=pd.ArrowDtype)
        return frame
    arrow = pa.concat_tables(chunks, promote_options="permissive")
    frame = arrow.to_pandas(types_mapper=pd.ArrowDtype)
    return frame
