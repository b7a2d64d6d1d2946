"""Atomic writers (files, SQLite, PostgreSQL, MariaDB) and whole-table readers.

The atomicity tests kill a write midway with the ``checkpoint`` hook -- after a chunk, and
inside the swap -- and show that the target still holds the previous release and that no
temporary file or staging table is left behind.
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources.writers import (
    file_format,
    portable_types,
    read_file_frame,
    read_sql_frame,
    same_file,
    write_file_atomic,
    write_table_atomic,
)
from tests.conftest import require_server


class Killed(RuntimeError):
    """Stands for the process dying at a checkpoint."""


def kill_at(event: str, after_rows: int = 0):  # type: ignore[no-untyped-def]
    def checkpoint(what: str, rows: int) -> None:
        if what == event and (what != "chunk" or rows >= after_rows):
            raise Killed(f"killed at {what} after {rows} rows")

    return checkpoint


def release(version: int, rows: int = 1000) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "record_id": range(rows),
            "age": [f"{version}0-{version}9"] * rows,
            "zip": ["0123"] * rows,  # a leading zero that must survive as text
            "income": [float(version)] * rows,
        }
    )


# ------------------------------------------------------------------------------------- files
@pytest.mark.parametrize("name", ["out.csv", "out.parquet"])
def test_file_round_trip(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    assert write_file_atomic(release(1), target, chunk_rows=300) == 1000
    back = read_file_frame(target)
    assert len(back) == 1000
    assert back["zip"].tolist() == ["0123"] * 1000
    assert back["age"].iloc[0] == "10-19"
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left


def test_csv_quotes_only_when_a_value_needs_it(tmp_path: Path) -> None:
    plain = tmp_path / "plain.csv"
    write_file_atomic(pd.DataFrame({"marital-status": ["Married", ""], "n": [1, 2]}), plain)
    assert plain.read_text() == "marital-status,n\nMarried,1\n,2\n"
    tricky = tmp_path / "tricky.csv"
    frame = pd.DataFrame({"a": ['say "hi"', "x;y", "line\nbreak"], "b": ["1", "2", "3"]})
    write_file_atomic(frame, tricky, sep=";")
    assert read_file_frame(tricky, sep=";")["a"].tolist() == frame["a"].tolist()


@pytest.mark.parametrize("name", ["out.csv", "out.parquet"])
@pytest.mark.parametrize("event", ["chunk", "swap"])
def test_file_killed_midway_keeps_previous_release(tmp_path: Path, name: str, event: str) -> None:
    target = tmp_path / name
    write_file_atomic(release(1), target)
    before = target.read_bytes()
    with pytest.raises(Killed):
        write_file_atomic(
            release(2), target, chunk_rows=100, checkpoint=kill_at(event, after_rows=300)
        )
    assert target.read_bytes() == before
    assert read_file_frame(target)["age"].iloc[0] == "10-19"
    assert [p.name for p in tmp_path.iterdir()] == [name]
    write_file_atomic(release(2), target, chunk_rows=100)  # a later run replaces it whole
    assert read_file_frame(target)["age"].unique().tolist() == ["20-29"]


def test_file_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    write_file_atomic(release(1), target)
    os.chmod(target, 0o640)
    write_file_atomic(release(2), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"\.xlsx"):
        file_format(tmp_path / "out.xlsx")
    with pytest.raises(InvalidInputError, match="does not exist"):
        write_file_atomic(release(1), tmp_path / "missing" / "out.csv")
    with pytest.raises(InvalidInputError, match="duplicate column"):
        write_file_atomic(pd.DataFrame([[1, 2]], columns=["a", "a"]), tmp_path / "d.csv")
    assert same_file(tmp_path / "x.csv", tmp_path / "." / "x.csv")


@pytest.mark.parametrize("name", ["in.csv", "in.parquet"])
def test_read_text_columns_as_categoricals(tmp_path: Path, name: str) -> None:
    """Datafly reads its QIs as Categoricals: same values, grouped on codes."""
    source = tmp_path / name
    write_file_atomic(release(1, rows=6).assign(zip=["01", "02", "", "01", "02", "03"]), source)
    plain = read_file_frame(source)
    coded = read_file_frame(source, categorical=["zip", "age", "record_id", "missing"])
    assert isinstance(coded["zip"].dtype, pd.CategoricalDtype)
    assert isinstance(coded["age"].dtype, pd.CategoricalDtype)
    assert not isinstance(coded["record_id"].dtype, pd.CategoricalDtype) or name.endswith("csv")
    assert list(coded.columns) == list(plain.columns)
    for column in plain.columns:
        assert coded[column].astype(str).tolist() == plain[column].astype(str).tolist()


def test_read_file_frame_errors(tmp_path: Path) -> None:
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n3\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="ragged"):
        read_file_frame(ragged)
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b\n", encoding="utf-8")
    with pytest.raises(EmptyDatasetError):
        read_file_frame(header_only)
    with pytest.raises(InvalidInputError, match="no such file"):
        read_file_frame(tmp_path / "nope.csv")


@pytest.mark.parametrize("name", ["in.csv", "in.parquet"])
def test_read_file_frame_for_direct_match(tmp_path: Path, name: str) -> None:
    """The direct-match reading: Arrow-backed columns, the same values; an empty file is an
    empty frame (the engine names the empty side)."""
    source = tmp_path / name
    write_file_atomic(release(1, rows=4).assign(zip=["01", "", "01", "02"]), source)
    plain = read_file_frame(source)
    arrow = read_file_frame(source, dtype_backend="pyarrow", allow_empty=True)
    assert all(isinstance(t, pd.ArrowDtype) for t in arrow.dtypes)
    assert list(arrow.columns) == list(plain.columns)
    for column in plain.columns:
        assert arrow[column].astype(str).tolist() == plain[column].astype(str).tolist()
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b\n", encoding="utf-8")
    empty = read_file_frame(header_only, dtype_backend="pyarrow", allow_empty=True)
    assert list(empty.columns) == ["a", "b"] and len(empty) == 0


# --------------------------------------------------------------------------------------- SQL
@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    url = f"sqlite:///{tmp_path / 'w.db'}" if request.param == "sqlite" else None
    engine = sa.create_engine(url or require_server(request.param))
    yield engine
    engine.dispose()


@pytest.fixture
def target(engine: sa.Engine) -> Iterator[str]:
    name = f"release_{uuid.uuid4().hex[:8]}"
    yield name
    with engine.begin() as conn:
        for n in sa.inspect(conn).get_table_names():
            if n.startswith(name):  # the table and any staging table of it
                sa.Table(n, sa.MetaData()).drop(conn)


def _content(engine: sa.Engine, name: str) -> tuple[int, list[str]]:
    frame, _ = read_sql_frame(engine, table=name)
    return len(frame), sorted(frame["age"].unique().tolist())


def _tables(engine: sa.Engine, target: str) -> set[str]:
    return {t for t in sa.inspect(engine).get_table_names() if t.startswith(target)}


def test_table_write_and_replace(engine: sa.Engine, target: str) -> None:
    assert write_table_atomic(engine, release(1), target, chunk_rows=300) == 1000
    assert _content(engine, target) == (1000, ["10-19"])
    assert write_table_atomic(engine, release(2, rows=10), target) == 10
    assert _content(engine, target) == (10, ["20-29"])
    frame, types = read_sql_frame(engine, table=target)
    assert frame["zip"].tolist() == ["0123"] * 10
    assert frame["record_id"].tolist() == list(range(10))
    assert isinstance(types["record_id"], sa.BigInteger)
    assert _tables(engine, target) == {target}


@pytest.mark.parametrize("event", ["chunk", "swap"])
def test_table_killed_midway_keeps_previous_release(
    engine: sa.Engine, target: str, event: str
) -> None:
    """The acceptance test of atomicity: the previous release survives a write that dies."""
    write_table_atomic(engine, release(1), target)
    with pytest.raises(Killed):
        write_table_atomic(
            engine, release(2), target, chunk_rows=200, checkpoint=kill_at(event, after_rows=400)
        )
    assert _content(engine, target) == (1000, ["10-19"])
    assert _tables(engine, target) == {target}  # the staging table was dropped


@pytest.mark.parametrize("suffix", ["__reident_new", "__reident_old", "__reident_0f1e2d3c"])
def test_a_leftover_of_a_killed_run_is_cleared(engine: sa.Engine, target: str, suffix: str) -> None:
    """What a run killed with SIGKILL leaves behind: its own staging (or aside) table, or the
    fixed-name ones of earlier versions; the next publish, holding the lock, drops them."""
    write_table_atomic(engine, release(1), target)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {target}{suffix} (junk INTEGER)")
    write_table_atomic(engine, release(2, rows=5), target)
    assert _content(engine, target) == (5, ["20-29"])
    assert _tables(engine, target) == {target}


def test_column_types_and_missing_values(engine: sa.Engine, target: str) -> None:
    frame = pd.DataFrame(
        {"code": ["a", None, "c"], "n": [1, 2, 3], "x": [0.5, None, 2.0], "ok": [True, False, True]}
    )
    write_table_atomic(engine, frame, target, column_types={"code": sa.String(8)})
    cols = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns(target)}
    assert isinstance(cols["code"], sa.String) and cols["code"].length == 8
    back, types = read_sql_frame(engine, table=target)
    assert back["code"].tolist()[0] == "a" and back["code"].isna().tolist() == [False, True, False]
    assert back["x"].isna().tolist() == [False, True, False]
    assert set(portable_types(sa.Table(target, sa.MetaData(), autoload_with=engine).c)) == {
        "code",
        "n",
        "x",
        "ok",
    }
    assert set(types) == {"code", "n", "x", "ok"}


def test_read_sql_frame_query_and_errors(engine: sa.Engine, target: str) -> None:
    write_table_atomic(engine, release(1, rows=4), target)
    quoted = engine.dialect.identifier_preparer.quote(target)
    frame, types = read_sql_frame(engine, sql=f"SELECT record_id, age FROM {quoted}")
    assert list(frame.columns) == ["record_id", "age"] and len(frame) == 4 and types == {}
    with pytest.raises(InvalidInputError, match="does not exist"):
        read_sql_frame(engine, table=f"{target}_missing")
    with pytest.raises(EmptyDatasetError):
        read_sql_frame(engine, sql=f"SELECT * FROM {quoted} WHERE 1 = 0")
    with pytest.raises(InvalidInputError, match="either"):
        read_sql_frame(engine)


def test_postgresql_swap_is_one_transaction() -> None:
    """A reader on another connection sees the old table until the swap commits, then the
    new one, never neither (PostgreSQL's transactional DDL)."""
    engine = sa.create_engine(require_server("postgresql"))
    name = f"release_{uuid.uuid4().hex[:8]}"
    seen: list[tuple[int, list[str]]] = []

    def checkpoint(what: str, rows: int) -> None:
        if what == "swap":  # the old table is dropped inside the open transaction
            with engine.connect() as other:
                other.exec_driver_sql("SET lock_timeout = '200ms'")
                try:
                    other.exec_driver_sql(f'SELECT count(*) FROM "{name}"')
                except sa.exc.OperationalError:
                    seen.append((-1, ["locked"]))  # the reader waits: it never sees a gap

    try:
        write_table_atomic(engine, release(1), name)
        write_table_atomic(engine, release(2, rows=7), name, checkpoint=checkpoint)
        assert seen == [(-1, ["locked"])]
        assert _content(engine, name) == (7, ["20-29"])
    finally:
        with engine.begin() as conn:
            sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()
