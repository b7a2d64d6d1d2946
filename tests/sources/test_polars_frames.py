"""polars DataFrames are read through the Arrow stream they export (docs/reading.md).

Expected histograms are counted by hand from the rows written in each test.
"""

from __future__ import annotations

import datetime as dt

import pytest

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.frames import aggregates_from_frame, histogram_from_frame

pl = pytest.importorskip("polars")


def _pairs(sizes: object) -> list[tuple[int, int]]:
    return [(int(s), int(c)) for s, c in zip(sizes.sizes, sizes.counts, strict=True)]  # type: ignore[attr-defined]


def test_null_and_nan_are_two_values() -> None:
    # rows: (x, 1.0) twice, (null, NaN), (y, null), (null, null)
    # -> classes of 2, 1, 1, 1: one class of 2, three classes of 1
    df = pl.DataFrame(
        {
            "a": ["x", None, "y", "x", None],
            "b": [1.0, float("nan"), None, 1.0, None],
        }
    )
    assert _pairs(histogram_from_frame(df, ["a", "b"])) == [(1, 3), (2, 1)]


def test_categorical_groups_as_its_text() -> None:
    # "A", "a", "A": case matters -> a class of 2 and a class of 1
    df = pl.DataFrame({"c": pl.Series(["A", "a", "A"], dtype=pl.Categorical)})
    assert _pairs(histogram_from_frame(df, ["c"])) == [(1, 1), (2, 1)]


def test_instants_in_two_zones_are_one_value() -> None:
    # 12:00 UTC and 13:00 Paris (winter, UTC+1) are the same instant -> one class of 2
    utc = dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.UTC)
    df = pl.DataFrame({"t": [utc, utc]}).with_columns(
        pl.Series("p", [utc, utc]).dt.convert_time_zone("Europe/Paris")
    )
    assert _pairs(histogram_from_frame(df, ["t"])) == [(2, 1)]
    assert _pairs(histogram_from_frame(df, ["p"])) == [(2, 1)]


def test_weights_and_sensitive_values_are_counted() -> None:
    # classes on q: "a" (weights 2 + 3, s in {u, v}), "b" (weight 5, s = u)
    df = pl.DataFrame({"q": ["a", "a", "b"], "w": [2, 3, 5], "s": ["u", "v", "u"]})
    found = aggregates_from_frame(df, ["q"], weight="w", sensitive=["s"])
    assert found.table.records == 3
    assert found.table.classes == 2
    assert sorted(float(x) for x in found.weights.sums) == [5.0, 5.0]
    counts = found.sensitive["s"]
    assert sorted(int(c) for c in counts.counts) == [1, 1, 1]  # (a,u), (a,v), (b,u)


def test_a_lazy_frame_is_refused_with_the_fix() -> None:
    lazy = pl.DataFrame({"a": [1]}).lazy()
    with pytest.raises(InvalidInputError, match=r"LazyFrame.*collect\(\)"):
        histogram_from_frame(lazy, ["a"])


def test_another_object_is_refused_naming_its_type() -> None:
    with pytest.raises(InvalidInputError, match="got list"):
        histogram_from_frame([{"a": 1}], ["a"])
