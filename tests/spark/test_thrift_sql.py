"""The SQL path through the Spark Thrift Server (SQLAlchemy ``hive://``, PyHive).

One Thrift Server per test session, started from the pyspark package (``spark-submit --class
org.apache.spark.sql.hive.thriftserver.HiveThriftServer2 ... spark-internal``, local[2]) on a
free port, with its warehouse and Derby metastore in a temporary folder. Tables are Parquet
files written here by pyarrow (so that NULL, the empty text and bytes are exactly what the
test says) and declared to Spark with ``CREATE TABLE ... USING parquet LOCATION``.

References: the CLI's JSON on the CSV for Adult and the ARX configurations on it; for the
hostile table, hand-counted histograms and the same Parquet file read by the file path
(DuckDB).
"""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from reident_airflow.cli import main
from reident_airflow.engine.assessment import assess
from reident_airflow.sources import files, sql
from tests.cli._cli import RUN_KEYS
from tests.conftest import IN_CI, load_reference, oracle_data, reference_files
from tests.spark.sessions import ThriftServer, thrift

ADULT_REFERENCES = [p for p in reference_files() if load_reference(p)["dataset"] == "adult.csv"]


@pytest.fixture(scope="session")
def thrift_server() -> Iterator[ThriftServer]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        message = "no Java runtime: the Spark Thrift Server cannot start"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    server = thrift()  # started early by tests/conftest.py when these tests are collected
    try:
        server.wait()
        yield server
    finally:
        server.stop()


def _declare(server: ThriftServer, name: str, table: pa.Table) -> None:
    """``table`` as the Spark table ``name``: a Parquet file in its own folder."""
    import sqlalchemy as sa

    folder = server.workdir / "data" / name
    folder.mkdir(parents=True)
    pq.write_table(table, folder / "part-0.parquet")
    engine = sa.create_engine(server.url)
    with engine.connect() as conn:
        conn.execute(sa.text(f"CREATE TABLE `{name}` USING parquet LOCATION '{folder}'"))
    engine.dispose()


@pytest.fixture(scope="session")
def adult_table(thrift_server: ThriftServer) -> str:
    """Adult (tests/data/adult.csv, every column text as the CLI reads it) as ``adult``."""
    reference = load_reference(ADULT_REFERENCES[0])
    table = pcsv.read_csv(
        oracle_data("adult.csv"),
        parse_options=pcsv.ParseOptions(delimiter=reference["sep"]),
        convert_options=pcsv.ConvertOptions(
            column_types={"age": pa.int32()}, strings_can_be_null=False
        ),
    )
    _declare(thrift_server, "adult", table)
    return "adult"


def _cli(*argv: str) -> dict[str, Any]:
    """The assessment JSON without the keys that describe the run, not the table (RUN_KEYS:
    the input's fingerprint and the advice, neither asked for here)."""
    out = io.StringIO()
    args = ["assess", *argv, "--json", "-", "--no-advice", "--no-fingerprint"]
    code = main(args, out=out, err=io.StringIO())
    assert code in (0, 1)
    payload: dict[str, Any] = json.loads(out.getvalue())
    assert all(payload[key] is None for key in RUN_KEYS)
    return {k: v for k, v in payload.items() if k not in RUN_KEYS}


# ------------------------------------------------------------------------------ the tests
@pytest.mark.parametrize("ref", ADULT_REFERENCES, ids=lambda p: p.stem)
def test_adult_through_the_thrift_server_equals_the_cli_on_the_csv(
    ref: Path, thrift_server: ThriftServer, adult_table: str
) -> None:
    data = load_reference(ref)
    qis = ",".join(data["quasi_identifiers"])
    csv = str(oracle_data(data["dataset"]))
    for extra in (["--no-ranking"], ["--max-subset-size", "2"]):
        want = _cli(csv, "--sep", data["sep"], "--qi", qis, *extra)
        got = _cli(thrift_server.url, "--table", adult_table, "--qi", qis, *extra)
        assert got == want, extra
    assert want["records"] == data["records"]
    assert want["classes"] == data["classes"]
    assert want["class_size_histogram"] == data["class_size_histogram"]


# Hostile values: quotes of every kind, backslashes, NULL beside the empty text and the text
# 'NULL', unicode (é as NFC and as NFD, an emoji), the suppression marker '*', bytes that are
# '*' (never text), and floats -0.0/0.0/NaN/NULL.
HOSTILE = pa.table(
    {
        "name's \"q`": pa.array(
            ["O'Brien", 'say "hi"', "back`tick", "a\\b", None, "", "NULL", "\u00e9", "e\u0301",
             "*", "*", "\U0001f600", "O'Brien", "", None],
            type=pa.string(),
        ),
        "raw": pa.array(
            [b"*", b"*", b"\xff", b"\x00", None, b"", b"", b"*", b"*", b"*", b"*", b"\xff",
             b"*", b"", None],
            type=pa.binary(),
        ),
        "code": pa.array(
            ["*", "*", "x", "x", "x", "x", "x", "x", "x", "*", "*", "x", "*", "x", "x"],
            type=pa.string(),
        ),
        "score": pa.array(
            [-0.0, 0.0, float("nan"), None, 1.5, 1.5, 1.5, 1.5, 1.5, 2.0, 2.0, 1.5, 0.0,
             1.5, 1.5],
            type=pa.float64(),
        ),
    }
)  # fmt: skip


@pytest.fixture(scope="session")
def hostile_table(thrift_server: ThriftServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hostile table as the Spark table ``hostile``; returns its Parquet file."""
    _declare(thrift_server, "hostile", HOSTILE)
    path = tmp_path_factory.mktemp("hostile") / "hostile.parquet"
    pq.write_table(HOSTILE, path)
    return path


def _histogram(sizes: Any) -> tuple[list[int], list[int], int]:
    return sizes.sizes.tolist(), sizes.counts.tolist(), int(sizes.excluded_records)


def test_hostile_values_are_grouped_as_the_file_path_groups_them(
    thrift_server: ThriftServer, hostile_table: Path
) -> None:
    name = "name's \"q`"
    # Hand count on `name`: "O'Brien" x2, "" x2, NULL x2 are classes of 2; "*" x2 are the
    # suppressed class (2 records excluded); the other 7 values (NFC and NFD é apart) are
    # classes of 1.
    for where in ({"table": "hostile"}, {"sql": "SELECT * FROM hostile"}):
        sizes = sql.histogram_from_sql(thrift_server.url, [name], **where)
        assert _histogram(sizes) == ([1, 2], [7, 3], 2)
    # `code` alone: '*' x5 suppressed, 'x' x10 one class. Beside `raw` nothing is
    # suppressed: bytes '*' are not the text '*' (the file path counts the same, below).
    assert _histogram(sql.histogram_from_sql(thrift_server.url, ["code"], table="hostile")) == (
        [10],
        [1],
        5,
    )
    for qis in ([name], [name, "raw"], ["code", "raw"], ["code", "score"], ["raw", "score"]):
        want = files.class_table_from_file(hostile_table, qis)
        got = sql.class_table_from_sql(thrift_server.url, qis, table="hostile")
        assert got.histogram()[0].tolist() == want.histogram()[0].tolist(), qis
        assert got.histogram()[1].tolist() == want.histogram()[1].tolist(), qis
        assert got.excluded_records == want.excluded_records, qis
        hist = sql.histogram_from_sql(thrift_server.url, qis, table="hostile")
        assert _histogram(hist)[:2] == (got.histogram()[0].tolist(), got.histogram()[1].tolist())


def test_hostile_aggregates_equal_the_file_path(
    thrift_server: ThriftServer, hostile_table: Path
) -> None:
    qis = ["code", "raw"]
    want = files.aggregates_from_file(hostile_table, qis, sensitive=["name's \"q`"])
    got = sql.aggregates_from_sql(
        thrift_server.url, qis, table="hostile", sensitive=["name's \"q`"]
    )
    assert (
        assess(got.table, sensitive=got.sensitive).to_dict()
        == assess(want.table, sensitive=want.sensitive).to_dict()
    )


def test_a_collated_column_is_grouped_by_its_exact_text(thrift_server: ThriftServer) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(thrift_server.url)
    with engine.connect() as conn:
        conn.execute(sa.text("CREATE TABLE lcase (v STRING COLLATE UTF8_LCASE) USING parquet"))
        conn.execute(sa.text("INSERT INTO lcase VALUES ('A'), ('a'), ('a '), ('a'), ('*')"))
    engine.dispose()
    # UTF8_LCASE would make 'A' and 'a' one class; by exact text: 'A' x1, 'a ' x1, 'a' x2,
    # and '*' suppressed (1 record).
    for read in (sql.histogram_from_sql, sql.class_table_from_sql):
        sizes = read(thrift_server.url, ["v"], table="lcase")
        assert [a.tolist() for a in sizes.histogram()] == [[1, 2], [2, 1]]
        assert sizes.excluded_records == 1
