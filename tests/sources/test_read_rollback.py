"""Issue 38, item 5: every read ends in a rollback, so what the database's read-only mode lets
through is undone too.

PostgreSQL's ``READ ONLY`` does not cover large objects: ``lo_unlink`` removes one and
``lo_import`` stores a server file as one inside a read-only transaction (checked below on
the server itself). A read that committed kept both; a read that rolls back keeps neither.
The second half counts, with SQLAlchemy's own ``commit`` / ``rollback`` events, how every
read path of a database source ends, on PostgreSQL, MariaDB and SQLite.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.engine.identifiers import ColumnPlan
from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.sources.direct_match_sql import direct_match_in_database
from reident_airflow.sources.sql import SqlSource, fingerprint_sql, histogram_from_sql
from tests.conftest import require_server
from tests.operators._fakes import PushedTI

BACKENDS = [
    pytest.param("sqlite"),
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


def _exists(engine: sa.Engine, oid: int) -> bool:
    with engine.connect() as conn:
        found = conn.exec_driver_sql(
            "SELECT count(*) FROM pg_largeobject_metadata WHERE oid = %(oid)s", {"oid": oid}
        ).scalar()
    return bool(found)


@pytest.fixture
def pg() -> Iterator[tuple[sa.Engine, str]]:
    """A PostgreSQL table of 4 records (unique name, dropped after)."""
    engine = sa.create_engine(require_server("postgresql"))
    name = f"ro_lo_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} (day text, zip text)")
        conn.exec_driver_sql(
            f"INSERT INTO {name} VALUES ('d1', '10'), ('d1', '10'), ('d1', '11'), ('d1', '11')"
        )
    try:
        yield engine, name
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        engine.dispose()


@pytest.fixture
def large_object(pg: tuple[sa.Engine, str]) -> Iterator[int]:
    """A large object of its own (its oid), unlinked after if it is still there."""
    engine, _ = pg
    with engine.begin() as conn:
        oid = int(conn.exec_driver_sql("SELECT lo_from_bytea(0, 'kept')").scalar_one())
    try:
        yield oid
    finally:
        if _exists(engine, oid):
            with engine.begin() as conn:
                conn.exec_driver_sql(f"SELECT lo_unlink({oid})")


def _unlinking(oid: int) -> str:
    """A where that removes large object ``oid`` when it is there (so that every statement
    of a reading, and every reading of a task, may run it again without an error)."""
    return (
        f"(SELECT count(lo_unlink(m.oid)) FROM pg_largeobject_metadata m WHERE m.oid = {oid}) >= 0"
    )


def _importing(oid: int) -> str:
    """A where that stores the server's ``/etc/hostname`` as large object ``oid`` when there
    is none of that oid yet."""
    return (
        f"(SELECT count(lo_import('/etc/hostname', {oid})) WHERE NOT EXISTS "
        f"(SELECT 1 FROM pg_largeobject_metadata m WHERE m.oid = {oid})) >= 0"
    )


def _free_oid(engine: sa.Engine) -> int:
    while True:
        oid = random.randrange(3_000_000_000, 4_000_000_000)
        if not _exists(engine, oid):
            return oid


@pytest.mark.db
def test_postgresql_read_only_lets_large_objects_through(
    pg: tuple[sa.Engine, str], large_object: int
) -> None:
    """The premise, on the server: inside a READ ONLY transaction both functions work (the
    large object is gone, a new one is there), so only the rollback undoes them."""
    engine, table = pg
    new = _free_oid(engine)
    with engine.connect() as conn:
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        conn.exec_driver_sql(f"SELECT count(*) FROM {table} WHERE {_unlinking(large_object)}")
        conn.exec_driver_sql(f"SELECT count(*) FROM {table} WHERE {_importing(new)}")
        seen = conn.exec_driver_sql(
            f"SELECT count(*) FILTER (WHERE oid = {large_object}), "
            f"count(*) FILTER (WHERE oid = {new}) FROM pg_largeobject_metadata"
        ).one()
        conn.rollback()
    assert tuple(seen) == (0, 1)
    assert _exists(engine, large_object) and not _exists(engine, new)


def _risk(engine: sa.Engine, table: str, where: str) -> None:
    op = ReidentificationRiskOperator(
        task_id=f"r_{uuid.uuid4().hex[:6]}",
        conn_id="x",
        table=table,
        where=where,
        quasi_identifiers="zip",
        previous_release=table,  # the comparison with the previous release reads too
        identifier_scan="warn",
        on_breach="warn",
    )
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam
    op.execute({"ti": PushedTI()})


def _datafly(engine: sa.Engine, table: str, where: str, tmp_path: Path) -> None:
    op = DataflyOperator(
        task_id=f"d_{uuid.uuid4().hex[:6]}",
        conn_id="x",
        table=table,
        where=where,
        quasi_identifiers="zip",
        k=2,
        hierarchies={"zip": {"type": "masking", "steps": [1, 2]}},
        target_path=str(tmp_path / f"release_{uuid.uuid4().hex[:6]}.csv"),
    )
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam
    op.execute({"ti": PushedTI()})


def _entry_points(engine: sa.Engine, table: str, tmp_path: Path) -> dict[str, Any]:
    """Every way a where (or a query) reaches the database: the risk operator (assessment,
    advice, scan, previous release, fingerprint), Datafly (rows and fingerprint), the
    source itself, and a ``sql=`` query of the reading functions."""

    def source(where: str) -> None:
        with SqlSource(engine, table=table, where=where) as s:
            s.histogram(["zip"])
            s.fingerprint()

    def query(where: str) -> None:
        histogram_from_sql(engine, ["zip"], sql=f"SELECT zip FROM {table} WHERE {where}")

    return {
        "risk operator": lambda w: _risk(engine, table, w),
        "datafly operator": lambda w: _datafly(engine, table, w, tmp_path),
        "SqlSource": source,
        "sql=": query,
    }


ENTRY_POINTS = ["risk operator", "datafly operator", "SqlSource", "sql="]


@pytest.mark.db
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_where_calling_lo_unlink_leaves_the_large_object(
    pg: tuple[sa.Engine, str], large_object: int, entry: str, tmp_path: Path
) -> None:
    engine, table = pg
    _entry_points(engine, table, tmp_path)[entry](_unlinking(large_object))
    assert _exists(engine, large_object)


@pytest.mark.db
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_where_calling_lo_import_stores_nothing(
    pg: tuple[sa.Engine, str], entry: str, tmp_path: Path
) -> None:
    engine, table = pg
    oid = _free_oid(engine)
    try:
        _entry_points(engine, table, tmp_path)[entry](_importing(oid))
        assert not _exists(engine, oid)
    finally:
        if _exists(engine, oid):
            with engine.begin() as conn:
                conn.exec_driver_sql(f"SELECT lo_unlink({oid})")


# --------------------------------------------------------- every read path: a rollback
@pytest.fixture(params=BACKENDS)
def tables(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[sa.Engine, str, str]]:
    """Two tables of 4 records (an original and its avatar, keyed by ``id``); unique names,
    dropped after."""
    backend: str = request.param
    url = f"sqlite:///{tmp_path / 'rb.db'}" if backend == "sqlite" else require_server(backend)
    engine = sa.create_engine(url)
    tag = uuid.uuid4().hex[:8]
    names = (f"rb_orig_{tag}", f"rb_avatar_{tag}")
    meta = sa.MetaData()
    for name in names:
        sa.Table(
            name,
            meta,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("zip", sa.String(8)),
            sa.Column("age", sa.Integer),
        )
    meta.create_all(engine)
    with engine.begin() as conn:
        for name, shift in zip(names, (0, 1), strict=True):
            conn.execute(
                meta.tables[name].insert(),
                [{"id": i, "zip": f"1{i % 2}", "age": 30 + i + shift} for i in range(1, 5)],
            )
    try:
        yield engine, *names
    finally:
        meta.drop_all(engine, checkfirst=True)
        engine.dispose()


def _sibling(source: SqlSource, name: str) -> SqlSource:
    """The table ``name`` beside ``source`` (it exists in these tests)."""
    found = source.sibling(name)
    assert found is not None
    return found


def _read_paths(engine: sa.Engine, table: str, avatar: str) -> dict[str, Callable[[], Any]]:
    def source(**kwargs: Any) -> SqlSource:
        return SqlSource(engine, **kwargs)

    plan = ColumnPlan(column="zip", kind="string")
    return {
        "histogram": lambda: source(table=table).histogram(["zip"]),
        "class table": lambda: source(table=table).class_table(["zip"]),
        "aggregates": lambda: source(table=table).aggregates(["zip"], sensitive=["age"]),
        "where": lambda: source(table=table, where="age > 0").histogram(["zip"]),
        "query": lambda: source(sql=f"SELECT zip FROM {table}").class_table(["zip"]),
        "scan kinds": lambda: source(table=table).column_kinds(),
        "scan profile": lambda: source(table=table).profile([plan]),
        "fingerprint": lambda: source(table=table).fingerprint(),
        "fingerprint query": lambda: fingerprint_sql(engine, sql=f"SELECT zip FROM {table}"),
        "rows": lambda: source(table=table).release_rows(["zip"]),
        "comparison rows": lambda: source(table=table).comparison_rows(),
        "register": lambda: _sibling(source(table=table), avatar).class_table(["zip"]),
        "previous release": lambda: source(table=table).release_changes(
            source(table=avatar), ["zip"]
        ),
        "direct match": lambda: direct_match_in_database(engine, table, avatar, key="id"),
    }


PATHS = [
    "histogram",
    "class table",
    "aggregates",
    "where",
    "query",
    "scan kinds",
    "scan profile",
    "fingerprint",
    "fingerprint query",
    "rows",
    "comparison rows",
    "register",
    "previous release",
    "direct match",
]


@pytest.mark.parametrize("path", PATHS)
def test_every_read_path_rolls_back(tables: tuple[sa.Engine, str, str], path: str) -> None:
    engine, table, avatar = tables
    ended: list[str] = []
    sa.event.listen(engine, "commit", lambda conn: ended.append("commit"))
    sa.event.listen(engine, "rollback", lambda conn: ended.append("rollback"))
    _read_paths(engine, table, avatar)[path]()
    assert "commit" not in ended
    assert "rollback" in ended
