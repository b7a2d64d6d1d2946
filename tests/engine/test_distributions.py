"""The measures of distributions equal the engine's on the class table they summarise.

No Spark here: a random class table is built, its distributions (subset histograms, distinct
``(f, F)`` pairs, distinct value-count profiles) are derived from it in plain Python, and the
measures of :mod:`reident_airflow.engine.distributions` must equal, bit for bit, the
engine's own functions on the full class table. :func:`distributions_of` derives them from
a class table: its histograms are checked against ARX 3.9.2's numbers and hand-made cases,
its assessment against the class table's own.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
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
    distributions_of,
    individual_risk_of,
    l_diversity_of,
    ranked_subsets,
    ranking_of,
)
from reident_airflow.engine.diversity import l_diversity
from reident_airflow.engine.encoding import encode_arrow
from reident_airflow.engine.individual_risk import individual_risk
from tests.conftest import load_reference, oracle_data, reference_files


def _rows(seed: int, n: int = 3000, m: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, [3, 5, 7, 11][:m], size=(n, m))


def _histogram(values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    tally = Counter(values)
    sizes = sorted(tally)
    return np.array(sizes, dtype=np.int64), np.array([tally[s] for s in sizes], dtype=np.int64)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_size", [None, 2, 4])
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
    # by default the 4 single columns, the 4 subsets with one QI left out and the full set;
    # up to 2 columns: 4 + 6 + the full set; up to 4: the full lattice, 2^4 - 1
    assert len(got) == {None: 4 + 4 + 1, 2: 4 + 6 + 1, 4: 15}[max_size]
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


# ------------------------------------------------------------------- distributions_of a table
@pytest.mark.parametrize("ref", reference_files(), ids=lambda p: p.stem)
def test_distributions_of_a_class_table_give_arx_numbers(ref: Path) -> None:
    """The distributions of ARX's data sets' class tables carry ARX 3.9.2's class-size
    histogram, and their QI ranking ARX's distinction and separation of every subset (rel
    1e-12, as ``test_attributes`` checks the class table's); assessed, they give what the
    class table itself gives, with and without the ranking (every subset, or up to 1)."""
    from reident_airflow.engine.assessment import assess
    from reident_airflow.sources.frames import class_table_from_frame

    data = load_reference(ref)
    frame = pd.read_csv(
        oracle_data(data["dataset"]), sep=data["sep"], dtype=str, keep_default_na=False
    )
    table = class_table_from_frame(frame, data["quasi_identifiers"])
    lattice = len(data["quasi_identifiers"])  # every subset: the full lattice, asked for
    counted = distributions_of(table, rank_attributes=True, max_subset_size=lattice)
    histogram = counted.histogram
    assert [[int(s), int(c)] for s, c in zip(histogram.sizes, histogram.counts, strict=True)] == (
        data["class_size_histogram"]
    )
    assert (histogram.records, histogram.classes) == (data["records"], data["classes"])
    assert counted.collected_rows == 0 and counted.weights is None and not counted.profiles
    ranking = ranking_of(histogram.quasi_identifiers, histogram, counted.subsets)  # type: ignore[arg-type]
    got = {frozenset(r.columns): r for r in ranking}
    assert len(got) == len(data["attributes"])
    for item in data["attributes"]:
        r = got[frozenset(item["columns"])]
        assert r.distinction == pytest.approx(item["distinction"], rel=1e-12, abs=0)
        assert r.separation == pytest.approx(item["separation"], rel=1e-12, abs=0)
    for rank, size in ((True, None), (True, 1), (False, None)):
        of = distributions_of(table, rank_attributes=rank, max_subset_size=size)
        assert (of.subsets is not None) == rank
        want = assess(table, attributes=rank, max_subset_size=size, region="usa").to_dict()
        assert assess(of, attributes=rank, max_subset_size=size, region="usa").to_dict() == want


def test_distributions_of_hand_made_aggregates() -> None:
    """Hand-made: classes of sizes 3, 3, 4, 3, 1 whose sensitive values are counted
    [2, 1], [1, 2], [1, 2, 1], [3], [1] (the order a source gave them) and whose weight sums
    are 6, 6, 8, 9, 2. Distinct profiles (size, counts ascending): (1, [1]) once,
    (3, [1, 2]) twice, (3, [3]) once, (4, [1, 1, 2]) once; distinct (f, F) pairs: (1, 2),
    (3, 6) twice, (3, 9), (4, 8). QIs a, b with codes (0,0) (0,1) (1,0) (1,1) (2,0): on a,
    classes of 6, 7, 1 records; on b, 8 and 6."""
    from reident_airflow.engine.aggregates import ClassAggregates
    from reident_airflow.engine.assessment import assess
    from reident_airflow.engine.classes import ClassTable

    sizes = np.array([3, 3, 4, 3, 1], dtype=np.int64)
    table = ClassTable(
        ("a", "b"), sizes, np.array([[0, 0], [0, 1], [1, 0], [1, 1], [2, 0]]), (3, 2)
    )
    counts = ValueCounts(
        "s",
        np.array([0, 0, 1, 1, 2, 2, 2, 3, 4]),
        np.array([2, 1, 1, 2, 1, 2, 1, 3, 1]),
    )
    aggregates = ClassAggregates(
        table, ClassWeights("w", np.array([6.0, 6.0, 8.0, 9.0, 2.0])), {"s": counts}
    )
    got = distributions_of(
        table, weights=aggregates.weights, sensitive={"s": counts}, rank_attributes=True
    )
    profiles = got.profiles["s"]
    ends = [*profiles.starts.tolist()[1:], len(profiles.counts)]
    found = sorted(
        (int(f), profiles.counts[profiles.starts[p] : ends[p]].tolist(), int(c))
        for p, (f, c) in enumerate(zip(profiles.sizes, profiles.classes, strict=True))
    )
    assert found == [(1, [1], 1), (3, [1, 2], 2), (3, [3], 1), (4, [1, 1, 2], 1)]
    assert got.weights is not None and got.weights.column == "w"
    pairs = zip(
        got.weights.sizes.tolist(),
        got.weights.sums.tolist(),
        got.weights.classes.tolist(),
        strict=True,
    )
    assert list(pairs) == [(1, 2.0, 1), (3, 6.0, 2), (3, 9.0, 1), (4, 8.0, 1)]
    assert got.subsets is not None
    hists = {cols: (s.tolist(), c.tolist()) for cols, (s, c) in got.subsets.histograms.items()}
    assert hists == {(0,): ([1, 6, 7], [1, 1, 1]), (1,): ([6, 8], [1, 1])}
    # assessed: what the class table with its aggregates gives (the engine's per-class path)
    want = assess(aggregates, recursive_c=1.5, record_threshold=0.2).to_dict()
    assert assess(got, recursive_c=1.5, record_threshold=0.2).to_dict() == want


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_distributions_of_random_aggregates_equal_plain_python(seed: int) -> None:
    """The profiles of :func:`distributions_of` are those counted in plain Python from the
    rows (each class's sensitive values tallied, the tallies sorted, the ``(size, tallies)``
    counted), and its subsets' histograms those of the rows grouped on each subset."""
    from reident_airflow.sources.frames import aggregates_from_frame

    rows = _rows(seed, m=3)
    rng = np.random.default_rng(seed + 20)
    values = rng.integers(0, 3, rows.shape[0])
    names = ["a", "b", "c"]
    frame = pd.DataFrame({n: rows[:, i].astype(str) for i, n in enumerate(names)})
    frame["s"] = values.astype(str)
    aggregates = aggregates_from_frame(frame, names, sensitive=["s"])
    got = distributions_of(aggregates.table, sensitive=aggregates.sensitive, rank_attributes=True)
    profiles = got.profiles["s"]
    ends = [*profiles.starts.tolist()[1:], len(profiles.counts)]
    found: Counter[tuple[int, tuple[int, ...]]] = Counter()
    for p, (f, c) in enumerate(
        zip(profiles.sizes.tolist(), profiles.classes.tolist(), strict=True)
    ):
        profile = (f, tuple(profiles.counts[profiles.starts[p] : ends[p]].tolist()))
        assert profile not in found  # distinct profiles
        found[profile] = c
    tallies: dict[tuple[int, ...], Counter[int]] = {}
    for row, v in zip(map(tuple, rows.tolist()), values.tolist(), strict=True):
        tallies.setdefault(row, Counter())[v] += 1
    want = Counter((sum(t.values()), tuple(sorted(t.values()))) for t in tallies.values())
    assert found == want
    assert got.subsets is not None
    for cols in ranked_subsets(3, None):
        per_subset = Counter(map(tuple, rows[:, list(cols)].tolist()))
        want_sizes, want_counts = _histogram(list(per_subset.values()))
        got_sizes, got_counts = got.subsets.histograms[cols]
        assert got_sizes.tolist() == want_sizes.tolist()
        assert got_counts.tolist() == want_counts.tolist()


def test_pairs_too_wide_for_one_key_are_still_told_apart() -> None:
    """Profiles are told apart by pairs (group, count) packed into one int64 key when it fits;
    beyond, by a sort of the pairs: the same ids either way (hand-made: the first two pairs
    equal, the third not, the fourth equal to the third)."""
    from reident_airflow.engine import distributions

    wide = np.array([1 << 61, 1 << 61, 0, 0], dtype=np.int64)  # (2^61) * 6 overflows 2^62
    ids = distributions._dense(wide, np.array([5, 5, 5, 5], dtype=np.int64))
    assert ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]
    narrow = distributions._dense(np.array([3, 3, 0, 0]), np.array([5, 5, 5, 5]))
    assert narrow[0] == narrow[1] and narrow[2] == narrow[3] and narrow[0] != narrow[2]
