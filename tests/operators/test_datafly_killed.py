"""Issue 16: ``DataflyOperator`` killed while it publishes to SQLite, PostgreSQL or MariaDB
(SIGTERM, SIGINT, kill -9 then a rerun) leaves the previous release whole and, once the
next run is done, no staging table behind.

The operator runs in its own process, as a task does, and the signal comes from outside
once the first chunk is in the staging table. The file targets are killed the same way in
``tests/cli/test_outputs.py`` (``test_datafly_killed_mid_write``).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
import uuid
from collections.abc import Iterator
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.sources.writers import read_sql_frame, write_table_atomic
from tests.conftest import require_server

ROWS = 40_000

# The nine runs fork from one process that has imported the operator (a forkserver): each
# run is still its own process, killed from outside, without paying Airflow's import again.
_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload(["reident_airflow.operators.datafly", __name__])


def _publish(url: str, source: str, target: str, writing: Event) -> None:
    """The task: Datafly from ``source`` to ``target`` on ``url`` (in the forked process)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ["AIRFLOW_CONN_RELEASE_DB"] = json.dumps(
        {"conn_type": "generic", "extra": {"sqlalchemy_url": url}}
    )
    from reident_airflow.operators.datafly import DataflyOperator

    op = DataflyOperator(
        task_id="datafly",
        path=source,
        quasi_identifiers=["age"],
        k=2,
        hierarchies={"age": {"type": "interval", "widths": [10], "top": "*"}},
        target_conn_id="release_db",
        target_table=target,
        chunk_rows=500,
    )
    from reident_airflow.sources import writers

    write_table = writers.write_table_atomic

    def paced(stage: str, written: int) -> None:
        """After each committed chunk of the staging table: say so, then give the signal
        time to land before the next one (a fast SQLite would otherwise finish first)."""
        if stage == "chunk":
            writing.set()
            time.sleep(0.05)

    def write_paced(*args: Any, **kwargs: Any) -> int:
        return write_table(*args, checkpoint=paced, **kwargs)

    writers.write_table_atomic = write_paced  # type: ignore[assignment]
    op.execute({})  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def release_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    url = f"sqlite:///{tmp_path / 'release.db'}" if request.param == "sqlite" else None
    url = url or require_server(request.param)
    name = f"rel_{uuid.uuid4().hex[:8]}"
    yield url, name
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for table in sa.inspect(conn).get_table_names():
            if table.startswith(name):
                sa.Table(table, sa.MetaData()).drop(conn)
    engine.dispose()


def _source(tmp_path: Path) -> Path:
    path = tmp_path / "staged.csv"
    ages = [str(20 + i % 50) for i in range(ROWS)]
    pd.DataFrame({"id": range(ROWS), "age": ages, "note": ["x"] * ROWS}).to_csv(path, index=False)
    return path


def _run_until_writing(url: str, source: Path, target: str, signum: int) -> None:
    writing = _FORKS.Event()
    proc: Any = _FORKS.Process(target=_publish, args=(url, str(source), target, writing))
    proc.start()
    try:
        deadline = time.monotonic() + 60
        while not writing.wait(timeout=0.1):
            if not proc.is_alive() or time.monotonic() > deadline:
                raise AssertionError(f"the operator never started writing (exit {proc.exitcode})")
        os.kill(proc.pid, signum)  # one chunk of 80 is in the staging table
        proc.join(timeout=120)
        assert proc.exitcode not in (None, 0)  # killed before the release was whole
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()


def _tables(engine: sa.Engine, target: str) -> set[str]:
    return {t for t in sa.inspect(engine).get_table_names() if t.startswith(target)}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_datafly_killed_while_publishing(
    release_db: tuple[str, str], tmp_path: Path, signum: int
) -> None:
    url, target = release_db
    engine = sa.create_engine(url)
    previous = pd.DataFrame({"id": [1, 2], "age": ["old", "old"], "note": ["p", "p"]})
    write_table_atomic(engine, previous, target)
    _run_until_writing(url, _source(tmp_path), target, signum)
    frame, _ = read_sql_frame(engine, table=target)
    assert frame["age"].tolist() == ["old", "old"]  # the previous release, whole
    if signum == signal.SIGKILL:  # nothing can clean up after kill -9: the next run does
        write_table_atomic(engine, previous.assign(age="next"), target)
    assert _tables(engine, target) == {target}
    engine.dispose()
