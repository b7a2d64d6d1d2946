"""What the operator tests on a Spark connection share (issue 18): the connection, set by
environment variable, and Adult as Parquet.

``spark_conn`` is a ``spark`` connection (``local[2]``); the session the operators get or
create from it is the process's, stopped at the end of the test session when these fixtures
created it. ``connect_conn`` is a ``spark_connect`` connection to the Connect server of
:mod:`tests.spark.sessions`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from reident_airflow.sources.files import read_columns
from tests.conftest import oracle_data
from tests.spark.sessions import JVM_OPTIONS, SHUFFLE_PARTITIONS, ConnectServer

__all__ = ["ADULT_COLUMNS", "CONNECT_CONN_ID", "CONN_ID", "SPARK_CONF"]

#: Adult's columns in the Parquet file: the risk tests' QIs and Datafly's.
ADULT_COLUMNS = ["sex", "age", "race", "marital-status", "native-country", "education"]
CONN_ID = "reident_spark_test"
CONNECT_CONN_ID = "reident_spark_connect_test"
#: The Spark settings of the connection (its extras), as the Spark tests' session has them.
SPARK_CONF = {
    "spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS,
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": JVM_OPTIONS,
}


def adult_parquet_fixture(factory: pytest.TempPathFactory) -> Path:
    """Adult's :data:`ADULT_COLUMNS` as Parquet, every field its text (the reading contract)."""
    path = factory.mktemp("spark-op") / "adult.parquet"
    table = read_columns(oracle_data("adult.csv"), ADULT_COLUMNS, sep=";", dictionary=False)
    pq.write_table(table, path)
    return path


def spark_conn_fixture() -> Iterator[str]:
    """The ``spark`` connection :data:`CONN_ID`; the session made from it here is stopped at
    the end, one found is left alone."""
    from pyspark.sql import SparkSession

    before = SparkSession.getActiveSession()
    with pytest.MonkeyPatch.context() as patch:
        value = {"conn_type": "spark", "host": "local[2]", "extra": SPARK_CONF}
        patch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(value))
        patch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        yield CONN_ID
    after = SparkSession.getActiveSession()
    if before is None and after is not None:
        after.stop()


def connect_conn_fixture(server: ConnectServer) -> Iterator[str]:
    """The ``spark_connect`` connection :data:`CONNECT_CONN_ID` to ``server``."""
    server.wait()
    value = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": server.port}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(f"AIRFLOW_CONN_{CONNECT_CONN_ID.upper()}", json.dumps(value))
        yield CONNECT_CONN_ID
