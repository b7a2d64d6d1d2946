"""Individual risk from sampling weights (metrics.md §6) against sdcMicro 5.8.0, and by hand.

Reference: ``measure_risk(x, keyVars, w)`` of sdcMicro 5.8.0 on its ``testdata`` and
``francdat`` data sets (``tests/_sdcmicro.py``): per record ``fk``, ``Fk`` and ``risk`` in
``*_indivrisk.csv``, the global risk in ``summary.json``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine import individual_risk as individual_risk_module
from reident_airflow.engine.aggregates import ClassAggregates, ClassWeights
from reident_airflow.engine.assessment import Thresholds, assess
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.individual_risk import (
    benedetti_franconi,
    individual_risk,
    individual_risk_summary,
)
from reident_airflow.sources.frames import aggregates_from_frame, class_table_from_frame
from tests._sdcmicro import sdcmicro_data, sdcmicro_summary
from tests.engine._records import record_classes

DATASETS = ["testdata", "francdat"]


def _dataset(name: str) -> tuple[pd.DataFrame, dict[str, object]]:
    info = sdcmicro_summary()[name]
    return pd.read_csv(sdcmicro_data(str(info["data_file"]))), info


@pytest.mark.parametrize("name", DATASETS)
def test_per_record_fk_Fk_and_risk_equal_sdcmicro(name: str) -> None:
    frame, info = _dataset(name)
    agg = aggregates_from_frame(frame, list(info["keyVars"]), weight=str(info["weightVar"]))
    assert agg.weights is not None
    risk = individual_risk(agg.table.sizes, agg.weights)
    ref = pd.read_csv(sdcmicro_data(f"{name}_indivrisk.csv"))
    rows = record_classes(agg.table, frame)  # each record's class, by its QI values
    assert (rows >= 0).all()
    np.testing.assert_array_equal(agg.table.sizes[rows], ref["fk"].to_numpy())
    np.testing.assert_allclose(agg.weights.sums[rows], ref["Fk"].to_numpy(), rtol=1e-12, atol=0)
    np.testing.assert_allclose(risk.risk[rows], ref["risk"].to_numpy(), rtol=1e-12, atol=0)
    # freqCalc's scalars
    freq = info["freqCalc"]
    assert isinstance(freq, dict)
    assert int((agg.table.sizes == 1).sum()) == freq["sample_uniques"]
    assert agg.table.classes == freq["n_equivalence_classes"]
    assert math.isclose(
        float((agg.table.sizes * agg.weights.sums).sum()),
        freq["sum_Fk_over_records"],
        rel_tol=1e-12,
    )


@pytest.mark.parametrize("name", DATASETS)
def test_global_risk_equals_sdcmicro(name: str) -> None:
    frame, info = _dataset(name)
    agg = aggregates_from_frame(frame, list(info["keyVars"]), weight=str(info["weightVar"]))
    assert agg.weights is not None
    risk = individual_risk(agg.table.sizes, agg.weights)
    ref = info["measure_risk"]
    assert isinstance(ref, dict)
    assert math.isclose(risk.global_risk, ref["global_risk_ER"], rel_tol=1e-12)
    assert math.isclose(risk.global_risk_share, ref["global_risk"], rel_tol=1e-12)
    assert math.isclose(risk.highest, ref["max_indiv_risk"], rel_tol=1e-12)


def test_benedetti_franconi_by_hand() -> None:
    # f = 1, F = 4: p = 1/4, p/(1-p) ln(1/p) = (1/3) ln 4
    # f = 2, F = 8: p = 1/4, (1/3) - (1/9) ln 4
    # f = 3, F = 30: p = 1/10, p / (f - (1 - p)) = 0.1 / 2.1
    # f = 5, F = 5: the class is its population: 1/5
    sizes = np.array([1, 2, 3, 5], dtype=np.int64)
    sums = np.array([4.0, 8.0, 30.0, 5.0])
    got = benedetti_franconi(sizes, sums)
    expected = [math.log(4) / 3, 1 / 3 - math.log(4) / 9, 0.1 / 2.1, 0.2]
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    summary = individual_risk(sizes, ClassWeights("w", sums), record_threshold=0.19)
    total = sum(f * r for f, r in zip(sizes.tolist(), expected, strict=True))
    assert math.isclose(summary.global_risk, total, rel_tol=1e-15)
    assert math.isclose(summary.global_risk_share, total / 11, rel_tol=1e-15)
    assert summary.highest == pytest.approx(math.log(4) / 3)
    # records whose risk > 0.19: the unique record (0.462) and the class of 5 (0.2)
    assert summary.records_above_threshold == 6 / 11
    assert summary.records_affected_by_highest == 1 / 11


def _by_formula(f: int, big_f: float) -> float:
    """The risk of one class, as metrics.md §6 writes it (Python floats)."""
    p = f / big_f
    if f == big_f:
        return 1 / f
    if f == 1:
        return p / (1 - p) * math.log(1 / p)
    if f == 2:
        return p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    return p / (f - (1 - p))


def test_benedetti_franconi_over_blocks_of_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every class takes its formula whatever the block it falls in (blocks of 3 here)."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 6, 200)
    sums = sizes * rng.choice([1.0, 1.0, 1.25, 3.0, 40.0, 1e5], 200)
    whole = benedetti_franconi(sizes, sums)
    monkeypatch.setattr(individual_risk_module, "_BLOCK", 3)
    np.testing.assert_array_equal(benedetti_franconi(sizes, sums), whole)
    expected = [_by_formula(f, big) for f, big in zip(sizes.tolist(), sums.tolist(), strict=True)]
    np.testing.assert_allclose(whole, expected, rtol=1e-13)


def test_summary_of_groups_of_records() -> None:
    # two groups (e.g. two sets of like classes a source counted once): 2 records at risk 0.5,
    # 3 at 0.1; n = 5, threshold 0.2: above it 2/5 = 0.4 (the highest, too); the totals are
    # the caller's: global risk 2*0.5 + 3*0.1 = 1.3, its share 1.3/5 = 0.26
    summary = individual_risk_summary(
        "w",
        np.array([2, 3], dtype=np.int64),
        np.array([0.5, 0.1]),
        record_threshold=0.2,
        global_risk=1.3,
        estimated_population=40.0,
    )
    assert summary.records == 5 and summary.weight == "w"
    assert summary.highest == 0.5 and summary.lowest == 0.1
    assert summary.records_above_threshold == summary.records_affected_by_highest == 0.4
    assert summary.global_risk == 1.3 and summary.global_risk_share == pytest.approx(0.26)
    assert summary.estimated_population == 40.0 and summary.record_threshold == 0.2


def test_journalist_basis_is_sampling_weights_and_gate() -> None:
    frame = pd.DataFrame({"q": ["a", "a", "b"], "w": [10.0, 30.0, 4.0]})
    agg = aggregates_from_frame(frame, ["q"], weight="w")
    result = assess(
        agg.table, weights=agg.weights, thresholds=Thresholds(max_global_risk=0.05)
    ).to_dict()
    j = result["journalist"]
    assert j["basis"] == "sampling_weights" and j["weight"] == "w"
    # a: f=2, F=40, p=1/20: 1/19 - (1/19)^2 ln 20;  b: f=1, F=4: (1/3) ln 4
    ra = 1 / 19 - (1 / 19) ** 2 * math.log(20)
    rb = math.log(4) / 3
    assert j["highest_risk"] == pytest.approx(rb)
    assert j["average_risk"] == pytest.approx((2 * ra + rb) / 3)
    ind = result["individual_risk"]
    assert ind["weight"] == "w" and ind["global_risk"] == pytest.approx(2 * ra + rb)
    assert ind["estimated_population"] == 44.0
    assert result["breaches"] == [
        {
            "metric": "individual_risk.global_risk_share",
            "observed": pytest.approx((2 * ra + rb) / 3),
            "limit": 0.05,
        }
    ]
    # the prosecutor is untouched
    assert result["prosecutor"]["highest_risk"] == 1.0


def test_register_stays_the_journalist_basis_when_weights_are_also_given() -> None:
    frame = pd.DataFrame({"q": ["a", "a", "b"], "w": [10.0, 30.0, 4.0]})
    agg = aggregates_from_frame(frame, ["q"], weight="w")
    register = class_table_from_frame(pd.DataFrame({"q": ["a"] * 4 + ["b"] * 2}), ["q"])
    result = assess(agg.table, weights=agg.weights, population_table=register).to_dict()
    assert result["journalist"]["basis"] == "population_table"
    assert result["individual_risk"]["weight"] == "w"


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        # missing: None in text, pd.NA in a nullable column (a numpy NaN is a value: not finite)
        (["1", None, "2"], "1 missing value"),
        (pd.array([1.0, None, 2.0], dtype="Float64"), "1 missing value"),
        ([1.0, float("nan"), 2.0], "1 value.* not finite"),
        (["1", "x", "2"], "not numeric: 1 value"),
        ([1.0, 0.0, 2.0], "1 zero or negative weight"),
        ([1.0, -3.0, -2.0], "2 zero or negative weight"),
        ([0.4, 0.5, 2.0], "sum to less than their number of records"),
        ([1.0, float("inf"), 2.0], "not finite"),
        pytest.param([True, False, True], "is not numeric", id="boolean"),
    ],
)
def test_bad_weights(weights: list[object], message: str) -> None:
    frame = pd.DataFrame({"q": ["a", "a", "b"], "w": weights})
    with pytest.raises(InvalidInputError, match=message) as info:
        aggregates_from_frame(frame, ["q"], weight="w")
    assert "'w'" in str(info.value)


def test_bad_weight_columns() -> None:
    frame = pd.DataFrame({"q": ["a", "a", "b"], "s": [1, 2, 3], "w": [1.0, 2.0, 3.0]})
    with pytest.raises(InvalidInputError, match="unknown weight column 'nope'"):
        aggregates_from_frame(frame, ["q"], weight="nope")
    with pytest.raises(InvalidInputError, match="weight column 'q' is also a quasi-identifier"):
        aggregates_from_frame(frame, ["q"], weight="q")
    with pytest.raises(InvalidInputError, match="also listed as sensitive"):
        aggregates_from_frame(frame, ["q"], weight="s", sensitive=["s"])
    agg = aggregates_from_frame(frame, ["q"])
    with pytest.raises(InvalidInputError, match=r"maximum global risk .* weight column"):
        assess(agg.table, thresholds=Thresholds(max_global_risk=0.1))


def test_weight_sums_are_checked_where_they_meet_class_sizes() -> None:
    """Sums are checked when the aggregates are built and again by the individual risk
    against the sizes it is given: the same risk from the aggregation's sums and from a copy,
    and sums below the class sizes refused at both places."""
    frame = pd.DataFrame({"q": ["a", "a", "b", "c", "c", "c"], "w": [2.0, 3.0, 1.5, 1.0, 4, 9]})
    agg = aggregates_from_frame(frame, ["q"], weight="w")
    assert agg.weights is not None
    marked = individual_risk(agg.table.sizes, agg.weights)
    bare = individual_risk(agg.table.sizes.copy(), ClassWeights("w", agg.weights.sums.copy()))
    np.testing.assert_array_equal(marked.risk, bare.risk)
    assert marked.global_risk == bare.global_risk
    with pytest.raises(InvalidInputError, match="sum to less than"):
        ClassAggregates(agg.table, ClassWeights("w", agg.weights.sums / 100))
    # by hand, class b: one record standing for 1.5 people: p = 1/1.5, risk p/(1-p) ln(1/p)
    p = 1 / 1.5
    b = int(np.flatnonzero(agg.table.sizes == 1)[0])
    assert marked.risk[b] == pytest.approx(p / (1 - p) * np.log(1 / p), rel=1e-15)
    too_small = agg.table.sizes * 100  # other sizes (another object): checked, refused
    with pytest.raises(InvalidInputError, match="sum to less than"):
        individual_risk(too_small, agg.weights)
