"""Datafly on Spark (sources/spark_release_datafly.py) equals the pandas Datafly.

Adult with ARX's hierarchies, on cases of tests/engine/test_datafly.py: the same levels, steps,
suppressed records and JSON, and the same release rows as a multiset. The release is then
written as a table and swapped in over an existing one; a local release path is locked while
it is written.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from reident_airflow.engine.datafly import datafly
from reident_airflow.engine.errors import HierarchyError
from reident_airflow.engine.hierarchies import Hierarchy, load_hierarchy
from reident_airflow.sources.spark_release_datafly import (
    datafly_spark,
    write_release_path,
    write_release_table,
)
from tests.conftest import oracle_data

pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning"
)

QIS = ("sex", "age", "race", "education")


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def hierarchies() -> dict[str, Hierarchy]:
    return {c: load_hierarchy(oracle_data(f"adult_hierarchy_{c}.csv"), column=c) for c in QIS}


@pytest.fixture(scope="module")
def adult_spark(classic_spark: Any, adult: pd.DataFrame) -> Any:
    schema = ", ".join(f"`{c}` string" for c in adult.columns)
    return classic_spark.createDataFrame(list(adult.itertuples(index=False)), schema=schema)


def _multiset(rows: Any) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in rows)


@pytest.mark.parametrize(
    ("qis", "k", "limit"),
    [(("sex", "age", "race"), 5, None), (QIS, 10, 0.01)],
)
def test_equals_the_pandas_datafly(
    adult: pd.DataFrame,
    adult_spark: Any,
    hierarchies: dict[str, Hierarchy],
    qis: tuple[str, ...],
    k: int,
    limit: float | None,
) -> None:
    want = datafly(adult, qis, hierarchies, k, limit)
    messages: list[str] = []
    got = datafly_spark(adult_spark, qis, hierarchies, k, limit, messages.append)
    assert got.to_dict() == want.to_dict()
    assert got.levels == want.levels and got.steps == want.steps
    assert got.suppressed_records == want.suppressed_records
    assert len(messages) == len(got.steps) + 1
    assert list(got.table.columns) == list(adult.columns)
    assert _multiset(got.table.collect()) == _multiset(want.table.itertuples(index=False))


def test_missing_hierarchy_is_the_engines_error(
    adult_spark: Any, hierarchies: dict[str, Hierarchy]
) -> None:
    with pytest.raises(HierarchyError, match="no hierarchy given for quasi-identifier 'workclass'"):
        datafly_spark(adult_spark, ["sex", "workclass"], hierarchies, 5)


def test_release_is_written_then_swapped_in(
    classic_spark: Any, adult_spark: Any, hierarchies: dict[str, Hierarchy], tmp_path: Path
) -> None:
    classic_spark.sql(f"CREATE DATABASE IF NOT EXISTS reident_release LOCATION '{tmp_path / 'db'}'")
    try:
        first = datafly_spark(adult_spark.limit(3000), ["sex", "race"], hierarchies, 5)
        write_release_table(first, "reident_release.adult")
        assert classic_spark.table("reident_release.adult").count() == first.records - (
            first.suppressed_records
        )
        second = datafly_spark(adult_spark.limit(1000), ["sex", "race"], hierarchies, 5)
        write_release_table(second, "reident_release.adult")
        assert (
            classic_spark.table("reident_release.adult").count() == 1000 - second.suppressed_records
        )
        names = [t.name for t in classic_spark.catalog.listTables("reident_release")]
        assert names == ["adult"]  # the staged and the retired tables are gone
    finally:
        classic_spark.sql("DROP DATABASE IF EXISTS reident_release CASCADE")


def test_release_path_is_written_then_swapped_in(
    classic_spark: Any, adult_spark: Any, hierarchies: dict[str, Hierarchy], tmp_path: Path
) -> None:
    target = tmp_path / "release"
    first = datafly_spark(adult_spark.limit(3000), ["sex", "race"], hierarchies, 5)
    write_release_path(first, str(target))
    assert (
        classic_spark.read.parquet(str(target)).count() == first.records - first.suppressed_records
    )
    second = datafly_spark(adult_spark.limit(1000), ["sex", "race"], hierarchies, 5)
    write_release_path(second, str(target))
    assert classic_spark.read.parquet(str(target)).count() == 1000 - second.suppressed_records
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]  # nothing left beside it


def test_release_path_waits_for_another_run_writing_it(
    classic_spark: Any, adult_spark: Any, hierarchies: dict[str, Hierarchy], tmp_path: Path
) -> None:
    """Issue 25, item 6: a local release path is one writer's at a time. Another run holds
    its lock (``<path>.reident-lock``): this one gives up after ``lock_timeout`` with a
    retryable TargetBusyError and writes nothing; once the lock is free, it publishes."""
    from reident_airflow._atomic import target_lock
    from reident_airflow.engine.errors import TargetBusyError

    target = tmp_path / "release"
    result = datafly_spark(adult_spark.limit(1000), ["sex", "race"], hierarchies, 5)
    with target_lock(target), pytest.raises(TargetBusyError, match="another run is publishing"):
        write_release_path(result, str(target), lock_timeout=0.2)
    assert not target.exists()
    write_release_path(result, str(target), lock_timeout=0)
    assert classic_spark.read.parquet(str(target)).count() == 1000 - result.suppressed_records
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]


def test_hostile_values_and_names_equal_the_pandas_datafly(classic_spark: Any) -> None:
    """Quotes, line breaks, a comma, non-ASCII text, a lone space and a backtick, in values
    and in a column name: Spark's Datafly groups, generalizes and releases them as the
    pandas one does."""
    from reident_airflow.engine.hierarchies import masking_hierarchy

    values = ['a"1', "b\n2", "é3", "a,4", " ", "b\r\n5", "`6", "a'7"]
    n = 64
    frame = pd.DataFrame(
        {
            "id": [str(i) for i in range(n)],
            "co`de": [values[i % len(values)] for i in range(n)],
            "zip": [f"8{i % 5}{i % 3}" for i in range(n)],
        }
    )
    qis = ("co`de", "zip")
    hierarchies = {q: masking_hierarchy(frame[q].unique(), column=q) for q in qis}
    want = datafly(frame, qis, hierarchies, 3, 0)
    rows = list(frame.itertuples(index=False, name=None))
    spark_frame = classic_spark.createDataFrame(
        rows, schema="id string, `co``de` string, zip string"
    )
    got = datafly_spark(spark_frame, qis, hierarchies, 3, 0)
    assert got.to_dict() == want.to_dict()
    assert list(got.table.columns) == list(frame.columns)
    released = Counter(tuple(r) for r in got.table.collect())
    assert sum(released.values()) == want.released_records
    expected = Counter(tuple(r) for r in want.table.itertuples(index=False))
    assert released == expected
