"""Population uniqueness (metrics.md §4): Pitman, Zayatz, SNB and Dankar's rule.

Reference values are read from ARX 3.9.2's output (``tests/data/arx/arx_*.json``); the SNB
test uses a simulated population whose number of uniques is known by construction.
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
    from reident_airflow.engine._pitman_sums import u_sums_closed_form, u_sums_loop

    closed = u_sums_closed_form(u, theta, alpha)
    assert closed is not None
    for got, want in zip(closed, u_sums_loop(u, theta, alpha), strict=True):
        assert got == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("theta", [7.5, -3.0, 0.0])
def test_pitman_sums_at_alpha_zero_equal_the_loop(theta: float) -> None:
    """alpha = 0 (an ARX start value): sums of powers of i over theta; 1/0 everywhere at 0."""
    from reident_airflow.engine._pitman_sums import u_sums_closed_form, u_sums_loop

    u = 60_000
    closed = u_sums_closed_form(u, theta, 0.0)
    assert closed is not None
    with np.errstate(divide="ignore", invalid="ignore"):
        loop = u_sums_loop(u, theta, 0.0)
    for got, want in zip(closed, loop, strict=True):
        if theta == 0.0:
            assert got == want == float("inf")
        else:
            assert got == pytest.approx(want, rel=1e-12)


def test_pitman_closed_form_declines_where_it_would_lose_digits() -> None:
    from reident_airflow.engine._pitman_sums import u_sums_closed_form

    assert u_sums_closed_form(1_000, 5.0, 0.5) is None  # small u: the exact loop is cheap
    assert u_sums_closed_form(80_000, 1e6, 0.05) is None  # x = 2e7 > 10 u
    assert u_sums_closed_form(80_000, 5.0, 0.0005) is None  # alpha near 0
    assert u_sums_closed_form(80_000, 100.0, -0.5) is None  # alpha < 0 crossing a pole


# ------------------------------------------------------------------------------------------
# 4. Pitman's sums over i < u in O(1) (Euler-Maclaurin), against summing term by term
# ------------------------------------------------------------------------------------------

# The five sums are S0 = sum 1/d, S1 = sum i/d, Q0 = sum 1/d^2, Q1 = sum i/d^2 and
# Q2 = sum i^2/d^2 over i = 1..u-1, d = theta + i*alpha. u_sums evaluates them in O(1) to a
# relative 1e-14 (docstring); the tests allow 1e-13 against the correctly rounded sum of the
# loop's own terms (math.fsum), on cases where no term nearly cancels (|d| is not << |theta|),
# since there both evaluations inherit the rounding of theta and alpha, differently.
U_SUMS_REL = 1e-13


def _u_terms(u: int, theta: float, alpha: float) -> list[Any]:
    i = np.arange(1, u, dtype=np.float64)
    inv = 1.0 / (theta + i * alpha)
    return [inv, i * inv, inv * inv, i * inv * inv, i * i * inv * inv]


@pytest.mark.parametrize(
    ("u", "theta", "alpha"),
    [
        # where the old digamma closed form declined and the O(u) loop ran:
        (943_153, 15_533_076.64, -0.9277),  # alpha < 0, z = 1.67e7 > 10 u (the slow histogram)
        (943_153, 16_913_810.1, -1.0946),  # ARX's first start on that histogram
        (2_500_000, 1.4e9, -0.35),  # u = 2.5M, z = 4e9 >> u
        (80_000, 1e6, 0.05),  # x = 2e7 > 10 u
        (80_000, 5.0, 0.0005),  # alpha near 0, x = 1e4
        (200_000, 1e11, 1e-4),  # x = 1e15
        (30_000, 120.0, 0.4),  # u < 50,000
        (943_153, 49_708.0, 0.2107),  # (accepted before too)
        (200, 0.3, 0.33),  # an ARX start on a small histogram
        (5, 0.66, 0.99),
        (2, 0.5, 0.5),  # one term
        (64, 10.0, 0.5),  # every term within 64 of the pole: all summed one by one
        (70_000, -0.5, 0.7),  # -1 < x < 0: the first terms large
        (100_000, -0.7, 0.01),  # x = -70, pole between i = 70 and 71: sign changes
        (60_000, 2e5, -1.5),  # alpha < 0, pole z = 133,333 beyond u
        (90_000, 9.0e4 * 0.37, -0.37),  # alpha < 0, pole just beyond the last term (z = 9e4)
        # nearly constant terms, |alpha| (u-1) <= 2^-20 |theta| (a series in alpha/theta):
        (100_000, 1e12, 1e-2),
        (100_000, 5.0, -1e-12),
        (100_000, 7.5, 0.0),  # alpha = 0, an ARX start
        (100_000, 1e12, 2.0**-20 * 1e12 / 99_999 * 1.001),  # just above that threshold
    ],
)
def test_u_sums_equal_the_loop(u: int, theta: float, alpha: float) -> None:
    from reident_airflow.engine._pitman_sums import u_sums, u_sums_loop

    got = u_sums(u, theta, alpha)
    loop = u_sums_loop(u, theta, alpha)
    for mine, terms, chunked in zip(got, _u_terms(u, theta, alpha), loop, strict=True):
        exact = math.fsum(terms)
        magnitude = math.fsum(np.abs(terms))
        assert abs(mine - exact) <= U_SUMS_REL * magnitude
        assert abs(chunked - exact) <= U_SUMS_REL * magnitude  # the loop, for the record
        if bool(np.all(terms >= 0)) or bool(np.all(terms <= 0)):
            assert mine == pytest.approx(exact, rel=U_SUMS_REL)


def test_u_sums_on_a_grid_of_regimes() -> None:
    """(u, x = theta/alpha) over the regimes: x >> u, x ~ u, x small, alpha < 0, both signs."""
    from reident_airflow.engine._pitman_sums import u_sums

    for u in (3, 65, 130, 1_000, 40_000, 250_000):
        for x in (-0.9, -0.25, 0.0, 3.0, 63.0, 64.0, 0.7 * u, 2.0 * u, 50.0 * u, 1e6 * u):
            for alpha in (0.9, 0.013, -0.6):
                theta = x * alpha if alpha > 0 else (x + 1.5 * u) * -alpha  # alpha < 0: no pole
                got = u_sums(u, theta, alpha)
                for mine, terms in zip(got, _u_terms(u, theta, alpha), strict=True):
                    assert mine == pytest.approx(math.fsum(terms), rel=U_SUMS_REL), (u, x, alpha)


@pytest.mark.parametrize(
    ("u", "theta", "alpha"),
    [
        (300, 50.25, -0.5),  # pole at i = 100.5: terms of both signs
        (300, 50.25, -0.125),  # pole at 402 > u: all one sign, the last near it
        (40, -0.8125, 0.125),  # theta < -alpha: pole at i = 6.5
        (400, -0.5, 0.0009765625),  # pole at 512 > u, alpha = 2^-10
        (1_000, 1000.0, -0.0009765625),  # pole at 1,024,000 far beyond u
        (250, 3.0, 0.5),
    ],
)
def test_u_sums_equal_the_exact_rational_sums(u: int, theta: float, alpha: float) -> None:
    """Binary-exact theta, alpha: the exact sums (fractions) across a pole, to 1e-13."""
    from fractions import Fraction

    from reident_airflow.engine._pitman_sums import u_sums

    t, a = Fraction(theta), Fraction(alpha)
    exact = [Fraction(0)] * 5
    magnitude = [Fraction(0)] * 5
    for i in range(1, u):
        d = t + i * a
        for k, term in enumerate((1 / d, i / d, 1 / d**2, i / d**2, i * i / d**2)):
            exact[k] += term
            magnitude[k] += abs(term)
    for mine, want, size in zip(u_sums(u, theta, alpha), exact, magnitude, strict=True):
        assert abs(Fraction(mine) - want) <= Fraction(U_SUMS_REL) * size


def test_u_sums_at_a_pole_and_degenerate_points() -> None:
    from reident_airflow.engine._pitman_sums import u_sums

    inf = (math.inf,) * 5
    assert u_sums(1_000, 0.0, 0.0) == inf  # 1/0 in every term (the loop's sums are inf too)
    assert u_sums(1_000, 100.0, -0.5) == inf  # theta + 200 alpha = 0
    assert u_sums(1_000, -0.5, 0.1) == inf  # theta + 5 alpha = 0
    assert u_sums(1, 0.3, 0.3) == (0.0,) * 5  # u = 1: no term
    assert not all(map(math.isfinite, u_sums(10**6, 0.0, 1e-170)))  # 1/d^2 overflows


@pytest.mark.parametrize(
    ("i0", "i1", "y0", "s"),
    [
        (1, 1, 64.0, 1),  # a single term
        (5, 9, 1e3, 1),  # tau = D / (y0 + y1) small: the series
        (1, 100, 64.5, 1),  # tau ~ 0.44: the series near its limit
        (1, 200, 64.5, 1),  # tau > 1/2: the closed forms
        (70, 10**6, 64.25, 1),
        (1, 10**6, 1e12, 1),
        (1, 1, 1e5, -1),
        (1, 300, 400.5, -1),  # tau ~ 0.6: closed forms
        (1, 200, 400.5, -1),  # tau ~ 0.33: the series
        (1, 10**6, 10**6 + 63.75, -1),  # down to y = 64.75
        (3, 2_000_000, 5e9, -1),
    ],
)
def test_euler_maclaurin_run_equals_its_terms(i0: int, i1: int, y0: float, s: int) -> None:
    from reident_airflow.engine._pitman_sums import em_run

    i = np.arange(i0, i1 + 1, dtype=np.float64)
    y = y0 + s * (i - i0)
    assert float(y.min()) >= 64.0
    terms = [1.0 / y, i / y, 1.0 / y**2, i / y**2, i * i / y**2]
    for mine, column in zip(em_run(i0, i1, y0, s), terms, strict=True):
        assert mine == pytest.approx(math.fsum(column), rel=U_SUMS_REL)


def test_solve_2x2_matches_numpy() -> None:
    from reident_airflow.engine.population_pitman import _solve_2x2

    rng = np.random.default_rng(3)
    for _ in range(200):
        a = rng.normal(size=(2, 2)) * 10.0 ** rng.integers(-6, 7, size=(2, 2))
        b = rng.normal(size=2)
        x = _solve_2x2(a[0, 0], a[0, 1], a[1, 0], a[1, 1], b[0], b[1])
        assert x is not None
        want = np.linalg.solve(a, b)
        residual = np.abs(a @ np.array(x) - b)
        assert bool(np.all(residual <= 1e-9 * (np.abs(a) @ np.abs(want) + np.abs(b))))
    assert _solve_2x2(1.0, 2.0, 2.0, 4.0, 1.0, 1.0) is None  # singular: numpy raises
    assert _solve_2x2(0.0, 1.0, 0.0, 1.0, 1.0, 1.0) is None


@pytest.mark.parametrize("theta", [1e4, 2.5e5, 1e8, 1e11])
@pytest.mark.parametrize("alpha", [0.01, 0.5, 0.99])
def test_log_gamma_ratio_for_large_theta(theta: float, alpha: float) -> None:
    """log Gamma(theta+1)/Gamma(theta+alpha) against its asymptotic series (Bernoulli
    polynomials; the next term is below 1e-16 here), where a difference of gammaln values
    loses ~eps theta log theta."""
    from reident_airflow.engine.population_pitman import _log_gamma_ratio

    b3 = alpha**3 - 1.5 * alpha**2 + 0.5 * alpha  # B_3(alpha); B_3(1) = 0
    b4 = alpha**4 - 2 * alpha**3 + alpha**2 - 1 / 30  # B_4(alpha); B_4(1) = -1/30
    series = (
        (1 - alpha) * math.log(theta)
        + alpha * (1 - alpha) / (2 * theta)
        + b3 / (6 * theta**2)
        + (b4 + 1 / 30) / (12 * theta**3)
    )
    assert _log_gamma_ratio(theta, alpha) == pytest.approx(series, rel=1e-14, abs=1e-15)


def test_log_gamma_ratio_for_small_theta() -> None:
    from scipy import special

    from reident_airflow.engine.population_pitman import _log_gamma_ratio

    for theta in (-0.3, 0.0, 0.5, 7.0, 300.0):
        for alpha in (0.31, 0.5, 0.99):
            want = float(special.gammaln(theta + 1) - special.gammaln(theta + alpha))
            assert _log_gamma_ratio(theta, alpha) == pytest.approx(want, rel=1e-12, abs=1e-14)


# ------------------------------------------------------------------------------------------
# 5. Pitman on large histograms: unchanged from the term-by-term implementation
# ------------------------------------------------------------------------------------------

# Histograms counts(s) = integer formulas in s (no floating point), N; the root (theta, alpha)
# and the estimate of the previous implementation, which summed over i < u term by term (or
# through digamma for u >= 50,000) and took the estimate as a difference of gammaln values.
# The roots agree to ~1e-14; that estimate carried the gammaln rounding, ~eps theta log theta
# (up to 9e-10 here), which _log_gamma_ratio no longer has.
PITMAN_LARGE = {
    "1/s^2": (
        lambda s: 600_000 // s**2,
        60,
        317_238_626,
        (110521.24884721934, 0.5317626170882896),
        7625171.991167427,
    ),
    "1/s^3": (
        lambda s: 2_000_000 // s**3,
        100,
        317_238_626,
        (595351.6130107451, 0.7393716336022875),
        61766580.93277853,
    ),
    "1/s(s+1)": (
        lambda s: 1_200_000 // (s * (s + 1)),
        300,
        30_000_000,
        (91879.81406212207, 0.45626726581501986),
        1288936.4248096095,
    ),
    "small": (
        lambda s: 60_000 // s**2,
        40,
        1_000_000,
        (14230.667789393836, 0.5088574103890019),
        123872.26973158783,
    ),
    "1/s, no root": (lambda s: 50_000 // s, 200, 20_000_000, None, None),
}


@pytest.mark.parametrize("key", sorted(PITMAN_LARGE))
def test_pitman_large_histograms_unchanged(key: str) -> None:
    from reident_airflow.engine._model_input import model_input
    from reident_airflow.engine.population_pitman import _pitman_root

    formula, s_max, big_n, root, uniques = PITMAN_LARGE[key]
    sizes = np.arange(1, s_max + 1, dtype=np.int64)
    counts = np.array([formula(int(s)) for s in sizes], dtype=np.int64)
    keep = counts > 0
    sizes, counts = sizes[keep], counts[keep]
    mine = _pitman_root(model_input(sizes, counts, big_n))
    estimate = pitman(sizes, counts, big_n)
    if root is None:
        assert mine is None
        assert estimate is None
        return
    assert mine is not None
    assert mine == pytest.approx(root, rel=1e-12)
    assert estimate is not None
    assert estimate.uniques == pytest.approx(uniques, rel=2e-9)


@pytest.mark.parametrize(
    ("sizes", "counts", "big_n"),
    [
        ([1, 2, 3, 4, 5], [888_000, 52_000, 2_900, 230, 23], 317_238_626),
        ([1, 2, 3, 4, 5, 6], [5_000_000, 700_000, 130_000, 25_000, 5_000, 945], 317_238_626),
        ([1, 2, 3, 4, 5, 6], [5_000_000, 700_000, 130_000, 25_000, 5_000, 945], 30_000_000),
    ],
)
def test_pitman_unavailable_on_mostly_uniques(
    sizes: list[int], counts: list[int], big_n: int
) -> None:
    """Up to 5.8M classes: the likelihood peaks at alpha < 0 (no admissible root), as the
    term-by-term implementation found in 2-20 s per call; the other models are unaffected."""
    result = population_uniqueness(np.array(sizes), np.array(counts), big_n)
    assert result.pitman is None
    assert result.zayatz is not None
    assert result.dankar is not None
    assert result.dankar.model in ("zayatz", "snb")


def test_pitman_first_start_not_finite() -> None:
    """Sizes 1, 3 with counts 5, 1: ARX's first start divides by 0 (a ZeroDivisionError
    before); Newton then goes on from ARX's other starts."""
    result = population_uniqueness(np.array([1, 3]), np.array([5, 1]), 73)
    assert result.pitman is None or 0.0 <= result.pitman.uniques <= 73
    assert result.zayatz is not None


def test_trigamma_equals_zeta() -> None:
    """Long arrays of class sizes take psi' by its asymptotic series above 64; zeta below."""
    from scipy import special

    from reident_airflow.engine._pitman_sums import trigamma

    x = np.concatenate([np.linspace(-3.7, 64.0, 300), np.geomspace(64.0, 1e12, 700)])
    got = trigamma(x)
    assert got == pytest.approx(special.zeta(2.0, x), rel=2e-15)
    short = x[::50]  # fewer than 64: zeta itself
    assert np.array_equal(trigamma(short), special.zeta(2.0, short))


@pytest.mark.parametrize(
    ("sizes", "counts", "big_n"),
    [
        ([1, 2, 7, 3_000_000], [40_000, 3_000, 20, 1], 317_238_626),  # one class of 3M
        ([1, 5, 50_000, 2_000_000], [10, 2, 1, 1], 2_050_100),  # sf ~ 1: reach 58
        ([1, 2, 900_000], [7, 1, 1], 1_000_000),  # a class that cannot yield one record
    ],
)
def test_zayatz_with_a_huge_class(sizes: list[int], counts: list[int], big_n: int) -> None:
    """Sizes far beyond N/(n-1) (log n + 42) are left out: the products over every j < s_max,
    as before, give the same estimate to rounding."""
    s = np.array(sizes, dtype=np.int64)
    c = np.array(counts, dtype=np.int64)
    n = int(np.dot(s, c))
    j = np.arange(1, s[-1], dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_prod = np.concatenate(
            ([0.0], np.cumsum(np.log1p(-np.minimum((n - 1) / (big_n - j), 1))))
        )
    denominator = float(np.dot(c, s * np.exp(log_prod[s - 1])))
    want = c[0] * (c[0] / denominator) * big_n / n
    estimate = zayatz(s, c, big_n)
    assert estimate is not None
    assert estimate.uniques == pytest.approx(want, rel=1e-15)
