"""Atomic publishing: a reader sees the previous table (or file) or the new one, never a part.

Every writer of reident publishes through this module, so the promise is kept the same way
everywhere:

- files: :func:`~reident_airflow._atomic.atomic_file` (re-exported here) writes a temporary
  file next to the target, ``fsync``-s it and renames it over the target;
- tables: the rows go to a fresh ``<target>__reident_new`` staging table
  (:func:`create_staging`); :func:`swap_in` then replaces ``target`` in one step readers
  cannot see halfway:

  * PostgreSQL, SQLite (transactional DDL): ``DROP TABLE target`` and
    ``ALTER TABLE <target>__reident_new RENAME TO target`` in one transaction. On SQLite the
    transaction is opened with a no-op ``DELETE`` first, since the ``sqlite3`` driver would
    otherwise run the DDL in autocommit mode.
  * MariaDB / MySQL (DDL commits implicitly): ``RENAME TABLE target TO <target>__reident_old,
    <target>__reident_new TO target`` -- one atomic multi-table rename -- then
    ``DROP TABLE <target>__reident_old``.

  A failure before the swap drops the staging table (:func:`drop_quietly`) and leaves
  ``target`` untouched; a process killed outright may leave ``<target>__reident_new`` (or
  ``__reident_old``) behind, which the next publish of the same target drops first. What the
  swap does not carry over: indexes, grants and views of the old ``target`` (a view on it makes
  PostgreSQL refuse the ``DROP``: the publish then fails and the old table stays). One writer
  per target at a time (in Airflow: ``max_active_runs=1`` or distinct targets).

:func:`copy_table_atomic` publishes a copy of a table of the same database (the example DAGs'
publish step); :func:`~reident_airflow.sources.writers.write_table_atomic` publishes a
DataFrame. Identifiers are quoted by SQLAlchemy, never formatted into SQL text unquoted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from reident_airflow._atomic import atomic_file, interrupt_guard
from reident_airflow.sources.connect import connect, reflect_table
from reident_airflow.sources.db_errors import database_errors

__all__ = [
    "NEW_SUFFIX",
    "OLD_SUFFIX",
    "Checkpoint",
    "atomic_file",
    "copy_table_atomic",
    "create_staging",
    "drop_quietly",
    "qualified",
    "staging_table",
    "swap_in",
]

#: Suffix of the table the new rows are written to before the swap.
NEW_SUFFIX = "__reident_new"
#: Suffix the previous table carries for the instant of a MariaDB/MySQL swap.
OLD_SUFFIX = "__reident_old"

#: Called at every point where a crash could leave a half-done write: ``("chunk", rows written
#: so far)`` after each chunk, ``("swap", 0)`` inside the swap (SQL) or just before the rename
#: (files). Tests raise from it, or kill the process, to prove that the previous release
#: survives.
Checkpoint = Callable[[str, int], None]

_MYSQL = frozenset({"mysql", "mariadb"})


def qualified(engine: Engine | Connection, name: str, schema: str | None) -> str:
    """``name`` quoted for the engine's dialect, with its quoted schema when one is given."""
    prep = engine.dialect.identifier_preparer
    return f"{prep.quote_schema(schema)}.{prep.quote(name)}" if schema else prep.quote(name)


def staging_table(
    target: str, columns: Sequence[sa.Column[Any]], schema: str | None = None
) -> sa.Table:
    """The ``<target>__reident_new`` table the rows of a publish of ``target`` go to."""
    return sa.Table(f"{target}{NEW_SUFFIX}", sa.MetaData(schema=schema), *columns)


def create_staging(engine: Engine, staging: sa.Table) -> None:
    """Create the staging table, dropping first one left by a run that was killed.

    A run killed while it committed its own staging table (the COMMIT sent, the process gone)
    can make that table appear between this run's drop and its create, which then fails as a
    duplicate: the pair is tried once more, and a second failure is raised.
    """
    for attempt in (1, 2):
        try:
            with engine.begin() as conn:
                staging.drop(conn, checkfirst=True)
                staging.create(conn)
            return
        except sa.exc.DBAPIError:
            if attempt == 2:
                raise


def drop_quietly(engine: Engine, table: sa.Table) -> None:
    """Drop ``table`` if it exists; errors are ignored (this runs while another is raised)."""
    with contextlib.suppress(Exception), engine.begin() as conn:
        table.drop(conn, checkfirst=True)


def swap_in(
    engine: Engine,
    staging: sa.Table,
    target: str,
    schema: str | None = None,
    checkpoint: Checkpoint | None = None,
) -> None:
    """Replace ``target`` (if it exists) by ``staging`` in one step readers cannot see halfway:
    one transaction on PostgreSQL and SQLite, one multi-table ``RENAME TABLE`` on MariaDB and
    MySQL (module docstring)."""
    new = qualified(engine, staging.name, schema)
    old = qualified(engine, target, schema)
    renaming = engine.dialect.name in _MYSQL
    backup = sa.Table(f"{target}{OLD_SUFFIX}", sa.MetaData(schema=schema))
    with engine.begin() as conn:
        if renaming:
            backup.drop(conn, checkfirst=True)  # left by a run killed after its rename
            exists = sa.inspect(conn).has_table(target, schema=schema)
        else:
            if engine.dialect.name == "sqlite":
                # pysqlite opens a transaction only before DML: without this no-op DELETE the
                # DROP and the RENAME below would each commit on their own.
                conn.execute(sa.delete(staging).where(sa.false()))
            sa.Table(target, sa.MetaData(schema=schema)).drop(conn, checkfirst=True)
        if checkpoint is not None:
            checkpoint("swap", 0)
        if not renaming:
            quoted = engine.dialect.identifier_preparer.quote(target)
            conn.exec_driver_sql(f"ALTER TABLE {new} RENAME TO {quoted}")
        elif exists:
            aside = qualified(conn, backup.name, schema)
            conn.exec_driver_sql(f"RENAME TABLE {old} TO {aside}, {new} TO {old}")
            backup.drop(conn)
        else:
            conn.exec_driver_sql(f"RENAME TABLE {new} TO {old}")


def copy_table_atomic(
    engine: Engine,
    source: str,
    target: str,
    *,
    schema: str | None = None,
    checkpoint: Checkpoint | None = None,
) -> int:
    """Publish a copy of ``source`` as ``target``: readers see the old ``target`` or the new,
    never a part, on every database (module docstring). Returns the rows copied.

    The rows are copied with one ``INSERT ... SELECT`` into the staging table, which is then
    swapped in; if anything fails (or SIGTERM/SIGINT arrives) the staging table is dropped and
    the previous ``target`` is left as it was. ``source`` is only read. ``checkpoint`` is
    called with ``("chunk", rows)`` once the rows are copied and ``("swap", 0)`` in the swap.
    """
    with database_errors(f"table {source!r}"), connect(engine) as conn:
        src = reflect_table(conn, source, schema)
    staging = staging_table(target, [sa.Column(c.name, c.type) for c in src.columns], schema)
    # a signal waits for the statement under way (interrupt_guard's critical sections)
    with interrupt_guard() as guard:
        try:
            with guard.critical():
                create_staging(engine, staging)
            with guard.critical(), engine.begin() as conn:
                names = [c.name for c in src.columns]
                conn.execute(sa.insert(staging).from_select(names, sa.select(*src.columns)))
                count = conn.execute(sa.select(sa.func.count()).select_from(staging))
                copied = int(count.scalar_one())
            if checkpoint is not None:
                checkpoint("chunk", copied)
            with guard.critical():
                swap_in(engine, staging, target, schema, checkpoint)
        except BaseException:
            drop_quietly(engine, staging)
            raise
    return copied
