"""Per-class aggregates (weight sums, sensitive value counts) as the sources hand them over.

Files and DataFrames are grouped by DuckDB (:mod:`reident_airflow.sources.files`), grouped
results by :func:`aggregate_grouped`; both end in the types of
:mod:`reident_airflow.engine.aggregates`. Expected values are hand-computed, or pandas'
group-by of the same rows.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from reident_airflow.engine.aggregates import (
    ClassAggregates,
    ClassWeights,
    ValueCounts,
    aggregate_grouped,
)
from reident_airflow.engine.classes import ClassTable
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources.files import aggregates_from_file
from reident_airflow.sources.frames import aggregates_from_frame
from tests.engine._records import class_values


def _frame(n: int, cards: list[int], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data: dict[str, object] = {
        f"q{i}": rng.integers(0, c, n) * 7 + 1000 for i, c in enumerate(cards)
    }
    data["w"] = rng.uniform(1.0, 50.0, n)
    data["s"] = rng.choice(["x", "y", "z", None], n)
    data["t"] = rng.integers(0, 4, n)
    return pd.DataFrame(data)


def _per_class(agg: ClassAggregates) -> dict[tuple[object, ...], dict[str, object]]:
    """Each class's size, weight sum and sorted value counts, keyed by its QI values."""
    table = agg.table
    out: dict[tuple[object, ...], dict[str, object]] = {}
    for j, values in enumerate(class_values(table)):
        entry: dict[str, object] = {"size": int(table.sizes[j])}
        if agg.weights is not None:
            entry["sum"] = float(agg.weights.sums[j])
        for name, vc in agg.sensitive.items():
            first, end = np.searchsorted(vc.classes, [j, j + 1])  # the pairs are ordered by class
            entry[name] = sorted(vc.counts[first:end].tolist())
        out[values] = entry
    return out


def test_weight_sums_and_value_counts_by_hand() -> None:
    # class a: weights 1.5 + 2 + 4 = 7.5, values x, x, y -> counts 2, 1
    # class b: weights 10 + 2.5 = 12.5, values x and a missing value (a value of its own)
    # class c: weight 1, value z
    frame = pd.DataFrame(
        {
            "q": ["a", "a", "a", "b", "b", "c"],
            "s": ["x", "x", "y", "x", None, "z"],
            "w": [1.5, 2.0, 4.0, 10.0, 2.5, 1.0],
        }
    )
    agg = aggregates_from_frame(frame, ["q"], weight="w", sensitive=["s"])
    assert _per_class(agg) == {
        ("a",): {"size": 3, "sum": 7.5, "s": [1, 2]},
        ("b",): {"size": 2, "sum": 12.5, "s": [1, 1]},
        ("c",): {"size": 1, "sum": 1.0, "s": [1]},
    }
    assert agg.weights is not None and agg.weights.column == "w"
    # the counts are ordered by class and add up to the class sizes, class by class
    vc = agg.sensitive["s"]
    assert (np.diff(vc.classes) >= 0).all()
    np.testing.assert_array_equal(
        np.bincount(vc.classes, weights=vc.counts, minlength=agg.table.classes),
        agg.table.sizes,
    )
    # checked when built: the counts carry the sizes they were proven to add up to
    assert vc.sizes is not None and np.array_equal(vc.sizes, agg.table.sizes)


@pytest.mark.parametrize("cards", [[30, 40], [300, 300, 300]], ids=str)
def test_aggregates_equal_a_pandas_group_by(cards: list[int]) -> None:
    """Few classes, and mostly unique records: each class's size, weight sum and value
    counts are pandas' (a missing sensitive value counted as one value)."""
    frame = _frame(4000, cards, seed=len(cards))
    qis = [f"q{i}" for i in range(len(cards))]
    agg = aggregates_from_frame(frame, qis, weight="w", sensitive=["s", "t"])
    got = _per_class(agg)
    rows = frame.fillna({"s": "<missing>"})
    groups = rows.groupby(qis)
    values = {
        name: rows.groupby([*qis, name]).size().groupby(level=qis).agg(lambda c: sorted(c))
        for name in ("s", "t")
    }
    want = {
        tuple(int(v) for v in key): {
            "size": int(size),
            "sum": pytest.approx(total, rel=1e-12),
            **{name: values[name][key] for name in values},
        }
        for key, size, total in zip(
            groups.size().index, groups.size(), groups["w"].sum(), strict=True
        )
    }
    assert got == want


def test_fully_suppressed_records_are_excluded_from_every_aggregate() -> None:
    # (*, *) x2 leaves; (1, x) with weights 2 + 3 and values u, u, and (2, *) with weight 4
    # and value v stay: a '*' in one QI only is a value like another
    frame = pd.DataFrame(
        {
            "a": ["*", "*", "1", "1", "2"],
            "b": ["*", "*", "x", "x", "*"],
            "w": [5.0, 5.0, 2.0, 3.0, 4.0],
            "s": ["u", "v", "u", "u", "v"],
        }
    )
    agg = aggregates_from_frame(frame, ["a", "b"], weight="w", sensitive=["s"])
    assert agg.table.excluded_records == 2 and agg.table.records == 3
    assert _per_class(agg) == {
        ("1", "x"): {"size": 2, "sum": 5.0, "s": [2]},
        ("2", "*"): {"size": 1, "sum": 4.0, "s": [1]},
    }
    # each remaining class holds one value: both homogeneous
    from reident_airflow.engine.diversity import l_diversity

    ld = l_diversity(agg.sensitive["s"], agg.table.sizes)
    assert ld.per_class_distinct.tolist() == [1, 1] and ld.homogeneous_records == 1.0


def test_text_weights_are_parsed(tmp_path: Path) -> None:
    # CSV holds text: "1.5" + "2" = 3.5 for a, "3e1" = 30 for b
    path = tmp_path / "weights.csv"
    path.write_text("q,w\na,1.5\na,2\nb,3e1\n")
    agg = aggregates_from_file(path, ["q"], weight="w")
    assert _per_class(agg) == {("a",): {"size": 2, "sum": 3.5}, ("b",): {"size": 1, "sum": 30.0}}
    # a DataFrame column of text reads the same way
    frame = pd.DataFrame({"q": ["a", "a", "b"], "w": ["1.5", "2", "3e1"]})
    assert _per_class(aggregates_from_frame(frame, ["q"], weight="w")) == _per_class(agg)
    # text that is no number, a missing weight: errors that count the records, not values
    path.write_text("q,w\na,1.5\na,many\nb,2\n")
    with pytest.raises(InvalidInputError, match="'w' is not numeric: 1 value"):
        aggregates_from_file(path, ["q"], weight="w")
    path.write_text("q,w\na,1.5\na,\nb,2\n")
    with pytest.raises(InvalidInputError, match="'w' has 1 missing value"):
        aggregates_from_file(path, ["q"], weight="w")


def test_grouped_results_give_the_same_aggregates() -> None:
    frame = _frame(3000, [6, 7], seed=9)
    qis = ["q0", "q1"]
    counts = (
        frame.groupby(qis, dropna=False)
        .agg(n=("w", "size"), total=("w", "sum"))
        .reset_index()
        .rename(columns={"n": "cnt"})
    )
    vc = frame.groupby([*qis, "s"], dropna=False).size().rename("cnt").reset_index()
    grouped = aggregate_grouped(
        counts, qis, "cnt", weight="w", weight_sum_column="total", value_counts={"s": vc}
    )
    direct = aggregates_from_frame(frame, qis, weight="w", sensitive=["s"])
    want = _per_class(direct)
    got = _per_class(grouped)
    assert got.keys() == want.keys()
    for key, entry in got.items():
        assert entry["size"] == want[key]["size"] and entry["s"] == want[key]["s"]
        assert entry["sum"] == pytest.approx(want[key]["sum"], rel=1e-12)
    # value counts that do not add up to the class sizes: different data
    broken = vc.assign(cnt=vc["cnt"] + 1)
    with pytest.raises(InvalidInputError, match="do not add up"):
        aggregate_grouped(counts, qis, "cnt", value_counts={"s": broken})
    with pytest.raises(EmptyDatasetError):
        aggregate_grouped(counts.head(0), qis, "cnt")


def test_empty_input() -> None:
    frame = pd.DataFrame({"q": pd.Series([], dtype=str), "w": pd.Series([], dtype=float)})
    with pytest.raises(EmptyDatasetError):
        aggregates_from_frame(frame, ["q"], weight="w")


@pytest.mark.parametrize("values", [4, 300, 70_000])
def test_sensitive_dictionary_columns_count_like_plain_text(values: int) -> None:
    """Dictionary columns (as Parquet reads them): chunks with their own dictionaries and
    nulls in the indices count their values like the same column as plain text."""
    rng = np.random.default_rng(values)
    n = 3 * values + 500
    text = np.array([f"v{i}" for i in rng.integers(0, values, n)], dtype=object)
    text[rng.integers(0, n, 20)] = None
    cuts = [(0, n // 3), (n // 3, n // 2), (n // 2, n)]
    column = pa.chunked_array([pa.array(text[a:b].tolist()).dictionary_encode() for a, b in cuts])
    qi = pa.array(rng.integers(0, 5, n))
    want = aggregates_from_frame(
        pa.table({"q": qi, "s": column.cast(pa.string())}), ["q"], sensitive=["s"]
    )
    got = aggregates_from_frame(pa.table({"q": qi, "s": column}), ["q"], sensitive=["s"])
    assert _per_class(got) == _per_class(want)


@pytest.mark.parametrize("threaded", [False, True], ids=["inline", "threaded"])
def test_assess_shares_the_measures_between_threads_without_changing_them(
    threaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever measures are asked for (ranking, weights, sensitive columns), each comes out
    as when computed alone, inline or with the work split between a worker thread and the
    caller's."""
    from reident_airflow.engine import _parallel
    from reident_airflow.engine.assessment import assess
    from reident_airflow.engine.diversity import l_diversity
    from reident_airflow.engine.individual_risk import individual_risk

    frame = _frame(3000, [12, 9], seed=11)
    agg = aggregates_from_frame(frame, ["q0", "q1"], weight="w", sensitive=["s", "t"])
    assert agg.weights is not None
    alone_ir = individual_risk(agg.table.sizes, agg.weights).to_dict()
    alone_ld = {k: l_diversity(v, agg.table.sizes).to_dict() for k, v in agg.sensitive.items()}
    alone_ranking = assess(agg.table).to_dict()["attributes"]
    if threaded:
        monkeypatch.setattr(_parallel, "PARALLEL_MIN_WORK", 0)
    for attributes in (True, False):
        for weights in (agg.weights, None):
            for sensitive in (agg.sensitive, None):
                got = assess(
                    agg.table, attributes=attributes, weights=weights, sensitive=sensitive
                ).to_dict()
                assert got["attributes"] == (alone_ranking if attributes else [])
                assert got["individual_risk"] == (alone_ir if weights is not None else None)
                assert got["l_diversity"] == (alone_ld if sensitive is not None else None)
                if sensitive is not None:
                    assert list(got["l_diversity"]) == ["s", "t"]  # the columns' order


def test_class_aggregates_check_what_they_hold_when_built() -> None:
    """Holding a ClassAggregates proves its parts fit its table: counts given in any order
    are kept ordered by class and carrying the table's sizes; counts or sums that do not fit
    are refused when built; and the object is frozen (hand-made: classes of 3, 1 and 2)."""
    sizes = np.array([3, 1, 2], dtype=np.int64)
    table = ClassTable(
        quasi_identifiers=("q",),
        sizes=sizes,
        codes=np.array([[0], [1], [2]], dtype=np.int64),
        cardinalities=(3,),
    )
    shuffled = ValueCounts("s", np.array([2, 0, 1, 0]), np.array([2, 1, 1, 2]))
    agg = ClassAggregates(table, ClassWeights("w", np.array([3.0, 1.5, 4.0])), {"s": shuffled})
    held = agg.sensitive["s"]
    np.testing.assert_array_equal(held.classes, [0, 0, 1, 2])
    np.testing.assert_array_equal(held.counts, [1, 2, 1, 2])
    assert held.sizes is not None and np.array_equal(held.sizes, sizes)
    with pytest.raises(InvalidInputError, match="do not add up"):
        ClassAggregates(table, sensitive={"s": ValueCounts("s", np.array([0, 1, 2]), sizes + 1)})
    with pytest.raises(InvalidInputError, match="sum to less than"):
        ClassAggregates(table, ClassWeights("w", np.array([3.0, 0.5, 4.0])))
    with pytest.raises(dataclasses.FrozenInstanceError):
        agg.weights = None  # type: ignore[misc]


def test_assess_takes_class_aggregates_whole() -> None:
    """``assess(aggregates, options)`` is ``assess`` of its table with its weight sums and
    value counts beside it; ``options_for`` names its QIs, weight and sensitive columns; and
    aggregates given twice (inside and beside) are refused."""
    from reident_airflow.engine.assessment import assess, options_for

    frame = _frame(2000, [7, 5], seed=3)
    agg = aggregates_from_frame(frame, ["q0", "q1"], weight="w", sensitive=["s", "t"])
    options = options_for(agg, rank_attributes=False)
    assert (options.quasi_identifiers, options.weight, options.sensitive) == (
        ("q0", "q1"),
        "w",
        ("s", "t"),
    )
    want = assess(agg.table, options, weights=agg.weights, sensitive=agg.sensitive)
    assert assess(agg, options).to_dict() == want.to_dict()
    assert assess(agg, attributes=False).to_dict() == want.to_dict()
    plain = aggregates_from_frame(frame, ["q0", "q1"])
    assert assess(plain, options_for(plain)).to_dict() == assess(plain.table).to_dict()
    with pytest.raises(TypeError, match="takes no weights or sensitive beside it"):
        assess(agg, options, weights=agg.weights)
