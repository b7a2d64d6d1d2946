"""Class tables computed in the database: a ``GROUP BY`` over the QIs, rows never travel.

Identifiers (table, schema, columns) are reflected and quoted by SQLAlchemy, never formatted
into SQL text. At most one row per equivalence class (the QI values and a count) is fetched;
:func:`histogram_from_sql` fetches one row per distinct class size.

Values are grouped as docs/reading.md says, by the database itself:

- text by its exact characters, whatever the column's collation: MySQL/MariaDB text by its
  bytes (``CAST(... AS BINARY)``), PostgreSQL text under the ``"C"`` collation, SQLite under
  ``BINARY``;
- bytes (and MySQL/MariaDB text, grouped by its bytes) come back as :class:`bytes` and stay
  bytes: nothing is decoded, so two byte strings the database tells apart never merge;
- PostgreSQL floats as ``x + 0`` (``-0`` prints as ``0``; every NaN prints ``NaN``) and
  numerics without trailing zeros, so that one class prints the same in every query.

A class whose every QI is the text ``*`` (suppressed records) is flagged by the database in
the same statement (``reident_suppressed``); its records are excluded and counted in
``excluded_records``. A database error never reaches the caller with its text (which may
quote values): an error caused by the input (an unknown table or column, a bad query) is an
:class:`InvalidInputError` naming its kind and code; any other keeps its SQLAlchemy class
but its message only names the driver's exception class and code.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchTableError

from reident_airflow.engine.aggregates import (
    ClassAggregates,
    aggregate_grouped,
    check_extra_columns,
    check_weight_counts,
)
from reident_airflow.engine.classes import (
    SUPPRESSION_MARKER,
    ClassSizes,
    ClassTable,
    class_table_from_grouped,
    validate_quasi_identifiers,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

__all__ = [
    "DriverErrorWithheld",
    "aggregates_from_sql",
    "class_table_from_sql",
    "copy_table_atomic",
    "grouped_counts",
    "grouped_histogram",
    "grouped_sums",
    "grouped_value_counts",
    "histogram_from_sql",
    "make_engine",
    "query_source",
    "reflect_table",
]

COUNT_LABEL = "reident_class_size"
SUM_LABEL = "reident_weight_sum"
#: 1 on the row of the class whose every QI is the text ``*``, else 0.
SUPPRESSED_LABEL = "reident_suppressed"
_CLASSES_LABEL = "reident_classes"
_PRESENT_LABEL = "reident_weight_present"
_NONPOSITIVE_LABEL = "reident_weight_nonpositive"
_LABELS = frozenset(
    {
        COUNT_LABEL,
        SUM_LABEL,
        SUPPRESSED_LABEL,
        _CLASSES_LABEL,
        _PRESENT_LABEL,
        _NONPOSITIVE_LABEL,
    }
)
FETCH_ROWS = 100_000
#: Bytes of COPY output that Arrow parses as one block (blocks are parsed on several threads).
COPY_BLOCK_BYTES = 1 << 24

_Source = sa.Table | sa.Subquery
_COUNTS: dict[str, pa.DataType] = {COUNT_LABEL: pa.int64(), SUPPRESSED_LABEL: pa.int64()}

# What a column holds, as far as grouping it exactly and telling the text '*' go.
_TEXT = "text"
_BINARY = "binary"
_FLOAT = "float"
_NUMERIC = "numeric"
_OTHER = "other"
_MYSQL = frozenset({"mysql", "mariadb"})
# PostgreSQL type OIDs (pg_type) of a query's columns: text, varchar, bpchar, name; bytea;
# real, double precision; numeric. Any other type is "other".
_PG_KINDS = {
    25: _TEXT,
    1043: _TEXT,
    1042: _TEXT,
    19: _TEXT,
    17: _BINARY,
    700: _FLOAT,
    701: _FLOAT,
    1700: _NUMERIC,
}


class DriverErrorWithheld(Exception):
    """Stands in for a database driver's exception whose message is not passed on.

    A driver's message may quote the statement's parameters or a value of the table (``invalid
    input syntax for type integer: "..."``, a text that cannot be decoded); only the driver's
    exception class and error code are kept.
    """


# A bare scheme's default DB-API (SQLAlchemy 2.1: psycopg 3, mysqlclient) -> the driver the
# ``db`` extra installs, used when the default is not importable.
_DRIVER_FALLBACKS = {
    "postgresql": ("psycopg", "postgresql+psycopg2", "psycopg2"),
    "mysql": ("MySQLdb", "mysql+pymysql", "pymysql"),
    "mariadb": ("MySQLdb", "mariadb+pymysql", "pymysql"),
}


def _installed(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def make_engine(url: str | Engine) -> Engine:
    """An engine for a SQLAlchemy URL (``postgresql://...``, ``sqlite:///file.db``, ...).

    A URL naming no driver (``postgresql://``, ``mysql://``) uses SQLAlchemy's default one
    when it is installed, and otherwise the one the ``db`` extra installs (psycopg2, PyMySQL).
    """
    if isinstance(url, Engine):
        return url
    try:
        parsed = sa.make_url(url)
        fallback = _DRIVER_FALLBACKS.get(parsed.drivername)
        if fallback is not None:
            default, driver, module = fallback
            if not _installed(default) and _installed(module):
                parsed = parsed.set(drivername=driver)
        return sa.create_engine(parsed)
    except (ArgumentError, ValueError) as exc:
        raise InvalidInputError(f"not a usable database URL ({type(exc).__name__})") from None
    except ModuleNotFoundError as exc:
        raise InvalidInputError(
            f"the database driver is not installed ({exc.name}); install it to read this URL"
        ) from None


def reflect_table(conn: Connection, table: str, schema: str | None = None) -> sa.Table:
    """Reflect an existing table; a missing one is an input error naming the table."""
    if not table or not isinstance(table, str):
        raise InvalidInputError("no table name given")
    try:
        return sa.Table(table, sa.MetaData(), schema=schema, autoload_with=conn)
    except NoSuchTableError:
        where = f" in schema {schema!r}" if schema else ""
        raise InvalidInputError(f"table {table!r} does not exist{where}") from None


def query_source(conn: Connection, sql: str) -> sa.Subquery:
    """A user's ``SELECT`` as a subquery whose columns are known (probed with ``LIMIT 0``)."""
    if not sql or not sql.strip():
        raise InvalidInputError("the sql query is empty")
    probe: sa.Select[Any] = sa.select(sa.literal_column("*")).select_from(
        sa.text(sql).columns().subquery("reident_probe")
    )
    names = list(conn.execute(probe.limit(0)).keys())
    return sa.text(sql).columns(*(sa.column(n) for n in names)).subquery("reident_source")


# ------------------------------------------------------------------------------ database errors
# PostgreSQL SQLSTATEs (and classes of them) that mean the input is at fault, and what to say.
_SQLSTATE_PROBLEMS = {
    "42P01": "an unknown table",
    "42703": "an unknown column",
    "42702": "an ambiguous column name",
    "42601": "a syntax error",
    "42883": "an unknown function or operator",
    "42501": "no permission to read it",
}
_SQLSTATE_CLASS_PROBLEMS = {
    "42": "an invalid query",
    "22": "a value it could not process",
    "0A": "a feature it does not support",
    "21": "a subquery that returns more than one row",
}
# MySQL/MariaDB error numbers that mean the input is at fault.
_MYSQL_PROBLEMS = {
    1051: "an unknown table",
    1109: "an unknown table",
    1146: "an unknown table",
    1054: "an unknown column",
    1052: "an ambiguous column name",
    1060: "a duplicate column name",
    1064: "a syntax error",
    1149: "a syntax error",
    1142: "no permission to read it",
    1143: "no permission to read it",
    1305: "an unknown function",
    1630: "an unknown function",
    1356: "a view that refers to something that does not exist",
    1222: "queries with different numbers of columns",
    1241: "a subquery with the wrong number of columns",
    1242: "a subquery that returns more than one row",
    1248: "a derived table without an alias",
    1235: "a feature it does not support",
    1267: "an illegal mix of collations",
    1270: "an illegal mix of collations",
    1271: "an illegal mix of collations",
    1264: "a value out of range",
    1690: "a value out of range",
    1292: "a value it could not convert",
    1366: "a value it could not convert",
    1411: "a value it could not convert",
    1365: "a division by zero",
    3140: "invalid JSON",
    4038: "invalid JSON",
}
# SQLite's generic SQL error (SQLITE_ERROR): what its message starts with -> what to say.
_SQLITE_PROBLEMS = (
    ("no such table", "an unknown table"),
    ("no such column", "an unknown column"),
    ("no such function", "an unknown function"),
    ("ambiguous column name", "an ambiguous column name"),
)


def _sqlstate(orig: BaseException | None) -> str | None:
    state = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    return str(state) if state else None


def _mysql_errno(orig: BaseException | None) -> int | None:
    module = type(orig).__module__
    if not (module.startswith("pymysql") or module.startswith("MySQLdb")):
        return None
    args = getattr(orig, "args", ())
    return int(args[0]) if args and isinstance(args[0], int) else None


def _driver_error(orig: BaseException | None) -> str:
    """The driver's exception class and error code: never its message."""
    name = f"{type(orig).__module__}.{type(orig).__name__}"
    state = _sqlstate(orig)
    errno = _mysql_errno(orig)
    sqlite_name = getattr(orig, "sqlite_errorname", None)
    if errno is not None:
        return f"{name}, error {errno}"
    if state:
        return f"{name}, SQLSTATE {state}"
    if sqlite_name:
        return f"{name}, {sqlite_name}"
    return name


def _input_problem(exc: DBAPIError) -> str | None:
    """What the input did wrong (a phrase naming no value), or None if the failure is not the
    input's (a lost connection, a full disk, a timeout)."""
    orig = exc.orig
    errno = _mysql_errno(orig)
    state = _sqlstate(orig)
    if errno is not None:
        if errno in _MYSQL_PROBLEMS:
            return _MYSQL_PROBLEMS[errno]
        if errno >= 2000:  # the client's own errors: connection lost, server gone away
            return None
    elif state:
        return _SQLSTATE_PROBLEMS.get(state) or _SQLSTATE_CLASS_PROBLEMS.get(state[:2])
    elif type(orig).__module__ == "sqlite3":
        text = str(orig)  # read to classify the error, never shown
        if getattr(orig, "sqlite_errorname", None) == "SQLITE_ERROR":
            for start, problem in _SQLITE_PROBLEMS:
                if text.startswith(start):
                    return problem
            return "a syntax error" if "syntax error" in text else "an invalid query"
        if text.startswith("Could not decode to UTF-8"):
            return "a text value that is not valid UTF-8"
        return None
    if isinstance(exc, sa.exc.ProgrammingError):
        return "an invalid query"
    if isinstance(exc, sa.exc.DataError):
        return "a value it could not process"
    if isinstance(exc, sa.exc.NotSupportedError):
        return "a feature it does not support"
    return None


def _withheld(exc: DBAPIError) -> DBAPIError:
    """The same SQLAlchemy error class, carrying no statement, parameters or driver message."""
    stand_in = DriverErrorWithheld(
        f"{_driver_error(exc.orig)}: the database's message is not shown (it may quote values)"
    )
    return type(exc)(
        None,
        None,
        stand_in,
        hide_parameters=True,
        connection_invalidated=exc.connection_invalidated,
        code=exc.code,
    )


@contextmanager
def _database_errors(what: str) -> Iterator[None]:
    """Turn a database error into one that quotes nothing of the data.

    An error caused by the input (unknown table or column, a bad query, a value the query
    cannot convert) becomes an :class:`InvalidInputError` naming its kind and code; any other
    (connection lost, server shut down, disk full) keeps its SQLAlchemy class, with a message
    naming only the driver's exception class and code.
    """
    try:
        yield
    except DBAPIError as exc:
        problem = _input_problem(exc)
        if problem is not None:
            raise InvalidInputError(
                f"{what}: the database rejected the read: {problem} ({_driver_error(exc.orig)})"
            ) from None
        raise _withheld(exc) from None
    except UnicodeDecodeError:  # a driver decoding text (its message quotes the bytes)
        raise InvalidInputError(f"{what}: a text value is not valid in its character set") from None


def _wrapped_driver_error(
    conn: Connection, exc: Exception, dbapi_conn: Any, cursor: Any
) -> BaseException:
    """A driver exception raised outside SQLAlchemy (``copy_expert``) wrapped as SQLAlchemy
    would have wrapped it; a lost connection is invalidated so that the pool drops it."""
    dialect = conn.dialect
    error: Any = exc
    lost = bool(dialect.is_disconnect(error, dbapi_conn, cursor))
    if lost:
        conn.invalidate()
    return DBAPIError.instance(
        None,
        None,
        exc,
        dialect.loaded_dbapi.Error,
        hide_parameters=True,
        connection_invalidated=lost,
        dialect=dialect,
    )


# ------------------------------------------------------------------------------ exact grouping
def _constant(value: Any) -> sa.BindParameter[Any]:
    """A constant written into the statement (no bound parameter to show in an error)."""
    return sa.literal(value, literal_execute=True)


def _marker() -> sa.BindParameter[Any]:
    return sa.literal(SUPPRESSION_MARKER, sa.String(), literal_execute=True)


def _type_kind(type_: sa.types.TypeEngine[Any]) -> str:
    if isinstance(type_, sa.String):  # includes Enum, MySQL SET
        return _TEXT
    if isinstance(type_, sa.LargeBinary | sa.BINARY | sa.VARBINARY):
        return _BINARY
    if isinstance(type_, sa.Float):
        return _FLOAT
    if isinstance(type_, sa.Numeric):
        return _NUMERIC
    return _OTHER


def _column_kinds(conn: Connection, source: _Source, names: Sequence[str]) -> dict[str, str]:
    """Each column's kind: from its SQLAlchemy type, or, for a query's untyped columns, from
    the database (PostgreSQL: the result's type OIDs; MySQL/MariaDB: ``CHARSET()``, which is
    ``binary`` for everything but text)."""
    kinds = {n: _type_kind(source.c[n].type) for n in names}
    untyped = [n for n in names if isinstance(source.c[n].type, sa.types.NullType)]
    if not untyped:
        return kinds
    dialect = conn.dialect.name
    if dialect == "postgresql":
        result = conn.execute(sa.select(*(source.c[n] for n in untyped)).limit(0))
        description = result.cursor.description
        result.close()
        for n, column in zip(untyped, description, strict=True):
            type_code: Any = column[1]
            kinds[n] = _PG_KINDS.get(int(type_code), _OTHER)
    elif dialect in _MYSQL:
        # one row, and the query not run: (SELECT 1) LEFT JOIN (query LIMIT 0) ON false
        one = sa.select(_constant(1).label("reident_one")).subquery("reident_one")
        empty = sa.select(*(source.c[n] for n in untyped)).limit(0).subquery("reident_empty")
        probe = sa.select(*(sa.func.charset(empty.c[n]) for n in untyped)).select_from(
            one.outerjoin(empty, sa.false())
        )
        charsets = conn.execute(probe).one()
        for n, charset in zip(untyped, charsets, strict=True):
            kinds[n] = _OTHER if charset is None or str(charset) == "binary" else _TEXT
    return kinds


def _exact(conn: Connection, column: sa.ColumnElement[Any], kind: str) -> sa.ColumnElement[Any]:
    """The expression a column is grouped by, so that equal means equal under docs/reading.md.

    MySQL and MariaDB compare text under the column's collation, usually case-insensitive and
    blind to trailing spaces (``Male`` = ``male`` = ``Male ``): there text is grouped by its
    bytes, and comes back as bytes. PostgreSQL text is grouped under the ``"C"`` collation
    (a nondeterministic ICU collation would merge spellings too; ``citext`` and enums become
    text); SQLite's under ``BINARY`` (a column may be declared ``COLLATE NOCASE``).

    PostgreSQL floats are grouped as ``x + 0`` and numerics as ``trim_scale(x)``: the same
    classes (``-0 = 0``, ``1.0 = 1.00``), but each class prints one way, so that the class
    rows of two queries (sizes, sensitive value counts) meet on the client.

    The values come back as the driver returns them, through no SQLAlchemy result processor
    (MySQL's ``DOUBLE`` type would round every value to a ``Decimal`` of 10 places, merging
    ``1.0`` and ``1.0000000000000002``; SQLite's ``Numeric`` likewise).
    """
    return sa.type_coerce(_grouped_by(conn, column, kind), sa.types.NullType()).label(
        str(column.key)
    )


def _grouped_by(conn: Connection, column: sa.ColumnElement[Any], kind: str) -> Any:
    dialect = conn.dialect.name
    if dialect in _MYSQL and kind == _TEXT:
        return sa.cast(column, sa.LargeBinary)
    if dialect == "postgresql":
        if kind == _TEXT:
            return sa.cast(column, sa.Text).collate("C")
        if kind == _FLOAT:
            return column + _constant(0)
        if kind == _NUMERIC and (conn.dialect.server_version_info or (0,)) >= (13,):
            return sa.func.trim_scale(column)
    if dialect == "sqlite":
        # any column may hold text (types belong to values); COLLATE leaves other values alone
        return sa.type_coerce(column, sa.String()).collate("BINARY")
    return column


def _is_marker(dialect: str, column: sa.ColumnElement[Any], kind: str) -> Any:
    """Whether a grouped value is the text ``*``; None where it never can be.

    SQLite types values, not columns: any column may hold the text ``*`` (a BLOB never equals
    text). PostgreSQL: a value whose text is ``*`` (text, varchar, char, enum, domain ...).
    MySQL/MariaDB: text, whose bytes (in an ASCII-compatible character set) are ``*``.
    """
    if dialect == "sqlite":
        return column == _marker()
    if dialect == "postgresql":
        if kind in (_BINARY, _FLOAT, _NUMERIC):
            return None
        return sa.cast(column, sa.Text) == _marker()
    if kind != _TEXT:
        return None
    return column == _marker()


@dataclass(frozen=True)
class _Grouping:
    """The QIs of one read: their names, kinds and grouping expressions, and those of the
    sensitive columns whose values are counted per class."""

    dialect: str
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    exprs: tuple[sa.ColumnElement[Any], ...]
    values: Mapping[str, sa.ColumnElement[Any]]

    def suppressed(self, classes: sa.Subquery) -> Any:
        """1 for the class (a row of ``classes``) whose every QI is the text ``*``, else 0;
        None when no class can be (a QI that cannot hold text)."""
        cells = []
        for name, kind in zip(self.names, self.kinds, strict=True):
            cell = _is_marker(self.dialect, classes.c[name], kind)
            if cell is None:
                return None
            cells.append(cell)
        return sa.case((sa.and_(*cells), _constant(1)), else_=_constant(0))


def _grouping(
    conn: Connection, source: _Source, qis: Sequence[str], values: Sequence[str] = ()
) -> _Grouping:
    names = validate_quasi_identifiers(qis, [c.name for c in source.columns])
    for name in (*names, *values):
        if name in _LABELS:
            raise InvalidInputError(f"a column used here may not be named {name!r}")
    kinds = _column_kinds(conn, source, [*names, *values])
    exact = {n: _exact(conn, source.c[n], kinds[n]) for n in (*names, *values)}
    return _Grouping(
        dialect=conn.dialect.name,
        names=names,
        kinds=tuple(kinds[n] for n in names),
        exprs=tuple(exact[n] for n in names),
        values={v: exact[v] for v in values},
    )


def _class_rows(
    grouping: _Grouping,
    source: _Source,
    *,
    value: str | None = None,
    aggregates: Sequence[sa.ColumnElement[Any]] = (),
) -> sa.Select[Any]:
    """``SELECT qis..., [value], count(*), aggregates..., suppressed FROM (GROUP BY qis[,
    value])``: one row per class (per class and value), flagged when suppressed."""
    keys = [*grouping.exprs, *([grouping.values[value]] if value is not None else [])]
    inner = (
        sa.select(*keys, sa.func.count().label(COUNT_LABEL), *aggregates)
        .select_from(source)
        .group_by(*keys)
        .subquery("reident_classes")
    )
    flag = grouping.suppressed(inner)
    return sa.select(*inner.c, (_constant(0) if flag is None else flag).label(SUPPRESSED_LABEL))


def _histogram_statement(grouping: _Grouping, source: _Source) -> sa.Select[Any]:
    """``SELECT size, suppressed, count(*) FROM (SELECT count(*) AS size, <every QI is '*'>
    AS suppressed FROM source GROUP BY qis) GROUP BY size, suppressed``: one row per distinct
    class size (and one more for the suppressed class)."""
    keyed = (
        sa.select(*grouping.exprs, sa.func.count().label(COUNT_LABEL))
        .select_from(source)
        .group_by(*grouping.exprs)
        .subquery("reident_classes")
    )
    flag = grouping.suppressed(keyed)
    if flag is None:  # no class can be suppressed: the QI values need not be selected
        sizes = (
            sa.select(sa.func.count().label(COUNT_LABEL))
            .select_from(source)
            .group_by(*grouping.exprs)
            .subquery("reident_classes")
        )
        size = sizes.c[COUNT_LABEL]
        return sa.select(
            size, _constant(0).label(SUPPRESSED_LABEL), sa.func.count().label(_CLASSES_LABEL)
        ).group_by(size)
    per_class = sa.select(keyed.c[COUNT_LABEL], flag.label(SUPPRESSED_LABEL)).subquery(
        "reident_sizes"
    )
    size, suppressed = per_class.c[COUNT_LABEL], per_class.c[SUPPRESSED_LABEL]
    return sa.select(size, suppressed, sa.func.count().label(_CLASSES_LABEL)).group_by(
        size, suppressed
    )


# ------------------------------------------------------------------------------ fetching
def _fetch_grouped(
    conn: Connection,
    stmt: sa.Select[Any],
    keys: list[str],
    value_keys: list[str],
    numbers: Mapping[str, pa.DataType],
) -> pd.DataFrame | pa.Table:
    """Run a grouped ``SELECT`` and fetch its rows: ``keys`` name the result's columns.

    ``value_keys`` are the grouped value columns, ``numbers`` the aggregates and their Arrow
    types. Values are kept as the database sent them: bytes as bytes, integers as integers
    (never through float64, where ``2**53 + 1`` would become ``2**53``).
    """
    copied = _copy_out(conn, stmt, keys, value_keys, numbers)
    if copied is not None:
        return copied
    if conn.dialect.name == "postgresql":
        # A server-side cursor is planned for fast first rows (cursor_tuple_fraction 0.1),
        # which turns the hash aggregate into a sort: measured 2.7x slower. All rows are
        # wanted, so plan for the total time; SET LOCAL ends with this transaction.
        conn.execute(sa.text("SET LOCAL cursor_tuple_fraction = 1.0"))
    result = conn.execute(stmt, execution_options={"stream_results": True})
    columns: list[list[Any]] = [[] for _ in keys]
    while True:
        chunk = result.fetchmany(FETCH_ROWS)
        if not chunk:
            break
        for column, values in zip(columns, zip(*chunk, strict=True), strict=True):
            column.extend(values)
    grouped = set(value_keys)
    return pd.DataFrame(
        {
            k: _value_series(column) if k in grouped else _number_series(column)
            for k, column in zip(keys, columns, strict=True)
        }
    )


def _number_series(values: list[Any]) -> pd.Series:
    return pd.Series(values, dtype=np.int64 if not values else None)


def _value_series(values: list[Any]) -> pd.Series:
    """A grouped value column as the driver returned it, in an object column.

    No type inference (an integer column with NULL would become float64); bytes-like values
    (``memoryview``, ``bytearray``) become :class:`bytes`, never text. A float column holding
    both NaN and NULL is a masked ``Float64`` column (NULL masked, NaN a value; pandas' hashing
    makes every NaN one value and ``-0.0`` equal to ``0.0``): in an object column pandas takes
    NaN for a missing value, and NaN is not missing.
    """
    kinds = {type(v) for v in values if v is not None}
    if kinds & {memoryview, bytearray}:
        values = [bytes(v) if isinstance(v, memoryview | bytearray) else v for v in values]
    if (
        kinds == {float}
        and any(v is None for v in values)
        and any(v != v for v in values if v is not None)
    ):
        missing = np.array([v is None for v in values], dtype=np.bool_)
        floats = np.array([0.0 if v is None else v for v in values], dtype=np.float64)
        return pd.Series(pd.arrays.FloatingArray(floats, missing))
    return pd.Series(values, dtype=object)


def _copy_out(
    conn: Connection,
    stmt: sa.Select[Any],
    keys: list[str],
    value_keys: list[str],
    numbers: Mapping[str, pa.DataType],
) -> pa.Table | None:
    """PostgreSQL with psycopg2: fetch the class rows with ``COPY (SELECT ...) TO STDOUT``.

    COPY streams the result as CSV text, which Arrow parses far faster than the driver builds
    row tuples (measured 3.5 s -> 1.0 s of client time for 900,000 class rows). The statement
    is compiled by SQLAlchemy (identifiers quoted by its dialect; it has no parameters).

    COPY's CSV quotes a value holding the separator, a quote or a line break (LF, CR) and
    doubles its quotes; it writes NULL as an unquoted empty field and the empty text as
    ``""``. Arrow reads it back with line breaks allowed inside values and only the unquoted
    empty field as null. The values are read as bytes, and a column becomes text only if all
    its values are valid UTF-8 (a ``SQL_ASCII`` database may hold any bytes). Returns None
    where COPY is not available, and the caller fetches rows the ordinary way.
    """
    if conn.dialect.name != "postgresql" or conn.dialect.driver != "psycopg2":
        return None
    sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    dbapi_conn = conn.connection.dbapi_connection
    if dbapi_conn is None:  # pragma: no cover - a closed connection
        return None
    buffer = io.BytesIO()
    cursor: Any = dbapi_conn.cursor()
    driver_error = conn.dialect.loaded_dbapi.Error
    try:
        cursor.copy_expert(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", buffer)
    except driver_error as exc:
        with suppress(driver_error):
            cursor.close()
        raise _wrapped_driver_error(conn, exc, dbapi_conn, cursor) from exc
    cursor.close()
    types = {k: numbers.get(k, pa.binary()) for k in keys}
    if buffer.tell() == 0:
        return pa.table({k: pa.array([], type=types[k]) for k in keys})
    buffer.seek(0)
    try:
        table = pcsv.read_csv(
            buffer,
            read_options=pcsv.ReadOptions(column_names=keys, block_size=COPY_BLOCK_BYTES),
            parse_options=pcsv.ParseOptions(
                delimiter=",",
                quote_char='"',
                double_quote=True,
                escape_char=False,
                newlines_in_values=True,  # a quoted value may hold LF, CR, CRLF
                ignore_empty_lines=False,
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=types,
                strings_can_be_null=True,  # COPY writes NULL as an unquoted empty field
                quoted_strings_can_be_null=False,  # ... and an empty text as ""
                null_values=[""],
            ),
        )
    except pa.ArrowException as exc:  # its message may quote a row: not passed on
        raise RuntimeError(
            f"the COPY output of the class rows could not be parsed ({type(exc).__name__})"
        ) from None
    for k in value_keys:
        table = table.set_column(table.schema.get_field_index(k), k, _text_if_utf8(table[k]))
    return table


def _text_if_utf8(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A binary column as text when every value is valid UTF-8 (checked, never replaced)."""
    try:
        return column.cast(pa.string())
    except pa.ArrowInvalid:
        return column


def _split_suppressed(rows: pd.DataFrame | pa.Table) -> tuple[pd.DataFrame | pa.Table, int]:
    """The class rows without the suppressed class, and the records that class holds."""
    if isinstance(rows, pa.Table):
        flag = pc.equal(rows[SUPPRESSED_LABEL], 1)
        excluded = pc.sum(pc.filter(rows[COUNT_LABEL], flag)).as_py() or 0
        kept = rows.filter(pc.invert(flag)).drop_columns([SUPPRESSED_LABEL])
        return kept, int(excluded)
    mask = pd.to_numeric(rows[SUPPRESSED_LABEL]).to_numpy() == 1
    excluded = int(pd.to_numeric(rows.loc[mask, COUNT_LABEL]).sum()) if mask.any() else 0
    frame = rows.drop(columns=[SUPPRESSED_LABEL])
    if mask.any():
        frame = frame.loc[~mask].reset_index(drop=True)
    return frame, excluded


def _marked(rows: pd.DataFrame | pa.Table, names: Sequence[str]) -> pd.DataFrame:
    """The class rows as a DataFrame, the suppressed class holding the text ``*`` in every QI.

    For callers that build the class table themselves (:func:`class_table_from_grouped`,
    :func:`aggregate_grouped`), which exclude the class whose QIs are all ``*``: the database
    decided which class that is, whatever the QI values look like on the client (MySQL text
    comes back as bytes).
    """
    frame = rows.to_pandas() if isinstance(rows, pa.Table) else rows
    mask = pd.to_numeric(frame[SUPPRESSED_LABEL]).to_numpy() == 1
    frame = frame.drop(columns=[SUPPRESSED_LABEL])
    if mask.any():
        for q in names:
            if not pd.api.types.is_string_dtype(frame[q].dtype):
                frame[q] = frame[q].astype(object)
            frame.loc[mask, q] = SUPPRESSION_MARKER
    return frame


def _frame(rows: pd.DataFrame | pa.Table) -> pd.DataFrame:
    return rows.to_pandas() if isinstance(rows, pa.Table) else rows


def _row_count(rows: pd.DataFrame | pa.Table) -> int:
    return int(rows.num_rows) if isinstance(rows, pa.Table) else len(rows)


def _with_excluded(table: ClassTable, excluded: int) -> ClassTable:
    if not excluded:
        return table
    return replace(table, excluded_records=table.excluded_records + excluded)


def _check_records(what: str, classes: int, excluded: int) -> None:
    """An empty source, or one whose every record is suppressed, has nothing to assess."""
    if classes:
        return
    if excluded:
        raise EmptyDatasetError(
            f"every record ({excluded}) is fully suppressed ('*' in every quasi-identifier): "
            "there is nothing to assess"
        )
    raise EmptyDatasetError(f"{what} has no records: there is nothing to assess")


def _what(table: str | None, sql: str | None) -> str:
    if (table is None) == (sql is None):
        raise InvalidInputError("give either a table name or a sql query, not both or neither")
    return f"table {table!r}" if table is not None else "the query"


def _open_source(
    conn: Connection, table: str | None, sql: str | None, schema: str | None
) -> _Source:
    if table is not None:
        return reflect_table(conn, table, schema)
    return query_source(conn, sql or "")


# ------------------------------------------------------------------------------ reads
def _counts(conn: Connection, grouping: _Grouping, source: _Source) -> pd.DataFrame | pa.Table:
    return _fetch_grouped(
        conn,
        _class_rows(grouping, source),
        [*grouping.names, COUNT_LABEL, SUPPRESSED_LABEL],
        list(grouping.names),
        _COUNTS,
    )


def _sums(conn: Connection, grouping: _Grouping, source: _Source, column: str) -> pd.DataFrame:
    """Class sizes and weight sums, the weights checked in the same query (aggregates only):
    a missing, zero or negative weight, or a text column, is an input error naming the
    column and the number of records."""
    if column not in [c.name for c in source.columns]:
        raise InvalidInputError(f"unknown weight column {column!r}")
    if column in _LABELS:
        raise InvalidInputError(f"a column used here may not be named {column!r}")
    weight = source.c[column]
    if isinstance(weight.type, sa.String):
        raise InvalidInputError(f"weight column {column!r} is not numeric (a text column)")
    aggregates = [
        sa.func.sum(weight).label(SUM_LABEL),
        sa.func.count(weight).label(_PRESENT_LABEL),
        sa.func.sum(sa.case((weight <= _constant(0), _constant(1)), else_=_constant(0))).label(
            _NONPOSITIVE_LABEL
        ),
    ]
    keys = [
        *grouping.names,
        COUNT_LABEL,
        SUM_LABEL,
        _PRESENT_LABEL,
        _NONPOSITIVE_LABEL,
        SUPPRESSED_LABEL,
    ]
    numbers = {
        **_COUNTS,
        SUM_LABEL: pa.float64(),
        _PRESENT_LABEL: pa.int64(),
        _NONPOSITIVE_LABEL: pa.int64(),
    }
    stmt = _class_rows(grouping, source, aggregates=aggregates)
    frame = _frame(_fetch_grouped(conn, stmt, keys, list(grouping.names), numbers))
    if not frame.empty:
        total = int(pd.to_numeric(frame[COUNT_LABEL]).sum())
        check_weight_counts(
            column,
            missing=total - int(pd.to_numeric(frame[_PRESENT_LABEL]).sum()),
            nonpositive=int(pd.to_numeric(frame[_NONPOSITIVE_LABEL]).sum()),
        )
        frame[SUM_LABEL] = pd.to_numeric(frame[SUM_LABEL]).astype("float64")
    return frame.drop(columns=[_PRESENT_LABEL, _NONPOSITIVE_LABEL])


def _value_counts(
    conn: Connection, grouping: _Grouping, source: _Source, column: str
) -> pd.DataFrame | pa.Table:
    stmt = _class_rows(grouping, source, value=column)
    keys = [*grouping.names, column, COUNT_LABEL, SUPPRESSED_LABEL]
    return _fetch_grouped(conn, stmt, keys, [*grouping.names, column], _COUNTS)


def _sensitive_grouping(
    conn: Connection, source: _Source, qis: Sequence[str], column: str
) -> _Grouping:
    names = validate_quasi_identifiers(qis, [c.name for c in source.columns])
    if column not in [c.name for c in source.columns]:
        raise InvalidInputError(f"unknown sensitive column {column!r}")
    if column in names:
        raise InvalidInputError(f"sensitive column {column!r} is also a quasi-identifier")
    return _grouping(conn, source, names, values=[column])


def grouped_counts(
    conn: Connection, source: sa.Table | sa.Subquery, qis: Sequence[str]
) -> pd.DataFrame:
    """``SELECT qis..., count(*) FROM source GROUP BY qis``: one row per class.

    The class whose every QI is the text ``*`` holds ``*`` (text) in every QI, whatever the
    QI columns' types, so that :func:`class_table_from_grouped` excludes it.
    """
    with _database_errors("the source"):
        grouping = _grouping(conn, source, qis)
        rows = _counts(conn, grouping, source)
    return _marked(rows, grouping.names)


def grouped_sums(
    conn: Connection, source: sa.Table | sa.Subquery, qis: Sequence[str], column: str
) -> pd.DataFrame:
    """``SELECT qis..., count(*), sum(column) ... GROUP BY qis``: class sizes and weight sums.

    The weights are checked in the same query (aggregates only): a missing, zero or negative
    weight, or a text column, is an input error naming the column and the number of records.
    The suppressed class is marked as in :func:`grouped_counts`.
    """
    with _database_errors("the source"):
        grouping = _grouping(conn, source, qis)
        frame = _sums(conn, grouping, source, column)
    return _marked(frame, grouping.names)


def grouped_value_counts(
    conn: Connection, source: sa.Table | sa.Subquery, qis: Sequence[str], column: str
) -> pd.DataFrame:
    """``SELECT qis..., column, count(*) ... GROUP BY qis, column``: values per class.

    Only their counts are used afterwards (l-diversity); the values are grouped exactly as QI
    values are (by their bytes on MySQL/MariaDB). The suppressed class is marked as in
    :func:`grouped_counts`.
    """
    with _database_errors("the source"):
        grouping = _sensitive_grouping(conn, source, qis, column)
        rows = _value_counts(conn, grouping, source, column)
    return _marked(rows, grouping.names)


def class_table_from_sql(
    url: str | Engine,
    qis: Sequence[str],
    *,
    table: str | None = None,
    sql: str | None = None,
    schema: str | None = None,
) -> ClassTable:
    """The class table of a database table (or of a ``SELECT``), computed by the database."""
    what = _what(table, sql)
    engine = make_engine(url)
    with _database_errors(what), engine.connect() as conn:
        source = _open_source(conn, table, sql, schema)
        grouping = _grouping(conn, source, qis)
        rows = _counts(conn, grouping, source)
    kept, excluded = _split_suppressed(rows)
    _check_records(what, _row_count(kept), excluded)
    return _with_excluded(class_table_from_grouped(kept, grouping.names, COUNT_LABEL), excluded)


def grouped_histogram(
    conn: Connection, source: sa.Table | sa.Subquery, qis: Sequence[str], *, what: str = "the table"
) -> ClassSizes:
    """The class-size histogram of ``source`` (a table or a subquery) on an open connection.

    One statement: the database groups the records into classes and the classes by size, so
    one row per distinct class size is fetched, none per class. Records whose every QI is the
    text ``*`` are excluded and counted in ``excluded_records``.
    """
    grouping = _grouping(conn, source, qis)
    rows = conn.execute(_histogram_statement(grouping, source)).all()
    tally: dict[int, int] = {}
    excluded = 0
    for size, suppressed, classes in rows:
        if int(suppressed) == 1:
            excluded += int(size) * int(classes)
        else:
            tally[int(size)] = tally.get(int(size), 0) + int(classes)
    _check_records(what, len(tally), excluded)
    sizes = np.array(sorted(tally), dtype=np.int64)
    return ClassSizes(
        quasi_identifiers=grouping.names,
        sizes=sizes,
        counts=np.array([tally[int(s)] for s in sizes], dtype=np.int64),
        excluded_records=excluded,
    )


def histogram_from_sql(
    url: str | Engine,
    qis: Sequence[str],
    *,
    table: str | None = None,
    sql: str | None = None,
    schema: str | None = None,
) -> ClassSizes:
    """The class-size histogram of a database table (or of a ``SELECT``), counted by the
    database in one statement (:func:`grouped_histogram`)."""
    what = _what(table, sql)
    engine = make_engine(url)
    with _database_errors(what), engine.connect() as conn:
        source = _open_source(conn, table, sql, schema)
        return grouped_histogram(conn, source, qis, what=what)


def aggregates_from_sql(
    url: str | Engine,
    qis: Sequence[str],
    *,
    table: str | None = None,
    sql: str | None = None,
    schema: str | None = None,
    weight: str | None = None,
    sensitive: Sequence[str] = (),
) -> ClassAggregates:
    """Class table, weight sums and sensitive value counts, all computed by the database.

    One ``GROUP BY qis`` (with ``sum(weight)`` when a weight column is named) and one
    ``GROUP BY qis, column`` per sensitive column; one row per class (or per class and
    value) is fetched, never a record.
    """
    what = _what(table, sql)
    engine = make_engine(url)
    with _database_errors(what), engine.connect() as conn:
        source = _open_source(conn, table, sql, schema)
        available = [c.name for c in source.columns]
        names = validate_quasi_identifiers(qis, available)
        weight, extra = check_extra_columns(names, available, weight=weight, sensitive=sensitive)
        grouping = _grouping(conn, source, names, values=extra)
        if weight is None:
            counted = _counts(conn, grouping, source)
        else:
            counted = _sums(conn, grouping, source, weight)
        per_value = {s: _value_counts(conn, grouping, source, s) for s in extra}
    counts, excluded = _split_suppressed(counted)
    _check_records(what, _row_count(counts), excluded)
    value_counts = {s: _frame(_split_suppressed(v)[0]) for s, v in per_value.items()}
    aggregates = aggregate_grouped(
        _frame(counts),
        names,
        COUNT_LABEL,
        weight=weight,
        weight_sum_column=SUM_LABEL,
        value_counts=value_counts,
    )
    if not excluded:
        return aggregates
    return replace(aggregates, table=_with_excluded(aggregates.table, excluded))


def _quote(engine: Engine, name: str) -> str:
    return engine.dialect.identifier_preparer.quote(name)


def copy_table_atomic(
    engine: Engine, source: str, target: str, *, schema: str | None = None
) -> int:
    """Publish ``source`` as ``target``: readers see the old ``target`` or the new, never a part.

    The rows are copied into a fresh ``<target>__reident_new`` table, then swapped in within
    one transaction (PostgreSQL and SQLite have transactional DDL); if anything fails, the
    previous ``target`` is left as it was. ``source`` is only read. Returns the rows copied.
    """
    staging_name = f"{target}__reident_new"
    with engine.begin() as conn:
        src = reflect_table(conn, source, schema)
        meta = sa.MetaData(schema=schema)
        new = sa.Table(staging_name, meta, *(sa.Column(c.name, c.type) for c in src.columns))
        new.drop(conn, checkfirst=True)
        new.create(conn)
        cols = [c.name for c in src.columns]
        conn.execute(sa.insert(new).from_select(cols, sa.select(*src.columns)))
        copied = int(conn.execute(sa.select(sa.func.count()).select_from(new)).scalar_one())
        old = sa.Table(target, sa.MetaData(schema=schema))
        old.drop(conn, checkfirst=True)
        prefix = f"{_quote(engine, schema)}." if schema else ""
        conn.exec_driver_sql(
            f"ALTER TABLE {prefix}{_quote(engine, staging_name)} RENAME TO {_quote(engine, target)}"
        )
    return copied
