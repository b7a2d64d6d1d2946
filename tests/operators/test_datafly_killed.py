"""Issue 16: ``DataflyOperator`` killed while it publishes to SQLite, PostgreSQL or MariaDB
(SIGTERM, SIGINT, kill -9 then a rerun) leaves the previous release whole and, once the
next run is done, no staging table behind.

The operator runs in its own process, as a task does, and the signal comes from outside
once it logs that it is writing. The file targets are killed the same way in
``tests/cli/test_outputs.py`` (``test_datafly_killed_mid_write``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.sources.writers import read_sql_frame, write_table_atomic
from tests.conftest import require_server

ROOT = Path(__file__).resolve().parents[2]
ROWS = 40_000

_SCRIPT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from reident_airflow.operators.datafly import DataflyOperator
source, target, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
DataflyOperator(
    task_id="datafly",
    path=source,
    quasi_identifiers=["age"],
    k=2,
    hierarchies={"age": {"type": "interval", "widths": [10], "top": "*"}},
    target_conn_id="release_db",
    target_table=target,
    chunk_rows=500,
).execute({})
print("PUBLISHED-WHOLE", flush=True)
"""


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
    env = dict(os.environ)
    env["AIRFLOW_CONN_RELEASE_DB"] = json.dumps(
        {"conn_type": "generic", "extra": {"sqlalchemy_url": url}}
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(source), target, str(ROWS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # the operator logs "... writing N records" before it writes
        if "writing" in line and "records" in line:
            break
    else:
        proc.wait(timeout=60)
        raise AssertionError(f"the operator never started writing (exit {proc.returncode})")
    time.sleep(0.3)
    proc.send_signal(signum)
    rest = proc.communicate(timeout=120)[0]
    assert proc.returncode != 0, rest
    assert "PUBLISHED-WHOLE" not in rest


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
