"""Population uniques under the slide negative binomial model (Chen & Keller-McNulty 1998).

:func:`snb` fits the model by the method of moments from the class-size histogram and the
population size (docs/metrics.md §4); its docstring says where and why it departs from ARX.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize

from reident_airflow.engine._arrays import FloatArray
from reident_airflow.engine._model_input import ModelInput, PopulationEstimate, model_input

__all__ = ["snb", "snb_estimate"]


# SNB moment equations are solved in log space; a root must satisfy them to this accuracy.
_SNB_TOL = 1e-10


def snb(sizes: ArrayLike, counts: ArrayLike, population_size: int) -> PopulationEstimate | None:
    """Population uniques under the slide negative binomial model (Chen & Keller-McNulty).

    Chen, G. and Keller-McNulty, S. (1998) "Estimation of identification disclosure risk in
    microdata", Journal of Official Statistics 14(1): 79-95.

    Model: the population has ``K`` non-empty classes whose sizes are ``F = 1 + X`` with
    ``X ~ NegBin(alpha, beta)`` (``P(X = x) = C(x+alpha-1, x) beta^alpha (1-beta)^x``), so the
    number of population uniques is ``K * beta**alpha``. Each member is sampled independently
    with probability ``f = sf`` (the usual approximation of drawing ``n`` of ``N``); thinning the
    probability generating function ``z * (beta / (1 - (1-beta) z))**alpha`` gives, with
    ``d = (1-f)(1-beta)``, the probabilities that a population class contributes 0, 1 or 2
    records to the sample::

        P0 = (1-f) * (beta/(1-d))**alpha
        P1 = f * (beta/(1-d))**alpha * (1 + alpha*d/(1-d))                       (1)
        P2 = alpha * beta**alpha * f**2 * (1-beta) * (2 - (1-alpha)*d)
             / (2 * (1-d)**(alpha+2))                                              (2)

    ``alpha``, ``beta`` and ``K`` are fitted by the method of moments: ``K*P1 = c_1``,
    ``K*P2 = c_2`` and ``K*(1-P0) = u`` (the sample's uniques, pairs and classes), solved in
    log space with ``K`` eliminated, by MINPACK's hybrid method from a small grid of starts;
    a root must satisfy the equations to 1e-10. The estimate is ``K * beta**alpha``.
    Equations (1) and (2) are the ones ARX solves (``ModelSNB``'s first equation and the
    second equation of its predecessor ``AlgorithmNewtonSNB``).

    Differences from ARX 3.9.2 (``ModelSNB``):

    - ARX's equation (2) *multiplies* by ``(1-d)**(alpha+2)`` instead of dividing; with it ARX
      finds no solution and reports SNB unavailable for every ``sf < 1`` (docs/metrics.md §4). At
      ``f = 1`` (``d = 0``) the two forms agree.
    - ARX takes ``K`` from a separate Shlosser-type estimator of the number of population
      classes (it cites Haas 1998 and Shlosser; its code also subtracts the ``1`` of
      ``(1+f)**s - 1`` once per histogram entry instead of inside the weighted sum). Even
      correctly coded, that estimator overstates ``K`` badly at small ``f`` when the SNB model
      holds (on a simulated SNB population by ~70% at ``f = 0.05``, putting the estimate of
      uniques ~190% too high), so here ``K`` comes from the model itself, through its
      expected number of sample classes. This third moment equation is our choice.

    Special cases: 0 when ``c_1 = 0``; exactly ``c_1`` when ``f = 1`` (equation (1) then reads
    ``K * beta**alpha = c_1`` and ``K = u``); ``None`` when ``c_2 = 0`` (no interior root), when
    the equations have no root, when distinct roots give different estimates, or when the
    estimate exceeds ``N``. Like any moment estimator it is noisy when ``c_2`` is small; Dankar
    et al. use it only for ``sf > 0.1``.
    """
    h = model_input(sizes, counts, population_size)
    if h.c1 == 0:
        return h.estimate(0.0)
    return snb_estimate(h)


# Starting points for the SNB solver, in (log alpha, logit beta).
_SNB_STARTS = tuple((a, b) for a in (0.0, -2.0, 2.0) for b in (-2.0, 0.0, -5.0, 2.0))


def _snb_log_probs(log_alpha: float, logit_beta: float, f: float) -> tuple[float, float, float]:
    """``log P0``, ``log P1``, ``log P2`` of :func:`snb` (``P0`` for ``f < 1`` only)."""
    alpha = math.exp(log_alpha)
    log_beta = -_log1pexp(-logit_beta)
    log_1mbeta = -_log1pexp(logit_beta)
    one_m_beta = math.exp(log_1mbeta)
    d = (1.0 - f) * one_m_beta
    one_m_d = f + (1.0 - f) * math.exp(log_beta)  # 1 - d, without cancellation
    log_one_m_d = math.log(one_m_d)
    log_ratio = alpha * (log_beta - log_one_m_d)  # log (beta / (1-d))**alpha
    log_p0 = math.log1p(-f) + log_ratio if f < 1.0 else -math.inf
    log_p1 = math.log(f) + log_ratio + math.log1p(alpha * d / one_m_d)
    log_p2 = (
        log_alpha
        + alpha * log_beta
        + 2.0 * math.log(f)
        + log_1mbeta
        + math.log(2.0 - (1.0 - alpha) * d)
        - math.log(2.0)
        - (alpha + 2.0) * log_one_m_d
    )
    return log_p0, log_p1, log_p2


def _log1pexp(x: float) -> float:
    """``log(1 + exp(x))`` without overflow."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def snb_estimate(h: ModelInput) -> PopulationEstimate | None:
    if h.n == h.big_n:
        return h.estimate(float(h.c1))
    if h.c2 == 0:
        return None
    f = h.sf
    log_u, log_c1, log_c2 = math.log(h.u), math.log(h.c1), math.log(h.c2)

    def log_k(log_p0: float) -> float:
        return log_u - math.log(-math.expm1(log_p0))  # K = u / (1 - P0)

    def equations(x: FloatArray) -> FloatArray:
        try:
            log_p0, log_p1, log_p2 = _snb_log_probs(float(x[0]), float(x[1]), f)
            lk = log_k(log_p0)
        except (ValueError, OverflowError, ZeroDivisionError):
            return np.full(2, 1e10)
        first, second = lk + log_p1 - log_c1, lk + log_p2 - log_c2
        if not (math.isfinite(first) and math.isfinite(second)):
            return np.full(2, 1e10)
        return np.array([first, second])

    estimates: list[float] = []
    for start in _SNB_STARTS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sol = optimize.root(equations, np.array(start), method="hybr", tol=1e-14)
        x = np.asarray(sol.x, dtype=np.float64)
        if not np.all(np.isfinite(x)) or float(np.max(np.abs(equations(x)))) > _SNB_TOL:
            continue
        log_p0, _, _ = _snb_log_probs(float(x[0]), float(x[1]), f)
        alpha = math.exp(float(x[0]))
        log_beta = -_log1pexp(-float(x[1]))
        estimates.append(math.exp(log_k(log_p0) + alpha * log_beta))
    if not estimates:
        return None
    lo, hi = min(estimates), max(estimates)
    if hi - lo > 1e-6 * hi:  # distinct roots: the model is not identified by this sample
        return None
    uniques = estimates[0]
    if not 0.0 <= uniques <= h.big_n:
        return None
    return h.estimate(uniques)
