"""Population uniques under Zayatz's equivalence-class model (Zayatz 1991; docs/metrics.md §4).

:func:`zayatz` reproduces ARX 3.9.2's ``ModelZayatz`` from the class-size histogram and the
population size, summing the hypergeometric ratios in log space.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from reident_airflow.engine._model_input import ModelInput, PopulationEstimate, model_input

__all__ = ["zayatz", "zayatz_estimate"]


def zayatz(sizes: ArrayLike, counts: ArrayLike, population_size: int) -> PopulationEstimate | None:
    """Population uniques under Zayatz's equivalence-class model.

    Zayatz, L. (1991) "Estimation of the number of unique population elements using a sample",
    Proceedings of the Survey Research Methods Section, American Statistical Association,
    369-373. With ``h(s)`` the hypergeometric probability that exactly one member of a
    population class of size ``s`` is drawn when ``n`` of ``N`` are drawn, the share of sample
    uniques that are population uniques is ``q = c_1 h(1) / sum_s c_s h(s)`` (sum over the
    sample histogram) and the estimate is ``c_1 * q / sf`` (ARX's ``ModelZayatz``).

    Only ratios ``h(s) / h(1) = s * prod_{j=1}^{s-1} (1 - (n-1)/(N-j))`` are needed; they are
    summed in log space (``log1p``), so ``N`` in the hundreds of millions loses no precision.
    0 when the sample has no unique.

    The products run over ``j < s`` up to the largest class size at most ``R`` (``reach``):
    since ``log(1 - x) <= -x`` and ``N - j < N``, ``h(s)/h(1) <= s exp(-(s-1)(n-1)/N)``, so
    with ``R = (N/(n-1)) (log n + 42)`` the sizes ``s > R`` weigh at most
    ``sum_s c_s s e^-42 / n = e^-42 < 6e-19`` in a denominator of at least ``c_1 >= 1``: they
    are left out (their ratios taken as 0), and the work and memory are
    ``O(min(s_max, R)) = O(sqrt(N (log n + 42)))`` (~1.4e5 terms for the USA at most)
    rather than ``O(s_max)`` for a sample whose largest class holds millions.
    """
    h = model_input(sizes, counts, population_size)
    if h.c1 == 0:
        return h.estimate(0.0)
    return zayatz_estimate(h)


def zayatz_estimate(h: ModelInput) -> PopulationEstimate | None:
    s_max = int(h.sizes[-1])
    if h.n > 1:  # sizes beyond the reach weigh < 6e-19 of the denominator (docstring)
        reach = math.ceil(h.big_n / (h.n - 1.0) * (math.log(h.n) + 42.0)) + 1
        s_max = min(s_max, reach)
    kept = h.sizes <= s_max
    j = np.arange(1, s_max, dtype=np.float64)  # j = 1..s_max-1
    x = (h.n - 1.0) / (h.big_n - j)  # N - j >= N - n + 1 > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.log1p(-np.minimum(x, 1.0))  # -inf once a class cannot yield one record
        log_prod = np.concatenate(([0.0], np.cumsum(terms)))  # index s-1 -> sum over j < s
        ratio = np.zeros(h.sizes.size)
        ratio[kept] = h.sizes[kept] * np.exp(log_prod[h.sizes[kept] - 1])  # h(s) / h(1)
    denominator = float(np.dot(h.counts.astype(np.float64), ratio))
    q = h.c1 / denominator
    uniques = h.c1 * q * h.big_n / h.n
    if not math.isfinite(uniques):
        return None
    return h.estimate(uniques)
