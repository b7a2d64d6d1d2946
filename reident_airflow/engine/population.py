"""Population uniqueness (metrics.md §4), estimated from the class-size histogram alone.

Every estimator here sees only the histogram ``s -> c_s`` of the sample (``sizes`` ascending,
``counts[i]`` classes of size ``sizes[i]``), the sample size ``n = sum(s * c_s)``, the number of
classes ``u = sum(c_s)`` and the population size ``N`` (sampling fraction ``sf = n / N``). Each
returns the estimated number of population uniques and that number as a fraction **of N**
(ARX's convention), or ``None`` when the model cannot be fitted ("unavailable"; ARX reports 0).

- :func:`pitman` -- Pitman sampling formula fitted by maximum likelihood (Hoshino 2001).
- :func:`zayatz` -- hypergeometric equivalence-class model (Zayatz 1991).
- :func:`snb` -- slide negative binomial model (Chen & Keller-McNulty 1998), fitted by the
  method of moments; not ARX's implementation, which is broken (see its docstring).
- :func:`population_uniqueness` -- all three plus Dankar et al.'s (2012) decision rule.

If the sample has no unique (``c_1 = 0``) every estimate is 0 and, as ARX does, Dankar's rule
reports the model ``"dankar"`` (no model was needed to conclude).

Pitman and Zayatz reproduce ARX 3.9.2 (``ModelPitman``, ``ModelZayatz``) to ``rel 1e-8`` and so
does Dankar's rule for ``sf <= 0.1``; above it ARX's SNB is never available for ``sf < 1`` and
the rule may pick SNB where ARX picks Zayatz.

No pandas, no Airflow: numpy and scipy only.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

__all__ = [
    "DANKAR_THRESHOLD",
    "REGIONS",
    "DankarEstimate",
    "PopulationEstimate",
    "PopulationUniqueness",
    "pitman",
    "population_uniqueness",
    "resolve_population_size",
    "snb",
    "zayatz",
]

FloatArray = NDArray[np.float64]
DankarModel = Literal["pitman", "zayatz", "snb", "dankar"]

#: Population presets by region name (ARX's ``ARXPopulationModel.Region``; only USA so far).
REGIONS: dict[str, int] = {"usa": 317_238_626}

#: Dankar et al.'s rule uses Pitman up to this sampling fraction (inclusive), Zayatz/SNB above.
DANKAR_THRESHOLD = 0.1

# Harmonic sums over i = 1..u-1 are evaluated in chunks of this many terms (bounded memory).
_CHUNK = 1 << 20
# Newton for Pitman: iterations per start, and the residual (relative to the size of the sums
# in each score equation) below which a root is accepted; ARX accepts an absolute 1e-6.
_PITMAN_MAX_ITER = 100
_PITMAN_TOL = 1e-10
# SNB moment equations are solved in log space; a root must satisfy them to this accuracy.
_SNB_TOL = 1e-10


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PopulationEstimate:
    """Estimated number of population uniques and that number as a fraction of ``N``."""

    uniques: float
    fraction: float

    def to_dict(self) -> dict[str, Any]:
        return {"uniques": self.uniques, "fraction": self.fraction}


@dataclass(frozen=True)
class DankarEstimate:
    """Dankar et al.'s estimate and the model that produced it.

    ``model`` is ``"pitman"``, ``"zayatz"`` or ``"snb"``; it is ``"dankar"`` when the sample has
    no unique (``c_1 = 0``): the estimate is then 0 without consulting any model (ARX's
    convention).
    """

    uniques: float
    fraction: float
    model: DankarModel

    def to_dict(self) -> dict[str, Any]:
        return {"uniques": self.uniques, "fraction": self.fraction, "model": self.model}


@dataclass(frozen=True)
class PopulationUniqueness:
    """Every population model for one sample; ``None`` marks an unavailable estimate."""

    population_size: int
    sampling_fraction: float
    pitman: PopulationEstimate | None
    zayatz: PopulationEstimate | None
    snb: PopulationEstimate | None
    dankar: DankarEstimate | None

    def to_dict(self) -> dict[str, Any]:
        """The ``uniqueness.population`` object of the assessment JSON (contract.md)."""
        return {
            "population_size": self.population_size,
            "sampling_fraction": self.sampling_fraction,
            "pitman": None if self.pitman is None else self.pitman.to_dict(),
            "zayatz": None if self.zayatz is None else self.zayatz.to_dict(),
            "snb": None if self.snb is None else self.snb.to_dict(),
            "dankar": None if self.dankar is None else self.dankar.to_dict(),
        }


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def resolve_population_size(
    records: int,
    *,
    population_size: int | None = None,
    sampling_fraction: float | None = None,
    region: str | None = None,
) -> int | None:
    """The population size ``N`` from at most one of its three descriptions.

    - ``population_size``: ``N`` itself, an integer no smaller than ``records``;
    - ``sampling_fraction``: ``sf`` in ``(0, 1]``, then ``N = round(records / sf)`` (halves
      rounded up);
    - ``region``: a preset of :data:`REGIONS` (case-insensitive), e.g. ``"usa"``.

    Returns ``None`` when none is given (no population model is then computed). Raises
    :class:`InvalidInputError` when more than one is given or the one given is unusable.
    """
    given = [
        name
        for name, value in (
            ("population_size", population_size),
            ("sampling_fraction", sampling_fraction),
            ("region", region),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise InvalidInputError(
            "give at most one of population_size, sampling_fraction and region; got "
            + " and ".join(given)
        )
    n = _as_int(records, "records")
    if n < 0:
        raise InvalidInputError(f"records must be >= 0, got {n}")
    if population_size is not None:
        big_n = _as_int(population_size, "population_size")
        if big_n < n:
            raise InvalidInputError(
                f"population (N = {big_n}) is smaller than the sample (n = {n}): "
                "the population must contain every sampled record"
            )
        if big_n <= 0:
            raise InvalidInputError(f"population_size must be positive, got {big_n}")
        return big_n
    if sampling_fraction is not None:
        if isinstance(sampling_fraction, bool):
            raise InvalidInputError(
                f"sampling_fraction must be a number in (0, 1], got {sampling_fraction!r}"
            )
        try:
            sf = float(sampling_fraction)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"sampling_fraction must be a number in (0, 1], got {sampling_fraction!r}"
            ) from None
        if not 0.0 < sf <= 1.0:  # also rejects NaN
            raise InvalidInputError(f"sampling_fraction must be in (0, 1], got {sf!r}")
        if n == 0:
            raise EmptyDatasetError("no records: a population size cannot be derived from sf")
        return math.floor(n / sf + 0.5)  # >= n since sf <= 1
    if region is not None:
        key = str(region).strip().lower()
        if key not in REGIONS:
            known = ", ".join(sorted(REGIONS))
            raise InvalidInputError(f"unknown region {region!r}; known regions: {known}")
        big_n = REGIONS[key]
        if big_n < n:
            raise InvalidInputError(
                f"population of region {key!r} (N = {big_n}) is smaller than the sample (n = {n})"
            )
        return big_n
    return None


def _as_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class _Histogram:
    """A validated class-size histogram and the population size."""

    sizes: NDArray[np.int64]  # distinct class sizes, ascending, counts > 0 only
    counts: NDArray[np.int64]
    n: int  # records
    u: int  # classes
    c1: int  # classes of size 1
    c2: int  # classes of size 2
    big_n: int  # population size

    @property
    def sf(self) -> float:
        return self.n / self.big_n

    @cached_property
    def non_singletons(self) -> tuple[FloatArray, FloatArray]:
        """Sizes ``s >= 2`` and their counts, as floats (the class terms of Pitman's score)."""
        big = self.sizes >= 2
        return self.sizes[big].astype(np.float64), self.counts[big].astype(np.float64)

    def estimate(self, uniques: float) -> PopulationEstimate:
        return PopulationEstimate(uniques=float(uniques), fraction=float(uniques) / self.big_n)


def _histogram(sizes: ArrayLike, counts: ArrayLike, population_size: int) -> _Histogram:
    s = _int_vector(sizes, "sizes")
    c = _int_vector(counts, "counts")
    if s.shape != c.shape:
        raise InvalidInputError(
            f"sizes and counts must have the same length, got {s.size} and {c.size}"
        )
    if s.size and s.min() < 1:
        raise InvalidInputError(f"class sizes must be positive, got {int(s.min())}")
    if s.size > 1 and not bool(np.all(np.diff(s) > 0)):
        raise InvalidInputError("class sizes must be strictly ascending (one entry per size)")
    if c.size and c.min() < 0:
        raise InvalidInputError(f"class counts must be >= 0, got {int(c.min())}")
    keep = c > 0
    s, c = s[keep], c[keep]
    n = int(np.dot(s, c)) if s.size else 0
    if n == 0:
        raise EmptyDatasetError("the class-size histogram holds no record")
    big_n = _as_int(population_size, "population_size")
    if big_n < n:
        raise InvalidInputError(
            f"population (N = {big_n}) is smaller than the sample (n = {n}): "
            "the population must contain every sampled record"
        )
    c1 = int(c[0]) if s[0] == 1 else 0
    at2 = np.flatnonzero(s == 2)
    c2 = int(c[at2[0]]) if at2.size else 0
    return _Histogram(s, c, n, int(c.sum()), c1, c2, big_n)


def _int_vector(values: ArrayLike, name: str) -> NDArray[np.int64]:
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a one-dimensional array of integers") from exc
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise InvalidInputError(f"{name} must hold integers, got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.integer) and not (
        bool(np.all(np.isfinite(arr))) and bool(np.all(arr == np.round(arr)))
    ):
        raise InvalidInputError(f"{name} must hold whole numbers")
    return arr.astype(np.int64)


# --------------------------------------------------------------------------------------------
# Pitman (Hoshino 2001)
# --------------------------------------------------------------------------------------------


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
    evaluated in O(1) whatever ``u`` (Euler-Maclaurin, see ``_u_sums``; ~1e-16 relative); those
    over ``i < n`` and within classes through digamma/trigamma. No Newton try is cut short:
    every start runs as ARX's would, so the root found is the one ARX's procedure finds.

    The estimate is ``Gamma(theta + 1) / Gamma(theta + alpha) * N**alpha`` (the ratio of
    gammas as a Pochhammer symbol, see ``_log_gamma_ratio``).
    ``None`` (unavailable) when there is no admissible root (always the case for a sample of
    uniques only, where the second equation reads ``sum i/(theta + i*alpha) = 0``), including
    when the likelihood peaks at ``alpha <= 0`` (metrics.md; ARX rejects only ``alpha == 0``),
    or when the estimate is outside ``[0, N]``. 0 when the sample has no unique.
    """
    h = _histogram(sizes, counts, population_size)
    if h.c1 == 0:
        return h.estimate(0.0)
    return _pitman(h)


def _pitman(h: _Histogram) -> PopulationEstimate | None:
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


def _pitman_start(h: _Histogram) -> tuple[float, float]:
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


def _pitman_equations(h: _Histogram, theta: float, alpha: float) -> _PitmanEquations:
    """Score equations ``F(theta, alpha)``, their Jacobian and the scale of each equation."""
    # i = 1..u-1: sum 1/(t+ia), i/(t+ia), and the squares for the Jacobian.
    s0, s1, q0, q1, q2 = _u_sums(h.u, theta, alpha)
    # i = 1..n-1: sum 1/(t+i) = psi(t+n) - psi(t+1); sum 1/(t+i)^2 = psi'(t+1) - psi'(t+n).
    # (psi' = zeta(2, .), which is what special.polygamma(1, .) computes, bit for bit.)
    r0 = float(special.digamma(theta + h.n) - special.digamma(theta + 1.0))
    r1 = float(special.zeta(2.0, theta + 1.0) - special.zeta(2.0, theta + h.n))
    # Classes: sum_s c_s sum_{j<s} 1/(j-a) = sum_s c_s (psi(s-a) - psi(1-a)), and squares.
    s_big, c_big = h.non_singletons
    if s_big.size:
        w0 = float(np.dot(c_big, special.digamma(s_big - alpha) - special.digamma(1.0 - alpha)))
        w1 = float(np.dot(c_big, special.zeta(2.0, 1.0 - alpha) - _trigamma(s_big - alpha)))
    else:
        w0 = w1 = 0.0
    return s0 - r0, s1 - w0, r1 - q0, -q1, -q2 - w1, 1.0 + abs(r0), 1.0 + abs(w0)


#: Bernoulli numbers ``B_2 .. B_14`` for the asymptotic series of the trigamma function.
_TRIGAMMA_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def _trigamma(x: FloatArray) -> FloatArray:
    """``psi'(x) = zeta(2, x)`` elementwise, as ``scipy.special.zeta`` but faster on long arrays.

    A histogram with thousands of distinct class sizes makes ``zeta`` (~0.2 us per element)
    the largest cost of each Newton step. For arrays of 64 or more, arguments ``x >= 64`` take
    the asymptotic series ``1/x + 1/(2x^2) + sum_{k=1}^{7} B_2k / x^(2k+1)``, whose first
    omitted term is below ``7.1 / 64^17 < 1e-29`` relative (it agrees with ``zeta`` to
    ~4e-16); shorter arrays and smaller arguments go to ``zeta`` unchanged.
    """
    if x.size < 64:
        return np.asarray(special.zeta(2.0, x), dtype=np.float64)
    out = np.empty_like(x)
    large = x >= 64.0
    inv = 1.0 / x[large]
    z = inv * inv
    series = np.zeros_like(z)
    for b in reversed(_TRIGAMMA_BERNOULLI):
        series = series * z + b
    out[large] = inv + 0.5 * z + z * inv * series
    small = ~large
    out[small] = special.zeta(2.0, x[small])
    return out


def _pitman_system(
    h: _Histogram, theta: float, alpha: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:func:`_pitman_equations` as arrays: ``F``, the Jacobian and the scales."""
    f1, f2, j11, j12, j22, scale1, scale2 = _pitman_equations(h, theta, alpha)
    return np.array([f1, f2]), np.array([[j11, j12], [j12, j22]]), np.array([scale1, scale2])


def _u_sums_loop(u: int, theta: float, alpha: float) -> tuple[float, float, float, float, float]:
    """The sums over ``i = 1..u-1`` term by term (chunked, exact to rounding); O(u).

    Not used by the solver (see :func:`_u_sums`); the reference in the tests.
    """
    s0 = s1 = q0 = q1 = q2 = 0.0
    for start in range(1, u, _CHUNK):
        i = np.arange(start, min(start + _CHUNK, u), dtype=np.float64)
        inv = 1.0 / (theta + i * alpha)
        inv2 = inv * inv
        s0 += float(inv.sum())
        s1 += float((i * inv).sum())
        q0 += float(inv2.sum())
        q1 += float((i * inv2).sum())
        q2 += float((i * i * inv2).sum())
    return s0, s1, q0, q1, q2


#: Below this many classes the digamma closed form declines (see below).
_CLOSED_FORM_MIN_CLASSES = 50_000


def _u_sums_closed_form(
    u: int, theta: float, alpha: float
) -> tuple[float, float, float, float, float] | None:
    """The sums over ``i = 1..u-1`` through digamma/trigamma, in O(1).

    With ``x = theta/alpha`` and ``alpha > 0``:
    ``sum 1/(t+ia) = (psi(x+u) - psi(x+1))/a``, ``sum 1/(t+ia)^2 = (psi'(x+1) - psi'(x+u))/a^2``,
    and the sums weighted by ``i`` and ``i^2`` follow from ``i = ((t+ia) - t)/a``. For large
    ``x`` the digamma difference (about ``u/x``) keeps ``~eps * ln(x) * x/u`` relative error
    and the weighted sums cancel a further factor ``~2x/u``; so the closed form is used only
    for large ``u`` (where the loop costs time), ``|alpha| > 1e-3`` and ``|x| < 10 u``: a
    relative error near 1e-12, tested against the loop. For ``alpha < 0`` the identities hold
    with ``z = -x`` when no term crosses its pole (``z > u - 1``). ``alpha = 0`` (one of
    ARX's start values) makes every term ``1/theta`` times a power of ``i``: sums of powers.
    Otherwise it declines (``None``).

    No longer on the solver's path: :func:`_u_sums` is accurate everywhere, including where
    this declines. Kept, with its tests, as an independent digamma-based check.
    """
    if u < _CLOSED_FORM_MIN_CLASSES:
        return None
    if alpha == 0.0:  # every term is 1/theta (times 1, i, i^2): sums of powers
        m = float(u - 1)
        if theta == 0.0:  # 1/0 in every term, as the loop finds: the try fails
            return math.inf, math.inf, math.inf, math.inf, math.inf
        ones, lin, squares = m, m * (m + 1.0) / 2.0, m * (m + 1.0) * (2.0 * m + 1.0) / 6.0
        return ones / theta, lin / theta, ones / theta**2, lin / theta**2, squares / theta**2
    if not abs(alpha) > 1e-3:
        return None
    if alpha > 0:
        x = theta / alpha
        if not (-1.0 < x < 10.0 * u):
            return None
        s0 = float(special.digamma(x + u) - special.digamma(x + 1.0)) / alpha
        q0 = float(special.polygamma(1, x + 1.0) - special.polygamma(1, x + u)) / alpha**2
    else:
        # alpha < 0: 1/(t+ia) = 1/(b (z - i)) with b = -alpha, z = t/b; no pole for i < u
        # when z > u - 1, and the same digamma identities hold with arguments z-u+1 .. z.
        b = -alpha
        z = theta / b
        if not (u - 1.0 < z < 10.0 * u):
            return None
        s0 = float(special.digamma(z) - special.digamma(z - u + 1.0)) / b
        q0 = float(special.polygamma(1, z - u + 1.0) - special.polygamma(1, z)) / b**2
    m = float(u - 1)
    s1 = (m - theta * s0) / alpha
    q1 = (s0 - theta * q0) / alpha
    q2 = (m - 2.0 * theta * s0 + theta * theta * q0) / (alpha * alpha)
    return s0, s1, q0, q1, q2


# --------------------------------------------------------------------------------------------
# Pitman: the sums over i < u in O(1)
# --------------------------------------------------------------------------------------------

#: ``S0, S1, Q0, Q1, Q2``: the sums over ``i = 1..u-1`` of ``1/d``, ``i/d``, ``1/d^2``,
#: ``i/d^2`` and ``i^2/d^2`` with ``d = theta + i*alpha``.
_USums = tuple[float, float, float, float, float]

#: Terms whose denominator ``|theta/alpha + i|`` is below this are summed one by one; the rest
#: by Euler-Maclaurin (see :func:`_em_run` for the error bound that depends on it).
_EM_MIN_DENOMINATOR = 64.0
#: Bernoulli numbers ``B_2 .. B_12``: Euler-Maclaurin corrections up to the 11th derivative.
_EM_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730)
# The corrections reduce to four polynomials in z = 1/y^2:
# P0 = sum_k B_2k/(2k) z^(k-1), P1 = sum_k B_2k (2k-1)/(2k) z^(k-1), P2 = sum_k B_2k z^(k-1)
# and P3 = sum_k B_2k (2k-2)/(2k) z^(k-1) (coefficients highest power first). P1 and P3 are not
# formed as P2 - P0 and P2 - 2 P0: P3's constant term is 0, and i^2/y^2 with i << y would
# inherit the rounding of 1/6 - 2/12 at a relative ~y/i^2 * 1e-17.
_EM_POLYNOMIALS = tuple(
    tuple(b * weight(2 * k) for k, b in enumerate(_EM_BERNOULLI, 1))[::-1]
    for weight in (
        lambda k2: 1 / k2,  # P0
        lambda k2: (k2 - 1) / k2,  # P1
        lambda k2: 1.0,  # P2
        lambda k2: (k2 - 2) / k2,  # P3
    )
)
# The integrals' series in tau = omega/(2 - omega) are summed up to tau = 1/2 (omega = 2/3):
# coefficients 1/(2j+3) of T/tau^3 = sum_j tau^(2j)/(2j+3), highest first; with 28 terms the
# rest is below 4^-28 * 3/59 * 4/3 < 1e-18 of T. Above, the closed forms are used.
_SERIES_MAX_TAU = 0.5
_SERIES_T = tuple(1.0 / (2 * j + 3) for j in reversed(range(28)))
#: Below this ``|alpha| (u-1) / |theta|`` the terms are nearly constant: series in alpha/theta.
_NEARLY_CONSTANT = 2.0**-20


def _u_sums(u: int, theta: float, alpha: float) -> _USums:
    """The sums over ``i = 1..m`` (``m = u - 1``) of the score equations, in O(1).

    ``S0 = sum 1/d``, ``S1 = sum i/d``, ``Q0 = sum 1/d^2``, ``Q1 = sum i/d^2`` and
    ``Q2 = sum i^2/d^2`` with ``d = theta + i*alpha``, for any ``u``, ``theta`` and ``alpha``;
    where a term is infinite (``d = 0``) the result is not finite, as with the term-by-term
    loop :func:`_u_sums_loop` (the reference in the tests), and the Newton try ends.

    - **Nearly constant terms**, ``|alpha| m <= 2^-20 |theta|`` (including ``alpha = 0``).
      With ``e = alpha/theta``, ``d^-q = theta^-q (1 + i e)^-q = theta^-q sum_k
      binom(-q, k) (i e)^k``, so each sum is a series in ``e`` whose coefficients are the
      power sums ``P_k = sum_{i<=m} i^k`` (exact integers, Faulhaber). It is cut after
      ``e^2``; as ``|binom(-q, k)| <= k + 1`` and ``P_{p+k} <= m^k P_p``, the rest is below
      ``sum_{k>=3} (k+1) (m|e|)^k P_p < 5 (m|e|)^3 P_p``: a relative ``5 * 2^-60 < 5e-18``.
    - **Otherwise**, with ``x = theta/alpha``, ``d = alpha (x + i)`` and the sums are
      ``T_pq / alpha^q`` with ``T_pq = sum i^p/(x + i)^q``. The terms with
      ``|x + i| < 64`` (at most 128, around the pole ``i = -x``) are summed one by one as
      the loop does. The others form at most two runs of consecutive ``i``: right of the pole
      (``x + i >= 64``, denominators increasing) and left of it (``x + i <= -64``, where
      ``1/(x+i)^q = (-1)^q / |x+i|^q``, ``|x + i|`` decreasing); :func:`_em_run` sums each
      in O(1) to a relative 1e-14 whatever ``x`` and ``u``.

    Error: below 1e-14 relative (~1e-16 observed) plus the conditioning of the terms
    themselves, which the loop shares: where ``|theta + i alpha| << |theta|`` (near a pole)
    a term is sensitive to the rounding of ``theta/alpha`` here, of ``i*alpha`` there, by
    ``~1e-16 |theta| / |theta + i alpha|``. When the pole lies inside ``1..m`` the terms change
    sign and the sums are accurate relative to the sums of the terms' magnitudes (as any
    summation is). The old digamma closed form (:func:`_u_sums_closed_form`) lost
    ``~eps x/u`` and had to fall back to the O(u) loop for large ``x``, small ``|alpha|`` and
    poles; nothing here depends on ``u`` beyond O(1) work.
    """
    m = u - 1
    if m <= 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    if alpha == 0.0 or abs(alpha) * m <= _NEARLY_CONSTANT * abs(theta):
        return _u_sums_nearly_constant(m, theta, alpha)
    x = theta / alpha
    big = _EM_MIN_DENOMINATOR
    # Right run: i = right..m with x + i >= 64; left run: i = 1..left with x + i <= -64.
    right = 1 if x >= big - 1.0 else max(1, min(m + 1, math.ceil(big - x)))
    while right <= m and x + right < big:
        right += 1
    left = 0 if x > -big - 1.0 else max(0, min(m, math.floor(-big - x)))
    while left >= 1 and x + left > -big:
        left -= 1
    t01 = t11 = t02 = t12 = t22 = 0.0
    if right <= m:
        t01, t11, t02, t12, t22 = _em_run(right, m, x + right, 1)
    if left >= 1:
        l01, l11, l02, l12, l22 = _em_run(1, left, -x - 1.0, -1)
        t01, t11 = t01 - l01, t11 - l11
        t02, t12, t22 = t02 + l02, t12 + l12, t22 + l22
    alpha2 = alpha * alpha
    if alpha2 == 0.0:  # |alpha| < 1e-162 and |theta| below 2^20 m |alpha|: 1/d^2 overflows
        return math.inf, math.inf, math.inf, math.inf, math.inf
    s0, s1 = t01 / alpha, t11 / alpha
    q0, q1, q2 = t02 / alpha2, t12 / alpha2, t22 / alpha2
    first, last = left + 1, min(right - 1, m)
    if first <= last:  # near the pole: term by term
        near = _u_terms(first, last, theta, alpha)
        s0, s1, q0 = s0 + near[0], s1 + near[1], q0 + near[2]
        q1, q2 = q1 + near[3], q2 + near[4]
    return s0, s1, q0, q1, q2


def _u_terms(first: int, last: int, theta: float, alpha: float) -> _USums:
    """The five sums over ``i = first..last`` term by term (a few in Python, more in numpy)."""
    if last - first >= 24:
        i = np.arange(first, last + 1, dtype=np.float64)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # poles: inf
            inv = 1.0 / (theta + i * alpha)
            inv2 = inv * inv
        return (
            float(inv.sum()),
            float((i * inv).sum()),
            float(inv2.sum()),
            float((i * inv2).sum()),
            float((i * i * inv2).sum()),
        )
    s0 = s1 = q0 = q1 = q2 = 0.0
    for k in range(first, last + 1):
        denominator = theta + k * alpha
        if denominator == 0.0:  # a pole: not finite, as numpy's 1/0 makes the loop's sums
            return math.inf, math.inf, math.inf, math.inf, math.inf
        term = 1.0 / denominator
        square = term * term
        s0 += term
        s1 += k * term
        q0 += square
        q1 += k * square
        q2 += k * k * square
    return s0, s1, q0, q1, q2


def _u_sums_nearly_constant(m: int, theta: float, alpha: float) -> _USums:
    """:func:`_u_sums` when ``|alpha| m <= 2^-20 |theta|``: series in ``e = alpha/theta``.

    ``sum i^p/d = (P_p - e P_{p+1} + e^2 P_{p+2}) / theta`` and
    ``sum i^p/d^2 = (P_p - 2 e P_{p+1} + 3 e^2 P_{p+2}) / theta^2`` (``P_k = sum i^k``).
    """
    theta2 = theta * theta
    if theta2 == 0.0:  # theta = 0 (then alpha = 0: 1/0 in every term) or |theta| < 1e-162
        return math.inf, math.inf, math.inf, math.inf, math.inf
    p1 = m * (m + 1) // 2
    p2 = m * (m + 1) * (2 * m + 1) // 6
    power = (
        float(m),
        float(p1),
        float(p2),
        float(p1 * p1),
        float(p2 * (3 * m * m + 3 * m - 1) // 5),
    )
    e = alpha / theta

    def one(p: int) -> float:
        return (power[p] - e * (power[p + 1] - e * power[p + 2])) / theta

    def two(p: int) -> float:
        return (power[p] - e * (2.0 * power[p + 1] - 3.0 * e * power[p + 2])) / theta2

    return one(0), one(1), two(0), two(1), two(2)


def _em_run(i0: int, i1: int, y0: float, s: int) -> _USums:
    """``sum_{i=i0}^{i1} i^p / y_i^q`` for the five ``(p, q)``, ``y_i = y0 + s (i - i0) >= 64``.

    ``s = +1`` (denominators increasing) or ``-1`` (decreasing). Euler-Maclaurin, with
    ``f(i) = i^p / y_i^q``::

        sum f(i) = int_{i0}^{i1} f + (f(i0) + f(i1))/2
                   + sum_{k=1}^{6} B_2k/(2k)! (f^(2k-1)(i1) - f^(2k-1)(i0)) + R,
        |R| <= |B_12|/12! int |f^(12)|.

    *Integral.* With ``v = i - i0``, ``D = i1 - i0``, ``i^p = (i0 + v)^p`` expands with
    non-negative coefficients into ``J_lq = int_0^D v^l / (y0 + s v)^q dv`` (``l <= p``), each
    positive and, with ``omega = D / max(y0, y1)``, ``rho = D / min(y0, y1) = omega/(1-omega)``
    and ``L = log1p(rho) = -log(1 - omega)``, a positive combination of the positive series::

        Q = sum_{j>=2} omega^j / j       = L - omega
        P = sum_{j>=2} (1 - 1/j) omega^j = omega rho - Q
        R = sum_{j>=3} (1 - 2/j) omega^j = rho - 2 L + omega
        s = +1:  J01 = L,  J11 = y0 P,  J02 = D/(y0 y1),  J12 = Q,  J22 = y0 R
        s = -1:  J01 = L,  J11 = y0 Q,  J02 = D/(y0 y1),  J12 = P,  J22 = y0 R

    (e.g. ``J22 = int v^2/(y0+v)^2 = D - 2 y0 L + y0 D/y1``). For ``omega <= 2/3`` they are
    summed through ``tau = omega/(2 - omega) = D/(y0 + y1) <= 1/2``, in which ``L = 2 atanh
    tau``: with ``T = sum_{j>=1} tau^(2j+1)/(2j+1)`` (28 terms; the rest is below 1e-18 of
    it), ``L = 2 (tau + T)``, ``Q = 2 (tau^2/(1+tau) + T)`` and ``R = 4 (tau^3/(1-tau^2) - T)``
    where ``T <= tau^3/(3 (1-tau^2))`` (a factor 1.5 at most is lost). Above, the closed forms
    lose at most a factor 4.1 (``Q``) and 10.4 (``R``, at ``omega = 2/3``: 0.47 from terms of
    size 4.9). ``P`` loses at most a factor 2 since ``Q <= omega rho / 2``. So every ``J`` is
    good to ~1e-15 and no difference of nearly equal sums is formed: unlike the digamma form
    the accuracy does not depend on how large ``|x|`` is relative to ``u``.

    *Corrections.* By Leibniz (``d^k y^-q / dv^k = (-s)^k (q)_k y^(-q-k)``), summed over
    ``k`` the odd derivatives at an end reduce to four polynomials in ``1/y^2`` (see
    :data:`_EM_POLYNOMIALS` and :func:`_em_end`).

    *Remainder.* ``f^(12) = sum_{l<=p} C(12,l) p!/(p-l)! i^(p-l) (-s)^(12-l) (q)_(12-l)
    y^(-q-12+l)``, so with ``i >= 1`` and ``y >= 64``, ``|f^(12)| <= c f`` where
    ``c <= 13!/64^12 + 24*12!/64^11 + 132*11!/64^10 < 4.8e-9`` (``p = q = 2``, the largest).
    ``f`` is monotone on the run except ``i/y^2`` for ``s = +1``, which peaks once at
    ``i = x`` where its neighbours differ from it by ``O(1/x^2)``; either way
    ``int f <= sum f(i) + max f < 2.1 sum f(i)``. Hence
    ``|R| < (|B_12|/12! = 5.3e-10) * 4.8e-9 * 2.1 sum f < 6e-18 sum f``.
    """
    d = float(i1 - i0)
    y1 = y0 + s * d
    omega = d / (y1 if s > 0 else y0)
    rho = d / (y0 if s > 0 else y1)
    tau = d / (y0 + y1)
    if tau <= _SERIES_MAX_TAU:
        tau2 = tau * tau
        t_sum = 0.0
        for c in _SERIES_T:
            t_sum = t_sum * tau2 + c
        t_sum *= tau * tau2
        log_ratio = 2.0 * (tau + t_sum)
        q_sum = 2.0 * (tau2 / (1.0 + tau) + t_sum)
        r_sum = 4.0 * (tau * tau2 / (1.0 - tau2) - t_sum)
    else:
        log_ratio = math.log1p(rho)
        q_sum = log_ratio - omega
        r_sum = rho - 2.0 * log_ratio + omega
    p_sum = omega * rho - q_sum
    j02 = d / (y0 * y1)
    j11, j12 = (y0 * p_sum, q_sum) if s > 0 else (y0 * q_sum, p_sum)
    j22 = y0 * r_sum
    a = float(i0)
    sigma = -float(s)
    b01, b11, b02, b12, b22 = _em_end(a, y0, sigma, -1.0)
    e01, e11, e02, e12, e22 = _em_end(float(i1), y1, sigma, 1.0)
    return (
        log_ratio + b01 + e01,
        a * log_ratio + j11 + b11 + e11,
        j02 + b02 + e02,
        a * j02 + j12 + b12 + e12,
        a * (a * j02 + 2.0 * j12) + j22 + b22 + e22,
    )


def _em_end(i: float, y: float, sigma: float, sign: float) -> _USums:
    """Half the five ``f`` at one end of a run plus ``sign`` times its Euler-Maclaurin sum.

    With ``n = 2k-1``, ``b_k = B_2k/(2k)!``, ``z = 1/y^2`` and ``sigma = -s``, the odd
    derivatives (``(1)_n = n!``, ``(2)_n = (n+1)!``) give ``sum_k b_k f^(n)`` =
    ``sigma z P0`` for ``1/y``, ``i sigma z P0 + P0/y`` for ``i/y``, ``sigma z P2/y`` for
    ``1/y^2``, ``i sigma z P2/y + z P1`` for ``i/y^2`` and
    ``i^2 sigma z P2/y + 2 i z P1 + sigma P3/y`` for ``i^2/y^2`` (``Pj`` as in
    :data:`_EM_POLYNOMIALS`). Each of these terms is at most ``~f/12`` in size, so rounding
    them costs no more than rounding ``f``.
    """
    inv = 1.0 / y
    z = inv * inv
    p0 = p1 = p2 = p3 = 0.0
    for c0, c1, c2, c3 in zip(*_EM_POLYNOMIALS, strict=True):
        p0 = p0 * z + c0
        p1 = p1 * z + c1
        p2 = p2 * z + c2
        p3 = p3 * z + c3
    d01 = sigma * z * p0
    d02 = sigma * z * inv * p2
    d11 = i * d01 + inv * p0
    d12 = i * d02 + z * p1
    d22 = i * (i * d02 + 2.0 * z * p1) + sigma * inv * p3
    return (
        0.5 * inv + sign * d01,
        0.5 * i * inv + sign * d11,
        0.5 * z + sign * d02,
        0.5 * i * z + sign * d12,
        0.5 * i * i * z + sign * d22,
    )


def _pitman_root(h: _Histogram) -> tuple[float, float] | None:
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


def _pitman_newton(h: _Histogram, start: tuple[float, float]) -> tuple[float, float] | None:
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
    its ~15 us per call (Newton takes up to 17 x 100 steps). ``None`` when a pivot is exactly
    0, where ``numpy.linalg.solve`` raises ``LinAlgError``.
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


def _pitman_hybrid(h: _Histogram, start: tuple[float, float]) -> tuple[float, float] | None:
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


def _accept_pitman(h: _Histogram, theta: float, alpha: float) -> tuple[float, float] | None:
    """The root if it lies in the parameter space and solves the equations to 1e-10."""
    if not (math.isfinite(theta) and math.isfinite(alpha)):
        return None
    if not (0.0 < alpha < 1.0 and theta + alpha > 0.0):
        return None
    f, _, scale = _pitman_system(h, theta, alpha)
    if not bool(np.all(np.abs(f) <= _PITMAN_TOL * scale)):
        return None
    return theta, alpha


# --------------------------------------------------------------------------------------------
# Zayatz (1991)
# --------------------------------------------------------------------------------------------


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
    h = _histogram(sizes, counts, population_size)
    if h.c1 == 0:
        return h.estimate(0.0)
    return _zayatz(h)


def _zayatz(h: _Histogram) -> PopulationEstimate | None:
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


# --------------------------------------------------------------------------------------------
# SNB (Chen & Keller-McNulty 1998)
# --------------------------------------------------------------------------------------------


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
      finds no solution and reports SNB unavailable for every ``sf < 1`` (metrics.md §4). At
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
    h = _histogram(sizes, counts, population_size)
    if h.c1 == 0:
        return h.estimate(0.0)
    return _snb(h)


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


def _snb(h: _Histogram) -> PopulationEstimate | None:
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


# --------------------------------------------------------------------------------------------
# All models and Dankar's rule
# --------------------------------------------------------------------------------------------


def population_uniqueness(
    sizes: NDArray[np.int64], counts: NDArray[np.int64], population_size: int
) -> PopulationUniqueness:
    """Pitman, Zayatz and SNB estimates and Dankar et al.'s choice among them.

    Dankar, F.K., El Emam, K., Neisa, A., Roffey, T. (2012) "Estimating the re-identification
    risk of clinical data sets", BMC Medical Informatics and Decision Making 12:66. The rule,
    as ARX's ``RiskModelPopulationUniqueness`` applies it:

    - ``sf <= 0.1``: Pitman; Zayatz when Pitman is unavailable;
    - ``sf > 0.1``: the smaller of Zayatz and SNB (SNB on a tie); Zayatz when SNB is
      unavailable;
    - no sample unique (``c_1 = 0``): every estimate is 0 and the model is ``"dankar"``.
    """
    h = _histogram(sizes, counts, population_size)
    if h.c1 == 0:
        zero = h.estimate(0.0)
        return PopulationUniqueness(
            population_size=h.big_n,
            sampling_fraction=h.sf,
            pitman=zero,
            zayatz=zero,
            snb=zero,
            dankar=DankarEstimate(0.0, 0.0, "dankar"),
        )
    est_pitman = _pitman(h)
    est_zayatz = _zayatz(h)
    est_snb = _snb(h)
    return PopulationUniqueness(
        population_size=h.big_n,
        sampling_fraction=h.sf,
        pitman=est_pitman,
        zayatz=est_zayatz,
        snb=est_snb,
        dankar=_dankar(h.sf, est_pitman, est_zayatz, est_snb),
    )


def _dankar(
    sf: float,
    est_pitman: PopulationEstimate | None,
    est_zayatz: PopulationEstimate | None,
    est_snb: PopulationEstimate | None,
) -> DankarEstimate | None:
    model: DankarModel
    est: PopulationEstimate | None
    if sf <= DANKAR_THRESHOLD:
        model, est = ("pitman", est_pitman) if est_pitman is not None else ("zayatz", est_zayatz)
    elif est_snb is None or (est_zayatz is not None and est_zayatz.uniques < est_snb.uniques):
        model, est = "zayatz", est_zayatz
    else:  # SNB when smaller or equal (ARX keeps SNB on a tie)
        model, est = "snb", est_snb
    if est is None:
        return None
    return DankarEstimate(est.uniques, est.fraction, model)
