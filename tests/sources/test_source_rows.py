"""The whole-table readings every source answers (issue 26): ``release_rows`` (Datafly's
rows, and a database table's column types), ``comparison_rows`` (one side of direct match,
every column Arrow-backed) and ``register`` (a population register next to the source).

One hand-made table on every backend -- CSV, Parquet, a frame in memory, SQLite, and the real
PostgreSQL and MariaDB servers (``db`` marker) -- with the values expected written out here:

    id  sex  age
    1   F    30
    2   M    30
    3   F    40

and one hand-made register on (sex, age): F/30 twice, M/30 once, F/40 twice, so 5 records in
3 classes, whose sizes 2, 1, 2 make the histogram {1: 1 class, 2: 2 classes}. Spark refuses
the three readings: it runs Datafly and direct match where the data is.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources import (
    HashesAhead,
    HasSiblings,
    Source,
    population_register,
    previous_release,
)
from reident_airflow.sources.files import FileSource
from reident_airflow.sources.frames import FrameSource
from reident_airflow.sources.spark import SparkSource
from reident_airflow.sources.sql import SqlSource
from tests.conftest import require_server

QIS = ["sex", "age"]
IDS = [1, 2, 3]
SEXES = ["F", "M", "F"]
AGES = [30, 30, 40]
REGISTER = [("F", 30), ("F", 30), ("M", 30), ("F", 40), ("F", 40)]


# ------------------------------------------------------------------------------ the backends
def _csv(folder: Path, name: str, header: list[str], rows: list[tuple[Any, ...]]) -> str:
    """A CSV file separated by ``;`` (the register must be read with the source's ``sep``)."""
    path = folder / f"{name}.csv"
    lines = [";".join(header)] + [";".join(str(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _parquet(folder: Path, name: str, columns: dict[str, pa.Array]) -> str:
    path = folder / f"{name}.parquet"
    pq.write_table(pa.table(columns), path)
    return str(path)


def _tables(engine: sa.Engine, prefix: str) -> tuple[str, str]:
    """The table and its register on ``engine`` (integers and VARCHAR(1)), named uniquely."""
    metadata = sa.MetaData()
    table = sa.Table(
        f"{prefix}_t",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("sex", sa.String(1)),
        sa.Column("age", sa.Integer),
    )
    register = sa.Table(
        f"{prefix}_pop", metadata, sa.Column("sex", sa.String(1)), sa.Column("age", sa.Integer)
    )
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            table.insert(),
            [{"id": i, "sex": s, "age": a} for i, s, a in zip(IDS, SEXES, AGES, strict=True)],
        )
        conn.execute(register.insert(), [{"sex": s, "age": a} for s, a in REGISTER])
    return table.name, register.name


def _drop(engine: sa.Engine, *names: str) -> None:
    metadata = sa.MetaData()
    for name in names:
        sa.Table(name, metadata)
    metadata.drop_all(engine)


#: Each backend: (the source of the table, the register's name next to it).
Opened = tuple[Source, str]


@pytest.fixture(
    params=[
        "csv",
        "parquet",
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.db),
        pytest.param("mariadb", marks=pytest.mark.db),
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Opened]]:
    kind = request.param
    if kind == "csv":
        path = _csv(tmp_path, "t", ["id", *QIS], list(zip(IDS, SEXES, AGES, strict=True)))
        register = _csv(tmp_path, "pop", QIS, REGISTER)
        with FileSource(path, sep=";") as source:
            yield kind, (source, register)
        return
    if kind == "parquet":
        path = _parquet(
            tmp_path,
            "t",
            {"id": pa.array(IDS), "sex": pa.array(SEXES), "age": pa.array(AGES)},
        )
        register = _parquet(
            tmp_path,
            "pop",
            {"sex": pa.array([s for s, _ in REGISTER]), "age": pa.array([a for _, a in REGISTER])},
        )
        with FileSource(path) as source:
            yield kind, (source, register)
        return
    url = f"sqlite:///{tmp_path / 'db.sqlite'}" if kind == "sqlite" else require_server(kind)
    engine = sa.create_engine(url)
    prefix = f"i26_sources_{uuid.uuid4().hex[:8]}"
    names = _tables(engine, prefix)
    try:
        with SqlSource(url, table=names[0]) as source:
            yield kind, (source, names[1])
    finally:
        _drop(engine, *names)
        engine.dispose()


# ---------------------------------------------------------------------------- release_rows
def _values(frame: pd.DataFrame, column: str) -> list[Any]:
    """A column's values, in the order of ``id`` (a database sends rows in no set order)."""
    ordered = frame.assign(_id=frame["id"].astype(int)).sort_values("_id")
    return list(ordered[column])


def test_release_rows_keep_every_column_and_the_types_of_a_table(
    backend: tuple[str, Opened],
) -> None:
    kind, (source, _) = backend
    frame, types = source.release_rows(QIS)
    assert list(frame.columns) == ["id", "sex", "age"]
    assert _values(frame, "sex") == SEXES
    if kind == "csv":  # a CSV's values are text; its text QIs come as Categoricals
        assert _values(frame, "age") == ["30", "30", "40"]
        assert _values(frame, "id") == ["1", "2", "3"]
        assert isinstance(frame["sex"].dtype, pd.CategoricalDtype)
        assert isinstance(frame["age"].dtype, pd.CategoricalDtype)
    else:
        assert _values(frame, "age") == AGES
        assert _values(frame, "id") == IDS
    if kind == "parquet":  # text QIs as Categoricals, numbers as numbers
        assert isinstance(frame["sex"].dtype, pd.CategoricalDtype)
        assert not isinstance(frame["age"].dtype, pd.CategoricalDtype)
    if kind in ("csv", "parquet"):
        assert types == {}  # a file's release is written with the types of its values
    else:  # a table's portable types, which a release written back keeps
        assert sorted(types) == ["age", "id", "sex"]
        assert isinstance(types["id"], sa.Integer) and isinstance(types["age"], sa.Integer)
        assert isinstance(types["sex"], sa.String) and types["sex"].length == 1


def test_release_rows_of_some_columns(backend: tuple[str, Opened]) -> None:
    kind, (source, _) = backend
    frame, types = source.release_rows(QIS, columns=["sex"])
    assert list(frame.columns) == ["sex"]
    assert sorted(frame["sex"]) == ["F", "F", "M"]
    assert list(types) == ([] if kind in ("csv", "parquet") else ["sex"])


# -------------------------------------------------------------------------- comparison_rows
def test_comparison_rows_are_arrow_backed(backend: tuple[str, Opened]) -> None:
    kind, (source, _) = backend
    frame = source.comparison_rows()
    assert list(frame.columns) == ["id", "sex", "age"]
    for column in frame.columns:
        assert isinstance(frame[column].dtype, pd.ArrowDtype), column
    arrow = {c: frame[c].dtype.pyarrow_dtype for c in frame.columns}
    assert pa.types.is_string(arrow["sex"]) or pa.types.is_large_string(arrow["sex"])
    assert _values(frame, "sex") == SEXES
    if kind == "csv":  # compared by value, read as text
        assert pa.types.is_string(arrow["age"]) or pa.types.is_large_string(arrow["age"])
        assert _values(frame, "age") == ["30", "30", "40"]
    else:
        assert pa.types.is_integer(arrow["age"]) and pa.types.is_integer(arrow["id"])
        assert _values(frame, "age") == AGES


def test_a_file_without_records_compares_as_an_empty_side(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("id,sex\n", encoding="utf-8")
    source = FileSource(path)
    frame = source.comparison_rows()
    assert list(frame.columns) == ["id", "sex"] and len(frame) == 0
    with pytest.raises(EmptyDatasetError, match="the table has no records"):
        source.release_rows(["sex"])


def test_a_query_has_no_table_to_compare(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with (
        SqlSource(url, sql="SELECT 1 AS id") as source,
        pytest.raises(InvalidInputError, match="direct match compares whole tables"),
    ):
        source.comparison_rows()


# ---------------------------------------------------------------------------------- siblings
def test_the_register_is_read_next_to_the_source(backend: tuple[str, Opened]) -> None:
    kind, (source, name) = backend
    assert isinstance(source, HasSiblings)
    with population_register(source, name) as register:
        assert type(register) is type(source)
        table = register.class_table(QIS)
    assert (table.records, table.classes) == (5, 3)
    sizes, counts = table.histogram()
    assert (list(sizes), list(counts)) == ([1, 2], [1, 2])
    if kind != "csv":
        return
    assert isinstance(register, FileSource) and register.sep == ";"  # the source's separator


def test_a_sibling_that_does_not_exist_is_none(backend: tuple[str, Opened]) -> None:
    kind, (source, name) = backend
    missing = f"{name}_none" if kind in ("csv", "parquet") else "i39_no_such_table"
    assert previous_release(source, missing) is None  # a first run
    ledger = previous_release(source, "i39_no_such_table", ledger=name)
    assert ledger is not None  # the release gone: its ledger
    with ledger:
        assert ledger.class_table(QIS).records == 5
    with pytest.raises(InvalidInputError, match=r"population register .*: no such table or file"):
        population_register(source, missing)


def test_a_source_without_siblings_is_refused() -> None:
    class Alone:
        label = "the alone table"

    with pytest.raises(InvalidInputError, match="the alone table: no other table"):
        previous_release(Alone(), "old")  # type: ignore[arg-type]


def test_the_register_of_a_sql_source_shares_its_engine(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    names = _tables(engine, "i26_sources_engine")
    source = SqlSource(engine, table=names[0], schema=None)
    register = population_register(source, names[1])
    assert isinstance(register, SqlSource) and register.url is engine
    register.close()  # the engine is the caller's: still usable
    assert register.class_table(QIS).records == 5
    engine.dispose()


# ------------------------------------------------------------------------------------ frames
def test_a_frame_reads_its_rows_as_a_file_does(tmp_path: Path) -> None:
    frame = pd.DataFrame({"id": IDS, "sex": SEXES, "age": AGES})
    source = FrameSource(frame)
    rows, types = source.release_rows(QIS)
    assert types == {} and list(rows["sex"]) == SEXES and list(rows["age"]) == AGES
    assert isinstance(rows["sex"].dtype, pd.CategoricalDtype)
    compared = source.comparison_rows()
    assert all(isinstance(compared[c].dtype, pd.ArrowDtype) for c in compared.columns)
    assert list(compared["id"]) == IDS
    register = _csv(tmp_path, "pop", QIS, REGISTER)
    with pytest.raises(InvalidInputError):  # the register is a file, read with sep=","
        population_register(source, register).class_table(QIS)
    comma = tmp_path / "pop_comma.csv"
    comma.write_text(Path(register).read_text(encoding="utf-8").replace(";", ","), "utf-8")
    assert population_register(source, str(comma)).class_table(QIS).records == 5
    semi = FrameSource(frame, sep=";")  # the separator of the files read beside it
    assert population_register(semi, register).class_table(QIS).records == 5


# ------------------------------------------------------------------------------------- Spark
class _Untouchable:
    """A stand-in for a Spark DataFrame: any use of it (a Spark job) fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the refusal read the frame ({name})")


REFUSALS: dict[str, Callable[[SparkSource], Any]] = {
    "release_rows": lambda s: s.release_rows(QIS),
    "comparison_rows": lambda s: s.comparison_rows(),
    "class_table": lambda s: s.class_table(QIS),
}


@pytest.mark.parametrize("reading", sorted(REFUSALS))
def test_spark_refuses_the_whole_table_readings(reading: str) -> None:
    source = SparkSource(_Untouchable(), label="table 'events'")
    with pytest.raises(InvalidInputError) as info:
        REFUSALS[reading](source)
    message = str(info.value)
    assert message.startswith("table 'events': ")
    assert "driver" in message


def test_each_backend_declares_its_capabilities() -> None:
    """Issue 39: a caller asks a source for a capability instead of testing its class; every
    backend reads a sibling, only a file hashes ahead."""
    sources = {
        "file": FileSource("t.csv"),
        "frame": FrameSource(pd.DataFrame({"a": [1]})),
        "sql": SqlSource("sqlite://", table="t"),
        "spark": SparkSource(_Untouchable(), label="table 't'"),
    }
    assert all(isinstance(s, HasSiblings) for s in sources.values())
    hashing = sorted(k for k, s in sources.items() if isinstance(s, HashesAhead))
    assert hashing == ["file", "frame"]  # a frame's is a no-op: nothing to hash
