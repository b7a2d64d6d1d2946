"""Publishing a table atomically with :func:`copy_table_atomic`, and connection errors.

- The copy replaces the target on SQLite, PostgreSQL and MariaDB (MariaDB has no transactional
  DDL: the swap is one multi-table ``RENAME TABLE``), into a schema as well.
- Killed mid-copy (the process kills itself with SIGKILL after the rows are copied, or inside
  the swap, or receives SIGTERM; or another process SIGKILLs it while the ``INSERT ... SELECT``
  runs): the target is the previous version or the new one, never a part of either, and the
  next copy leaves no staging (``<target>__reident_<8 hex>``) table behind.
- A failure to connect shows the driver's own message (here: TLS required by the client, not
  offered by the server), still as SQLAlchemy's ``OperationalError``, without ``[SQL: ...]``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from reident_airflow.sources import sql as sql_source
from reident_airflow.sources.db_errors import DriverConnectionError, connection_error
from reident_airflow.sources.publish import copy_table_atomic, is_staging_of
from tests.conftest import require_server

ROOT = Path(__file__).resolve().parents[2]
OLD_ROWS = 3

_COPY = """
import os, signal, sys
import sqlalchemy as sa
from reident_airflow.sources.publish import copy_table_atomic
url, source, target, when, signum = *sys.argv[1:5], int(sys.argv[5])
def checkpoint(what, rows):
    if what == when:
        os.kill(os.getpid(), signum)
copy_table_atomic(sa.create_engine(url), source, target, checkpoint=checkpoint)
print("copied", flush=True)
"""


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, sa.Engine]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'publish.db'}"
    else:
        url = require_server(request.param)
    engine = sa.create_engine(url)
    yield url, engine
    engine.dispose()


@pytest.fixture
def names(database: tuple[str, sa.Engine]) -> Iterator[tuple[str, str]]:
    """A source table of new rows and a target holding the previous release."""
    _, engine = database
    tag = uuid.uuid4().hex[:8]
    source, target = f"src_{tag}", f"pub_{tag}"
    yield source, target
    _drop_all(engine, source, target)


def _drop_all(engine: sa.Engine, source: str, target: str) -> None:
    """The test's tables: the source, the target and every staging table of the target."""
    with engine.begin() as conn:
        for n in sa.inspect(conn).get_table_names():
            if n == source or n.startswith(target):
                sa.Table(n, sa.MetaData()).drop(conn)


def _table(name: str) -> sa.Table:
    return sa.Table(name, sa.MetaData(), sa.Column("id", sa.Integer), sa.Column("v", sa.String(10)))


def _fill(engine: sa.Engine, name: str, rows: int, value: str) -> None:
    """``rows`` rows (a power of two times 1,000 when over 1,000), doubled by the database."""
    table = _table(name)
    with engine.begin() as conn:
        table.create(conn)
        first = min(rows, 1_000)
        conn.execute(sa.insert(table), [{"id": i, "v": value} for i in range(first)])
        count = first
        while count < rows:
            copy = sa.select(table.c.id + count, table.c.v).subquery()
            conn.execute(sa.insert(table).from_select(["id", "v"], sa.select(copy)))
            count *= 2


def _state(engine: sa.Engine, target: str) -> tuple[int, str | None, str | None]:
    table = _table(target)
    with engine.connect() as conn:
        stmt = sa.select(sa.func.count(), sa.func.min(table.c.v), sa.func.max(table.c.v))
        count, low, high = conn.execute(stmt).one()
    return int(count), low, high


def _leftovers(engine: sa.Engine, target: str) -> set[str]:
    tables = set(sa.inspect(engine).get_table_names())
    return {t for t in tables if is_staging_of(engine, t, target)}


def _run_copy(url: str, source: str, target: str, when: str, signum: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _COPY, url, source, target, when, str(signum)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "copied" not in proc.stdout


def test_copy_replaces_the_target(database: tuple[str, sa.Engine], names: tuple[str, str]) -> None:
    _, engine = database
    source, target = names
    _fill(engine, source, 50, "new")
    assert copy_table_atomic(engine, source, target) == 50  # no previous target
    _fill(engine, source + "_2", 7, "next")
    try:
        assert copy_table_atomic(engine, source + "_2", target) == 7
        assert _state(engine, target) == (7, "next", "next")
    finally:
        _table(source + "_2").drop(engine)
    assert _state(engine, source) == (50, "new", "new")  # the source is only read
    assert not _leftovers(engine, target)


@pytest.mark.parametrize(("when", "signum"), [("chunk", 9), ("swap", 9), ("chunk", 15)])
def test_copy_killed_keeps_the_previous_target(
    database: tuple[str, sa.Engine], names: tuple[str, str], when: str, signum: int
) -> None:
    url, engine = database
    source, target = names
    _fill(engine, target, OLD_ROWS, "old")
    _fill(engine, source, 500, "new")
    _run_copy(url, source, target, when, signum)
    assert _state(engine, target) == (OLD_ROWS, "old", "old")
    if signum == signal.SIGTERM:  # caught: the staging table is dropped on the way out
        assert not _leftovers(engine, target)
    assert copy_table_atomic(engine, source, target) == 500
    assert _state(engine, target) == (500, "new", "new")
    assert not _leftovers(engine, target)


@pytest.mark.db
@pytest.mark.parametrize("kind", ["mariadb", "postgresql"])
def test_copy_killed_from_outside_is_never_partial(kind: str) -> None:
    """SIGKILL from another process at several moments of a copy of 64,000 rows."""
    url = require_server(kind)
    engine = sa.create_engine(url)
    tag = uuid.uuid4().hex[:8]
    source, target = f"src_{tag}", f"pub_{tag}"
    rows = 64_000
    try:
        _fill(engine, source, rows, "new")
        for delay in (0.0, 0.2, 0.6):
            with engine.begin() as conn:
                _table(target).drop(conn, checkfirst=True)
            _fill(engine, target, OLD_ROWS, "old")
            proc = subprocess.Popen(
                [sys.executable, "-c", _COPY, url, source, target, "never", "0"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=ROOT,
            )
            _wait_for_staging(engine, target, proc)
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            assert _state(engine, target) in {(OLD_ROWS, "old", "old"), (rows, "new", "new")}
            assert copy_table_atomic(engine, source, target) == rows
            assert _state(engine, target) == (rows, "new", "new")
            assert not _leftovers(engine, target)
    finally:
        _drop_all(engine, source, target)
        engine.dispose()


def _wait_for_staging(engine: sa.Engine, target: str, proc: subprocess.Popen[bytes]) -> None:
    """Until the copy has created its staging table (or has ended)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if _leftovers(engine, target):
            return
        time.sleep(0.01)


@pytest.mark.db
def test_copy_into_a_schema_on_postgresql() -> None:
    engine = sa.create_engine(require_server("postgresql"))
    schema = f"s_{uuid.uuid4().hex[:8]}"
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
            src = sa.Table("src", sa.MetaData(schema=schema), sa.Column("a", sa.Integer))
            src.create(conn)
            conn.execute(sa.insert(src), [{"a": 1}, {"a": 2}])
        assert copy_table_atomic(engine, "src", "pub", schema=schema) == 2
        assert copy_table_atomic(engine, "src", "pub", schema=schema) == 2
        tables = set(sa.inspect(engine).get_table_names(schema=schema))
        assert tables == {"src", "pub"}
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        engine.dispose()


# ----------------------------------------------------------------------------- connecting
@pytest.mark.db
@pytest.mark.parametrize(
    "read",
    [
        lambda url: sql_source.histogram_from_sql(url, ["a"], table="t"),
        lambda url: sql_source.class_table_from_sql(url, ["a"], sql="SELECT 1 AS a"),
        lambda url: sql_source.aggregates_from_sql(url, ["a"], table="t"),
    ],
)
def test_connection_error_shows_the_driver_message(read: object) -> None:
    """The server runs without TLS, the URL requires it: the message must say so."""
    url = sa.make_url(require_server("postgresql")).update_query_dict({"sslmode": "require"})
    with pytest.raises(sa.exc.OperationalError) as info:
        read(url.render_as_string(hide_password=False))  # type: ignore[operator]
    text = str(info.value)
    assert "SSL" in text and "could not connect" in text, text
    assert "[SQL:" not in text and "[parameters:" not in text
    assert isinstance(info.value.orig, DriverConnectionError)
    assert info.value.__cause__ is None


def test_connection_error_cuts_statement_and_parameters() -> None:
    """Defensive: a driver message carrying SQLAlchemy's statement parts loses them."""
    orig = RuntimeError("login refused [SQL: SELECT 'secret'] [parameters: ('secret',)] (end)")
    error = sa.exc.OperationalError("SELECT 'secret'", {"p": "secret"}, orig)
    shown = connection_error(error)
    assert isinstance(shown, sa.exc.OperationalError)
    assert "secret" not in str(shown)
    assert "login refused" in str(shown) and "(end)" in str(shown)


@pytest.mark.parametrize("database", ["postgresql", "mariadb"], indirect=True)
def test_a_staging_table_committed_by_a_dying_run_meanwhile_is_harmless(
    database: tuple[str, sa.Engine], names: tuple[str, str]
) -> None:
    """A run killed just after it sent COMMIT for its staging table: its lock went with its
    connection, and the table appears while the next run writes. Here another connection
    creates one at the instant this run creates its own. The names differ (each run's is its
    own), so the publish carries on; the next publish, holding the lock, drops the leftover."""
    _, engine = database
    source, target = names
    _fill(engine, source, 5, "new")
    _fill(engine, target, OLD_ROWS, "old")
    rival = sa.create_engine(engine.url)
    created: list[str] = []
    leftover = f"{target}__reident_0badcafe"

    def appear(table: sa.Table, connection: sa.Connection, **_: object) -> None:
        if is_staging_of(engine, table.name, target) and not created:
            created.append(table.name)
            with rival.begin() as other:
                _table(leftover).create(other)

    sa.event.listen(sa.Table, "before_create", appear)
    try:
        copy_table_atomic(engine, source, target)
    finally:
        sa.event.remove(sa.Table, "before_create", appear)
        rival.dispose()
    assert len(created) == 1 and created[0] != leftover
    assert _state(engine, target) == (5, "new", "new")
    assert _leftovers(engine, target) == {leftover}
    copy_table_atomic(engine, source, target)
    assert _leftovers(engine, target) == set()
