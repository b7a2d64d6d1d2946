"""The measures of distributions equal the engine's on the class table they summarise.

No Spark here: a random class table is built, its distributions (subset histograms, distinct
``(f, F)`` pairs, distinct value-count profiles) are derived from it in plain Python, and the
measures of :mod:`reident_airflow.engine.distributions` must equal, bit for bit, the
engine's own functions on the full class table.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from reident_airflow.engine._exact import order_free_sum
from reident_airflow.engine.aggregates import ClassWeights, ValueCounts
from reident_airflow.engine.attributes import attribute_risks
from reident_airflow.engine.classes import ClassSizes, class_table_of, group_codes
from reident_airflow.engine.distributions import (
    Distributions,
    SubsetHistograms,
    ValueProfiles,
    WeightPairs,
    individual_risk_of,
    l_diversity_of,
    ranked_subsets,
    ranking_of,
)
from reident_airflow.engine.diversity import l_diversity
from reident_airflow.engine.encoding import encode_arrow
from reident_airflow.engine.individual_risk import individual_risk


def _rows(seed: int, n: int = 3000, m: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, [3, 5, 7, 11][:m], size=(n, m))


def _histogram(values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    tally = Counter(values)
    sizes = sorted(tally)
    return np.array(sizes, dtype=np.int64), np.array([tally[s] for s in sizes], dtype=np.int64)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_size", [None, 2])
def test_ranking_equals_attribute_risks(seed: int, max_size: int | None) -> None:
    import pyarrow as pa

    rows = _rows(seed)
    names = ["a", "b", "c", "d"]
    encoded = encode_arrow(pa.table({n: rows[:, i] for i, n in enumerate(names)}), names)
    codes, sizes, _ = group_codes(encoded.codes, encoded.cardinalities)
    table, _ = class_table_of(encoded, codes, sizes)
    want = attribute_risks(table, max_size)
    hists = {}
    for cols in ranked_subsets(4, max_size):
        per_subset = Counter(map(tuple, rows[:, list(cols)].tolist()))
        hists[cols] = _histogram(list(per_subset.values()))
    full = ClassSizes(tuple(names), *_histogram(table.sizes.tolist()))
    got = ranking_of(tuple(names), full, SubsetHistograms(hists))
    assert got == want
    assert len(got) == (15 if max_size is None else 4 + 6 + 1)
    assert set(ranked_subsets(4, 2)) == set(combinations(range(4), 1)) | set(
        combinations(range(4), 2)
    )


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_repeated_order_free_sum_is_order_free_sum_of_the_repeats(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(300) * 10.0 ** rng.integers(-8, 8, 300)
    repeats = rng.integers(0, 50, 300)
    assert order_free_sum(values, repeats=repeats) == order_free_sum(np.repeat(values, repeats))
    assert order_free_sum(values[:0], repeats=repeats[:0]) == 0.0


def _classes(seed: int, smallest: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class sizes, each record's class and its weight (integers and halves: exact sums)."""
    rng = np.random.default_rng(seed)
    u = 400
    sizes = np.asarray(rng.integers(smallest, 9, u), dtype=np.int64)
    record_class = np.repeat(np.arange(u), sizes)
    weights = rng.integers(2, 60, record_class.shape[0]) / 2.0 + 1.0
    return sizes, record_class, weights


@pytest.mark.parametrize("seed", [0, 1])
def test_individual_risk_of_the_pairs_is_the_engines(seed: int) -> None:
    sizes, record_class, weights = _classes(seed)
    sums = np.bincount(record_class, weights=weights).astype(np.float64)
    want = individual_risk(sizes, ClassWeights("w", sums), record_threshold=0.2)
    pairs = Counter(zip(sizes.tolist(), sums.tolist(), strict=True))
    keys = sorted(pairs)
    got = individual_risk_of(
        WeightPairs(
            "w",
            sizes=np.array([k[0] for k in keys], dtype=np.int64),
            sums=np.array([k[1] for k in keys], dtype=np.float64),
            classes=np.array([pairs[k] for k in keys], dtype=np.int64),
        ),
        0.2,
    )
    assert got.to_dict() == want.to_dict()
    assert got.journalist_dict() == want.journalist_dict()


@pytest.mark.parametrize(("seed", "diverse"), [(0, False), (1, False), (2, True), (3, True)])
def test_l_diversity_of_the_profiles_is_the_engines(seed: int, diverse: bool) -> None:
    """``diverse``: every class has two values at least (no homogeneous class, so that the
    entropy and recursive minima are computed, not 1)."""
    sizes, record_class, _ = _classes(seed, smallest=2 if diverse else 1)
    rng = np.random.default_rng(seed + 10)
    values = np.asarray(rng.integers(0, 4, record_class.shape[0]), dtype=np.int64)
    if diverse:
        first = np.r_[0, np.cumsum(sizes)[:-1]]
        values[first], values[first + 1] = 4, 5
    per_class: list[Counter[int]] = [
        Counter(values[record_class == j].tolist()) for j in range(sizes.shape[0])
    ]
    counts = [sorted(c.values()) for c in per_class]
    starts = np.cumsum([0, *[len(c) for c in counts[:-1]]])
    flat = np.array([v for c in counts for v in c], dtype=np.int64)
    want = l_diversity(ValueCounts("s", counts=flat, starts=starts, sizes=sizes), sizes, c=1.5)
    profiles = Counter((int(f), tuple(c)) for f, c in zip(sizes, counts, strict=True))
    keys = sorted(profiles)
    got = l_diversity_of(
        ValueProfiles(
            "s",
            sizes=np.array([k[0] for k in keys], dtype=np.int64),
            counts=np.array([v for k in keys for v in k[1]], dtype=np.int64),
            starts=np.cumsum([0, *[len(k[1]) for k in keys[:-1]]]).astype(np.int64),
            classes=np.array([profiles[k] for k in keys], dtype=np.int64),
        ),
        1.5,
    )
    assert got.to_dict() == want.to_dict()
    assert got.records == want.records
    assert (want.entropy > 1.0) == diverse


def test_assessing_distributions_checks_both_levels_on_the_measures_it_adds() -> None:
    """Warning levels of the weights' global risk are checked once the individual risk is
    measured: the verdict on the histogram alone must neither drop nor refuse them."""
    from reident_airflow.engine.assessment import assess
    from reident_airflow.engine.options import AssessmentOptions, Thresholds

    sizes, record_class, weights = _classes(0)
    sums = np.bincount(record_class, weights=weights).astype(np.float64)
    want = individual_risk(sizes, ClassWeights("w", sums), record_threshold=0.2)
    pairs = Counter(zip(sizes.tolist(), sums.tolist(), strict=True))
    keys = sorted(pairs)
    weight_pairs = WeightPairs(
        "w",
        sizes=np.array([k[0] for k in keys], dtype=np.int64),
        sums=np.array([k[1] for k in keys], dtype=np.float64),
        classes=np.array([pairs[k] for k in keys], dtype=np.int64),
    )
    distinct, counts = np.unique(sizes, return_counts=True)
    options = AssessmentOptions(
        ("a",),
        weight="w",
        rank_attributes=False,
        thresholds=Thresholds(max_global_risk=1.0, min_k=1),
        warn_thresholds=Thresholds(max_global_risk=1e-9, min_k=100),
    )
    got = assess(Distributions(ClassSizes(("a",), distinct, counts), weights=weight_pairs), options)
    assert got.passed
    assert [(w.metric, w.observed) for w in got.warnings] == [
        ("k", 1.0),
        ("individual_risk.global_risk_share", want.global_risk_share),
    ]
    assert got.warn_thresholds == options.warn_thresholds


def test_distributions_hold_the_columns_the_options_name() -> None:
    """The options of distributions are those of what was counted (``options_for``); options
    naming a weight or a sensitive column that was not counted, a register, SUDA2 or
    aggregates beside the distributions are refused."""
    from reident_airflow.engine.assessment import assess, options_for
    from reident_airflow.engine.errors import InvalidInputError
    from reident_airflow.engine.options import AssessmentOptions

    counted = Distributions(
        ClassSizes(("a",), np.array([1, 2], dtype=np.int64), np.array([2, 1], dtype=np.int64))
    )
    options = options_for(counted, rank_attributes=False)
    assert (options.quasi_identifiers, options.weight, options.sensitive) == (("a",), None, ())
    want = assess(counted.histogram, attributes=False).to_dict()
    assert assess(counted, options).to_dict() == want
    with pytest.raises(InvalidInputError, match="no weight pairs were counted"):
        assess(counted, AssessmentOptions(("a",), weight="w"))
    with pytest.raises(InvalidInputError, match="no value profiles were counted"):
        assess(counted, AssessmentOptions(("a",), sensitive=("s",)))
    with pytest.raises(InvalidInputError, match="suda"):
        assess(counted, AssessmentOptions(("a",), suda=True))
    with pytest.raises(TypeError, match="takes no weights or sensitive beside it"):
        assess(counted, options, sensitive={})
