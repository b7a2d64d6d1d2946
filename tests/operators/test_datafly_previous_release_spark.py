"""DataflyOperator on a Spark connection compares its release with the one it replaces before
publishing (issue 28), as on files and databases: the releases of
tests/operators/test_datafly_previous_release.py (worked out by hand there: Datafly at k = 2
generalizes nothing; against run 1's release, run 2 has one arrival alone in (F, 100), arrival
k 1, and two departures from (M, 200), departure k 2), as Parquet, compared by Spark with a
Parquet folder and with a table of the session's catalog."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.operators.spark_table import spark_connection, spark_session
from reident_airflow.outcomes import ReidentificationBreach
from tests.cli.test_previous_release import CANDIDATE, PREVIOUS
from tests.operators._fakes import PushedTI, make_operator
from tests.operators.test_datafly_previous_release import ARRIVAL_K, HIERARCHIES

#: arrival k 1 against min_arrival_k (or warn_min_arrival_k) 2 (module docstring)
ARRIVAL_BREACH = {"metric": ARRIVAL_K, "observed": 1.0, "limit": 2.0}


def _operator(conn_id: str, **kwargs: Any) -> DataflyOperator:
    options: dict[str, Any] = {
        "quasi_identifiers": "sex,zip",
        "k": 2,
        "suppression_limit": 0,
        "hierarchies": HIERARCHIES,
        "min_arrival_k": "2",
    }
    options.update(kwargs)
    return make_operator(DataflyOperator, conn_id=conn_id, **options)


@pytest.fixture
def days(tmp_path: Path) -> tuple[str, str]:
    PREVIOUS.to_parquet(tmp_path / "day1.parquet", index=False)
    CANDIDATE.to_parquet(tmp_path / "day2.parquet", index=False)
    return str(tmp_path / "day1.parquet"), str(tmp_path / "day2.parquet")


def _check_breach(op: DataflyOperator) -> None:
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach) as caught:
        op.execute({"ti": ti})  # type: ignore[arg-type]
    assert caught.value.breaches == [ARRIVAL_BREACH]
    assert "hold back 1 of the 1 arrivals" in str(caught.value)
    since = ti.pushed["return_value"]["since_last_release"]
    assert (since["previous_records"], since["records"]) == (46, 45)
    assert (since["arrivals"]["k"], since["departures"]["k"]) == (1, 2)


def test_a_parquet_target_across_two_runs(
    spark_conn: str, days: tuple[str, str], tmp_path: Path
) -> None:
    target = str(tmp_path / "release")
    first = _operator(spark_conn, path=days[0], target_path=target).execute({"ti": PushedTI()})
    assert first["since_last_release"] is None  # nothing to compare
    assert pq.read_table(target).num_rows == 46
    _check_breach(_operator(spark_conn, path=days[1], target_path=target))
    assert pq.read_table(target).num_rows == 46  # not published

    # a warning level only: published, the warning listed
    warned = _operator(
        spark_conn, path=days[1], target_path=target, min_arrival_k=None, warn_min_arrival_k=2
    ).execute({"ti": PushedTI()})
    assert warned["passed"] is True and warned["warnings"] == [ARRIVAL_BREACH]
    assert pq.read_table(target).num_rows == 45


def test_a_catalog_table_across_two_runs(
    spark_conn: str, days: tuple[str, str], tmp_path: Path
) -> None:
    database = f"i28pair_{uuid.uuid4().hex[:8]}"
    with spark_session(spark_conn, spark_connection(spark_conn)) as session:
        session.sql(f"CREATE DATABASE {database} LOCATION '{tmp_path / 'db'}'")
        try:
            target = {"target_schema": database, "target_table": "release"}
            first = _operator(spark_conn, path=days[0], **target).execute({"ti": PushedTI()})
            assert first["since_last_release"] is None
            _check_breach(_operator(spark_conn, path=days[1], **target))
            assert session.table(f"{database}.release").count() == 46  # not published
            # named: the previous release compared is the one given, not the target
            session.read.parquet(days[1]).write.saveAsTable(f"{database}.same")
            same = _operator(spark_conn, path=days[1], previous_release="same", **target)
            report = same.execute({"ti": PushedTI()})
            assert report["since_last_release"]["arrivals"]["records"] == 0
            assert session.table(f"{database}.release").count() == 45
        finally:
            session.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")


def test_a_catalog_table_over_spark_connect(
    connect_conn: str, spark_connect: Any, days: tuple[str, str], tmp_path: Path
) -> None:
    """The same breach over Spark Connect (a table target: a Connect client writes no path)."""
    database = f"i28pair_{uuid.uuid4().hex[:8]}"
    spark_connect.sql(f"CREATE DATABASE {database} LOCATION '{tmp_path / 'db'}'")
    try:
        target = {"target_schema": database, "target_table": "release"}
        first = _operator(connect_conn, path=days[0], **target).execute({"ti": PushedTI()})
        assert first["since_last_release"] is None
        _check_breach(_operator(connect_conn, path=days[1], **target))
        assert spark_connect.table(f"{database}.release").count() == 46  # not published
    finally:
        spark_connect.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
