"""DataflyOperator on a Spark connection (issue 18).

Adult as Parquet, read by a classic ``spark`` connection or over Spark Connect, k=5 on
``sex, age, race`` (ARX's hierarchy files, ``age`` also by an interval builder): the report
equals the pandas Datafly's (``engine.datafly.datafly`` on the same columns, hierarchies
resolved the way the file path resolves them) and the published rows are its release, as a
multiset. The release replaces an earlier one whole; when k cannot be reached nothing is
written and the report equals the one the operator gives on the CSV; targets Spark cannot
swap in atomically are refused before any reading.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reident_airflow.engine.datafly import datafly
from reident_airflow.operators.datafly import DataflyOperator, resolve_hierarchies
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests.conftest import oracle_data
from tests.operators._fakes import PushedTI, make_operator
from tests.operators._spark import ADULT_COLUMNS

QIS = ["sex", "age", "race"]
ARX = {q: str(oracle_data(f"adult_hierarchy_{q}.csv")) for q in QIS}
BUILT = {**ARX, "age": {"type": "interval", "widths": [10, 20], "top": "*"}}
#: No level above the value: with no suppression allowed, k=5 cannot be reached.
FLAT_AGE = {**ARX, "age": {"type": "interval", "widths": [], "top": None}}


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    """The Parquet file's columns of Adult, every field its text."""
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    return frame[ADULT_COLUMNS]


def _operator(conn_id: str, **kwargs: Any) -> DataflyOperator:
    options: dict[str, Any] = {"quasi_identifiers": QIS, "k": 5, "hierarchies": ARX}
    options.update(kwargs)
    return make_operator(DataflyOperator, conn_id=conn_id, **options)


def _expected(adult: pd.DataFrame, specs: dict[str, Any]) -> Any:
    return datafly(adult, QIS, resolve_hierarchies(specs, adult, QIS), 5)


def _rows(table: Any) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(row) for row in table)


@pytest.mark.parametrize("specs", [ARX, BUILT], ids=["arx", "interval"])
def test_path_release_is_the_pandas_datafly(
    spark_conn: str,
    adult_parquet: Path,
    adult: pd.DataFrame,
    specs: dict[str, Any],
    tmp_path: Path,
) -> None:
    target = tmp_path / "release"
    target.mkdir()
    pq.write_table(pa.table({"previous": ["release"]}), target / "part-0.parquet")
    want = _expected(adult, specs)
    ti = PushedTI()
    report = _operator(
        spark_conn, path=str(adult_parquet), hierarchies=specs, target_path=str(target)
    ).execute({"ti": ti})
    assert ti.pushed["return_value"] == report
    output = report.pop("output")
    assert report.pop("passed") is True
    # no fingerprint on a Spark connection (docs/contract.md §4)
    assert report.pop("input") is None and report.pop("output_fingerprint") is None
    assert report == want.to_dict()
    assert output == {"path": str(target), "records": want.released_records}
    published = pq.read_table(target)  # Spark's part files; its _SUCCESS marker is skipped
    assert published.column_names == ADULT_COLUMNS
    assert _rows(zip(*published.to_pydict().values(), strict=True)) == _rows(
        want.table.itertuples(index=False)
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]  # nothing left beside it


def test_table_release_over_spark_connect(
    connect_conn: str, spark_connect: Any, adult_parquet: Path, adult: pd.DataFrame, tmp_path: Path
) -> None:
    database = f"reident_op_{uuid.uuid4().hex[:8]}"
    spark_connect.sql(f"CREATE DATABASE {database} LOCATION '{tmp_path / 'db'}'")
    try:
        spark_connect.sql(f"CREATE TABLE {database}.adult AS SELECT 'previous' AS release")
        want = _expected(adult, ARX)
        report = _operator(
            connect_conn,
            path=str(adult_parquet),
            target_schema=database,
            target_table="adult",
        ).execute({"ti": PushedTI()})
        assert report["levels"] == want.levels and report["steps"] == want.to_dict()["steps"]
        assert report["output"] == {
            "conn_id": connect_conn,
            "schema": database,
            "table": "adult",
            "records": want.released_records,
        }
        published = spark_connect.table(f"{database}.adult")
        assert published.columns == ADULT_COLUMNS
        assert _rows(published.collect()) == _rows(want.table.itertuples(index=False))
        names = [t.name for t in spark_connect.catalog.listTables(database)]
        assert names == ["adult"]  # the staged and the retired tables are gone
    finally:
        spark_connect.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")


def test_infeasible_writes_nothing_and_reports_as_the_csv_path(
    spark_conn: str, adult_parquet: Path, adult: pd.DataFrame, tmp_path: Path
) -> None:
    staged = tmp_path / "staged.csv"
    adult.to_csv(staged, index=False)
    on_csv = PushedTI()
    with pytest.raises(ReidentificationBreach):
        DataflyOperator(
            task_id="csv",
            path=str(staged),
            quasi_identifiers=QIS,
            k=5,
            suppression_limit=0,
            hierarchies=FLAT_AGE,
            target_path=str(tmp_path / "csv-release.csv"),
        ).execute({"ti": on_csv})
    target = tmp_path / "release"
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach) as info:
        _operator(
            spark_conn,
            path=str(adult_parquet),
            suppression_limit=0,
            hierarchies=FLAT_AGE,
            target_path=str(target),
        ).execute({"ti": ti})
    assert info.value.check == "datafly" and info.value.k == 5
    # the same report but the input's fingerprint: the CSV's hash, none on Spark
    on_spark, on_file = dict(ti.pushed["return_value"]), dict(on_csv.pushed["return_value"])
    assert on_spark.pop("input") is None and on_file.pop("input")["sha256"] is not None
    assert on_spark == on_file
    assert ti.pushed["return_value"]["passed"] is False
    assert not target.exists()


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"target_path": "s3a://bucket/release"}, "cannot be swapped in atomically"),
        ({"target_path": "release.csv"}, "Parquet folder"),
        ({"target_table": "t", "target_conn_id": "warehouse"}, "target_conn_id must be it"),
        ({"table": "adult", "path": None, "target_table": "adult"}, "is the source table"),
        ({"sql": "SELECT * FROM adult", "path": None, "target_table": "t"}, "not sql"),
        ({}, "either target_table or target_path"),
    ],
)
def test_spark_refuses_what_it_cannot_publish(
    spark_conn: str, kwargs: dict[str, Any], named: str
) -> None:
    options: dict[str, Any] = {"path": "adult.parquet", **kwargs}
    with pytest.raises(ReidentConfigurationError, match=named):
        _operator(spark_conn, **options).execute({"ti": PushedTI()})


def test_spark_connect_refuses_a_path_target(connect_conn: str) -> None:
    """A Connect client cannot rename a folder: refused before Datafly runs."""
    op = _operator(connect_conn, path="adult.parquet", target_path="release")
    with pytest.raises(ReidentConfigurationError, match="write the release to a table"):
        op.execute({"ti": PushedTI()})
