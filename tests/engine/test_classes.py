"""Equivalence classes (metrics.md §1). Expected values are hand-computed or from ARX 3.9.2.

Files and DataFrames are grouped by DuckDB (:mod:`reident_airflow.sources.files`); grouped
results and Datafly's generalized classes by :func:`group_codes`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from reident_airflow.engine.classes import (
    ClassSizes,
    ClassTable,
    class_table_from_grouped,
    group_codes,
)
from reident_airflow.engine.encoding import encode_series
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources.files import class_table_from_file
from reident_airflow.sources.frames import class_table_from_frame
from tests.conftest import load_reference, oracle_data, reference_files
from tests.engine._records import class_values


def _sorted_sizes(table: object) -> list[int]:
    return sorted(int(s) for s in table.sizes)  # type: ignore[attr-defined]


def test_hand_computed_classes() -> None:
    # rows: (M,30) x2, (F,30) x1, (F,40) x3 -> classes of size 2, 1, 3
    df = pd.DataFrame(
        {"sex": ["M", "M", "F", "F", "F", "F"], "age": [30, 30, 30, 40, 40, 40], "x": range(6)}
    )
    t = class_table_from_frame(df, ["sex", "age"])
    assert t.records == 6 and t.classes == 3 and t.k == 1
    assert _sorted_sizes(t) == [1, 2, 3]
    sizes, counts = t.histogram()
    assert sizes.tolist() == [1, 2, 3] and counts.tolist() == [1, 1, 1]


def test_missing_values_form_one_group_per_column() -> None:
    # None, NaN and pd.NA are all "missing": one class of 3 plus the class of "a" (size 1)
    df = pd.DataFrame({"q": pd.Series([None, np.nan, pd.NA, "a"], dtype=object)})
    t = class_table_from_frame(df, ["q"])
    assert _sorted_sizes(t) == [1, 3]


def test_fully_suppressed_records_are_excluded() -> None:
    # ARX excludes a record whose QIs are all '*'; a record with only one '*' stays.
    df = pd.DataFrame({"a": ["*", "*", "*", "x", "x"], "b": ["*", "*", "y", "y", "y"]})
    t = class_table_from_frame(df, ["a", "b"])
    assert t.excluded_records == 2
    assert t.records == 3 and _sorted_sizes(t) == [1, 2]


def test_all_suppressed_is_an_empty_dataset() -> None:
    df = pd.DataFrame({"a": ["*", "*"], "b": ["*", "*"]})
    with pytest.raises(EmptyDatasetError, match="fully suppressed"):
        class_table_from_frame(df, ["a", "b"])


def test_empty_frame_is_an_error_not_risk_zero() -> None:
    with pytest.raises(EmptyDatasetError):
        class_table_from_frame(pd.DataFrame({"a": []}), ["a"])


def test_unknown_qi_lists_available_columns() -> None:
    df = pd.DataFrame({"sex": ["M"], "age": [1]})
    with pytest.raises(InvalidInputError, match=r"'zip'.*available columns: 'sex', 'age'"):
        class_table_from_frame(df, ["sex", "zip"])


@pytest.mark.parametrize("qis", [[], [""], ["a", "a"]])
def test_bad_qi_lists(qis: list[str]) -> None:
    with pytest.raises(InvalidInputError):
        class_table_from_frame(pd.DataFrame({"a": [1]}), qis)


def test_hashing_path_equals_bincount_path() -> None:
    # Large cardinalities force the hashed combination; the classes must be the same.
    rng = np.random.default_rng(7)
    n = 50_000
    cols = [rng.integers(0, 5000, n), rng.integers(0, 5000, n), rng.integers(0, 3, n)]
    cards = [5000, 5000, 3]
    big_codes, big_sizes, inv = group_codes(cols, cards, return_inverse=True)
    small = pd.DataFrame({"a": cols[0], "b": cols[1], "c": cols[2]}).groupby(["a", "b", "c"]).size()
    assert sorted(big_sizes.tolist()) == sorted(small.tolist())
    assert inv is not None
    # each row's class has that row's codes
    for i, col in enumerate(cols):
        assert np.array_equal(big_codes[inv, i], col)


def test_bincount_path_inverse() -> None:
    cols = [np.array([0, 1, 0, 1, 0]), np.array([2, 2, 2, 0, 2])]
    codes, sizes, inv = group_codes(cols, [2, 3], return_inverse=True)
    assert inv is not None
    assert np.array_equal(codes[inv, 0], cols[0]) and np.array_equal(codes[inv, 1], cols[1])
    assert sorted(sizes.tolist()) == [1, 1, 3]


def test_grouped_input_counts_and_never_merges() -> None:
    # x: 3, y: 1, missing: 2 (as a DataFrame and as an Arrow table)
    grouped = pd.DataFrame({"a": ["x", "y", None], "n": [3, 1, 2]})
    for given in (grouped, pa.Table.from_pandas(grouped)):
        t = class_table_from_grouped(given, ["a"], "n")
        assert t.records == 6 and _sorted_sizes(t) == [1, 2, 3]
    # a row counted 0 is no class
    counted = pd.DataFrame({"a": ["x", "y"], "n": [5, 0]})
    t = class_table_from_grouped(counted, ["a"], "n")
    assert class_values(t) == [("x",)] and t.sizes.tolist() == [5]
    # two rows that read back as one tuple are two classes of the database: never merged
    # (issue 25: merging them passed a MariaDB FLOAT table whose true k is 1)
    twice = pd.DataFrame({"a": ["x", "x", "y"], "n": [2, 3, 0]})
    with pytest.raises(InvalidInputError, match=r"1 of the 2 classes .* read back"):
        class_table_from_grouped(twice, ["a"], "n")


def test_arrow_and_pandas_agree_with_nulls() -> None:
    # (a, 1) x2, (None, 2) x2, (b, None) x1
    tbl = pa.table(
        {
            "s": pa.array(["a", None, "a", "b", None]),
            "i": pa.array([1, 2, 1, None, 2], type=pa.int64()),
        }
    )
    t1 = class_table_from_frame(tbl, ["s", "i"])
    t2 = class_table_from_frame(tbl.to_pandas(), ["s", "i"])
    assert _sorted_sizes(t1) == _sorted_sizes(t2) == [1, 2, 2]


def test_unsigned_values_beyond_int64_are_coded() -> None:
    # uint64 values from 2**63 cannot be offsets in int64: they are hashed (codes in order of
    # first appearance): 2**63+5 -> 0, 2**63+7 -> 1; two distinct values, one of them twice
    values = np.array([2**63 + 5, 2**63 + 7, 2**63 + 5], dtype=np.uint64)
    codes, cardinality, _ = encode_series(pd.Series(values))
    assert codes.tolist() == [0, 1, 0] and cardinality == 2
    frame = pd.DataFrame({"u": values})
    for given in (frame, pa.Table.from_pandas(frame)):
        assert _sorted_sizes(class_table_from_frame(given, ["u"])) == [1, 2]


@pytest.mark.parametrize("ref", reference_files(), ids=lambda p: p.stem)
def test_class_histogram_matches_arx(ref: object) -> None:
    """The class-size histogram of each ARX reference case (ARX 3.9.2, oracle/reference)."""
    data = load_reference(ref)  # type: ignore[arg-type]
    t = class_table_from_file(
        oracle_data(data["dataset"]), data["quasi_identifiers"], sep=data["sep"]
    )
    sizes, counts = t.histogram()
    assert [[int(s), int(c)] for s, c in zip(sizes, counts, strict=True)] == data[
        "class_size_histogram"
    ]


def test_radix_keys_by_hand() -> None:
    """The first QI is the most significant digit; fully suppressed classes have no key."""
    df = pd.DataFrame({"a": ["*", "x", "y", "*", "x"], "b": ["*", "1", "2", "3", "2"]})
    t = class_table_from_frame(df, ["a", "b"])
    assert t.excluded_records == 1
    keys = t.radix_keys()
    assert keys is not None and keys.shape == (t.classes,)
    expected = t.codes[:, 0] * t.cardinalities[1] + t.codes[:, 1]
    np.testing.assert_array_equal(keys, expected)
    assert len(set(keys.tolist())) == t.classes == 4
    assert t.radix_keys() is keys  # computed once


def test_radix_keys_none_beyond_63_bits() -> None:
    t = ClassTable(
        quasi_identifiers=("a", "b", "c"),
        sizes=np.array([1, 2], dtype=np.int64),
        codes=np.array([[0, 0, 0], [1, 1, 1]], dtype=np.int64),
        cardinalities=(1 << 31, 1 << 31, 4),
    )
    assert t.radix_keys() is None


@pytest.mark.parametrize("largest", [9, 10**9])  # counted by bincount / by np.unique
def test_histogram_both_ways(largest: int) -> None:
    sizes = np.array([3, 1, largest, 1, 3, 1], dtype=np.int64)
    t = ClassTable(
        quasi_identifiers=("a",),
        sizes=sizes,
        codes=np.arange(6, dtype=np.int64).reshape(6, 1),
        cardinalities=(6,),
    )
    values, counts = t.histogram()
    assert values.tolist() == [1, 3, largest] and counts.tolist() == [3, 2, 1]


def test_class_sizes_histogram() -> None:
    # 3 classes of size 1, 2 of size 3: 9 records in 5 classes, k = 1
    h = ClassSizes(("q",), np.array([1, 3]), np.array([3, 2]), excluded_records=4)
    assert (h.records, h.classes, h.k, h.excluded_records) == (9, 5, 1, 4)
    sizes, counts = h.histogram()
    assert sizes.dtype == counts.dtype == np.int64
    assert sizes.tolist() == [1, 3] and counts.tolist() == [3, 2]
    assert h.quasi_identifiers == ("q",)


@pytest.mark.parametrize(
    ("sizes", "counts", "message"),
    [
        ([3, 1], [1, 1], "distinct and ascending"),
        ([1, 1], [1, 1], "distinct and ascending"),
        ([0, 2], [1, 1], ">= 1"),
        ([1, 2], [1, 0], ">= 1"),
        ([1, 2], [1], "one length"),
    ],
)
def test_class_sizes_validation(sizes: list[int], counts: list[int], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        ClassSizes(("q",), np.array(sizes), np.array(counts))


def test_class_sizes_empty_is_an_empty_dataset() -> None:
    with pytest.raises(EmptyDatasetError):
        ClassSizes(("q",), np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    with pytest.raises(InvalidInputError, match="excluded"):
        ClassSizes(("q",), np.array([1]), np.array([1]), excluded_records=-1)
