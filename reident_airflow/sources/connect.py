"""Where a database source is: an engine for a URL, a connection, a table or a ``SELECT``.

Identifiers (table, schema, columns) are reflected and quoted by SQLAlchemy, never formatted
into SQL text. An error raised while connecting shows the driver's own message
(:func:`~reident_airflow.sources.db_errors.connection_error`): nothing has been read yet.

Every read runs in a read-only transaction that is rolled back, never committed
(:func:`read_only`): a ``sql`` query (or a ``where`` built into one) is the DAG author's
templated text, checked to be one statement (:mod:`~reident_airflow.sources.sql_text`) and read
only on such a connection, so no text a template rendered can change data.
"""

from __future__ import annotations

import difflib
import importlib.util
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypedDict

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchTableError
from sqlalchemy.sql.compiler import IdentifierPreparer

from reident_airflow.engine.errors import InvalidInputError, OperationCancelledError
from reident_airflow.sources.cancel import statements_of, watch_signals
from reident_airflow.sources.db_errors import connection_error, database_errors
from reident_airflow.sources.sql_text import one_statement

__all__ = [
    "SqlWhere",
    "connect",
    "make_engine",
    "open_source",
    "query_source",
    "read_only",
    "reading",
    "reflect_table",
    "source_label",
]


class SqlWhere(TypedDict, total=False):
    """Where a database source is, as the reading functions take it by keyword: a ``table``
    (in ``schema``, else the connection's default one) or a ``sql`` query, not both."""

    table: str | None
    sql: str | None
    schema: str | None


# A bare scheme's default DB-API (SQLAlchemy 2.1: psycopg 3, mysqlclient) -> the driver the
# ``db`` extra installs, used when the default is not importable.
_DRIVER_FALLBACKS = {
    "postgresql": ("psycopg", "postgresql+psycopg2", "psycopg2"),
    "mysql": ("MySQLdb", "mysql+pymysql", "pymysql"),
    "mariadb": ("MySQLdb", "mariadb+pymysql", "pymysql"),
}


def _installed(module: str) -> bool:
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
        statements_of(url)
        return url
    if str(url).partition("://")[0].partition("+")[0].strip().lower() == "postgres":
        raise InvalidInputError(
            "not a usable database URL: SQLAlchemy names PostgreSQL 'postgresql', not "
            "'postgres': use postgresql:// (the rest of the URL unchanged)"
        )
    try:
        parsed = sa.make_url(url)
        fallback = _DRIVER_FALLBACKS.get(parsed.drivername)
        if fallback is not None:
            default, driver, module = fallback
            if not _installed(default) and _installed(module):
                parsed = parsed.set(drivername=driver)
        engine = sa.create_engine(parsed)
    except (ArgumentError, ValueError) as exc:
        raise InvalidInputError(f"not a usable database URL ({type(exc).__name__})") from None
    except ModuleNotFoundError as exc:
        raise InvalidInputError(
            f"the database driver is not installed ({exc.name}); install it to read this URL"
        ) from None
    if engine.dialect.name == "hive":
        engine.dialect.identifier_preparer = _SparkIdentifiers(engine.dialect)
        sa.event.listen(engine, "connect", _accelerated_thrift)
    statements_of(engine)  # its statements can be stopped (sources/cancel.py)
    return engine


class _SparkIdentifiers(IdentifierPreparer):
    """Spark SQL identifiers (PyHive's ``hive://`` dialect): every one in backticks, a backtick
    in a name doubled. PyHive's own preparer doubles ``"`` instead, which breaks (and lets a
    backtick end) a quoted name."""

    def __init__(self, dialect: Any) -> None:
        super().__init__(dialect, initial_quote="`", escape_quote="`")

    def _requires_quotes(self, value: str) -> bool:
        return True


def _accelerated_thrift(dbapi_conn: Any, _record: Any) -> None:
    """PyHive (Spark Thrift Server, HiveServer2): decode the server's replies with Thrift's C
    extension (``fastbinary``) instead of the pure-Python protocol PyHive builds its client
    on, which spends microseconds per value read: most of the time of fetching a million
    class rows. Requests are still written by the pure-Python code (they are small).

    PyHive's generated code hands the extension the ``(class, spec)`` pairs of its structs as
    tuples, which the extension of Thrift >= 0.13 reads only as lists: they are passed on as
    lists (:func:`_listed`). Left as it is when the extension is not built or PyHive's
    attributes are not there.
    """
    try:
        from thrift.protocol import fastbinary
    except ImportError:  # pragma: no cover - a Thrift built without its C extension
        return
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol

    transport = getattr(dbapi_conn, "_transport", None)
    client = getattr(dbapi_conn, "_client", None)
    if transport is None or client is None:
        return

    def decode(obj: Any, iprot: Any, spec: Any) -> None:
        fastbinary.decode_binary(obj, iprot, _listed(spec))

    protocol = TBinaryProtocol(transport)
    protocol._fast_decode = decode
    dbapi_conn._client = type(client)(protocol)


_LISTED: dict[int, Any] = {}


def _listed(spec: Any) -> Any:
    """A Thrift type spec with every ``(class, spec)`` struct pair as a list (cached)."""
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], type):
        cls = spec[0]
        cached = _LISTED.get(id(cls))
        if cached is None:
            cached = [cls, None]
            _LISTED[id(cls)] = cached  # before the fields: a struct may hold itself
            cached[1] = _listed(spec[1])
        return cached
    if isinstance(spec, tuple):
        return tuple(_listed(item) for item in spec)
    return spec


@contextmanager
def connect(engine: Engine) -> Iterator[Connection]:
    """A connection of ``engine``, closed on leaving; a failure to connect keeps its
    SQLAlchemy class (a connection error, which Airflow retries) and shows the driver's
    message, since no statement has run and nothing has been read."""
    try:
        conn = engine.connect()
    except DBAPIError as exc:
        raise connection_error(exc) from None
    with conn:
        yield conn


def reflect_table(conn: Connection, table: str, schema: str | None = None) -> sa.Table:
    """Reflect an existing table; a missing one is an input error naming the table (and, for
    a dotted name, the ``schema`` it may have meant)."""
    if not table or not isinstance(table, str):
        raise InvalidInputError("no table name given")
    try:
        return sa.Table(table, sa.MetaData(), schema=schema, autoload_with=conn)
    except NoSuchTableError:
        where = f" in schema {schema!r}" if schema else ""
        hint = _dotted_hint(table, schema) or _closest_tables(conn, table, schema)
        raise InvalidInputError(f"table {table!r} does not exist{where}{hint}") from None


def _closest_tables(conn: Connection, table: str, schema: str | None) -> str:
    """`` (did you mean 'patients'?)``: up to three names of tables or views of ``schema``
    close to the mistyped ``table`` (names only), or nothing when none is close or the
    database does not list them to this user."""
    try:
        inspector = sa.inspect(conn)
        names = [*inspector.get_table_names(schema=schema), *inspector.get_view_names(schema)]
    except Exception:  # a listing the user may not read: no hint, the error stands
        return ""
    by_fold = {name.casefold(): name for name in names}
    close = [by_fold[n] for n in difflib.get_close_matches(table.casefold(), by_fold, n=3)]
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(n) for n in close)}?)"


def _dotted_hint(table: str, schema: str | None) -> str:
    """For ``table="public.t"`` (a name holding a dot, which is quoted as one name): how to
    name the table ``t`` of schema ``public`` instead."""
    if schema or "." not in table.strip("."):
        return ""
    owner, _, name = table.partition(".")
    return (
        f": a dot is part of the name; for table {name!r} of schema {owner!r}, give "
        f"schema={owner!r}, table={name!r} (--schema {owner} --table {name} on the command line)"
    )


#: The connections :func:`read_only` has made read-only (while its block runs).
_READ_ONLY: weakref.WeakSet[Connection] = weakref.WeakSet()


def cancel_reads() -> None:
    """Stop the statement of every read running now (each connection inside
    :func:`read_only`), on SIGTERM / SIGINT (:func:`~reident_airflow.sources.cancel.
    watch_signals`): a reading that waits in a C driver then returns, and the signal's
    handler (Airflow's ``on_kill``, Python's ``KeyboardInterrupt``) runs. Writes are left to
    the writers' own signal handling."""
    by_engine: dict[Engine, list[Any]] = {}
    reads: list[Connection] = []
    for _ in range(10):  # a read beginning or ending in another thread changes the set
        try:
            reads = list(_READ_ONLY)
            break
        except RuntimeError:
            continue
    for conn in reads:
        try:
            dbapi_conn = conn.connection.dbapi_connection
        except Exception:  # closed meanwhile
            continue
        if dbapi_conn is not None:
            by_engine.setdefault(conn.engine, []).append(dbapi_conn)
    for engine, connections in by_engine.items():
        statements_of(engine).cancel(only=connections)


@contextmanager
def read_only(conn: Connection) -> Iterator[Connection]:
    """``conn`` read-only for the block, in a transaction of its own that is always rolled
    back, never committed: what the database's read-only mode lets through (a PostgreSQL large
    object made or removed, a pending ``NOTIFY``; docs/reading.md, "What the database's
    read-only mode does not cover") is undone with the rest.

    - PostgreSQL: a transaction begun ``READ ONLY`` (checked with ``transaction_read_only``;
      an autocommit connection, which cannot hold one, is refused). On a connection whose
      transaction is already open (a caller's), a savepoint made read-only and rolled back
      after, which leaves the caller's transaction as it was.
    - MySQL / MariaDB: ``START TRANSACTION READ ONLY``; a connection whose transaction is
      already open is refused (the mode of an open transaction cannot change).
    - SQLite: ``PRAGMA query_only = ON`` for the block, set back after; the block's
      transaction rolled back (a caller's open transaction is left to the caller).
    - Other databases (Spark SQL through Thrift): as they are; what the text may do there is
      what the connection's user may do (docs/reading.md).
    """
    dialect = conn.dialect.name
    watch_signals(cancel_reads)
    if statements_of(conn.engine).stopped:
        raise OperationCancelledError(
            "the reading was cancelled before it began (the engine's work was cancelled: "
            "the task's on_kill)"
        )
    if dialect == "sqlite":
        own = None if conn.in_transaction() else conn.begin()
        try:
            before = conn.exec_driver_sql("PRAGMA query_only").scalar()
            conn.exec_driver_sql("PRAGMA query_only = ON")
            _READ_ONLY.add(conn)
            try:
                yield conn
            finally:
                _READ_ONLY.discard(conn)
                if not before:
                    conn.exec_driver_sql("PRAGMA query_only = OFF")
        finally:
            if own is not None:
                own.rollback()
        return
    if dialect not in {"postgresql", "mysql", "mariadb"}:
        _READ_ONLY.add(conn)
        try:
            yield conn
        finally:
            _READ_ONLY.discard(conn)
        return
    if conn.in_transaction():
        if dialect != "postgresql":
            raise InvalidInputError(
                "a query is read in a read-only transaction of its own: give an engine or a "
                "connection with no transaction open"
            )
        savepoint = conn.begin_nested()
        try:
            _set_read_only(conn)
            _READ_ONLY.add(conn)
            yield conn
        finally:
            _READ_ONLY.discard(conn)
            savepoint.rollback()
        return
    transaction = conn.begin()
    try:
        if dialect == "postgresql":
            _set_read_only(conn)
        else:
            conn.exec_driver_sql("START TRANSACTION READ ONLY")
        _READ_ONLY.add(conn)
        yield conn
    finally:
        _READ_ONLY.discard(conn)
        transaction.rollback()  # a read commits nothing


def _set_read_only(conn: Connection) -> None:
    """PostgreSQL: the current transaction (or savepoint) read-only, and checked to be."""
    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
    if conn.exec_driver_sql("SHOW transaction_read_only").scalar() != "on":
        raise InvalidInputError(
            "the connection could not be made read-only (is it in autocommit mode?): "
            "read through a connection that opens transactions"
        )


def query_source(conn: Connection, sql: str) -> sa.Subquery:
    """A user's ``SELECT`` as a subquery whose columns are known (probed with ``LIMIT 0``).

    The text is one statement (:func:`~reident_airflow.sources.sql_text.one_statement`, a
    final ``;`` dropped) and ``conn`` must be read-only (:func:`read_only`)."""
    if not sql or not sql.strip():
        raise InvalidInputError("the sql query is empty")
    sql = f"\n{one_statement(sql, conn.dialect.name)}\n"
    if conn not in _READ_ONLY:
        raise InvalidInputError(
            "a sql query is read only on a read-only connection (reident_airflow.sources."
            "connect.read_only)"
        )
    probe: sa.Select[Any] = sa.select(sa.literal_column("*")).select_from(
        sa.text(sql).columns().subquery("reident_probe")
    )
    names = list(conn.execute(probe.limit(0)).keys())
    return sa.text(sql).columns(*(sa.column(n) for n in names)).subquery("reident_source")


def source_label(table: str | None, sql: str | None) -> str:
    """How messages name the source (``table 'x'`` or ``the query``); exactly one of a table
    and a query must be given."""
    if (table is None) == (sql is None):
        raise InvalidInputError("give either a table name or a sql query, not both or neither")
    return f"table {table!r}" if table is not None else "the query"


def open_source(
    conn: Connection, table: str | None, sql: str | None, schema: str | None
) -> sa.Table | sa.Subquery:
    """The table (reflected) or the query (probed) to read."""
    if table is not None:
        return reflect_table(conn, table, schema)
    return query_source(conn, sql or "")


@contextmanager
def reading(
    url: str | Engine,
    *,
    table: str | None = None,
    sql: str | None = None,
    schema: str | None = None,
) -> Iterator[tuple[Connection, sa.Table | sa.Subquery, str]]:
    """An open read-only connection (:func:`read_only`), the table or query to read, and how
    messages name it.

    Database errors raised in the block quote nothing of the data
    (:func:`~reident_airflow.sources.db_errors.database_errors`).
    """
    what = source_label(table, sql)
    engine = make_engine(url)
    try:
        with database_errors(what), connect(engine) as conn, read_only(conn):
            yield conn, open_source(conn, table, sql, schema), what
    finally:
        if engine is not url:  # made here for a URL: its pooled connections closed here
            engine.dispose()
