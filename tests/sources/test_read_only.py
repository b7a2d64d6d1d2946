"""A templated ``where`` / ``sql`` runs as one statement, read-only, and only filters its table.

Each test plays a hostile template against a real database (PostgreSQL, MariaDB, SQLite): a
second statement after ``;`` (with a ``COMMIT`` to escape the transaction), a ``UNION`` that
swaps in another table's rows, a function that writes. The tables are made here with unique
names and dropped after.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError
from reident_airflow.sources.connect import query_source, read_only
from reident_airflow.sources.sql import fingerprint_sql, histogram_from_sql
from reident_airflow.sources.tables import read_sql_frame
from tests.conftest import require_server
from tests.operators._fakes import PushedTI

BACKENDS = [
    pytest.param("sqlite"),
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    backend: str = request.param
    url = f"sqlite:///{tmp_path / 'ro.db'}" if backend == "sqlite" else require_server(backend)
    made = sa.create_engine(url)
    yield made
    made.dispose()


@pytest.fixture
def tables(engine: sa.Engine) -> Iterator[tuple[str, str]]:
    """``staged``: 4 records, every one alone in its class (k = 1); ``other``: 6 records in
    one class (k = 6), the rows a UNION would swap in; unique names, dropped after."""
    tag = uuid.uuid4().hex[:8]
    staged, other = f"ro_staged_{tag}", f"ro_other_{tag}"
    meta = sa.MetaData()
    columns = ("day", "zip")
    for name in (staged, other):
        sa.Table(name, meta, *(sa.Column(c, sa.String(16)) for c in columns))
    meta.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            meta.tables[staged].insert(),
            [{"day": "d1", "zip": z} for z in ("10", "11", "12", "13")],
        )
        conn.execute(meta.tables[other].insert(), [{"day": "d1", "zip": "99"}] * 6)
    try:
        yield staged, other
    finally:
        meta.drop_all(engine, checkfirst=True)


def _risk(engine: sa.Engine, **kwargs: Any) -> ReidentificationRiskOperator:
    op = ReidentificationRiskOperator(
        task_id=f"t_{uuid.uuid4().hex[:6]}", conn_id="x", quasi_identifiers="zip", **kwargs
    )
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam
    return op


def _datafly(engine: sa.Engine, tmp_path: Path, **kwargs: Any) -> DataflyOperator:
    op = DataflyOperator(
        task_id=f"d_{uuid.uuid4().hex[:6]}",
        conn_id="x",
        quasi_identifiers="zip",
        k=2,
        hierarchies={"zip": {"type": "masking", "steps": [1, 2]}},
        target_path=str(tmp_path / "release.csv"),
        **kwargs,
    )
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam
    return op


def _rows(engine: sa.Engine, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(sa.table(table))).scalar())


def _escape_where(victim: str) -> str:
    """A where that closes the reading's queries, commits and drops ``victim``: built for
    ``SELECT * FROM (SELECT * FROM t WHERE <where>) AS reident_probe LIMIT 0``, each part a
    valid statement, so a driver that runs several statements in one call runs them all."""
    return (
        f"1 = 1) AS p; COMMIT; DROP TABLE {victim}; "
        "SELECT * FROM (SELECT 'd1' AS day, '10' AS zip WHERE 1 = 1"
    )


# ------------------------------------------------------------------------ one statement
def test_where_with_a_second_statement_is_refused_and_drops_nothing(
    engine: sa.Engine, tables: tuple[str, str]
) -> None:
    staged, other = tables
    op = _risk(engine, table=staged, where=_escape_where(other))
    with pytest.raises(ReidentConfigurationError) as info:
        op.execute({"ti": PushedTI()})
    assert other in sa.inspect(engine).get_table_names()  # still there
    assert _rows(engine, other) == 6
    message = str(info.value)
    assert "where condition" in message and "DROP" not in message and other not in message


def test_sql_with_a_second_statement_is_refused_and_drops_nothing(
    engine: sa.Engine, tables: tuple[str, str]
) -> None:
    staged, other = tables
    sql = (
        f"SELECT day, zip FROM {staged}) AS p; COMMIT; DROP TABLE {other}; "
        f"SELECT * FROM (SELECT day, zip FROM {staged}"
    )
    with pytest.raises(InvalidInputError) as info:
        histogram_from_sql(engine, ["zip"], sql=sql)
    assert other in sa.inspect(engine).get_table_names()  # still there
    assert "more than one statement" in str(info.value) and "DROP" not in str(info.value)
    # the Datafly reader and the fingerprint read sql through the same check
    with pytest.raises(InvalidInputError, match="more than one statement"):
        read_sql_frame(engine, sql=sql)
    with pytest.raises(InvalidInputError, match="more than one statement"):
        fingerprint_sql(engine, sql=sql)
    assert _rows(engine, other) == 6


def test_a_final_semicolon_and_comment_are_one_statement(
    engine: sa.Engine, tables: tuple[str, str]
) -> None:
    staged, _ = tables
    sizes = histogram_from_sql(engine, ["zip"], sql=f"SELECT zip FROM {staged}; -- the batch\n")
    # 4 records, 4 distinct zips: 4 classes of size 1 (counted by hand)
    assert (sizes.sizes.tolist(), sizes.counts.tolist()) == ([1], [4])


# ------------------------------------------------------------------------ only a filter
def test_a_union_in_where_cannot_swap_in_another_table(
    engine: sa.Engine, tables: tuple[str, str], tmp_path: Path
) -> None:
    staged, other = tables
    swaps = [
        f"1 = 0 UNION SELECT * FROM {other}",
        f"1 = 0) UNION (SELECT * FROM {other} WHERE (1 = 1",
        f"1 = 0) UNION SELECT * FROM {other} WHERE (1 = 1",
    ]
    for where in swaps:
        with pytest.raises(ReidentConfigurationError, match="where condition") as info:
            _risk(engine, table=staged, where=where, min_k=2).execute({"ti": PushedTI()})
        assert other not in str(info.value)
        with pytest.raises(ReidentConfigurationError, match="where condition"):
            _datafly(engine, tmp_path, table=staged, where=where).execute({"ti": PushedTI()})
    assert not (tmp_path / "release.csv").exists()


def test_a_where_filters_its_table(engine: sa.Engine, tables: tuple[str, str]) -> None:
    staged, other = tables
    where = "zip IN (SELECT '10' UNION SELECT '11') AND day = 'd1' -- one day\n"
    report = _risk(engine, table=staged, where=where).execute({"ti": PushedTI()})
    # zips 10 and 11 of the staged table: 2 records, 2 classes (counted by hand)
    assert (report["records"], report["classes"]) == (2, 2)
    assert _rows(engine, other) == 6


# ------------------------------------------------------------------------ read-only
@pytest.mark.db
def test_postgresql_data_modifying_cte_leaves_the_rows() -> None:
    engine = sa.create_engine(require_server("postgresql"))
    name = f"ro_cte_{uuid.uuid4().hex[:8]}"
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE TABLE {name} (zip text)")
            conn.exec_driver_sql(f"INSERT INTO {name} VALUES ('10'), ('11')")
        sql = f"WITH d AS (DELETE FROM {name} RETURNING zip) SELECT zip FROM d"
        with pytest.raises(InvalidInputError):
            histogram_from_sql(engine, ["zip"], sql=sql)
        assert _rows(engine, name) == 2
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        engine.dispose()


@pytest.mark.parametrize(
    "engine", [pytest.param("postgresql", marks=pytest.mark.db)], indirect=True
)
def test_postgresql_function_with_side_effects_cannot_write(
    tables: tuple[str, str], engine: sa.Engine
) -> None:
    staged, _ = tables
    tag = uuid.uuid4().hex[:8]
    seq, fn = f"ro_seq_{tag}", f"ro_fn_{tag}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE SEQUENCE {seq}")
        # nextval writes to the sequence and is never rolled back: a write that outlives
        # the transaction, as a function writing through dblink would
        conn.exec_driver_sql(
            f"CREATE FUNCTION {fn}() RETURNS bigint LANGUAGE sql AS $$ SELECT nextval('{seq}') $$"
        )
    try:
        with pytest.raises(InvalidInputError, match="25006"):
            histogram_from_sql(engine, ["zip"], sql=f"SELECT zip, {fn}() AS n FROM {staged}")
        with pytest.raises(ReidentConfigurationError, match="25006"):
            _risk(engine, table=staged, where=f"{fn}() > 0").execute({"ti": PushedTI()})
        with engine.connect() as conn:
            called = conn.exec_driver_sql(f"SELECT is_called FROM {seq}").scalar()
        assert called is False  # nextval never ran to its end
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP FUNCTION IF EXISTS {fn}()")
            conn.exec_driver_sql(f"DROP SEQUENCE IF EXISTS {seq}")


@pytest.mark.parametrize("engine", [pytest.param("mariadb", marks=pytest.mark.db)], indirect=True)
def test_mariadb_function_writing_a_non_transactional_table_cannot_write(
    tables: tuple[str, str], engine: sa.Engine
) -> None:
    staged, _ = tables
    tag = uuid.uuid4().hex[:8]
    log, fn = f"ro_log_{tag}", f"ro_fn_{tag}"
    with engine.begin() as conn:
        # Aria is not transactional: a rollback would not undo the insert
        conn.exec_driver_sql(f"CREATE TABLE {log} (n int) ENGINE=Aria")
        conn.exec_driver_sql(
            f"CREATE FUNCTION {fn}() RETURNS int MODIFIES SQL DATA "
            f"BEGIN INSERT INTO {log} VALUES (1); RETURN 1; END"
        )
    try:
        with pytest.raises(InvalidInputError, match="1792"):
            histogram_from_sql(engine, ["zip"], sql=f"SELECT zip, {fn}() AS n FROM {staged}")
        with pytest.raises(ReidentConfigurationError, match="1792"):
            _risk(engine, table=staged, where=f"{fn}() > 0").execute({"ti": PushedTI()})
        assert _rows(engine, log) == 0
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP FUNCTION IF EXISTS {fn}")
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {log}")


def test_read_only_ends_with_the_block(engine: sa.Engine, tables: tuple[str, str]) -> None:
    """The connection writes again once the read is over (SQLite's pragma set back, the
    PostgreSQL / MariaDB transaction ended), and a query is never read on any other."""
    staged, _ = tables
    with engine.connect() as conn:
        with read_only(conn):
            assert query_source(conn, f"SELECT zip FROM {staged}").c.keys() == ["zip"]
        with pytest.raises(InvalidInputError, match="read-only connection"):
            query_source(conn, f"SELECT zip FROM {staged}")
        conn.execute(sa.table(staged, sa.column("zip")).insert().values(zip="14"))
        conn.commit()
    assert _rows(engine, staged) == 5


@pytest.mark.db
def test_postgresql_callers_transaction_keeps_its_mode() -> None:
    """A query fingerprinted on a caller's open transaction is read in a read-only savepoint;
    the caller's transaction writes after it as before."""
    engine = sa.create_engine(require_server("postgresql"))
    name = f"ro_caller_{uuid.uuid4().hex[:8]}"
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"CREATE TABLE {name} (zip text)")
            conn.exec_driver_sql(f"INSERT INTO {name} VALUES ('10')")
            assert fingerprint_sql(conn, sql=f"SELECT zip FROM {name}").rows == 1
            conn.exec_driver_sql(f"INSERT INTO {name} VALUES ('11')")
            conn.commit()
        assert _rows(engine, name) == 2
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        engine.dispose()


@pytest.mark.db
def test_postgresql_autocommit_connection_is_refused() -> None:
    """An autocommit connection holds no transaction to make read-only: refused, not run."""
    engine = sa.create_engine(require_server("postgresql"), isolation_level="AUTOCOMMIT")
    try:
        with pytest.raises(InvalidInputError, match="could not be made read-only"):
            histogram_from_sql(engine, ["one"], sql="SELECT 1 AS one")
    finally:
        engine.dispose()


@pytest.mark.db
def test_mariadb_query_on_a_callers_open_transaction_is_refused() -> None:
    """MariaDB cannot make an open transaction read-only: the caller gives an engine."""
    engine = sa.create_engine(require_server("mariadb"))
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")  # the caller's transaction is open
            with pytest.raises(InvalidInputError, match="read-only transaction of its own"):
                fingerprint_sql(conn, sql="SELECT 1 AS one")
    finally:
        engine.dispose()
