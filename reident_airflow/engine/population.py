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
    evaluated term by term (vectorised); those over ``i < n`` and within classes through
    digamma/trigamma.

    The estimate is ``Gamma(theta + 1) / Gamma(theta + alpha) * N**alpha`` (via ``gammaln``).
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
        log_est = (
            float(special.gammaln(theta + 1.0))
            - float(special.gammaln(theta + alpha))
            + alpha * math.log(h.big_n)
        )
    if not math.isfinite(log_est) or log_est > math.log(h.big_n):
        return None
    return h.estimate(math.exp(log_est))


#: ARX's deterministic start values (``ARXSolverConfiguration.getDefaultStartValues``).
_ARX_STARTS: tuple[tuple[float, float], ...] = tuple(
    (t, a) for t in (0.0, 0.33, 0.66, 0.99) for a in (0.0, 0.33, 0.66, 0.99)
)


def _pitman_start(h: _Histogram) -> tuple[float, float]:
    """ARX's first start (``ModelPitman``), with ``c_2 := 1`` when there is no pair."""
    n, u, c1 = float(h.n), float(h.u), float(h.c1)
    c2 = float(h.c2) if h.c2 else 1.0
    c = c1 * (c1 - 1.0) / c2
    theta = (n * u * c - c1 * (n - 1.0) * (2.0 * u + c)) / (2.0 * c1 * u + c1 * c - n * c)
    alpha = (theta * (c1 - n) + (n - 1.0) * c1) / (n * u)
    return theta, alpha


def _in_search_box(theta: float, alpha: float) -> bool:
    """Where the score equations are evaluated at all.

    Admissible roots have ``theta > -alpha > -1`` and ``0 < alpha < 1``. Newton may wander
    outside, but beyond ``theta <= -1`` the sum over ``i < n`` crosses its poles (and
    trigamma of a large negative argument costs time linear in it), so a try ends there.
    """
    return -1.0 < theta < 1e12 and -1e6 < alpha < 1e3


def _pitman_system(
    h: _Histogram, theta: float, alpha: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Score equations ``F(theta, alpha)``, their Jacobian and the scale of each equation."""
    # i = 1..u-1: sum 1/(t+ia), i/(t+ia), and the squares for the Jacobian.
    closed = _u_sums_closed_form(h.u, theta, alpha)
    if closed is not None:
        s0, s1, q0, q1, q2 = closed
    else:
        s0, s1, q0, q1, q2 = _u_sums_loop(h.u, theta, alpha)
    # i = 1..n-1: sum 1/(t+i) = psi(t+n) - psi(t+1); sum 1/(t+i)^2 = psi'(t+1) - psi'(t+n).
    r0 = float(special.digamma(theta + h.n) - special.digamma(theta + 1.0))
    r1 = float(special.polygamma(1, theta + 1.0) - special.polygamma(1, theta + h.n))
    # Classes: sum_s c_s sum_{j<s} 1/(j-a) = sum_s c_s (psi(s-a) - psi(1-a)), and squares.
    big = h.sizes >= 2
    if bool(big.any()):
        s_big = h.sizes[big].astype(np.float64)
        c_big = h.counts[big].astype(np.float64)
        w0 = float(np.dot(c_big, special.digamma(s_big - alpha) - special.digamma(1.0 - alpha)))
        w1 = float(
            np.dot(
                c_big,
                special.polygamma(1, 1.0 - alpha) - special.polygamma(1, s_big - alpha),
            )
        )
    else:
        w0 = w1 = 0.0
    f = np.array([s0 - r0, s1 - w0])
    jac = np.array([[r1 - q0, -q1], [-q1, -q2 - w1]])
    scale = 1.0 + np.abs(np.array([r0, w0]))
    return f, jac, scale


def _u_sums_loop(u: int, theta: float, alpha: float) -> tuple[float, float, float, float, float]:
    """The sums over ``i = 1..u-1`` term by term (chunked, exact to rounding)."""
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


#: Above this many classes the sums over i < u use their closed forms (see below).
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
    Otherwise the loop sums term by term.
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


def _pitman_root(h: _Histogram) -> tuple[float, float] | None:
    if h.u == h.n:  # only uniques: sum i/(theta + i*alpha) > 0 = right-hand side, no root
        return None
    first = _pitman_start(h)
    with np.errstate(all="ignore"):
        for start in (first, *_ARX_STARTS):
            root = _pitman_newton(h, start)
            if root is not None:
                return root
        return _pitman_hybrid(h, first)


def _pitman_newton(h: _Histogram, start: tuple[float, float]) -> tuple[float, float] | None:
    theta, alpha = start
    for _ in range(_PITMAN_MAX_ITER):
        if not (math.isfinite(theta) and math.isfinite(alpha) and _in_search_box(theta, alpha)):
            return None
        f, jac, scale = _pitman_system(h, theta, alpha)
        if not (np.all(np.isfinite(f)) and np.all(np.isfinite(jac))):
            return None
        if bool(np.all(np.abs(f) <= 1e-3 * _PITMAN_TOL * scale)):
            break
        try:
            step = np.linalg.solve(jac, -f)
        except np.linalg.LinAlgError:
            return None
        theta, alpha = theta + float(step[0]), alpha + float(step[1])
        if abs(step[0]) <= 1e-15 * abs(theta) and abs(step[1]) <= 1e-15 * abs(alpha):
            break
    return _accept_pitman(h, theta, alpha)


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
    """
    h = _histogram(sizes, counts, population_size)
    if h.c1 == 0:
        return h.estimate(0.0)
    return _zayatz(h)


def _zayatz(h: _Histogram) -> PopulationEstimate | None:
    s_max = int(h.sizes[-1])
    j = np.arange(1, s_max, dtype=np.float64)  # j = 1..s_max-1
    x = (h.n - 1.0) / (h.big_n - j)  # N - j >= N - n + 1 > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.log1p(-np.minimum(x, 1.0))  # -inf once a class cannot yield one record
        log_prod = np.concatenate(([0.0], np.cumsum(terms)))  # index s-1 -> sum over j < s
        ratio = h.sizes * np.exp(log_prod[h.sizes - 1])  # h(s) / h(1)
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
        out = np.array([lk + log_p1 - log_c1, lk + log_p2 - log_c2])
        return out if bool(np.all(np.isfinite(out))) else np.full(2, 1e10)

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
