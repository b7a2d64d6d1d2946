"""l-diversity (metrics.md §7) against sdcMicro 5.8.0, and by hand.

Reference: ``ldiversity(testdata, keyVars, ldiv_index = "hhcivil")`` (``l_recurs_c = 2``) of
sdcMicro 5.8.0: per record in ``testdata_ldiversity_hhcivil.csv`` (its ``Multi*`` columns are
always 0 by a bug of sdcMicro's and are not compared), summaries in ``summary.json``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine import diversity
from reident_airflow.engine.aggregates import ValueCounts
from reident_airflow.engine.assessment import Thresholds, assess
from reident_airflow.engine.diversity import l_diversity
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.frames import aggregates_from_frame
from tests._sdcmicro import sdcmicro_data, sdcmicro_summary
from tests.engine._records import class_values, record_classes


@pytest.fixture(scope="module")
def testdata() -> pd.DataFrame:
    return pd.read_csv(sdcmicro_data("testdata_data.csv"))


def test_hhcivil_equals_sdcmicro_per_record(testdata: pd.DataFrame) -> None:
    info = sdcmicro_summary()["testdata"]
    agg = aggregates_from_frame(testdata, info["keyVars"], sensitive=["hhcivil"])
    ld = l_diversity(agg.sensitive["hhcivil"], agg.table.sizes, c=2)
    ref = pd.read_csv(sdcmicro_data("testdata_ldiversity_hhcivil.csv"))
    rows = record_classes(agg.table, testdata)  # each record's class, by its QI values
    assert (rows >= 0).all()
    np.testing.assert_array_equal(
        ld.per_class_distinct[rows], ref["hhcivil_Distinct_Ldiversity"].to_numpy()
    )
    np.testing.assert_allclose(
        ld.per_class_entropy[rows],
        ref["hhcivil_Entropy_Ldiversity"].to_numpy(),
        rtol=1e-12,
        atol=0,
    )
    np.testing.assert_array_equal(
        ld.per_class_recursive[rows], ref["hhcivil_Recursive_Ldiversity"].to_numpy()
    )
    # summary.json: [min, mean over records, max] and records with distinct l < 2
    summary = info["ldiversity_hhcivil"]["summary"]
    for key, per_class in (
        ("hhcivil_Distinct_Ldiversity", ld.per_class_distinct),
        ("hhcivil_Entropy_Ldiversity", ld.per_class_entropy),
        ("hhcivil_Recursive_Ldiversity", ld.per_class_recursive),
    ):
        lo, mean, hi = summary[key]
        values = per_class[rows].astype(np.float64)
        assert (values.min(), values.max()) == (lo, hi)
        assert math.isclose(values.mean(), mean, rel_tol=1e-12)
    assert ld.distinct == 1 and ld.recursive == 1 and ld.entropy == 1.0
    assert round(ld.homogeneous_records * len(testdata)) == 2466
    assert info["ldiversity_hhcivil"]["n_records_distinct_l_lt_2"] == 2466


def test_hhcivil_and_age_like_sdcmicro(testdata: pd.DataFrame) -> None:
    info = sdcmicro_summary()["testdata"]
    agg = aggregates_from_frame(testdata, info["keyVars"], sensitive=["hhcivil", "age"])
    rows = record_classes(agg.table, testdata)
    ld = l_diversity(agg.sensitive["age"], agg.table.sizes)
    summary = info["ldiversity_hhcivil_age"]["summary"]
    for key, per_class in (
        ("age_Distinct_Ldiversity", ld.per_class_distinct),
        ("age_Entropy_Ldiversity", ld.per_class_entropy),
        ("age_Recursive_Ldiversity", ld.per_class_recursive),
    ):
        lo, mean, hi = summary[key]
        values = per_class[rows].astype(np.float64)
        assert math.isclose(values.min(), lo, rel_tol=1e-12)
        assert math.isclose(values.max(), hi, rel_tol=1e-12)
        assert math.isclose(values.mean(), mean, rel_tol=1e-12)


def test_by_hand() -> None:
    # class A: x x x y      -> distinct 2, entropy exp(-(3/4 ln 3/4 + 1/4 ln 1/4)),
    #                          recursive c=2: r1=3 < 2*(1)? no -> 1
    # class B: x y z z (f 4) -> counts 2,1,1: l=2: 2 < 2*(1+1) yes; l=3: 2 < 2*1 no -> 2
    # class C: x y z w      -> counts 1,1,1,1: l=4: 1 < 2*1 yes -> 4
    # class D: missing, missing, x -> a missing value is a value: distinct 2
    frame = pd.DataFrame(
        {
            "q": list("AAAABBBBCCCCDDD"),
            "s": ["x", "x", "x", "y", "x", "y", "z", "z", "x", "y", "z", "w", None, None, "x"],
        }
    )
    agg = aggregates_from_frame(frame, ["q"], sensitive=["s"])
    ld = l_diversity(agg.sensitive["s"], agg.table.sizes, c=2)
    order = [q for (q,) in class_values(agg.table)]
    by_class = {
        q: (int(d), float(e), int(r))
        for q, d, e, r in zip(
            order,
            ld.per_class_distinct,
            ld.per_class_entropy,
            ld.per_class_recursive,
            strict=True,
        )
    }
    h_a = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    h_b = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    h_d = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert by_class["A"] == (2, pytest.approx(math.exp(h_a)), 1)
    assert by_class["B"] == (3, pytest.approx(math.exp(h_b)), 2)
    assert by_class["C"] == (4, pytest.approx(4.0), 4)
    assert by_class["D"] == (2, pytest.approx(math.exp(h_d)), 1)
    assert (ld.distinct, ld.recursive) == (2, 1)
    assert ld.entropy == pytest.approx(min(math.exp(h_a), math.exp(h_d)))
    assert ld.homogeneous_records == 0.0
    # a larger c makes recursive l easier to reach: c = 3 -> A: 3 < 3*1 no (1); D: 2 < 3 yes (2)
    ld3 = l_diversity(agg.sensitive["s"], agg.table.sizes, c=3)
    assert ld3.recursive == 1 and int(ld3.per_class_recursive.max()) == 4


def test_homogeneous_class_breaches_min_l() -> None:
    # 20 records share one diagnosis: risk 1/20 each, yet the diagnosis is disclosed (seed 003)
    frame = pd.DataFrame({"q": ["a"] * 20 + ["b"] * 20, "dx": ["flu"] * 20 + ["flu", "cold"] * 10})
    agg = aggregates_from_frame(frame, ["q"], sensitive=["dx"])
    result = assess(agg.table, sensitive=agg.sensitive, thresholds=Thresholds(min_l=2, min_k=5))
    doc = result.to_dict()
    assert doc["l_diversity"] == {
        "dx": {"distinct": 1, "entropy": 1.0, "recursive": 1, "c": 2.0, "homogeneous_records": 0.5}
    }
    assert doc["breaches"] == [{"metric": "l_diversity.dx.distinct", "observed": 1.0, "limit": 2.0}]
    assert result.breaches[0].describe() == "l_diversity.dx.distinct = 1 (limit: at least 2)"
    assert doc["prosecutor"]["highest_risk"] == 0.05


def test_bad_input() -> None:
    frame = pd.DataFrame({"q": ["a", "a", "b"], "s": [1, 2, 3]})
    with pytest.raises(InvalidInputError, match="'q' is also a quasi-identifier"):
        aggregates_from_frame(frame, ["q"], sensitive=["q"])
    with pytest.raises(InvalidInputError, match="unknown sensitive column 'z'"):
        aggregates_from_frame(frame, ["q"], sensitive=["z"])
    with pytest.raises(InvalidInputError, match="listed twice"):
        aggregates_from_frame(frame, ["q"], sensitive=["s", "s"])
    agg = aggregates_from_frame(frame, ["q"], sensitive=["s"])
    for c in (0, -1, float("nan"), "x"):
        with pytest.raises(InvalidInputError, match="recursive c"):
            l_diversity(agg.sensitive["s"], agg.table.sizes, c=c)  # type: ignore[arg-type]
    wrong = ValueCounts("s", np.array([0, 1]), np.array([1, 1]))
    with pytest.raises(InvalidInputError, match="do not add up"):
        l_diversity(wrong, agg.table.sizes)
    with pytest.raises(InvalidInputError, match=r"minimum l .* sensitive"):
        assess(agg.table, thresholds=Thresholds(min_l=2))
    for bad in (0, 1.5, True):
        with pytest.raises(InvalidInputError, match="min_l"):
            Thresholds(min_l=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(5))
def test_equals_the_definitions_on_random_tables(seed: int) -> None:
    """Every class checked against the definitions of metrics.md §7, computed directly."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 80))
        frame = pd.DataFrame(
            {
                "q": rng.integers(0, int(rng.integers(1, 7)), n),
                "s": rng.integers(0, int(rng.integers(1, 7)), n),
            }
        )
        c = float(rng.choice([0.5, 1.0, 1.5, 2.0, 3.0]))
        agg = aggregates_from_frame(frame, ["q"], sensitive=["s"])
        rows = record_classes(agg.table, frame)
        ld = l_diversity(agg.sensitive["s"], agg.table.sizes, c=c)
        for j in range(agg.table.classes):
            counts = np.sort(frame["s"][rows == j].value_counts().to_numpy())[::-1]
            m, f = len(counts), int(counts.sum())
            recursive = max(
                [1] + [ell for ell in range(2, m + 1) if counts[0] < c * counts[ell - 1 :].sum()]
            )
            entropy = math.exp(-sum(r / f * math.log(r / f) for r in counts))
            assert ld.per_class_distinct[j] == m
            assert ld.per_class_recursive[j] == recursive, (counts, c)
            assert math.isclose(ld.per_class_entropy[j], entropy, rel_tol=1e-12)


def _by_definition(values: list[int], c: float) -> tuple[int, float, int]:
    """Distinct, entropy and recursive (c, l) of one class's value counts, as defined."""
    counts = sorted(values, reverse=True)
    m, f = len(counts), sum(counts)
    recursive = max(
        [1] + [ell for ell in range(2, m + 1) if counts[0] < c * sum(counts[ell - 1 :])]
    )
    entropy = math.exp(-sum(r / f * math.log(r / f) for r in counts))
    return m, entropy, recursive


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scale", [1, 1 << 20, 1 << 30])
def test_value_counts_against_the_definitions(
    seed: int, scale: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Classes of 1, 2, 3 and many values (closed forms for 1 and 2, a search beyond), small
    and huge counts (32- and 64-bit keys, running sums past 2**32), pairs in any order,
    entropy sums over one block or many."""
    if seed >= 2:
        monkeypatch.setattr(diversity, "_BLOCK", 7)
    rng = np.random.default_rng(seed)
    classes = [[int(x) for x in rng.integers(1, 6, size=m) * scale] for m in (1, 2, 3, 1, 2, 3)]
    classes += [[int(x) for x in rng.integers(1, 10**6, size=m)] for m in (2, 3, 7)]
    classes += [[5, 5], [4, 2, 2], [4, 1, 1, 1, 1], [9, 1, 1, 1], [7], [1] * 40, [40, *[1] * 39]]
    classes.append([1 << 24] * 300)  # more than 2**32 records
    for _ in range(60):
        m = int(rng.choice([1, 2, 3, 4, int(rng.integers(5, 60))]))
        classes.append([int(x) for x in rng.integers(1, int(rng.choice([3, 30, 500])), size=m)])
    cls = np.repeat(np.arange(len(classes)), [len(v) for v in classes])
    cnt = np.concatenate([np.array(v, dtype=np.int64) for v in classes])
    sizes = np.array([sum(v) for v in classes], dtype=np.int64)
    order = rng.permutation(cls.shape[0]) if seed % 2 else np.arange(cls.shape[0])
    counts = ValueCounts("s", cls[order], cnt[order])
    for c in (0.1, 0.3, 0.5, 0.7, 1.0, 1.1, 2.0, 3.0, 7.5, 1e6):
        ld = l_diversity(counts, sizes, c=c)
        for j, values in enumerate(classes):
            m, entropy, recursive = _by_definition(values, c)
            assert ld.per_class_distinct[j] == m
            assert ld.per_class_recursive[j] == recursive, (values, c)
            assert math.isclose(ld.per_class_entropy[j], entropy, rel_tol=1e-12)
        assert ld.recursive == int(ld.per_class_recursive.min())
        single = sum(sum(v) for v in classes if len(v) == 1)
        assert ld.homogeneous_records == single / int(sizes.sum())


def test_value_counts_that_do_not_fit() -> None:
    sizes = np.array([3, 2], dtype=np.int64)
    for cls, cnt, message in (
        ([0, 1], [3, 3], "do not add up"),  # class 1 has 3 values counted, 2 records
        ([0, 0], [1, 2], "do not add up"),  # class 1 has no value
        ([0, 2], [3, 2], "do not fit"),  # class 2 does not exist
        ([0, 1], [3, 0], "do not fit"),  # a count of 0
        ([], [], "do not add up"),
    ):
        counts = ValueCounts("s", np.array(cls, dtype=np.int64), np.array(cnt, dtype=np.int64))
        with pytest.raises(InvalidInputError, match=message):
            l_diversity(counts, sizes)


@pytest.mark.parametrize("homogeneous", [True, False])
def test_minima_with_and_without_a_homogeneous_class(homogeneous: bool) -> None:
    """The table's l are the minima over its classes. With a single-valued class they are 1
    (read off the class starts, the per-class arrays computed only when asked for); without
    one, from every class. Expected values by the definitions (``_by_definition``)."""
    classes = [[3, 1], [2, 2, 1], [6, 1, 1]] + ([[4]] if homogeneous else [])
    cls = np.repeat(np.arange(len(classes)), [len(v) for v in classes])
    cnt = np.concatenate([np.array(v, dtype=np.int64) for v in classes])
    sizes = np.array([sum(v) for v in classes], dtype=np.int64)
    ld = l_diversity(ValueCounts("s", cls, cnt), sizes, c=2.0)
    expected = [_by_definition(v, 2.0) for v in classes]
    assert ld.distinct == min(e[0] for e in expected)
    assert ld.entropy == min(e[1] for e in expected)
    assert ld.recursive == min(e[2] for e in expected)
    # by hand: without [4], the smallest are those of [3, 1]: 2 values, entropy
    # exp(3/4 ln 4/3 + 1/4 ln 4), recursive 1 (3 < 2 * 1 fails)
    hand = math.exp(0.75 * math.log(4 / 3) + 0.25 * math.log(4))
    if homogeneous:
        assert (ld.distinct, ld.entropy, ld.recursive) == (1, 1.0, 1)
    else:
        assert (ld.distinct, ld.recursive) == (2, 1)
        assert math.isclose(ld.entropy, hand, rel_tol=1e-12)
    for j, (m, entropy, recursive) in enumerate(expected):
        assert ld.per_class_distinct[j] == m and ld.per_class_recursive[j] == recursive
        assert math.isclose(ld.per_class_entropy[j], entropy, rel_tol=1e-12)
    assert ld.homogeneous_records == (4 / 21 if homogeneous else 0.0)


def test_counts_from_the_grouping_are_checked_once_when_built(
    testdata: pd.DataFrame,
) -> None:
    """Value counts computed with the class table are checked when built (grouped by class,
    adding up to its sizes) and carry those sizes; the same arrays without them are checked
    by l-diversity, with identical results, and against other sizes they are refused."""
    info = sdcmicro_summary()["testdata"]
    agg = aggregates_from_frame(testdata, info["keyVars"], sensitive=["hhcivil"])
    sizes = agg.table.sizes
    checked = agg.sensitive["hhcivil"]
    assert checked.sizes is not None and np.array_equal(checked.sizes, sizes)
    assert checked.starts is not None  # the grouping lists where each class's pairs start
    bare = ValueCounts("hhcivil", checked.classes, checked.counts)
    assert bare.sizes is None
    a, b = l_diversity(checked, sizes.copy()), l_diversity(bare, sizes)
    assert a.to_dict() == b.to_dict()
    np.testing.assert_array_equal(a.per_class_distinct, b.per_class_distinct)
    np.testing.assert_array_equal(a.per_class_entropy, b.per_class_entropy)
    np.testing.assert_array_equal(a.per_class_recursive, b.per_class_recursive)
    # other sizes (one class larger): refused
    other = sizes.copy()
    other[0] += 1
    with pytest.raises(InvalidInputError, match="do not add up"):
        l_diversity(checked, other)
    with pytest.raises(InvalidInputError, match="do not add up"):
        ValueCounts("hhcivil", checked.classes, checked.counts, sizes=other)


def test_value_counts_by_class_starts() -> None:
    """Pairs given by where each class's pairs start: the class of every pair is derived
    (hand-made: classes 0, 1, 2 with 2, 1 and 3 pairs); bad layouts are refused."""
    counts = np.array([1, 2, 4, 1, 1, 1], dtype=np.int64)
    starts = np.array([0, 2, 3], dtype=np.int64)
    sizes = np.array([3, 4, 3], dtype=np.int64)
    vc = ValueCounts("s", counts=counts, starts=starts, sizes=sizes)
    np.testing.assert_array_equal(vc.classes, [0, 0, 1, 2, 2, 2])
    ld = l_diversity(vc, sizes)
    # by hand: class 1 has one value (l = 1 everywhere); classes 0 and 2: 2 and 3 values
    assert (ld.distinct, ld.recursive, ld.entropy) == (1, 1, 1.0)
    np.testing.assert_array_equal(ld.per_class_distinct, [2, 1, 3])
    assert ld.homogeneous_records == 4 / 10
    bare = l_diversity(ValueCounts("s", vc.classes, counts), sizes)
    np.testing.assert_array_equal(ld.per_class_entropy, bare.per_class_entropy)
    np.testing.assert_array_equal(ld.per_class_recursive, bare.per_class_recursive)
    with pytest.raises(InvalidInputError, match="give the class of each pair"):
        ValueCounts("s", counts=counts)
    with pytest.raises(InvalidInputError, match="no counts"):
        ValueCounts("s", classes=vc.classes)
    for bad in ([0, 2], [1, 2, 3], [0, 2, 6]):  # a class missing, no class at 0, past the end
        with pytest.raises(InvalidInputError, match=r"do not (add up|fit)"):
            ValueCounts("s", counts=counts, starts=np.array(bad), sizes=sizes)
