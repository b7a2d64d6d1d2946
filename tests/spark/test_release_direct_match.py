"""Direct match on Spark (sources/spark_release.py) equals the pandas engine on its test data.

The tables are those of tests/engine/test_direct_match.py (hand-counted there); each is handed
to Spark as a DataFrame, the avatar shuffled, and the result compared with
:func:`~reident_airflow.engine.direct_match.direct_match_protection` on the same pandas tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine.direct_match import direct_match_protection
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.spark_release import direct_match_spark
from tests.engine.test_direct_match import MIXED_AVATAR, MIXED_EXPECTED, MIXED_ORIGINAL

pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning"
)


def _rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows as Python values (a float NaN stays NaN; pd.NA becomes None)."""
    out = []
    for record in frame.astype(object).itertuples(index=False):
        out.append(
            tuple(
                None if v is pd.NA else v.item() if isinstance(v, np.generic) else v for v in record
            )
        )
    return out


def _spark(classic_spark: Any, frame: pd.DataFrame, schema: str) -> Any:
    return classic_spark.createDataFrame(_rows(frame), schema=schema)


def _same_result(got: Any, want: Any) -> None:
    assert got.to_dict() == want.to_dict()


def test_mixed_table_equals_the_engine(classic_spark: Any) -> None:
    schema = "id long, zip string, age long, sex string, income double"
    shuffled = MIXED_AVATAR.sample(frac=1, random_state=5)
    want = direct_match_protection(MIXED_ORIGINAL, shuffled, key="id", target=70)
    got = direct_match_spark(
        _spark(classic_spark, MIXED_ORIGINAL, schema),
        _spark(classic_spark, shuffled, schema),
        key="id",
        target=70,
    )
    _same_result(got, want)
    for column in got.columns:  # hand counts of tests/engine/test_direct_match.py
        assert (column.matches, column.distinct_avatar_values) == MIXED_EXPECTED[column.column][1:]


def test_random_table_equals_the_engine(classic_spark: Any) -> None:
    rng = np.random.default_rng(7)
    n = 200
    original = pd.DataFrame(
        {
            "key": np.arange(n) * 3,
            "age": rng.integers(18, 90, n),
            "city": rng.choice(["Lyon", "Nantes", "Paris", "Lille"], n),
            "score": rng.normal(size=n).round(1),
        }
    )
    avatar = original.copy()
    avatar["age"] = np.where(rng.random(n) < 0.5, avatar["age"], rng.integers(18, 90, n))
    avatar["city"] = np.where(rng.random(n) < 0.3, avatar["city"], "Paris")
    avatar = avatar.sample(frac=1, random_state=3)
    schema = "key long, age long, city string, score double"
    want = direct_match_protection(original, avatar, key="key")
    got = direct_match_spark(
        _spark(classic_spark, original, schema), _spark(classic_spark, avatar, schema), key="key"
    )
    _same_result(got, want)


def test_missing_nan_and_types_equal_the_engine(classic_spark: Any) -> None:
    # tests/engine/test_direct_match.py's cases, keyed: NaN and NULL are one missing value;
    # an integer equals the text of the same number; a boolean equals 0/1.
    original = pd.DataFrame(
        {
            "k": [1, 2, 3, 4],
            "f": [np.nan, 1.0, np.nan, 2.0],
            "t": ["a", None, "b", None],
            "n": [1, 2, 3, 4],
        }
    )
    avatar = pd.DataFrame(
        {
            "k": ["4", "3", "2.0", "1"],
            "f": [3.0, None, 1.0, None],
            "t": [None, "c", None, "a"],
            "n": [None, "x", "2.0", "1"],
        }
    )
    want = direct_match_protection(original, avatar, key="k")
    got = direct_match_spark(
        _spark(classic_spark, original, "k long, f double, t string, n long"),
        _spark(classic_spark, avatar, "k string, f double, t string, n string"),
        key="k",
    )
    _same_result(got, want)
    # by hand: f m = 3 (NaN/NULL x2, 1.0), u = 3; t m = 3, u = 3; n m = 2 (1, 2.0), u = 4
    counts = {c.column: (c.matches, c.distinct_avatar_values) for c in got.columns}
    assert counts == {"f": (3, 3), "t": (3, 3), "n": (2, 4)}


@pytest.mark.parametrize(
    ("original_keys", "avatar_keys"),
    [
        ([1, 2, 2, 3], [1, 2, 3, 4]),  # a repeated key
        ([1, 2, 3, 4], [1, 2, 3, 5]),  # keys that do not match
        ([1, 2, 3], [1, 2, 3, 4]),  # different numbers of records
    ],
)
def test_errors_carry_the_engines_messages(
    classic_spark: Any, original_keys: list[int], avatar_keys: list[int]
) -> None:
    original = pd.DataFrame({"k": original_keys, "v": range(len(original_keys))})
    avatar = pd.DataFrame({"k": avatar_keys, "v": range(len(avatar_keys))})
    with pytest.raises(InvalidInputError) as engine_error:
        direct_match_protection(original, avatar, key="k")
    with pytest.raises(InvalidInputError) as spark_error:
        direct_match_spark(
            _spark(classic_spark, original, "k long, v long"),
            _spark(classic_spark, avatar, "k long, v long"),
            key="k",
        )
    assert str(spark_error.value) == str(engine_error.value)


@pytest.mark.parametrize(
    ("avatar", "schema", "columns"),
    [
        # the key column missing from the avatar table
        (pd.DataFrame({"j": [1, 2, 3, 4], "v": [0, 1, 2, 3]}), "j long, v long", None),
        # a missing key value in the avatar table
        (
            pd.DataFrame({"k": pd.array([1, 2, None, 4], dtype="Int64"), "v": [0, 1, 2, 3]}),
            "k long, v long",
            None,
        ),
        # the key cannot also be scored
        (pd.DataFrame({"k": [1, 2, 3, 4], "v": [0, 1, 2, 3]}), "k long, v long", ["k"]),
        # a column of neither table
        (pd.DataFrame({"k": [1, 2, 3, 4], "v": [0, 1, 2, 3]}), "k long, v long", ["w"]),
        # keys that do not match are reported before the refused column
        (pd.DataFrame({"k": [1, 2, 3, 5], "v": [0, 1, 2, 3]}), "k long, v long", ["w"]),
        # only the key in common
        (pd.DataFrame({"k": [1, 2, 3, 4], "w": [0, 1, 2, 3]}), "k long, w long", None),
    ],
)
def test_key_and_column_errors_carry_the_engines_messages(
    classic_spark: Any, avatar: pd.DataFrame, schema: str, columns: list[str] | None
) -> None:
    original = pd.DataFrame({"k": [1, 2, 3, 4], "v": [0, 1, 2, 3]})
    with pytest.raises(InvalidInputError) as engine_error:
        direct_match_protection(original, avatar, key="k", columns=columns)
    with pytest.raises(InvalidInputError) as spark_error:
        direct_match_spark(
            _spark(classic_spark, original, "k long, v long"),
            _spark(classic_spark, avatar, schema),
            key="k",
            columns=columns,
        )
    assert str(spark_error.value) == str(engine_error.value)
