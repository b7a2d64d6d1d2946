"""The risk operator's ``previous_release=`` on a Spark connection (issue 28): the releases
of tests/cli/test_previous_release.py as Parquet, compared by Spark, give the numbers worked
out by hand there (one arrival alone in its class, two departures from one class); a
previous release not written yet is a first run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentificationBreach
from tests.cli.test_previous_release import CANDIDATE, PREVIOUS, _check
from tests.operators._fakes import PushedTI, make_operator


def _operator(conn_id: str, **kwargs: Any) -> ReidentificationRiskOperator:
    return make_operator(
        ReidentificationRiskOperator,
        conn_id=conn_id,
        quasi_identifiers="sex,zip",
        min_k="4",
        min_arrival_k="2",
        rank_attributes=False,
        fingerprint=False,
        identifier_scan="off",
        **kwargs,
    )


def test_parquet_paths_on_spark(spark_conn: str, tmp_path: Path) -> None:
    PREVIOUS.to_parquet(tmp_path / "old.parquet", index=False)
    CANDIDATE.to_parquet(tmp_path / "new.parquet", index=False)
    ti = PushedTI()
    op = _operator(
        spark_conn,
        path=str(tmp_path / "new.parquet"),
        previous_release=str(tmp_path / "old.parquet"),
    )
    with pytest.raises(ReidentificationBreach) as caught:
        op.execute({"ti": ti})  # type: ignore[arg-type]
    _check(ti.pushed["return_value"])
    assert "hold back 1 of the 1 arrivals" in str(caught.value)
    first = _operator(
        spark_conn,
        path=str(tmp_path / "new.parquet"),
        previous_release=str(tmp_path / "no.parquet"),
    )
    report = first.execute({"ti": PushedTI()})  # type: ignore[arg-type]
    assert report["passed"] is True and report["since_last_release"] is None
