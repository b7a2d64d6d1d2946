"""``expect_table_to_hold_no_direct_identifiers`` on Spark (issue 27): the same verdicts as
the CSV reading, counted by Spark (marked ``spark`` by the suite's conftest: its name)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reident_airflow.gx import ExpectTableToHoldNoDirectIdentifiers
from tests.gx.test_identifier_scan import (
    CLEAN_KWARGS,
    PLANTED_FAILING,
    PLANTED_KWARGS,
    csv_verdicts,
    read_table,
    verdicts_of,
)
from tests.gx.test_spark_engine import _as_text, local_spark, spark_batch

__all__ = ["local_spark", "spark_batch"]


def test_planted_fails_and_clean_succeeds_on_spark(
    local_spark: Any, spark_batch: Callable[[Any], Any]
) -> None:
    planted = spark_batch(_as_text(local_spark, read_table("planted.csv")))
    result = planted.validate(ExpectTableToHoldNoDirectIdentifiers(**PLANTED_KWARGS))
    assert result.success is False
    assert result.result["details"]["failing"] == PLANTED_FAILING
    assert verdicts_of(result) == csv_verdicts("planted.csv", PLANTED_KWARGS)

    clean = spark_batch(_as_text(local_spark, read_table("clean.csv")))
    result = clean.validate(ExpectTableToHoldNoDirectIdentifiers(**CLEAN_KWARGS))
    assert result.success is True, result.result
    assert set(verdicts_of(result).values()) == {"clear"}
