"""Fixtures of the operator tests on a Spark connection (:mod:`tests.operators._spark`),
session-wide so that the operator modules share one session and one Connect server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.operators._spark import (
    adult_parquet_fixture,
    connect_conn_fixture,
    spark_conn_fixture,
)
from tests.spark.sessions import ConnectServer, connect_server, spark_connect

__all__ = ["adult_parquet", "connect_conn", "connect_server", "spark_conn", "spark_connect"]


@pytest.fixture(scope="session")
def adult_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return adult_parquet_fixture(tmp_path_factory)


@pytest.fixture(scope="session")
def spark_conn() -> Iterator[str]:
    yield from spark_conn_fixture()


@pytest.fixture(scope="session")
def connect_conn(connect_server: ConnectServer) -> Iterator[str]:
    yield from connect_conn_fixture(connect_server)
