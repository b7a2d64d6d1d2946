"""Issue 25, item 6: two ``DataflyOperator`` runs publishing one target at once (a backfill
beside a scheduled run) on SQLite, PostgreSQL or MariaDB.

Each run is its own process, as a task is; both are released by one barrier. Each anonymizes
its own staged file (the same ids and ages, a ``note`` column marking the run) into the same
``target_table``. The write is paced (a pause after each committed chunk) so that, without a
lock, the two runs write at the same time: they used to share ``<target>__reident_new``, drop
each other's staging table and publish rows of both while a task reported success.

- waiting (the default ``lock_timeout``): both tasks succeed, the second began writing only
  after the first had swapped, and the target is the second's release, whole;
- giving up (``lock_timeout=0.2``): one task publishes its release whole, the other fails with
  :class:`~reident_airflow.engine.errors.TargetBusyError` -- not an ``AirflowFailException``,
  so Airflow's retries apply.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
import uuid
from collections.abc import Iterator
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.sources.writers import read_sql_frame
from tests.conftest import require_server

ROWS = 6_000
#: The sum of the ids 0 .. ROWS-1 of one run's release, by hand: ROWS * (ROWS - 1) / 2.
#: Every age (20 .. 69) has ROWS / 50 = 120 records >= k = 2: Datafly keeps them all, as they
#: are, so a run's release is its staged file.
ID_SUM = 17_997_000

_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload(["reident_airflow.operators.datafly", __name__])


def _publish(
    url: str,
    source: str,
    target: str,
    barrier: Barrier,
    results: Any,
    lock_timeout: float | None,
) -> None:
    """The task: Datafly from ``source`` to ``target`` on ``url`` (in the forked process);
    puts (note, first chunk time, swap time, error class, retryable) on ``results``."""
    os.environ["AIRFLOW_CONN_RELEASE_DB"] = json.dumps(
        {"conn_type": "generic", "extra": {"sqlalchemy_url": url}}
    )
    from reident_airflow._compat import AirflowFailException
    from reident_airflow.operators.datafly import DataflyOperator
    from reident_airflow.sources import writers

    note = Path(source).stem
    times: dict[str, float] = {}
    write_table = writers.write_table_atomic

    def paced(stage: str, written: int) -> None:
        if stage == "chunk":
            times.setdefault("chunk", time.monotonic())
            time.sleep(0.03)
        elif stage == "swap":
            times["swap"] = time.monotonic()

    def write_paced(*args: Any, **kwargs: Any) -> int:
        return write_table(*args, checkpoint=paced, **kwargs)

    writers.write_table_atomic = write_paced  # type: ignore[assignment]
    extra = {} if lock_timeout is None else {"lock_timeout": lock_timeout}
    op = DataflyOperator(
        task_id="datafly",
        path=source,
        quasi_identifiers=["age"],
        k=2,
        hierarchies={"age": {"type": "interval", "widths": [10], "top": "*"}},
        target_conn_id="release_db",
        target_table=target,
        chunk_rows=500,
        **extra,
    )
    error: BaseException | None = None
    barrier.wait(timeout=60)
    try:
        op.execute({})  # type: ignore[arg-type]
    except BaseException as exc:
        error = exc
    results.put(
        (
            note,
            times.get("chunk"),
            times.get("swap"),
            None if error is None else f"{type(error).__name__}: {error}",
            error is not None and not isinstance(error, AirflowFailException),
        )
    )


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


def _staged(tmp_path: Path, note: str) -> Path:
    path = tmp_path / f"{note}.csv"
    ages = [str(20 + i % 50) for i in range(ROWS)]
    frame = pd.DataFrame({"id": range(ROWS), "age": ages, "note": [note] * ROWS})
    frame.to_csv(path, index=False)
    return path


def _race(
    url: str, target: str, tmp_path: Path, lock_timeout: float | None
) -> dict[str, tuple[Any, ...]]:
    barrier = _FORKS.Barrier(2)
    results = _FORKS.Queue()
    procs = [
        _FORKS.Process(
            target=_publish,
            args=(url, str(_staged(tmp_path, note)), target, barrier, results, lock_timeout),
        )
        for note in ("a", "b")
    ]
    for p in procs:
        p.start()
    try:
        out = [results.get(timeout=240) for _ in procs]
        for p in procs:
            p.join(timeout=60)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    return {r[0]: r for r in out}


def _release(url: str, target: str) -> tuple[int, int, int, list[str]]:
    """Rows, sum of the ids, distinct ids and notes of the published table."""
    engine = sa.create_engine(url)
    try:
        frame, _ = read_sql_frame(engine, table=target)
        left = {t for t in sa.inspect(engine).get_table_names() if t.startswith(target)}
    finally:
        engine.dispose()
    assert left == {target}, f"tables left beside the target: {sorted(left - {target})}"
    ids = frame["id"].astype(int)
    return len(frame), int(ids.sum()), int(ids.nunique()), sorted(frame["note"].unique())


def test_two_datafly_runs_wait_for_each_other(release_db: tuple[str, str], tmp_path: Path) -> None:
    url, target = release_db
    runs = _race(url, target, tmp_path, None)
    for note, run in runs.items():
        assert run[3] is None, f"run {note} failed: {run[3]}"
    first, last = sorted(runs.values(), key=lambda r: r[2])
    assert last[1] > first[2], "the two runs wrote the target at the same time"
    assert _release(url, target) == (ROWS, ID_SUM, ROWS, [last[0]])


def test_a_datafly_run_that_cannot_wait_fails_retryably(
    release_db: tuple[str, str], tmp_path: Path
) -> None:
    url, target = release_db
    runs = _race(url, target, tmp_path, 0.2)
    failed = [r for r in runs.values() if r[3] is not None]
    published = [r for r in runs.values() if r[3] is None]
    assert len(failed) == 1 and len(published) == 1, runs
    error, retryable = failed[0][3], failed[0][4]
    assert error.startswith(f"TargetBusyError: another run is publishing table {target!r}"), error
    assert retryable  # not an AirflowFailException: Airflow's retries apply
    assert _release(url, target) == (ROWS, ID_SUM, ROWS, [published[0][0]])


@pytest.mark.parametrize(
    "name",
    [
        "release_gate",
        "gx_release_check",
        "existing_etl",
        "spark_release_gate",
        "identifier_scan_gate",
        "release_difference_gate",
    ],
)
def test_the_example_dags_that_publish_run_one_at_a_time(name: str) -> None:
    """A backfill beside a scheduled run waits instead of publishing beside it."""
    from tests.operators._dags import load_dag

    assert load_dag(name).max_active_runs == 1
