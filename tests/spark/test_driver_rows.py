"""Only aggregates reach the driver: rows collected are O(distinct class sizes), not classes.

Every collect of a classic DataFrame is counted (PySpark's own ``DataFrame.collect``, wrapped
to count the rows it returns) while a table of 1.3M records and 1M classes is assessed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from reident_airflow.engine.options import AssessmentOptions
from reident_airflow.sources.spark import aggregates_from_spark, assess_spark_frame

RECORDS = 1_300_000
KEYS = 1_000_000


@pytest.fixture
def collected(spark: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of rows of every ``collect()`` on a classic DataFrame during the test."""
    from pyspark.sql.classic.dataframe import DataFrame

    rows: list[int] = []
    original = DataFrame.collect

    def counting(self: Any) -> Any:
        result = original(self)
        rows.append(len(result))
        return result

    monkeypatch.setattr(DataFrame, "collect", counting)
    return rows


def test_a_million_classes_collect_a_few_rows(spark: Any, collected: list[int]) -> None:
    from pyspark.sql import functions as F

    # q0 = id mod 1,000,000 over ids 0..1,299,999: ids below 300,000 share their q0 with
    # id + 1,000,000, so 300,000 classes of 2 records and 700,000 of 1 (1,000,000 classes);
    # q1 = q0 mod 10 adds nothing to the classes (a function of q0): on {q1} alone, each of
    # the 10 values has 100,000 q0 values, 30,000 of them doubled: 10 classes of 130,000
    df = spark.range(RECORDS).select(
        (F.col("id") % KEYS).alias("q0"), (F.col("id") % KEYS % 10).alias("q1")
    )
    counted = aggregates_from_spark(df, ["q0", "q1"], rank_attributes=True)
    assert counted.histogram.classes == KEYS
    assert counted.histogram.sizes.tolist() == [1, 2]
    assert counted.histogram.counts.tolist() == [700_000, 300_000]
    assert counted.subsets is not None
    q0 = counted.subsets.histograms[(0,)]
    q1 = counted.subsets.histograms[(1,)]
    assert [a.tolist() for a in q0] == [[1, 2], [700_000, 300_000]]
    assert [a.tolist() for a in q1] == [[130_000], [10]]
    # full set 2 sizes, {q0} 2, {q1} 1: five rows in one collect
    assert collected == [5]
    assert counted.collected_rows == 5


def test_the_assessment_of_a_million_classes(spark: Any, collected: list[int]) -> None:
    from pyspark.sql import functions as F

    df = spark.range(RECORDS).select((F.col("id") % KEYS).alias("q0"))
    got = assess_spark_frame(df, AssessmentOptions(quasi_identifiers=("q0",))).to_dict()
    # 700,000 classes of 1, 300,000 of 2: highest risk 1, average = classes / records
    assert got["records"] == RECORDS and got["classes"] == KEYS
    assert got["class_size_histogram"] == [[1, 700_000], [2, 300_000]]
    assert got["prosecutor"]["highest_risk"] == 1.0
    # the engine sums the classes' risks in floating point: 10/13 to within a few ulps
    assert got["prosecutor"]["average_risk"] == pytest.approx(KEYS / RECORDS, rel=1e-15)
    assert got["uniqueness"]["sample_uniques"] == 700_000 / RECORDS
    assert sum(collected) == 2 and len(collected) == 1
    assert np.isclose(got["marketer"]["risk"], KEYS / RECORDS)
