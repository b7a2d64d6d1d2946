"""The reident expectations on GX's Spark data source equal pandas and SQL on the same data.

A batch of ``context.data_sources.add_spark(...)`` runs on GX's ``SparkDFExecutionEngine``;
the metrics are counted by Spark (:mod:`reident_airflow.gx.metrics`). On Adult (the
CLI's reference document, as in ``test_engines.py``) and on a small hostile table, each
expectation's ``observed_value`` and ``details.assessment`` equal those of the pandas batch and
of the SQLite table holding the same records.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.gx import (
    ExpectTableDirectMatchProtectionToBeAbove,
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
    ExpectTableToBeLDiverse,
)
from tests.gx.conftest import QIS, sql_batch
from tests.gx.test_engines import CASES, cli_document, measured
from tests.spark.sessions import connect_server, spark_connect

__all__ = ["connect_server", "spark_connect"]

SHUFFLE_PARTITIONS = "4"


@pytest.fixture(scope="module")
def local_spark() -> Iterator[Any]:
    """A classic local[2] session (the one the Spark tests made, if any: getOrCreate)."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("reident-gx-tests")
        .config("spark.sql.shuffle.partitions", SHUFFLE_PARTITIONS)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.conf.set("spark.sql.shuffle.partitions", SHUFFLE_PARTITIONS)
    yield session


@pytest.fixture
def spark_batch(context: Any) -> Callable[[Any], Any]:
    """``spark_batch(spark_frame)``: a GE batch of a Spark DataFrame."""

    def make(frame: Any) -> Any:
        source = context.data_sources.add_spark(f"spark_{uuid.uuid4().hex[:8]}")
        asset = source.add_dataframe_asset("frame")
        definition = asset.add_batch_definition_whole_dataframe("whole")
        return definition.get_batch(batch_parameters={"dataframe": frame})

    return make


def _as_text(spark: Any, frame: pd.DataFrame) -> Any:
    """The records as a Spark DataFrame of string columns (missing values as nulls)."""
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField(str(c), StringType(), True) for c in frame.columns])
    rows = [
        tuple(None if pd.isna(v) else str(v) for v in row) for row in frame.itertuples(index=False)
    ]
    return spark.createDataFrame(rows, schema)


def test_adult_on_spark_equals_the_cli_pandas_and_sqlite(
    local_spark: Any,
    spark_batch: Callable[[Any], Any],
    pandas_batch: Callable[[pd.DataFrame], Any],
    context: Any,
    sqlite_url: str,
    adult: pd.DataFrame,
    tmp_path: Path,
) -> None:
    batch = spark_batch(_as_text(local_spark, adult).cache())
    frame_batch = pandas_batch(adult)
    sqlite = sql_batch(context, sqlite_url, "adult")
    # k and records at risk without the QI ranking (--no-ranking): each Spark job costs
    # seconds on a shared machine; the ranking's subset histograms are checked on the
    # hostile table below, the other cases of test_engines add no Spark code path
    unranked = [
        (case.copy(update={"rank_attributes": False}), [*flags, "--no-ranking"])
        for case, flags in (CASES[0], CASES[2])
    ]
    for expectation, flags in unranked:
        on_spark = batch.validate(expectation)
        assert on_spark.exception_info.get("raised_exception") is not True, on_spark
        expected = cli_document(flags, tmp_path)
        assert on_spark.result["details"]["assessment"] == expected
        assert on_spark.result["observed_value"] == measured(expectation, expected)
        assert on_spark.result == frame_batch.validate(expectation).result
        assert on_spark.result == sqlite.validate(expectation).result
        assert on_spark.success is False  # the raw Adult table fails each of these gates


# A hostile small table: names with a space, a dot and a quote; missing values; a value that
# looks like a number; one record suppressed in every QI ('*', left out as ARX does).
# Classes on ("first name", "zip.code", "it's"):
#   (Ann, 1000, x) x3, (Bob, 1000, NULL) x2, (Ann, NULL, x) x1, ('', 01000, y) x1 -> k = 1,
#   highest prosecutor risk 1/1 = 1, average = classes / records = 4 / 7
#   (the '*' record is excluded: 8 rows, 7 records assessed).
HOSTILE_QIS = ["first name", "zip.code", "it's"]
HOSTILE = pd.DataFrame(
    {
        "first name": ["Ann", "Ann", "Ann", "Bob", "Bob", "Ann", "", "*"],
        "zip.code": ["1000", "1000", "1000", "1000", "1000", None, "01000", "*"],
        "it's": ["x", "x", "x", None, None, "x", "y", "*"],
        "diagnosis": ["flu", "flu", "cold", "flu", "flu", "flu", "cold", "flu"],
    }
)
HOSTILE_CASES = [
    (ExpectTableToBeKAnonymous(quasi_identifiers=HOSTILE_QIS, k=2), 1),
    (
        ExpectTableReidentificationRiskToBeBelow(
            quasi_identifiers=HOSTILE_QIS, measure="prosecutor.average_risk", max_value=0.5
        ),
        4 / 7,
    ),
    (
        ExpectTableToBeLDiverse(quasi_identifiers=HOSTILE_QIS, sensitive=["diagnosis"], min_l=2),
        # distinct diagnoses per class: (Ann,1000,x) {flu, cold} = 2, (Bob,1000,NULL) {flu} = 1,
        # (Ann,NULL,x) {flu} = 1, ('',01000,y) {cold} = 1 -> lowest 1
        1,
    ),
]


@pytest.fixture(scope="module")
def hostile_sqlite(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("gx-spark-hostile") / "hostile.db"
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url)
    HOSTILE.to_sql("hostile", engine, index=False)
    engine.dispose()
    return url


def test_a_hostile_table_on_spark_equals_pandas_and_sqlite(
    local_spark: Any,
    spark_batch: Callable[[Any], Any],
    pandas_batch: Callable[[pd.DataFrame], Any],
    context: Any,
    hostile_sqlite: str,
) -> None:
    batch = spark_batch(_as_text(local_spark, HOSTILE))
    frame_batch = pandas_batch(HOSTILE)
    sqlite = sql_batch(context, hostile_sqlite, "hostile")
    for expectation, observed in HOSTILE_CASES:
        on_spark = batch.validate(expectation)
        assert on_spark.result["observed_value"] == pytest.approx(observed, rel=1e-12)
        assert on_spark.result["details"]["assessment"]["records"] == 7
        assert on_spark.result == frame_batch.validate(expectation).result
        assert on_spark.result == sqlite.validate(expectation).result
        assert on_spark.success is False


def test_an_unknown_column_on_spark_is_a_failed_result_naming_it(
    local_spark: Any, spark_batch: Callable[[Any], Any]
) -> None:
    batch = spark_batch(_as_text(local_spark, HOSTILE))
    result = batch.validate(ExpectTableToBeKAnonymous(quasi_identifiers=["frist name"], k=2))
    assert result.success is False
    assert "frist name" in result.exception_info["exception_message"]


def test_direct_match_on_spark_equals_pandas(
    local_spark: Any,
    spark_batch: Callable[[Any], Any],
    pandas_batch: Callable[[pd.DataFrame], Any],
    tmp_path: Path,
) -> None:
    """The released rows in another order, aligned on ``id``: ``ssn`` kept for id 3 only
    (m = 1) among 4 distinct released values (u = 4); ``sex`` kept everywhere (m = 4, u = 2).
    """
    original = pd.DataFrame(
        {"id": ["1", "2", "3", "4"], "ssn": ["11", "12", "13", "14"], "sex": list("FMFM")}
    )
    path = tmp_path / "original.csv"
    original.to_csv(path, index=False)
    released = pd.DataFrame(
        {"id": ["3", "1", "4", "2"], "ssn": ["13", "12", "99", "11"], "sex": list("FFMM")}
    )
    expectation = ExpectTableDirectMatchProtectionToBeAbove(
        original_table=str(path), key="id", target=90
    )
    on_spark = spark_batch(_as_text(local_spark, released)).validate(expectation)
    assert on_spark.result == pandas_batch(released).validate(expectation).result
    counts = {
        c["column"]: (c["matches"], c["distinct_avatar_values"])
        for c in on_spark.result["details"]["assessment"]["columns"]
    }
    assert counts == {"ssn": (1, 4), "sex": (4, 2)}


def test_a_spark_connect_frame_through_gx_equals_pandas(
    spark_connect: Any,
    spark_batch: Callable[[Any], Any],
    pandas_batch: Callable[[pd.DataFrame], Any],
    adult: pd.DataFrame,
) -> None:
    expectation = ExpectTableToBeKAnonymous(quasi_identifiers=QIS, k=5)
    on_connect = spark_batch(_as_text(spark_connect, adult)).validate(expectation)
    assert on_connect.result == pandas_batch(adult).validate(expectation).result
    assert on_connect.result["observed_value"] == 1  # Adult on sex, age, race: k = 1
