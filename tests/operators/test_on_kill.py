"""Issue 38, item 6: an operator's ``on_kill`` stops the statement its task runs on the server.

A client that goes away does not stop a statement: MariaDB (and PostgreSQL without
``client_connection_check_interval``) run it to its end. Each test starts the risk operator
on a slow reading in a thread of its own, as a task runs ``execute``, waits until the server
shows the statement, then calls ``on_kill`` from the test's thread (Airflow calls it from
another thread or the task's signal handler) and checks that the server no longer runs it
(PostgreSQL: ``pg_stat_activity``; MariaDB: ``information_schema.PROCESSLIST``), that
``execute`` returned promptly with :class:`OperationCancelledError`, and that neither the
error nor the log quote the statement. SQLite and DuckDB have no server to ask: the reading
returns promptly with that error, long before the query could have ended.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import OperationCancelledError
from reident_airflow.operators.risk import ReidentificationRiskOperator
from tests.conftest import require_server
from tests.operators._fakes import PushedTI

#: How long a reading may take to stop once on_kill returned (seconds); the slow readings
#: below would run for minutes.
PROMPT = 10.0


class _Task:
    """``op.execute`` in a thread of its own; what it raised, and when it ended."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self.raised: BaseException | None = None
        self.ended: float | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.op.execute({"ti": PushedTI()})  # type: ignore[arg-type]
        except BaseException as exc:
            self.raised = exc
        self.ended = time.monotonic()


def _wait_for(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def _operator(engine: sa.Engine, **kwargs: Any) -> ReidentificationRiskOperator:
    op = ReidentificationRiskOperator(
        task_id=f"k_{uuid.uuid4().hex[:6]}",
        conn_id="x",
        quasi_identifiers="zip",
        advice=False,
        fingerprint=False,
        identifier_scan="off",
        **kwargs,
    )
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam
    return op


@pytest.fixture
def server_table(request: pytest.FixtureRequest) -> Iterator[tuple[sa.Engine, str]]:
    """A table of 4 records on the server ``request.param`` (unique name, dropped after)."""
    engine = sa.create_engine(require_server(request.param))
    name = f"kill_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} (zip varchar(8))")
        conn.exec_driver_sql(f"INSERT INTO {name} VALUES ('10'), ('11'), ('12'), ('13')")
    try:
        yield engine, name
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        engine.dispose()


#: Each server: a where that sleeps 20 s per record (80 s in all), and the statements it
#: runs now that carry ``marker`` (other than the one asking).
_SLOW = {
    "postgresql": (
        "pg_sleep(20) IS NOT NULL AND '{marker}' <> ''",
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
        "AND query LIKE '%{marker}%' AND pid <> pg_backend_pid()",
    ),
    "mysql": (  # MariaDB, as SQLAlchemy's dialect names it
        "SLEEP(20) = 0 AND '{marker}' <> ''",
        "SELECT count(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%{marker}%' "
        "AND ID <> CONNECTION_ID() AND COMMAND <> 'Killed'",
    ),
}


@pytest.mark.db
@pytest.mark.parametrize("server_table", ["postgresql", "mariadb"], indirect=True)
def test_on_kill_stops_the_statement_on_the_server(
    server_table: tuple[sa.Engine, str], caplog: pytest.LogCaptureFixture
) -> None:
    engine, table = server_table
    marker = f"m{uuid.uuid4().hex[:10]}"
    where, running_sql = (s.format(marker=marker) for s in _SLOW[engine.dialect.name])

    def running() -> int:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(running_sql)).scalar_one())

    op = _operator(engine, table=table, where=where)
    task = _Task(op)
    assert _wait_for(lambda: running() == 1, 30), "the slow statement never started"
    caplog.set_level(logging.INFO)
    op.on_kill()
    killed = time.monotonic()
    assert _wait_for(lambda: running() == 0, 5), "the statement still runs on the server"
    task.thread.join(PROMPT)
    assert task.ended is not None and task.ended - killed < PROMPT
    assert isinstance(task.raised, OperationCancelledError), repr(task.raised)
    assert marker not in str(task.raised)
    assert "cancelled the statements of 1" in caplog.text
    assert marker not in caplog.text


@pytest.mark.db
@pytest.mark.parametrize("server_table", ["postgresql", "mariadb"], indirect=True)
@pytest.mark.parametrize("kind", ["datafly", "direct match"])
def test_on_kill_of_datafly_and_direct_match(
    server_table: tuple[sa.Engine, str], kind: str, tmp_path: Path
) -> None:
    """Datafly reading a slow where, direct match comparing the table with a slow view: the
    statement is gone from the server once ``on_kill`` returned."""
    from reident_airflow.operators.datafly import DataflyOperator
    from reident_airflow.operators.direct_match import DirectMatchProtectionOperator

    engine, table = server_table
    marker = f"m{uuid.uuid4().hex[:10]}"
    where, running_sql = (s.format(marker=marker) for s in _SLOW[engine.dialect.name])
    view = f"{table}_v"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE VIEW {view} AS SELECT zip FROM {table} WHERE {where}")

    if kind == "direct match":  # the server shows the statement naming the view
        running_sql = running_sql.replace(marker, view)
    task_engine = engine
    if engine.dialect.name == "postgresql":  # a server-side cursor shows "FETCH ..."
        task_engine = sa.create_engine(engine.url, connect_args={"application_name": marker})
        running_sql = (
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
            f"AND application_name = '{marker}'"
        )

    def running() -> int:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(running_sql)).scalar_one())

    op: Any
    if kind == "datafly":
        op = DataflyOperator(
            task_id="d",
            conn_id="x",
            table=table,
            where=where,
            quasi_identifiers="zip",
            k=2,
            hierarchies={"zip": {"type": "masking", "steps": [1, 2]}},
            target_path=str(tmp_path / "release.csv"),
        )
    else:
        op = DirectMatchProtectionOperator(
            task_id="m", conn_id="x", original_table=table, avatar_table=view, key="zip"
        )
    op.get_engine = lambda conn_id: task_engine
    task = _Task(op)
    try:
        assert _wait_for(lambda: running() == 1, 30), repr(task.raised)
        op.on_kill()
        assert _wait_for(lambda: running() == 0, 5), "the statement still runs on the server"
        task.thread.join(PROMPT)
        assert task.ended is not None, "execute did not return"
        assert isinstance(task.raised, OperationCancelledError), repr(task.raised)
    finally:
        op.on_kill()  # a failed check leaves nothing running for the next tests
        task.thread.join(PROMPT)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP VIEW IF EXISTS {view}")


def test_on_kill_interrupts_sqlite(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A query counting a billion generated rows (minutes), stopped by SQLite's interrupt."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'kill.db'}")
    sql = (
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000000) "
        "SELECT CAST(x % 7 AS TEXT) AS zip FROM n"
    )
    op = _operator(engine, sql=sql)
    task = _Task(op)
    time.sleep(2)  # the GROUP BY runs
    assert task.ended is None, repr(task.raised)
    caplog.set_level(logging.INFO)
    op.on_kill()
    killed = time.monotonic()
    task.thread.join(PROMPT)
    assert task.ended is not None and task.ended - killed < PROMPT
    assert isinstance(task.raised, OperationCancelledError), repr(task.raised)
    assert "cancelled the statements of 1 sqlite" in caplog.text
    engine.dispose()


def test_on_kill_interrupts_duckdb(tmp_path: Path) -> None:
    """DuckDB grouping a large Parquet file (made by DuckDB), stopped by its interrupt."""
    import duckdb

    data = tmp_path / "big.parquet"
    duckdb.sql(
        "COPY (SELECT i AS a, hash(i) % 1000003 AS b, hash(i + 1) AS c "
        f"FROM range(40000000) t(i)) TO '{data}' (FORMAT parquet)"
    )
    op = ReidentificationRiskOperator(
        task_id="duck",
        path=str(data),
        quasi_identifiers=["a", "b", "c"],
        advice=False,
        fingerprint=False,
        identifier_scan="off",
        memory_limit="300MB",
    )
    task = _Task(op)
    time.sleep(1.5)
    assert task.ended is None, repr(task.raised)
    op.on_kill()
    killed = time.monotonic()
    task.thread.join(PROMPT)
    assert task.ended is not None and task.ended - killed < PROMPT
    assert isinstance(task.raised, OperationCancelledError), repr(task.raised)


# ------------------------------------------------------------------ as Airflow stops a task
_TASK = """
import signal, sys
import sqlalchemy as sa
from reident_airflow.operators.risk import ReidentificationRiskOperator

url, table, where = sys.argv[1:4]
engine = sa.create_engine(url)
op = ReidentificationRiskOperator(
    task_id="risk", conn_id="x", table=table, where=where, quasi_identifiers="zip",
    advice=False, fingerprint=False, identifier_scan="off",
)
op.get_engine = lambda conn_id: engine

def _on_term(signum, frame):  # what Airflow 3's task runner installs
    op.on_kill()

signal.signal(signal.SIGTERM, _on_term)
try:
    op.execute({})
except BaseException as exc:
    print(type(exc).__name__, flush=True)
    sys.exit(3)
print("finished", flush=True)
"""


@pytest.mark.db
@pytest.mark.parametrize("server_table", ["postgresql", "mariadb"], indirect=True)
def test_sigterm_to_a_task_stops_its_statement(server_table: tuple[sa.Engine, str]) -> None:
    """The task in its own process, SIGTERM handled as Airflow 3's task runner does (its
    handler calls ``on_kill``). psycopg2 waits for its statement inside libpq, where no Python
    handler runs: the statement is stopped all the same, at once."""
    import os
    import signal
    import subprocess
    import sys

    engine, table = server_table
    marker = f"m{uuid.uuid4().hex[:10]}"
    where, running_sql = (s.format(marker=marker) for s in _SLOW[engine.dialect.name])

    def running() -> int:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(running_sql)).scalar_one())

    url = engine.url.render_as_string(hide_password=False)
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    with subprocess.Popen(
        [sys.executable, "-c", _TASK, url, table, where],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert _wait_for(lambda: running() == 1, 60), "the slow statement never started"
            proc.send_signal(signal.SIGTERM)
            assert _wait_for(lambda: running() == 0, 5), "the statement still runs"
            out, err = proc.communicate(timeout=PROMPT)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 3, err
    assert out.strip().splitlines()[-1] == "OperationCancelledError", out
    assert marker not in out + err


def test_a_reading_begun_after_cancel_is_refused(tmp_path: Path) -> None:
    """``on_kill`` between two statements (while Python computes): the next reading of the
    task does not start on the server."""
    from reident_airflow.sources.files import FileSource
    from reident_airflow.sources.sql import SqlSource

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'after.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (zip text)")
        conn.exec_driver_sql("INSERT INTO t VALUES ('10'), ('11')")
    csv = tmp_path / "t.csv"
    csv.write_text("zip\n10\n11\n", encoding="utf-8")
    sources: list[Any] = [SqlSource(engine, table="t"), FileSource(csv)]
    for source in sources:
        assert source.histogram(["zip"]).counts.tolist() == [2]  # 2 classes of size 1
        source.cancel()
        with pytest.raises(OperationCancelledError, match="before it began"):
            source.histogram(["zip"])
    engine.dispose()
