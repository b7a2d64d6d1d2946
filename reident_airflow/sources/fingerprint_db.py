"""The database half of :mod:`~reident_airflow.sources.fingerprint`: a table's or a query's
row count, the server's clock and, where the server has one, its snapshot, read in one
read-only transaction (see that module's docstring for what each proves)."""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from reident_airflow.sources.connect import (
    connect,
    make_engine,
    open_source,
    read_only,
    source_label,
)
from reident_airflow.sources.db_errors import database_errors
from reident_airflow.sources.fingerprint import InputFingerprint, now_utc

__all__ = ["database_fingerprint", "url_without_secrets"]


def url_without_secrets(url: sa.URL) -> str:
    """``url`` as text without its password and its query options (which may hold
    credentials or tokens): ``dialect+driver://user@host:port/database``."""
    bare = sa.URL.create(
        url.drivername, username=url.username, host=url.host, port=url.port, database=url.database
    )
    return bare.render_as_string(hide_password=True)


def _snapshot(conn: Connection) -> tuple[str | None, str | None]:
    """What identifies the snapshot and the server's clock, for the dialects that have them."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        row = conn.execute(sa.text("SELECT pg_current_snapshot()::text, now()::text")).one()
        return str(row[0]), str(row[1])
    if dialect in {"mysql", "mariadb"}:
        if getattr(conn.dialect, "is_mariadb", False):
            row = conn.execute(sa.text("SELECT @@gtid_current_pos, NOW(6)")).one()
            return (str(row[0]) or None), str(row[1])
        return None, str(conn.execute(sa.text("SELECT NOW(6)")).scalar_one())
    if dialect == "sqlite":
        return None, str(conn.execute(sa.text("SELECT datetime('now')")).scalar_one()) + " UTC"
    return None, str(conn.execute(sa.select(sa.func.current_timestamp())).scalar_one())


def _read(
    conn: Connection, table: str | None, sql: str | None, schema: str | None
) -> tuple[int, str | None, str | None]:
    """The row count, the snapshot and the server time, read in one transaction."""
    source = open_source(conn, table, sql, schema)
    snapshot, server_time = _snapshot(conn)
    rows = conn.execute(sa.select(sa.func.count()).select_from(source)).scalar_one()
    return int(rows), snapshot, server_time


def _consistent(conn: Connection) -> Connection:
    """A PostgreSQL or MariaDB connection set to ``REPEATABLE READ`` (the snapshot and the
    count see the same data); other connections as they are."""
    if conn.dialect.name in {"postgresql", "mysql", "mariadb"} and not conn.in_transaction():
        return conn.execution_options(isolation_level="REPEATABLE READ")
    return conn


def database_fingerprint(
    source: str | Engine | Connection, table: str | None, sql: str | None, schema: str | None
) -> InputFingerprint:
    """:func:`~reident_airflow.sources.fingerprint.fingerprint_sql` (its arguments, in order)."""
    what = source_label(table, sql)
    query_sha = None if sql is None else hashlib.sha256(sql.strip().encode()).hexdigest()
    engine = source.engine if isinstance(source, Connection) else make_engine(source)
    try:
        with database_errors(what):
            if isinstance(source, Connection) and sql is None:
                rows, snapshot, server_time = _read(source, table, sql, schema)
            elif isinstance(source, Connection):  # the caller's: its query read read-only
                with read_only(source):
                    rows, snapshot, server_time = _read(source, table, sql, schema)
            else:
                with connect(engine) as opened, read_only(_consistent(opened)) as conn:
                    rows, snapshot, server_time = _read(conn, table, sql, schema)
    finally:
        if isinstance(source, str):
            engine.dispose()  # the engine made here for a URL
    return InputFingerprint(
        kind="database",
        location=url_without_secrets(engine.url),
        taken_at=now_utc(),
        table=None if table is None else (f"{schema}.{table}" if schema else table),
        query_sha256=query_sha,
        rows=rows,
        dialect="mariadb" if getattr(engine.dialect, "is_mariadb", False) else engine.dialect.name,
        snapshot=snapshot,
        server_time=server_time,
    )
