"""Population uniques under the Pitman sampling formula (Hoshino 2001; docs/metrics.md §4).

:func:`pitman` fits ``theta`` and ``alpha`` by maximum likelihood from the class-size
histogram and the population size, the way ARX 3.9.2's ``ModelPitman`` does (the same start
values, the same admissible root), and returns the estimated number of population uniques.
The sums of the score equations come from :mod:`reident_airflow.engine._pitman_sums`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special

from reident_airflow.engine._arrays import FloatArray
from reident_airflow.engine._model_input import ModelInput, PopulationEstimate, model_input
from reident_airflow.engine._pitman_sums import trigamma, u_sums

__all__ = ["pitman", "pitman_estimate"]


# Newton for Pitman: iterations per start, and the residual (relative to the size of the sums
# in each score equation) below which a root is accepted; ARX accepts an absolute 1e-6.
_PITMAN_MAX_ITER = 100
_PITMAN_TOL = 1e-10


def pitman(sizes: ArrayLike, counts: ArrayLike, population_size: int) -> PopulationEstimate | None:
    """Population uniques under the Pitman sampling formula (Hoshino 2001).

    Hoshino, N. (2001) "Applying Pitman's sampling formula to microdata disclosure risk
    assessment", Journal of Official Statistics 17(4): 499-520. The parameters ``theta`` and
    ``alpha`` are the maximum-likelihood estimates, i.e. the root of the score equations::

        sum_{i=1}^{u-1} 1/(theta + i*alpha) = sum_{i=1}^{n-1} 1/(theta + i)
        sum_{i=1}^{u-1} i/(theta + i*alpha) = sum_{s>=2} c_s * sum_{j=1}^{s-1} 1/(j - alpha)

    inside the parameter space ``0 < alpha < 1``, ``theta > -alpha``. They are found by
    Newton's method with the analytic Jacobian, started as ARX's ``ModelPitman`` is: first at
    Hoshino's moment-type guess, then at ARX's deterministic start values
    ``{0, .33, .66, .99} x {0, .33, .66, .99}``; the first root inside the parameter space
    wins. The equations also have roots outside it (on ARX's Adult references, Newton from
    the first start reaches ``alpha = 6.5`` or ``theta < -alpha``); ARX's reference values
    are those of the admissible root. If Newton finds none, MINPACK's hybrid method
    (``scipy.optimize.root``) is tried from the first start. A root must satisfy the
    equations to a relative 1e-10 (ARX stops at an absolute 1e-6). The sums over ``i < u`` are
    evaluated in O(1) whatever ``u`` (Euler-Maclaurin, see ``u_sums``; ~1e-16 relative); those
    over ``i < n`` and within classes through digamma/trigamma. No Newton try is cut short:
    every start runs as ARX's would, so the root found is the one ARX's procedure finds.

    The estimate is ``Gamma(theta + 1) / Gamma(theta + alpha) * N**alpha`` (the ratio of
    gammas as a Pochhammer symbol, see ``_log_gamma_ratio``).
    ``None`` (unavailable) when there is no admissible root (always the case for a sample of
    uniques only, where the second equation reads ``sum i/(theta + i*alpha) = 0``), including
    when the likelihood peaks at ``alpha <= 0`` (docs/metrics.md; ARX rejects only ``alpha == 0``),
    or when the estimate is outside ``[0, N]``. 0 when the sample has no unique.
    """
    h = model_input(sizes, counts, population_size)
    if h.c1 == 0:
        return h.estimate(0.0)
    return pitman_estimate(h)


def pitman_estimate(h: ModelInput) -> PopulationEstimate | None:
    root = _pitman_root(h)
    if root is None:
        return None
    theta, alpha = root
    with np.errstate(all="ignore"):
        log_est = _log_gamma_ratio(theta, alpha) + alpha * math.log(h.big_n)
    if not math.isfinite(log_est) or log_est > math.log(h.big_n):
        return None
    return h.estimate(math.exp(log_est))


def _log_gamma_ratio(theta: float, alpha: float) -> float:
    """``log(Gamma(theta + 1) / Gamma(theta + alpha))`` for ``theta + alpha > 0``.

    Through the Pochhammer symbol ``(theta + alpha)_(1 - alpha)`` (``scipy.special.poch``,
    which for arguments above 1e4 uses its asymptotic series in ``1/theta``): a relative
    ~1e-15. The difference of ``gammaln`` values, each ~``theta log theta``, would lose
    ``~eps theta log theta`` absolutely, i.e. the estimate a relative 1e-9 at
    ``theta = 2.5e5``, 1e-7 at 1e8; that is left as the fallback only where ``poch`` is not
    a positive finite number.
    """
    ratio = float(special.poch(theta + alpha, 1.0 - alpha))
    if ratio > 0.0 and math.isfinite(ratio):
        return math.log(ratio)
    return float(special.gammaln(theta + 1.0)) - float(special.gammaln(theta + alpha))


#: ARX's deterministic start values (``ARXSolverConfiguration.getDefaultStartValues``).
_ARX_STARTS: tuple[tuple[float, float], ...] = tuple(
    (t, a) for t in (0.0, 0.33, 0.66, 0.99) for a in (0.0, 0.33, 0.66, 0.99)
)


def _pitman_start(h: ModelInput) -> tuple[float, float]:
    """ARX's first start (``ModelPitman``), with ``c_2 := 1`` when there is no pair.

    Not finite when the denominator vanishes (e.g. sizes 1, 3 with counts 5, 1), as in ARX's
    double arithmetic; Newton then fails at once from it.
    """
    n, u, c1 = float(h.n), float(h.u), float(h.c1)
    c2 = float(h.c2) if h.c2 else 1.0
    c = c1 * (c1 - 1.0) / c2
    denominator = 2.0 * c1 * u + c1 * c - n * c
    if denominator == 0.0:
        return math.nan, math.nan
    theta = (n * u * c - c1 * (n - 1.0) * (2.0 * u + c)) / denominator
    alpha = (theta * (c1 - n) + (n - 1.0) * c1) / (n * u)
    return theta, alpha


def _in_search_box(theta: float, alpha: float) -> bool:
    """Where the score equations are evaluated at all.

    Admissible roots have ``theta > -alpha > -1`` and ``0 < alpha < 1``. Newton may wander
    outside, but beyond ``theta <= -1`` the sum over ``i < n`` crosses its poles (and
    trigamma of a large negative argument costs time linear in it), so a try ends there.
    """
    return -1.0 < theta < 1e12 and -1e6 < alpha < 1e3


#: ``F1, F2`` (score equations), the symmetric Jacobian ``J11, J12, J22`` and the scale of
#: each equation, as returned by :func:`_pitman_equations`.
_PitmanEquations = tuple[float, float, float, float, float, float, float]


def _pitman_equations(h: ModelInput, theta: float, alpha: float) -> _PitmanEquations:
    """Score equations ``F(theta, alpha)``, their Jacobian and the scale of each equation."""
    # i = 1..u-1: sum 1/(t+ia), i/(t+ia), and the squares for the Jacobian.
    s0, s1, q0, q1, q2 = u_sums(h.u, theta, alpha)
    # i = 1..n-1: sum 1/(t+i) = psi(t+n) - psi(t+1); sum 1/(t+i)^2 = psi'(t+1) - psi'(t+n).
    # (psi' = zeta(2, .), which is what special.polygamma(1, .) computes, bit for bit.)
    r0 = float(special.digamma(theta + h.n) - special.digamma(theta + 1.0))
    r1 = float(special.zeta(2.0, theta + 1.0) - special.zeta(2.0, theta + h.n))
    # Classes: sum_s c_s sum_{j<s} 1/(j-a) = sum_s c_s (psi(s-a) - psi(1-a)), and squares.
    s_big, c_big = h.non_singletons
    if s_big.size:
        w0 = float(np.dot(c_big, special.digamma(s_big - alpha) - special.digamma(1.0 - alpha)))
        w1 = float(np.dot(c_big, special.zeta(2.0, 1.0 - alpha) - trigamma(s_big - alpha)))
    else:
        w0 = w1 = 0.0
    return s0 - r0, s1 - w0, r1 - q0, -q1, -q2 - w1, 1.0 + abs(r0), 1.0 + abs(w0)


def _pitman_system(
    h: ModelInput, theta: float, alpha: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:func:`_pitman_equations` as arrays: ``F``, the Jacobian and the scales."""
    f1, f2, j11, j12, j22, scale1, scale2 = _pitman_equations(h, theta, alpha)
    return np.array([f1, f2]), np.array([[j11, j12], [j12, j22]]), np.array([scale1, scale2])


def _pitman_root(h: ModelInput) -> tuple[float, float] | None:
    if h.u == h.n:  # only uniques: sum i/(theta + i*alpha) > 0 = right-hand side, no root
        return None
    first = _pitman_start(h)
    with np.errstate(all="ignore"):
        for start in (first, *_ARX_STARTS):
            root = _pitman_newton(h, start)
            if root is not None:
                return root
        if not (math.isfinite(first[0]) and math.isfinite(first[1])):
            return None
        return _pitman_hybrid(h, first)


def _pitman_newton(h: ModelInput, start: tuple[float, float]) -> tuple[float, float] | None:
    theta, alpha = start
    for _ in range(_PITMAN_MAX_ITER):
        if not (math.isfinite(theta) and math.isfinite(alpha) and _in_search_box(theta, alpha)):
            return None
        f1, f2, j11, j12, j22, scale1, scale2 = _pitman_equations(h, theta, alpha)
        if not all(map(math.isfinite, (f1, f2, j11, j12, j22))):
            return None
        if abs(f1) <= 1e-3 * _PITMAN_TOL * scale1 and abs(f2) <= 1e-3 * _PITMAN_TOL * scale2:
            break
        step = _solve_2x2(j11, j12, j12, j22, -f1, -f2)
        if step is None:
            return None
        step0, step1 = step
        theta, alpha = theta + step0, alpha + step1
        if abs(step0) <= 1e-15 * abs(theta) and abs(step1) <= 1e-15 * abs(alpha):
            break
    return _accept_pitman(h, theta, alpha)


def _solve_2x2(
    a00: float, a01: float, a10: float, a11: float, b0: float, b1: float
) -> tuple[float, float] | None:
    """``A x = b`` by Gaussian elimination with partial pivoting.

    What ``numpy.linalg.solve`` does through LAPACK, the same solution to rounding, without
    the overhead of a LAPACK call on a 2 x 2 system (Newton takes up to 17 x 100 steps).
    ``None`` when a pivot is exactly 0, where ``numpy.linalg.solve`` raises ``LinAlgError``.
    """
    if abs(a10) > abs(a00):  # pivot on the larger entry of the first column
        a00, a01, a10, a11, b0, b1 = a10, a11, a00, a01, b1, b0
    if a00 == 0.0:
        return None
    factor = a10 / a00
    u11 = a11 - factor * a01
    if u11 == 0.0:
        return None
    x1 = (b1 - factor * b0) / u11
    return (b0 - a01 * x1) / a00, x1


def _pitman_hybrid(h: ModelInput, start: tuple[float, float]) -> tuple[float, float] | None:
    def system(x: FloatArray) -> tuple[FloatArray, FloatArray]:
        theta, alpha = float(x[0]), float(x[1])
        if _in_search_box(theta, alpha):
            f, jac, scale = _pitman_system(h, theta, alpha)
            if np.all(np.isfinite(f)) and np.all(np.isfinite(jac)):
                return f / scale, jac / scale[:, None]
        return np.full(2, 1e10), np.eye(2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sol = optimize.root(system, np.array(start), jac=True, method="hybr", tol=1e-14)
    x = np.asarray(sol.x, dtype=np.float64)
    return _accept_pitman(h, float(x[0]), float(x[1]))


def _accept_pitman(h: ModelInput, theta: float, alpha: float) -> tuple[float, float] | None:
    """The root if it lies in the parameter space and solves the equations to 1e-10."""
    if not (math.isfinite(theta) and math.isfinite(alpha)):
        return None
    if not (0.0 < alpha < 1.0 and theta + alpha > 0.0):
        return None
    f, _, scale = _pitman_system(h, theta, alpha)
    if not bool(np.all(np.abs(f) <= _PITMAN_TOL * scale)):
        return None
    return theta, alpha
