"""Population uniqueness (metrics.md §4): Pitman, Zayatz, SNB and Dankar's rule.

Reference values are read from ARX 3.9.2's output (``../shared/oracle/reference/arx_*.json``,
copies in ``tests/data/arx``); the SNB test uses a simulated population whose number of uniques
is known by construction.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.engine.population import (
    REGIONS,
    PopulationEstimate,
    PopulationUniqueness,
    pitman,
    population_uniqueness,
    resolve_population_size,
    snb,
    zayatz,
)
from tests.conftest import load_reference, reference_files

IntArray = np.ndarray[Any, np.dtype[np.int64]]

# metrics.md §4: Pitman and Zayatz are ARX-exact to rel 1e-8.
REL = 1e-8


def _histogram(ref: dict[str, Any]) -> tuple[IntArray, IntArray]:
    pairs = np.array(ref["class_size_histogram"], dtype=np.int64)
    return pairs[:, 0], pairs[:, 1]


def _reference_cases() -> list[Any]:
    cases = []
    for path in reference_files():
        for key in load_reference(path)["population"]:
            cases.append(pytest.param(path, key, id=f"{path.stem}-{key}"))
    return cases


def _assert_estimate(mine: PopulationEstimate | None, arx: dict[str, Any] | None) -> None:
    if arx is None:
        assert mine is None
        return
    assert mine is not None
    assert mine.uniques == pytest.approx(arx["uniques"], rel=REL)
    assert mine.fraction == pytest.approx(arx["fraction"], rel=REL)


# ------------------------------------------------------------------------------------------
# 1. ARX 3.9.2 reference values
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "key"), _reference_cases())
def test_matches_arx(path: Path, key: str) -> None:
    ref = load_reference(path)
    arx = ref["population"][key]
    sizes, counts = _histogram(ref)
    records = int(ref["records"])
    assert int(np.dot(sizes, counts)) == records

    # The population size ARX used follows from the file's key.
    if key.startswith("f="):
        given = resolve_population_size(records, sampling_fraction=float(key[2:]))
    else:
        given = resolve_population_size(records, region=key)
    assert given == arx["population_size"]

    result = population_uniqueness(sizes, counts, arx["population_size"])
    assert result.population_size == arx["population_size"]
    assert result.sampling_fraction == records / arx["population_size"]
    _assert_estimate(result.pitman, arx["pitman"])
    _assert_estimate(result.zayatz, arx["zayatz"])
    # The single-model functions agree with the combined one.
    assert pitman(sizes, counts, arx["population_size"]) == result.pitman
    assert zayatz(sizes, counts, arx["population_size"]) == result.zayatz

    # Dankar's rule is ARX-exact up to sf = 0.1; above it ARX's SNB (never available for
    # sf < 1, a bug we do not copy) makes ARX fall back to Zayatz where we may use SNB.
    if result.sampling_fraction <= 0.1 or key == "usa":
        assert result.dankar is not None
        _assert_estimate(
            PopulationEstimate(result.dankar.uniques, result.dankar.fraction), arx["dankar"]
        )
        assert result.dankar.model == arx["dankar"]["model"]


def test_reference_covers_the_edge_cases() -> None:
    """The reference set includes a sample without uniques and one of uniques only."""
    refs = [load_reference(p) for p in reference_files()]
    c1 = [dict(map(tuple, r["class_size_histogram"])).get(1, 0) for r in refs]
    assert 0 in c1
    assert any(r["records"] == r["classes"] for r in refs)


# ------------------------------------------------------------------------------------------
# 2. SNB on a population drawn from the slide negative binomial model
# ------------------------------------------------------------------------------------------

# Population: K = 200,000 classes of sizes 1 + NegBin(alpha = 0.5, beta = 0.3), i.e. the SNB
# model itself with P(size = 1) = 0.3**0.5 = 0.548. With this seed N = 432,730 people, of whom
# 109,590 are population uniques (counted below, not assumed).
SNB_CLASSES, SNB_ALPHA, SNB_BETA, SNB_SEED = 200_000, 0.5, 0.3, 20240601

# Tolerance on |estimate / true uniques - 1|. The fitted SNB is a method-of-moments estimator:
# a smooth function of (u, c_1, c_2), each a sum over ~K independent classes, so when the data
# follow the model it is consistent and its error is close to normal with a relative standard
# deviation sigma(sf) that shrinks like 1/sqrt(K). For this very population, drawing 300
# independent samples per fraction (a one-off simulation with other seeds) gave
#     sf = 0.05: mean error +0.4%, sigma = 14.4%  (only ~1,200 pairs c_2 carry alpha and beta)
#     sf = 0.2:  mean error +0.3%, sigma = 2.2%
#     sf = 0.5:  mean error +0.1%, sigma = 0.6%
# i.e. no bias detectable against sigma. We allow 4 sigma (a normal error exceeds it with
# probability 6e-5; the largest of the 300 errors was 3.8, 2.8 and 2.7 sigma). The bounds
# still tell this estimator from the alternatives: on the samples drawn below, the same
# equations with K from the Shlosser-type estimator ARX uses (correctly coded) are +193% off at
# sf = 0.05 and +39% at 0.2, and Zayatz +202% and +73%.
SNB_TOLERANCE = {0.05: 0.58, 0.2: 0.09, 0.5: 0.025}


def _snb_population() -> IntArray:
    rng = np.random.default_rng(SNB_SEED)
    sizes: IntArray = 1 + rng.negative_binomial(SNB_ALPHA, SNB_BETA, size=SNB_CLASSES)
    return sizes


def _sample_histogram(
    population: IntArray, sf: float, rng: np.random.Generator
) -> tuple[IntArray, IntArray, int]:
    """Draw round(sf * N) people without replacement; return the sample's histogram and N."""
    big_n = int(population.sum())
    owner = np.repeat(np.arange(population.size), population)  # class of each person
    drawn = owner[rng.choice(big_n, size=round(sf * big_n), replace=False)]
    per_class = np.bincount(drawn)
    sizes, counts = np.unique(per_class[per_class > 0], return_counts=True)
    return sizes.astype(np.int64), counts.astype(np.int64), big_n


@pytest.fixture(scope="module")
def snb_population() -> IntArray:
    return _snb_population()


@pytest.mark.parametrize("sf", sorted(SNB_TOLERANCE))
def test_snb_recovers_population_uniques(snb_population: IntArray, sf: float) -> None:
    true_uniques = int(np.count_nonzero(snb_population == 1))
    sizes, counts, big_n = _sample_histogram(snb_population, sf, np.random.default_rng(7))

    result = population_uniqueness(sizes, counts, big_n)
    assert result.snb is not None
    assert abs(result.snb.uniques / true_uniques - 1) <= SNB_TOLERANCE[sf]
    assert result.snb.fraction == pytest.approx(result.snb.uniques / big_n, rel=1e-15)
    assert snb(sizes, counts, big_n) == result.snb

    # Zayatz and Pitman stay within their range; Zayatz overstates uniques on this population
    # (it takes the sample's class-size mix for the population's), less so as sf grows.
    assert result.zayatz is not None
    assert true_uniques < result.zayatz.uniques <= big_n
    assert result.pitman is None or 0 <= result.pitman.uniques <= big_n
    # Above sf = 0.1 Dankar's rule takes the smaller of Zayatz and SNB: here SNB.
    assert result.dankar is not None
    if sf > 0.1:
        assert result.dankar.model == "snb"
        assert result.dankar.uniques == result.snb.uniques


def test_zayatz_bias_shrinks_with_the_sampling_fraction(snb_population: IntArray) -> None:
    true_uniques = int(np.count_nonzero(snb_population == 1))
    rng = np.random.default_rng(11)
    errors = []
    for sf in (0.05, 0.2, 0.5, 0.9):
        estimate = zayatz(*_sample_histogram(snb_population, sf, rng))
        assert estimate is not None
        errors.append(estimate.uniques / true_uniques - 1)
    assert errors == sorted(errors, reverse=True)


def test_whole_population_gives_its_uniques_exactly(snb_population: IntArray) -> None:
    """At sf = 1 the sample is the population: Zayatz and SNB return c_1 itself."""
    sizes, counts = np.unique(snb_population, return_counts=True)
    big_n = int(snb_population.sum())
    true_uniques = int(counts[0])
    result = population_uniqueness(sizes.astype(np.int64), counts.astype(np.int64), big_n)
    assert result.sampling_fraction == 1.0
    assert result.zayatz == PopulationEstimate(true_uniques, true_uniques / big_n)
    assert result.snb == PopulationEstimate(true_uniques, true_uniques / big_n)
    assert result.dankar is not None
    assert (result.dankar.model, result.dankar.uniques) == ("snb", true_uniques)  # tie -> SNB


# ------------------------------------------------------------------------------------------
# 3. Edge cases
# ------------------------------------------------------------------------------------------


def test_no_sample_unique_gives_zero_and_model_dankar() -> None:
    sizes = np.array([2, 5, 9], dtype=np.int64)
    counts = np.array([3, 1, 2], dtype=np.int64)
    for big_n in (29, 290, 317_238_626):
        result = population_uniqueness(sizes, counts, big_n)
        zero = PopulationEstimate(0.0, 0.0)
        assert (result.pitman, result.zayatz, result.snb) == (zero, zero, zero)
        assert result.dankar is not None
        assert (result.dankar.uniques, result.dankar.fraction) == (0.0, 0.0)
        assert result.dankar.model == "dankar"
        assert pitman(sizes, counts, big_n) == zero
        assert zayatz(sizes, counts, big_n) == zero
        assert snb(sizes, counts, big_n) == zero


def test_sample_of_uniques_only() -> None:
    """ARX's C7 case: no Pitman fit; Zayatz says every person is unique."""
    sizes, counts = np.array([1], dtype=np.int64), np.array([7], dtype=np.int64)
    result = population_uniqueness(sizes, counts, 700)
    assert result.pitman is None
    assert result.snb is None  # c_2 = 0: the moment equations have no interior root
    assert result.zayatz == PopulationEstimate(700.0, 1.0)
    assert result.dankar is not None
    assert (result.dankar.model, result.dankar.uniques) == ("zayatz", 700.0)
    at_one = population_uniqueness(sizes, counts, 7)
    assert at_one.snb == PopulationEstimate(7.0, 1.0)


def test_dankar_uses_zayatz_when_pitman_is_unavailable_below_threshold() -> None:
    sizes, counts = np.array([1], dtype=np.int64), np.array([50], dtype=np.int64)
    result = population_uniqueness(sizes, counts, 5_000)
    assert result.sampling_fraction == 0.01
    assert result.pitman is None
    assert result.dankar is not None
    assert result.dankar.model == "zayatz"


def test_dense_histogram_with_zero_counts_is_accepted() -> None:
    sparse = population_uniqueness(np.array([1, 3]), np.array([4, 2]), 1_000)
    dense = population_uniqueness(np.array([1, 2, 3]), np.array([4, 0, 2]), 1_000)
    assert sparse == dense


def test_to_dict_is_the_contract_shape() -> None:
    sizes, counts = np.array([1, 2, 3], dtype=np.int64), np.array([40, 20, 10], dtype=np.int64)
    result = population_uniqueness(sizes, counts, 1_000)
    data = json.loads(json.dumps(result.to_dict()))
    assert list(data) == [
        "population_size",
        "sampling_fraction",
        "pitman",
        "zayatz",
        "snb",
        "dankar",
    ]
    assert data["population_size"] == 1_000
    assert data["sampling_fraction"] == 110 / 1_000
    for name in ("pitman", "zayatz", "snb"):
        assert data[name] is None or set(data[name]) == {"uniques", "fraction"}
    assert set(data["dankar"]) == {"uniques", "fraction", "model"}
    empty = PopulationUniqueness(1_000, 0.11, None, None, None, None).to_dict()
    assert [empty[k] for k in ("pitman", "zayatz", "snb", "dankar")] == [None] * 4


def test_large_population_keeps_precision() -> None:
    """N in the hundreds of millions: estimates stay finite and inside [0, N]."""
    sizes = np.array([1, 2, 3, 10, 100], dtype=np.int64)
    counts = np.array([500, 200, 80, 30, 5], dtype=np.int64)
    result = population_uniqueness(sizes, counts, REGIONS["usa"])
    for est in (result.pitman, result.zayatz, result.snb):
        assert est is not None
        assert 0 < est.uniques <= REGIONS["usa"]
        assert math.isfinite(est.fraction)


# --- resolve_population_size -------------------------------------------------------------


def test_resolve_population_size() -> None:
    assert resolve_population_size(100) is None
    assert resolve_population_size(100, population_size=1_000) == 1_000
    assert resolve_population_size(100, population_size=100) == 100
    assert resolve_population_size(100, sampling_fraction=1.0) == 100
    assert resolve_population_size(30_162, sampling_fraction=0.01) == 3_016_200
    assert resolve_population_size(7, sampling_fraction=0.2) == 35
    assert resolve_population_size(5, sampling_fraction=0.4) == 13  # 12.5: halves round up
    assert resolve_population_size(100, region="usa") == REGIONS["usa"] == 317_238_626
    assert resolve_population_size(100, region="USA") == REGIONS["usa"]


def test_resolve_population_size_rejects_more_than_one() -> None:
    with pytest.raises(InvalidInputError, match=r"at most one.*population_size and region"):
        resolve_population_size(10, population_size=100, region="usa")
    with pytest.raises(InvalidInputError, match="at most one"):
        resolve_population_size(10, population_size=100, sampling_fraction=0.1, region="usa")


@pytest.mark.parametrize("sf", [0.0, -0.1, 1.5, math.nan, math.inf])
def test_resolve_population_size_rejects_bad_fraction(sf: float) -> None:
    with pytest.raises(InvalidInputError, match=r"sampling_fraction must be in \(0, 1\]"):
        resolve_population_size(10, sampling_fraction=sf)


def test_resolve_population_size_rejects_bad_values() -> None:
    with pytest.raises(InvalidInputError, match=r"population \(N = 5\) is smaller .* \(n = 7\)"):
        resolve_population_size(7, population_size=5)
    with pytest.raises(InvalidInputError, match="known regions: usa"):
        resolve_population_size(7, region="atlantis")
    with pytest.raises(InvalidInputError, match="population_size must be an integer"):
        resolve_population_size(7, population_size=1e6)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="population_size must be an integer"):
        resolve_population_size(7, population_size=True)
    with pytest.raises(InvalidInputError, match="sampling_fraction must be a number"):
        resolve_population_size(7, sampling_fraction="a tenth")  # type: ignore[arg-type]
    with pytest.raises(EmptyDatasetError):
        resolve_population_size(0, sampling_fraction=0.5)


# --- invalid histograms ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sizes", "counts", "big_n", "message"),
    [
        ([1, 2], [3], 100, "same length, got 2 and 1"),
        ([2, 1], [1, 1], 100, "strictly ascending"),
        ([1, 1], [1, 1], 100, "strictly ascending"),
        ([0, 1], [1, 1], 100, "class sizes must be positive, got 0"),
        ([1, 2], [3, -1], 100, "class counts must be >= 0, got -1"),
        ([1, 2], [3, 2], 6, r"population \(N = 6\) is smaller than the sample \(n = 7\)"),
        ([1.5, 2], [3, 2], 100, "sizes must hold whole numbers"),
        ([[1, 2]], [[3, 2]], 100, "sizes must be one-dimensional"),
        (["a"], [1], 100, "sizes must hold integers"),
        ([1, 2], [3, 2], 100.0, "population_size must be an integer"),
    ],
)
def test_invalid_histogram(sizes: Any, counts: Any, big_n: Any, message: str) -> None:
    for function in (population_uniqueness, pitman, zayatz, snb):
        with pytest.raises(InvalidInputError, match=message):
            function(sizes, counts, big_n)


def test_empty_histogram() -> None:
    for sizes, counts in (([], []), ([1, 2], [0, 0])):
        with pytest.raises(EmptyDatasetError, match="no record"):
            population_uniqueness(np.array(sizes), np.array(counts), 100)


@pytest.mark.parametrize(
    ("u", "theta", "alpha"),
    [
        (60_000, 5_000.0, 0.6),
        (200_000, 3.0, 0.9),
        (80_000, 2e4, 0.05),
        (70_000, -0.5, 0.7),
        (900_000, 5.86e5, -0.3681),  # alpha < 0, every term positive
        (60_000, 2e5, -1.5),
    ],
)
def test_pitman_closed_form_sums_equal_the_loop(u: int, theta: float, alpha: float) -> None:
    """The O(1) digamma form of the sums over i < u equals summing them term by term."""
    from reident_airflow.engine.population import _u_sums_closed_form, _u_sums_loop

    closed = _u_sums_closed_form(u, theta, alpha)
    assert closed is not None
    for got, want in zip(closed, _u_sums_loop(u, theta, alpha), strict=True):
        assert got == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("theta", [7.5, -3.0, 0.0])
def test_pitman_sums_at_alpha_zero_equal_the_loop(theta: float) -> None:
    """alpha = 0 (an ARX start value): sums of powers of i over theta; 1/0 everywhere at 0."""
    from reident_airflow.engine.population import _u_sums_closed_form, _u_sums_loop

    u = 60_000
    closed = _u_sums_closed_form(u, theta, 0.0)
    assert closed is not None
    with np.errstate(divide="ignore", invalid="ignore"):
        loop = _u_sums_loop(u, theta, 0.0)
    for got, want in zip(closed, loop, strict=True):
        if theta == 0.0:
            assert got == want == float("inf")
        else:
            assert got == pytest.approx(want, rel=1e-12)


def test_pitman_closed_form_declines_where_it_would_lose_digits() -> None:
    from reident_airflow.engine.population import _u_sums_closed_form

    assert _u_sums_closed_form(1_000, 5.0, 0.5) is None  # small u: the exact loop is cheap
    assert _u_sums_closed_form(80_000, 1e6, 0.05) is None  # x = 2e7 > 10 u
    assert _u_sums_closed_form(80_000, 5.0, 0.0005) is None  # alpha near 0
    assert _u_sums_closed_form(80_000, 100.0, -0.5) is None  # alpha < 0 crossing a pole
