"""What reaches the driver: aggregates, and the class table only under a bound.

Every collect of a classic DataFrame is counted (PySpark's own ``DataFrame.collect`` and
``DataFrame.toArrow``, wrapped to count the rows they return) while a table of 1.3M records
and 1M classes is assessed. The verdict collects O(distinct class sizes) rows. The QI
ranking takes the class table to the driver when it has at most
``reident.ranking.driverClasses`` classes (the engine ranks it there), and otherwise counts
every subset in Spark, collecting again O(distinct class sizes) rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions
from reident_airflow.sources.spark import (
    DRIVER_CLASSES_CONF,
    aggregates_from_spark,
    assess_spark_frame,
)

RECORDS = 1_300_000
KEYS = 1_000_000


@pytest.fixture
def collected(spark: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """``(how, rows)`` of every ``collect()`` and ``toArrow()`` on a classic DataFrame during
    the test."""
    from pyspark.sql.classic.dataframe import DataFrame

    rows: list[tuple[str, int]] = []
    collect, to_arrow = DataFrame.collect, DataFrame.toArrow

    def counting(self: Any) -> Any:
        result = collect(self)
        rows.append(("collect", len(result)))
        return result

    def counting_arrow(self: Any) -> Any:
        result = to_arrow(self)
        rows.append(("arrow", result.num_rows))
        return result

    monkeypatch.setattr(DataFrame, "collect", counting)
    monkeypatch.setattr(DataFrame, "toArrow", counting_arrow)
    return rows


@pytest.fixture
def driver_classes(spark: Any) -> Iterator[Any]:
    """Sets ``reident.ranking.driverClasses`` for the test (a callable), unset afterwards."""

    def set_limit(value: object) -> None:
        spark.conf.set(DRIVER_CLASSES_CONF, str(value))

    try:
        yield set_limit
    finally:
        spark.conf.unset(DRIVER_CLASSES_CONF)


def _million_classes(spark: Any) -> Any:
    from pyspark.sql import functions as F

    # q0 = id mod 1,000,000 over ids 0..1,299,999: ids below 300,000 share their q0 with
    # id + 1,000,000, so 300,000 classes of 2 records and 700,000 of 1 (1,000,000 classes);
    # q1 = q0 mod 10 adds nothing to the classes (a function of q0): on {q1} alone, each of
    # the 10 values has 100,000 q0 values, 30,000 of them doubled: 10 classes of 130,000
    return spark.range(RECORDS).select(
        (F.col("id") % KEYS).alias("q0"), (F.col("id") % KEYS % 10).alias("q1")
    )


def _check_million(counted: Any) -> None:
    assert counted.histogram.classes == KEYS
    assert counted.histogram.sizes.tolist() == [1, 2]
    assert counted.histogram.counts.tolist() == [700_000, 300_000]
    assert counted.subsets is not None
    q0 = counted.subsets.histograms[(0,)]
    q1 = counted.subsets.histograms[(1,)]
    assert [a.tolist() for a in q0] == [[1, 2], [700_000, 300_000]]
    assert [a.tolist() for a in q1] == [[130_000], [10]]


def test_a_million_classes_ranked_in_spark_collect_a_few_rows(
    spark: Any, collected: list[tuple[str, int]], driver_classes: Any
) -> None:
    driver_classes(0)  # never on the driver
    counted = aggregates_from_spark(_million_classes(spark), ["q0", "q1"], rank_attributes=True)
    _check_million(counted)
    # full set 2 sizes, {q0} 2, {q1} 1: five rows in one collect
    assert collected == [("collect", 5)]
    assert counted.collected_rows == 5


def test_a_class_table_within_the_limit_is_ranked_on_the_driver(
    spark: Any, collected: list[tuple[str, int]], driver_classes: Any
) -> None:
    driver_classes(KEYS)  # exactly as many classes as the limit allows
    counted = aggregates_from_spark(_million_classes(spark), ["q0", "q1"], rank_attributes=True)
    _check_million(counted)
    assert collected == [("arrow", KEYS)]
    assert counted.collected_rows == KEYS


def test_a_class_table_over_the_limit_stays_in_spark(
    spark: Any, collected: list[tuple[str, int]], driver_classes: Any
) -> None:
    driver_classes(KEYS - 1)
    counted = aggregates_from_spark(_million_classes(spark), ["q0", "q1"], rank_attributes=True)
    _check_million(counted)
    # one row past the limit shows the table is too large; then Spark counts the subsets
    assert collected == [("arrow", KEYS), ("collect", 5)]
    assert counted.collected_rows == 5


@pytest.mark.parametrize("value", ["-1", "many", "1.5"])
def test_a_bad_driver_limit_is_refused(spark: Any, driver_classes: Any, value: str) -> None:
    driver_classes(value)
    with pytest.raises(InvalidInputError, match=r"reident\.ranking\.driverClasses"):
        aggregates_from_spark(_million_classes(spark), ["q0", "q1"], rank_attributes=True)


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
    assert collected == [("collect", 2)]
    assert np.isclose(got["marketer"]["risk"], KEYS / RECORDS)


def test_the_driver_codes_the_hostile_corpus_as_spark_groups_it(
    spark: Any, driver_classes: Any
) -> None:
    """Each single column and each pair of the conformance corpus (text that differs only in
    case, accents or spaces; -0.0, NaN payloads, close floats, float32; decimals; booleans;
    instants; bytes) ranked from the class table on the driver has the histograms Spark's own
    ``GROUPING SETS`` gives: the driver's codes tell apart exactly what Spark tells apart."""
    from tests.conformance import loaders

    df = loaders.spark_frame(spark)
    qis = [c for c in df.columns if c != "case_lcase"]  # a collated column is refused
    driver_classes(0)
    in_spark = aggregates_from_spark(df, qis, rank_attributes=True, max_subset_size=2)
    driver_classes(1_000)
    on_driver = aggregates_from_spark(df, qis, rank_attributes=True, max_subset_size=2)
    assert on_driver.collected_rows == on_driver.histogram.classes  # the class table came
    assert in_spark.subsets is not None and on_driver.subsets is not None
    spark_hists = in_spark.subsets.histograms
    driver_hists = on_driver.subsets.histograms
    assert len(spark_hists) == len(qis) + len(qis) * (len(qis) - 1) // 2
    assert set(driver_hists) == set(spark_hists)
    for cols, (sizes, counts) in spark_hists.items():
        assert driver_hists[cols][0].tolist() == sizes.tolist(), cols
        assert driver_hists[cols][1].tolist() == counts.tolist(), cols
    assert on_driver.histogram.sizes.tolist() == in_spark.histogram.sizes.tolist()
    assert on_driver.histogram.counts.tolist() == in_spark.histogram.counts.tolist()


def test_a_failed_collect_ranks_in_spark_and_says_so_without_a_value(
    spark: Any,
    collected: list[tuple[str, int]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A class table the driver cannot take (Spark refuses a result over
    ``spark.driver.maxResultSize``, stood in for by an error quoting a value) is ranked in
    Spark; the warning names the error's kind, not its message."""
    from pyspark.sql.classic.dataframe import DataFrame

    def refused(self: Any) -> Any:
        raise RuntimeError("Total size of serialized results ... value 'Alice Smith'")

    monkeypatch.setattr(DataFrame, "toArrow", refused)
    with caplog.at_level("WARNING", logger="reident_airflow.sources.spark_grouping"):
        counted = aggregates_from_spark(_million_classes(spark), ["q0", "q1"], rank_attributes=True)
    _check_million(counted)
    assert collected == [("collect", 5)]
    assert "RuntimeError" in caplog.text and "ranking in Spark" in caplog.text
    assert "Alice" not in caplog.text and "serialized" not in caplog.text
