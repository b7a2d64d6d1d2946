"""Atomic publishing, one writer per target: a reader sees the previous table (or file) or the
new one, never a part, and two runs publishing one target never mix their rows.

Every writer of reident publishes through this module, so the promise is kept the same way
everywhere:

- files: :func:`~reident_airflow._atomic.atomic_file` (re-exported here) writes a temporary
  file next to the target, ``fsync``-s it and renames it over the target, while the run holds
  the target's lock file (:func:`~reident_airflow._atomic.target_lock`);
- tables: the run takes the target's lock (:func:`publish_lock`), drops what killed runs left
  of this target (:func:`drop_stale_staging`), writes its rows to a staging table of its own,
  ``<target>__reident_<8 hex>`` (:func:`staging_name`, :func:`create_staging`), and
  :func:`swap_in` then replaces ``target`` in one step readers cannot see halfway:

  * PostgreSQL, SQLite (transactional DDL): ``DROP TABLE target`` and ``ALTER TABLE
    <staging> RENAME TO target`` in one transaction. On SQLite the transaction is opened with
    a no-op ``DELETE`` first, since the ``sqlite3`` driver would otherwise run the DDL in
    autocommit mode.
  * MariaDB / MySQL (DDL commits implicitly): ``RENAME TABLE target TO <aside>, <staging> TO
    target`` -- one atomic multi-table rename -- then ``DROP TABLE <aside>`` (``<aside>`` is
    another ``<target>__reident_<8 hex>``).

One writer per target. The lock lives with the target, so it holds between Airflow workers,
DAGs and the command line alike, and is released by the database (or the kernel) when the
process holding it dies, ``kill -9`` included:

  * PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on a 64-bit hash of
    the schema (``current_schema()`` when none is given) and the table, held by a connection of
    its own (in autocommit, so it is never "idle in transaction") from before the staging table
    is made until after the swap; advisory locks are per database;
  * MariaDB / MySQL: ``GET_LOCK`` on ``reident-publish-`` and a hash of the database and the
    table (lock names are server-wide and at most 64 characters), held the same way;
  * SQLite: an ``flock`` on ``<database file>.<hash>.reident-lock`` beside the database file
    (a lock of this process for an in-memory database);
  * other databases: no lock (logged). The staging names are unique, so two runs still never
    write into one table, and each swap puts one run's whole table in place; but which run
    wins is left to the schedule (``max_active_runs=1``), and leftovers are not cleared.

A second run waits for the lock, polling, for at most ``lock_timeout`` seconds (default
:data:`~reident_airflow._atomic.DEFAULT_LOCK_TIMEOUT`, ten minutes), then publishes its own
rows in full; past the timeout it fails with
:class:`~reident_airflow.engine.errors.TargetBusyError` ("another run is publishing ..."),
which is infrastructure, not the data: Airflow's retries apply. Just before the swap the lock
is checked to be still held (its connection may have been lost).

A failure before the swap drops the staging table (:func:`drop_quietly`) and leaves
``target`` untouched. A process killed outright may leave its staging table (or, on MariaDB,
the aside table) behind; the next publish of the same target, once it holds the lock, drops
every ``<target>__reident_<8 hex>`` table (and the ``__reident_new``/``__reident_old`` tables
of earlier versions), since no other run of that target can be writing one then. A target
whose own name has that shape is refused. What the swap does not carry over: indexes, grants
and views of the old ``target`` (a view on it makes PostgreSQL refuse the ``DROP``: the
publish then fails and the old table stays).

Names: PostgreSQL allows 63 bytes in a name, MariaDB and MySQL 64 characters. A staging name
keeps the target's name when it fits with the 18-character suffix; a longer target name is cut
and followed by a hash of the whole name (``<first part>_<8 hex>__reident_<8 hex>``), so any
target the database accepts can be published; a target name over the limit itself is refused,
naming the limit.

:func:`copy_table_atomic` publishes a copy of a table of the same database (the example DAGs'
publish step); :func:`~reident_airflow.sources.writers.write_table_atomic` publishes a
DataFrame. Identifiers are quoted by SQLAlchemy, never formatted into SQL text unquoted.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from reident_airflow._atomic import (
    DEFAULT_LOCK_TIMEOUT,
    InterruptGuard,
    atomic_file,
    check_lock_timeout,
    file_lock,
    interrupt_guard,
    wait_for_lock,
)
from reident_airflow.engine.errors import InvalidInputError, TargetBusyError
from reident_airflow.sources.connect import connect, reflect_table
from reident_airflow.sources.db_errors import database_errors

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "STAGING_MARK",
    "Checkpoint",
    "PublishLock",
    "atomic_file",
    "check_target_name",
    "copy_table_atomic",
    "create_staging",
    "drop_quietly",
    "drop_stale_staging",
    "is_staging_of",
    "publish_lock",
    "publishing",
    "qualified",
    "staging_name",
    "staging_table",
    "swap_in",
]

_log = logging.getLogger(__name__)

#: What every staging (and MariaDB aside) table name of a publish carries before its 8 hex
#: digits: ``<target>__reident_<8 hex>``.
STAGING_MARK = "__reident_"
_SUFFIX_LENGTH = len(STAGING_MARK) + 8
#: A staging table of some target: this run's shape, and the fixed names of earlier versions.
_STAGING_RE = re.compile(r"^(?P<prefix>.+)__reident_(?:[0-9a-f]{8}|new|old)$")

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


# ------------------------------------------------------------------------------------ names
def _name_limit(engine: Engine | Connection) -> tuple[int, str]:
    """The longest table name the database takes, and its unit."""
    name = engine.dialect.name
    if name == "postgresql":
        return 63, "bytes"
    if name in _MYSQL:
        return 64, "characters"
    return int(engine.dialect.max_identifier_length), "characters"


def _size(engine: Engine | Connection, name: str) -> int:
    return len(name.encode("utf-8")) if engine.dialect.name == "postgresql" else len(name)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_target_name(engine: Engine | Connection, target: str) -> None:
    """Refuse a target table name the database would not take, or that has the shape of a
    staging table (which a later publish of another target would drop)."""
    if not target or not isinstance(target, str):
        raise InvalidInputError("no target table name given")
    limit, unit = _name_limit(engine)
    if _size(engine, target) > limit:
        raise InvalidInputError(
            f"target table name {target!r} is {_size(engine, target)} {unit} long; "
            f"{engine.dialect.name} allows {limit}: choose a shorter name"
        )
    if _STAGING_RE.match(target):
        raise InvalidInputError(
            f"target table name {target!r} ends like a staging table of a publish "
            f"({STAGING_MARK}<8 hex>, {STAGING_MARK}new or {STAGING_MARK}old): choose another name"
        )


def _prefix(engine: Engine | Connection, target: str) -> str:
    """What the staging names of ``target`` start with: the name itself when it fits with
    the suffix, else its first characters, ``_`` and 8 hex digits of a hash of the whole."""
    limit, _ = _name_limit(engine)
    if _size(engine, target) + _SUFFIX_LENGTH <= limit:
        return target
    tail = "_" + _digest(target)[:8]
    head = target
    while _size(engine, head) + len(tail) + _SUFFIX_LENGTH > limit:
        head = head[:-1]
    return head + tail


def staging_name(engine: Engine | Connection, target: str) -> str:
    """A new staging table name for a publish of ``target``, unique to the run:
    ``<target>__reident_<8 hex>`` (the target part shortened to fit, module docstring)."""
    return f"{_prefix(engine, target)}{STAGING_MARK}{secrets.token_hex(4)}"


def is_staging_of(engine: Engine | Connection, name: str, target: str) -> bool:
    """Whether table ``name`` is a staging (or aside) table of a publish of ``target``."""
    m = _STAGING_RE.match(name)
    return m is not None and m.group("prefix") in {target, _prefix(engine, target)}


def staging_table(
    target: str,
    columns: Sequence[sa.Column[Any]],
    schema: str | None = None,
    *,
    name: str,
) -> sa.Table:
    """The staging table ``name`` (:func:`staging_name`) the rows of a publish of
    ``target`` go to."""
    return sa.Table(name, sa.MetaData(schema=schema), *columns)


def create_staging(engine: Engine, staging: sa.Table) -> None:
    """Create the staging table (its name is the run's own: nothing to drop first)."""
    with engine.begin() as conn:
        staging.create(conn)


def drop_quietly(engine: Engine, table: sa.Table) -> None:
    """Drop ``table`` if it exists; errors are ignored (this runs while another is raised)."""
    with contextlib.suppress(Exception), engine.begin() as conn:
        table.drop(conn, checkfirst=True)


def drop_stale_staging(engine: Engine, target: str, schema: str | None = None) -> list[str]:
    """Drop the staging and aside tables killed runs left of ``target``; the names dropped.
    Only while holding the target's lock (:func:`publish_lock`): no other run of ``target``
    can be writing one then."""
    with engine.begin() as conn:
        stale = [
            name
            for name in sa.inspect(conn).get_table_names(schema=schema)
            if is_staging_of(conn, name, target)
        ]
        for name in stale:
            sa.Table(name, sa.MetaData(schema=schema)).drop(conn)
    if stale:
        _log.info("dropped %d table(s) left by a killed publish of %s", len(stale), target)
    return stale


# ------------------------------------------------------------------------------------- lock
class PublishLock:
    """The lock of one publish of a table (:func:`publish_lock`); ``held`` is false on a
    database reident cannot lock (module docstring)."""

    def __init__(
        self,
        what: str,
        conn: Connection | None = None,
        check: str | None = None,
        params: dict[str, Any] | None = None,
        held: bool = True,
    ) -> None:
        self.what = what
        self.held = held
        self._conn = conn
        self._check = check
        self._params = params or {}

    def verify(self) -> None:
        """Raise :class:`TargetBusyError` (retryable) when the lock was lost, its connection
        gone: another run may hold it now, so the swap must not run."""
        if self._conn is None or self._check is None:
            return
        try:
            still = self._conn.execute(sa.text(self._check), self._params).scalar()
        except sa.exc.DBAPIError:  # the lock's connection is gone, and its lock with it
            still = False
        if not still:
            raise TargetBusyError(
                f"the lock on {self.what} was lost before the swap: nothing was published; retry"
            )


#: In-memory SQLite databases: a lock of this process per (URL, schema, table).
_PROCESS_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


def _what(target: str, schema: str | None) -> str:
    return f"table {target!r}" + (f" in schema {schema!r}" if schema else "")


@contextlib.contextmanager
def _session_lock(
    engine: Engine,
    what: str,
    acquire: str,
    release: str,
    check: str,
    key: Callable[[Connection], dict[str, Any]],
    timeout: float,
    guard: InterruptGuard | None,
) -> Iterator[PublishLock]:
    """A lock the database holds for a session: taken on a connection of its own (in
    autocommit) with ``acquire`` (true when taken, never waiting), given back with
    ``release``; ``key`` gives the statements' parameters."""
    with connect(engine) as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        params = key(conn)
        released = False
        try:
            wait_for_lock(
                lambda: bool(conn.execute(sa.text(acquire), params).scalar()), what, timeout, guard
            )
            yield PublishLock(what, conn, check, params)
        finally:
            # also after a signal that ended the wait just as the lock was taken
            with (
                contextlib.suppress(Exception),
                guard.critical() if guard is not None else contextlib.nullcontext(),
            ):
                conn.execute(sa.text(release), params)
                released = True
            if not released:  # a connection that may still hold the lock is never pooled
                with contextlib.suppress(Exception):
                    conn.invalidate()


def _postgresql_key(target: str, schema: str | None) -> Callable[[Connection], dict[str, Any]]:
    def key(conn: Connection) -> dict[str, Any]:
        where = schema or conn.execute(sa.text("SELECT current_schema()")).scalar() or ""
        digest = hashlib.sha256(f"reident-publish\0{where}\0{target}".encode()).digest()
        # non-negative, so that pg_locks' two 32-bit halves put back together equal it
        return {"key": int.from_bytes(digest[:8], "big") >> 1}

    return key


def _mysql_key(target: str, schema: str | None) -> Callable[[Connection], dict[str, Any]]:
    def key(conn: Connection) -> dict[str, Any]:
        where = schema or conn.execute(sa.text("SELECT DATABASE()")).scalar() or ""
        return {"name": "reident-publish-" + _digest(f"{where}\0{target}")[:40]}

    return key


def _sqlite_file(engine: Engine) -> Path | None:
    """The database file of a SQLite engine, or None for an in-memory database."""
    database = engine.url.database or ""
    if database in {"", ":memory:"} or "mode=memory" in database:
        return None
    if database.startswith("file:"):
        database = database[len("file:") :].split("?", 1)[0]
    return Path(database)


@contextlib.contextmanager
def _process_lock(
    key: tuple[str, str, str], what: str, timeout: float, guard: InterruptGuard | None
) -> Iterator[None]:
    with _PROCESS_LOCKS_GUARD:
        lock = _PROCESS_LOCKS.setdefault(key, threading.Lock())
    taken: list[bool] = []

    def attempt() -> bool:
        if lock.acquire(blocking=False):
            taken.append(True)
        return bool(taken)

    try:
        wait_for_lock(attempt, what, timeout, guard)
        yield
    finally:
        if taken:
            lock.release()


@contextlib.contextmanager
def publish_lock(
    engine: Engine,
    target: str,
    schema: str | None = None,
    *,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
    guard: InterruptGuard | None = None,
) -> Iterator[PublishLock]:
    """Hold the lock of table ``target`` (in ``schema``) for the block: one writer per
    target (module docstring). Waits for another holder up to ``timeout`` seconds, then
    raises :class:`~reident_airflow.engine.errors.TargetBusyError`."""
    timeout = check_lock_timeout(timeout)
    what = _what(target, schema)
    dialect = engine.dialect.name
    if dialect == "postgresql":
        with _session_lock(
            engine,
            what,
            "SELECT pg_try_advisory_lock(:key)",
            "SELECT pg_advisory_unlock(:key)",
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND pid = pg_backend_pid() "
            "AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = :key",
            _postgresql_key(target, schema),
            timeout,
            guard,
        ) as lock:
            yield lock
    elif dialect in _MYSQL:
        with _session_lock(
            engine,
            what,
            "SELECT GET_LOCK(:name, 0)",
            "SELECT RELEASE_LOCK(:name)",
            "SELECT IS_USED_LOCK(:name) = CONNECTION_ID()",
            _mysql_key(target, schema),
            timeout,
            guard,
        ) as lock:
            yield lock
    elif dialect == "sqlite":
        database = _sqlite_file(engine)
        name = _digest(f"{schema or ''}\0{target}")[:16]
        if database is None:
            key = (str(engine.url), schema or "", target)
            with _process_lock(key, what, timeout, guard):
                yield PublishLock(what)
        else:
            path = database.with_name(f"{database.name}.{name}.reident-lock")
            with file_lock(path, what, timeout, guard):
                yield PublishLock(what)
    else:
        _log.warning(
            "no lock for publishing on %s: %s is written by one run at a time only if the "
            "schedule says so (max_active_runs=1)",
            dialect,
            what,
        )
        yield PublishLock(what, held=False)


@contextlib.contextmanager
def publishing(
    engine: Engine,
    target: str,
    schema: str | None = None,
    *,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
    guard: InterruptGuard | None = None,
) -> Iterator[tuple[PublishLock, str]]:
    """The start of every table publish: the target's name checked, its lock held for the
    block, the tables killed runs left of it dropped; yields the lock and the run's own
    staging name."""
    check_target_name(engine, target)
    with publish_lock(engine, target, schema, timeout=timeout, guard=guard) as lock:
        if lock.held:
            with guard.critical() if guard is not None else contextlib.nullcontext():
                drop_stale_staging(engine, target, schema)
        yield lock, staging_name(engine, target)


def swap_in(
    engine: Engine,
    staging: sa.Table,
    target: str,
    schema: str | None = None,
    checkpoint: Checkpoint | None = None,
    lock: PublishLock | None = None,
    also: Sequence[tuple[sa.Table, str]] = (),
) -> None:
    """Replace ``target`` (if it exists) by ``staging`` in one step readers cannot see halfway:
    one transaction on PostgreSQL and SQLite, one multi-table ``RENAME TABLE`` on MariaDB and
    MySQL (module docstring). ``lock``, the target's, is checked to be still held first.
    ``also``: more ``(staging, target)`` pairs replaced in the same step (a release ledger
    beside the release)."""
    if lock is not None:
        lock.verify()
    pairs = [(staging, target), *also]
    renaming = engine.dialect.name in _MYSQL
    with engine.begin() as conn:
        if renaming:
            exists = [sa.inspect(conn).has_table(t, schema=schema) for _, t in pairs]
        else:
            if engine.dialect.name == "sqlite":
                # pysqlite opens a transaction only before DML: without this no-op DELETE the
                # DROP and the RENAME below would each commit on their own.
                conn.execute(sa.delete(staging).where(sa.false()))
            for _, name in pairs:
                sa.Table(name, sa.MetaData(schema=schema)).drop(conn, checkfirst=True)
        if checkpoint is not None:
            checkpoint("swap", 0)
        if not renaming:
            for table, name in pairs:
                new = qualified(engine, table.name, schema)
                quoted = engine.dialect.identifier_preparer.quote(name)
                conn.exec_driver_sql(f"ALTER TABLE {new} RENAME TO {quoted}")
            return
        renames: list[str] = []
        backups: list[sa.Table] = []
        for (table, name), present in zip(pairs, exists, strict=True):
            new = qualified(engine, table.name, schema)
            old = qualified(engine, name, schema)
            if present:
                backup = sa.Table(staging_name(conn, name), sa.MetaData(schema=schema))
                backups.append(backup)
                renames.append(f"{old} TO {qualified(conn, backup.name, schema)}")
            renames.append(f"{new} TO {old}")
        conn.exec_driver_sql("RENAME TABLE " + ", ".join(renames))
        for backup in backups:
            backup.drop(conn)


def copy_table_atomic(
    engine: Engine,
    source: str,
    target: str,
    *,
    schema: str | None = None,
    checkpoint: Checkpoint | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> int:
    """Publish a copy of ``source`` as ``target``: readers see the old ``target`` or the new,
    never a part, on every database, and two runs publishing ``target`` at once never mix
    their rows (module docstring). Returns the rows copied.

    The run takes the target's lock (waiting for another run publishing it at most
    ``lock_timeout`` seconds, then :class:`~reident_airflow.engine.errors.TargetBusyError`),
    copies the rows with one ``INSERT ... SELECT`` into a staging table of its own and swaps
    it in; if anything fails (or SIGTERM/SIGINT arrives) the staging table is dropped and the
    previous ``target`` is left as it was. ``source`` is only read. ``checkpoint`` is called
    with ``("chunk", rows)`` once the rows are copied and ``("swap", 0)`` in the swap.
    """
    check_target_name(engine, target)
    with database_errors(f"table {source!r}"), connect(engine) as conn:
        src = reflect_table(conn, source, schema)
    columns = [sa.Column(c.name, c.type) for c in src.columns]
    # a signal waits for the statement under way (interrupt_guard's critical sections)
    with (
        interrupt_guard() as guard,
        publishing(engine, target, schema, timeout=lock_timeout, guard=guard) as (lock, name),
    ):
        staging = staging_table(target, columns, schema, name=name)
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
                swap_in(engine, staging, target, schema, checkpoint, lock)
        except BaseException:
            drop_quietly(engine, staging)
            raise
    return copied
