"""The order-free sum used for totals over classes (engine/_exact.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reident_airflow.engine._exact import order_free_sum


def test_cancellation_that_a_float_sum_loses() -> None:
    # by hand: 1e16 + 1 rounds back to 1e16 in float64 (ulp 2 there), so a left-to-right
    # float sum of [1e16, 1, -1e16] is 0; the exact sum is 1
    values = np.array([1e16, 1.0, -1e16])
    assert float(np.add.reduce(values)) == 0.0
    assert order_free_sum(values) == 1.0


def test_small_cases_by_hand() -> None:
    assert order_free_sum(np.array([], dtype=np.float64)) == 0.0
    assert order_free_sum(np.zeros(5)) == 0.0
    assert order_free_sum(np.array([2.5])) == 2.5
    assert order_free_sum(np.array([0.5, 0.25, -0.125])) == 0.625  # exact in binary
    assert order_free_sum(np.arange(1, 101, dtype=np.float64)) == 5050.0  # n(n+1)/2


def test_non_finite_terms_give_numpys_answer() -> None:
    assert order_free_sum(np.array([1.0, np.inf])) == math.inf
    assert math.isnan(order_free_sum(np.array([1.0, np.nan, 2.0])))
    assert math.isnan(order_free_sum(np.array([np.inf, -np.inf])))


@pytest.mark.parametrize("size", [7, 1000, 100_003])  # the last spans several blocks
def test_the_same_total_in_every_order(size: int) -> None:
    rng = np.random.default_rng(size)
    values = rng.uniform(0.0, 1.0, size) * 10.0 ** rng.integers(-8, 8, size)
    total = order_free_sum(values)
    for _ in range(5):
        assert order_free_sum(values[rng.permutation(size)]) == total


@pytest.mark.parametrize("seed", range(20))
def test_within_the_stated_bound_of_the_exact_sum(seed: int) -> None:
    # math.fsum is the exact sum rounded once: the reference
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 5000))
    values = rng.standard_normal(size) * 10.0 ** rng.integers(-30, 30, size)
    largest = float(np.abs(values).max())
    exact = math.fsum(values)
    bound = size * 2.0**-84 * largest + abs(exact) * 2.0**-53
    assert abs(order_free_sum(values) - exact) <= bound


def test_terms_of_one_magnitude_match_the_correctly_rounded_sum() -> None:
    # what the engine sums (risks times class sizes, weight sums): every bit is kept
    rng = np.random.default_rng(8)
    values = rng.uniform(20.0, 2000.0, 200_000).round(2)
    assert order_free_sum(values) == math.fsum(values)
    assert order_free_sum(np.full(100_000, 0.1)) == math.fsum([0.1] * 100_000)


def test_subnormal_and_huge_terms() -> None:
    tiny = np.array([5e-324] * 7)
    assert order_free_sum(tiny) == math.fsum(tiny.tolist())  # 7 * 2**-1074, exact
    huge = np.array([1e308, 1e308, -1e308])
    assert order_free_sum(huge) == 1e308  # a float sum overflows on the way
