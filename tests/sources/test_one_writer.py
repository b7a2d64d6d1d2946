"""One writer per release target (issue 25, item 6).

Two runs publishing one target at once -- a backfill beside a scheduled run -- used to stage
into the same ``<target>__reident_new``: one dropped the other's staging table, and the
published table held rows of both while a run reported success. Here two runs start together
(threads released by one barrier), each publishing its own release through the functions the
operators and the example DAGs use (:func:`write_table_atomic`, :func:`copy_table_atomic`,
:func:`write_file_atomic`), on SQLite, PostgreSQL, MariaDB and a file. The writes are paced
(a pause after each chunk) so that, without a lock, they overlap.

What must hold:

- the target holds exactly one run's release: its row count, the sum of its ids and its run
  marker equal that run's (the expected values are computed by hand below);
- the runs' writes did not overlap (the second began once the first had swapped) and the
  target is the release of the run that swapped last: it waited, then published its own
  release in full; no staging table is left;
- with a short ``lock_timeout`` the second run fails with
  :class:`~reident_airflow.engine.errors.TargetBusyError` ("another run is publishing ...",
  retryable), and the first run's release is published whole;
- a lock lost mid-write (the server killed its connection) stops the swap: the previous
  release stays, the error is retryable.

Target names up to the database's limit work (PostgreSQL 63 bytes, MariaDB 64 characters);
a longer one is refused in one line naming the limit (issue 25, item 10).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError, TargetBusyError
from reident_airflow.sources.publish import copy_table_atomic, is_staging_of
from reident_airflow.sources.writers import (
    read_file_frame,
    write_file_atomic,
    write_table_atomic,
)
from tests.conftest import require_server

ROWS = 3_000
CHUNK = 250  # 12 chunks per run
#: The sum of the ids 0 .. ROWS-1 of a run's release, by hand: ROWS * (ROWS - 1) / 2.
ID_SUM = 4_498_500
PAUSE = 0.03  # after each chunk: without a lock, the two runs' writes overlap


def _release(run: str) -> pd.DataFrame:
    """A run's release: ids 0 .. ROWS-1, every row marked with the run."""
    return pd.DataFrame({"id": range(ROWS), "run": [run] * ROWS})


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    url = f"sqlite:///{tmp_path / 'one_writer.db'}" if request.param == "sqlite" else None
    engine = sa.create_engine(url or require_server(request.param))
    yield engine
    engine.dispose()


@pytest.fixture
def target(engine: sa.Engine) -> Iterator[str]:
    name = f"ow_{uuid.uuid4().hex[:8]}"
    yield name
    with engine.begin() as conn:
        for n in sa.inspect(conn).get_table_names():
            if n.startswith(name):  # the target, the sources, any staging table of it
                sa.Table(n, sa.MetaData()).drop(conn)


class _Run:
    """One publishing run in a thread: when its first chunk was in and when it swapped."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.first_chunk: float | None = None
        self.swapped: float | None = None
        self.result: Any = None
        self.error: BaseException | None = None

    def checkpoint(self, stage: str, rows: int) -> None:
        if stage == "chunk":
            if self.first_chunk is None:
                self.first_chunk = time.monotonic()
            time.sleep(PAUSE)
        elif stage == "swap":
            self.swapped = time.monotonic()


def _race(publish: Callable[[_Run], Any], names: tuple[str, str] = ("a", "b")) -> list[_Run]:
    """Start one thread per run at the same instant (a barrier); wait for both."""
    runs = [_Run(n) for n in names]
    barrier = threading.Barrier(len(runs))

    def body(run: _Run) -> None:
        barrier.wait()
        try:
            run.result = publish(run)
        except BaseException as exc:
            run.error = exc

    threads = [threading.Thread(target=body, args=(run,)) for run in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
        assert not t.is_alive(), "a publishing run never ended"
    return runs


def _table_state(engine: sa.Engine, target: str) -> tuple[int, int, int, list[str]]:
    """Rows, sum of the ids, distinct ids and the run markers of the published table."""
    table = sa.Table(target, sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        rows, total, distinct = conn.execute(
            sa.select(
                sa.func.count(), sa.func.sum(table.c.id), sa.func.count(table.c.id.distinct())
            )
        ).one()
        markers = sorted(r[0] for r in conn.execute(sa.select(table.c.run).distinct()))
    return int(rows), int(total), int(distinct), markers


def _assert_serialized(runs: list[_Run]) -> _Run:
    """Both runs published, one after the other; the run that swapped last."""
    for run in runs:
        assert run.error is None, f"run {run.name}: {type(run.error).__name__}: {run.error}"
        assert run.first_chunk is not None and run.swapped is not None
    first, last = sorted(runs, key=lambda r: r.swapped or 0.0)
    # the later run wrote its first chunk only after the earlier one had swapped
    assert last.first_chunk is not None and first.swapped is not None
    assert last.first_chunk > first.swapped, "the two runs wrote the target at the same time"
    return last


def _staging_left(engine: sa.Engine, target: str) -> set[str]:
    return {t for t in sa.inspect(engine).get_table_names() if is_staging_of(engine, t, target)}


# ----------------------------------------------------------------------------- two runs
def test_two_runs_writing_one_table_publish_one_whole_release(
    engine: sa.Engine, target: str
) -> None:
    def publish(run: _Run) -> int:
        return write_table_atomic(
            engine, _release(run.name), target, chunk_rows=CHUNK, checkpoint=run.checkpoint
        )

    runs = _race(publish)
    last = _assert_serialized(runs)
    assert [r.result for r in runs] == [ROWS, ROWS]
    assert _table_state(engine, target) == (ROWS, ID_SUM, ROWS, [last.name])
    assert _staging_left(engine, target) == set()


def test_two_runs_copying_into_one_table_publish_one_whole_release(
    engine: sa.Engine, target: str
) -> None:
    """The example DAGs' publish step: ``INSERT ... SELECT`` of a staged table."""
    for run in ("a", "b"):
        _release(run).to_sql(f"{target}_src_{run}", engine, index=False)

    def publish(run: _Run) -> int:
        return copy_table_atomic(
            engine, f"{target}_src_{run.name}", target, checkpoint=run.checkpoint
        )

    runs = _race(publish)
    last = _assert_serialized(runs)
    assert [r.result for r in runs] == [ROWS, ROWS]
    assert _table_state(engine, target) == (ROWS, ID_SUM, ROWS, [last.name])
    assert _staging_left(engine, target) == set()


def test_a_second_run_gives_up_clearly_after_lock_timeout(engine: sa.Engine, target: str) -> None:
    """The first run holds the target (paused after its first chunk) while the second, with
    a short lock_timeout, gives up: a retryable TargetBusyError naming the target. The first
    run then publishes its release whole."""
    holding, done = threading.Event(), threading.Event()

    def first(stage: str, rows: int) -> None:
        if stage == "chunk" and not holding.is_set():
            holding.set()
            assert done.wait(timeout=60)

    errors: list[BaseException] = []

    def run_first() -> None:
        try:
            write_table_atomic(engine, _release("a"), target, chunk_rows=CHUNK, checkpoint=first)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run_first)
    thread.start()
    try:
        assert holding.wait(timeout=60)
        started = time.monotonic()
        with pytest.raises(TargetBusyError) as info:
            write_table_atomic(engine, _release("b"), target, lock_timeout=0.5)
        waited = time.monotonic() - started
    finally:
        done.set()
        thread.join(timeout=120)
    assert errors == []
    message = str(info.value)
    assert message.startswith(f"another run is publishing table {target!r}"), message
    assert "0.5 s" in message and "\n" not in message
    assert info.value.deterministic is False  # infrastructure: Airflow's retries apply
    assert 0.5 <= waited < 10
    assert _table_state(engine, target) == (ROWS, ID_SUM, ROWS, ["a"])
    assert _staging_left(engine, target) == set()


def test_two_runs_writing_one_file_publish_one_after_the_other(tmp_path: Path) -> None:
    """A CSV target: the second run waits on ``<target>.reident-lock``, then writes its own
    release; the lock file is gone once both are done."""
    path = tmp_path / "release.csv"

    def publish(run: _Run) -> int:
        return write_file_atomic(
            _release(run.name), path, chunk_rows=CHUNK, checkpoint=run.checkpoint
        )

    runs = _race(publish)
    last = _assert_serialized(runs)
    frame = read_file_frame(path)
    assert len(frame) == ROWS and frame["id"].astype(int).sum() == ID_SUM
    assert frame["run"].unique().tolist() == [last.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.csv"]


def test_a_second_file_writer_gives_up_clearly(tmp_path: Path) -> None:
    path = tmp_path / "release.parquet"
    holding, done = threading.Event(), threading.Event()

    def first(stage: str, rows: int) -> None:
        if stage == "chunk" and not holding.is_set():
            holding.set()
            assert done.wait(timeout=60)

    thread = threading.Thread(
        target=write_file_atomic,
        args=(_release("a"), path),
        kwargs={"chunk_rows": CHUNK, "checkpoint": first},
    )
    thread.start()
    try:
        assert holding.wait(timeout=60)
        with pytest.raises(TargetBusyError, match=r"^another run is publishing .*release\.parquet"):
            write_file_atomic(_release("b"), path, lock_timeout=0.2)
    finally:
        done.set()
        thread.join(timeout=60)
    assert pd.read_parquet(path)["run"].unique().tolist() == ["a"]


def test_the_lock_is_per_target(engine: sa.Engine, target: str) -> None:
    """A run publishing another table is not waited for."""
    holding, done = threading.Event(), threading.Event()

    def first(stage: str, rows: int) -> None:
        if stage == "chunk" and not holding.is_set():
            holding.set()
            assert done.wait(timeout=60)

    thread = threading.Thread(
        target=write_table_atomic,
        args=(engine, _release("a"), target),
        kwargs={"chunk_rows": CHUNK, "checkpoint": first},
    )
    thread.start()
    try:
        assert holding.wait(timeout=60)
        other = f"{target}_other"
        assert write_table_atomic(engine, _release("b"), other, lock_timeout=0) == ROWS
    finally:
        done.set()
        thread.join(timeout=60)
    assert _table_state(engine, target)[3] == ["a"]


# -------------------------------------------------------------------------------- names
@pytest.mark.parametrize(("kind", "limit"), [("postgresql", 63), ("mariadb", 64)])
def test_target_names_up_to_the_limit_are_published(kind: str, limit: int) -> None:
    """A name of the longest length the database takes: the staging name is shortened (a
    hash of the whole name keeps it apart from other targets); a killed run's leftover of it
    is cleared by the next publish. It used to fail from 51 characters on (IdentifierError)."""
    engine = sa.create_engine(require_server(kind))
    tag = uuid.uuid4().hex[:8]
    target = (f"long_{tag}_" + "x" * limit)[:limit]
    try:
        frame = _release("a")
        assert write_table_atomic(engine, frame, target, chunk_rows=1_000) == ROWS
        with engine.begin() as conn:  # what a run killed after creating its staging leaves
            staging = sa.Table(
                _shortened(engine, target), sa.MetaData(), sa.Column("junk", sa.Integer)
            )
            staging.create(conn)
        assert _staging_left(engine, target) == {staging.name}
        assert write_table_atomic(engine, _release("b"), target) == ROWS
        assert _table_state(engine, target) == (ROWS, ID_SUM, ROWS, ["b"])
        assert copy_table_atomic(engine, target, f"c_{tag}") == ROWS
        assert _staging_left(engine, target) == set()
    finally:
        with engine.begin() as conn:
            for n in sa.inspect(conn).get_table_names():
                if tag in n:
                    sa.Table(n, sa.MetaData()).drop(conn)
        engine.dispose()


def _shortened(engine: sa.Engine, target: str) -> str:
    from reident_airflow.sources.publish import staging_name

    name = staging_name(engine, target)
    limit = 63 if engine.dialect.name == "postgresql" else 64
    assert len(name) <= limit and name != target
    return name


@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        ("postgresql", "t" * 64, "is 64 bytes long; postgresql allows 63"),
        ("postgresql", "é" * 32, "is 64 bytes long; postgresql allows 63"),  # 2 bytes each
        ("mariadb", "t" * 65, "is 65 characters long; mysql allows 64"),
    ],
)
def test_a_target_name_over_the_limit_is_refused_in_one_line(
    kind: str, name: str, message: str
) -> None:
    engine = sa.create_engine(require_server(kind))
    try:
        with pytest.raises(InvalidInputError) as info:
            write_table_atomic(engine, _release("a"), name)
        text = str(info.value)
        assert message in text and "choose a shorter name" in text and "\n" not in text
        assert name not in sa.inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_a_target_named_like_a_staging_table_is_refused(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'n.db'}")
    try:
        with pytest.raises(InvalidInputError, match="ends like a staging table"):
            write_table_atomic(engine, _release("a"), "release__reident_0a1b2c3d")
    finally:
        engine.dispose()


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_a_lost_lock_stops_the_swap(kind: str) -> None:
    """The lock's own connection is killed by the server mid-write (its lock is gone, another
    run could take it): the swap does not run, the previous release stays whole and the
    error is retryable."""
    from reident_airflow.sources import publish

    engine = sa.create_engine(require_server(kind))
    target = f"ow_{uuid.uuid4().hex[:8]}"
    killed: list[int] = []

    def kill_lock_holder(stage: str, rows: int) -> None:
        if stage != "chunk" or killed:
            return
        with engine.connect() as conn:
            if kind == "postgresql":
                key = publish._postgresql_key(target, None)(conn)["key"]
                pid = conn.execute(
                    sa.text(
                        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                        "AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = :key"
                    ),
                    {"key": key},
                ).scalar_one()
                conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            else:
                name = publish._mysql_key(target, None)(conn)["name"]
                pid = conn.execute(sa.text("SELECT IS_USED_LOCK(:name)"), {"name": name}).scalar()
                conn.exec_driver_sql(f"KILL CONNECTION {int(pid)}")
        killed.append(int(pid))

    try:
        write_table_atomic(engine, _release("a"), target)
        with pytest.raises(TargetBusyError, match="was lost before the swap") as info:
            write_table_atomic(
                engine, _release("b"), target, chunk_rows=CHUNK, checkpoint=kill_lock_holder
            )
        assert len(killed) == 1
        assert info.value.deterministic is False
        assert _table_state(engine, target) == (ROWS, ID_SUM, ROWS, ["a"])
        assert _staging_left(engine, target) == set()
        assert write_table_atomic(engine, _release("b"), target, lock_timeout=5) == ROWS
        assert _table_state(engine, target)[3] == ["b"]
    finally:
        with engine.begin() as conn:
            for n in sa.inspect(conn).get_table_names():
                if n.startswith(target):
                    sa.Table(n, sa.MetaData()).drop(conn)
        engine.dispose()
