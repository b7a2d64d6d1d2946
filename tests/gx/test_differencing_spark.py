"""``expect_table_differencing_risk_to_be_below`` on Spark (issue 28): the hand-computed
verdict of tests/gx/test_differencing.py, compared by Spark, against a Parquet path and a
table of the session's catalog (marked ``spark`` by the suite's conftest: its name)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cli.test_previous_release import CANDIDATE, PREVIOUS
from tests.gx.test_differencing import _expectation, check_forty
from tests.gx.test_spark_engine import _as_text, local_spark, spark_batch

__all__ = ["local_spark", "spark_batch"]


def test_against_a_parquet_path_and_a_catalog_table(
    local_spark: Any, spark_batch: Callable[[Any], Any], tmp_path: Path
) -> None:
    PREVIOUS.to_parquet(tmp_path / "previous.parquet", index=False)
    batch = spark_batch(_as_text(local_spark, CANDIDATE))
    check_forty(batch.validate(_expectation(str(tmp_path / "previous.parquet"))))

    view = f"i28pair_previous_{uuid.uuid4().hex[:8]}"
    _as_text(local_spark, PREVIOUS).createOrReplaceTempView(view)
    try:
        check_forty(batch.validate(_expectation(view)))
    finally:
        local_spark.catalog.dropTempView(view)

    missing = batch.validate(_expectation(f"{view}_none"))
    assert missing.success is False
    assert "does not exist" in missing.exception_info["exception_message"]
    folder = batch.validate(_expectation(str(tmp_path / "none.parquet")))
    assert folder.success is False
    assert "does not exist" in folder.exception_info["exception_message"]
