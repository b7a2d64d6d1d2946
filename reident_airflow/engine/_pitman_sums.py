"""The sums over ``i = 1..u-1`` in Pitman's score equations, and the trigamma function.

Pitman's maximum-likelihood fit (:mod:`reident_airflow.engine.population_pitman`, Hoshino 2001)
needs, at every Newton step, five sums over the ``u - 1`` classes of a sample, and the trigamma
function over its distinct class sizes. :func:`u_sums` evaluates the sums in O(1) whatever
``u`` (Euler-Maclaurin away from the pole ``theta + i alpha = 0``, term by term near it, a
series in ``alpha/theta`` when the terms are nearly constant); :func:`u_sums_loop` (term by
term) and :func:`u_sums_closed_form` (digamma) are the independent references the tests compare
it with.

An internal module of the engine: its names are imported by the engine's modules (and their
tests) only.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from reident_airflow.engine._arrays import FloatArray

__all__ = [
    "USums",
    "em_run",
    "trigamma",
    "u_sums",
    "u_sums_closed_form",
    "u_sums_loop",
]


# Harmonic sums over i = 1..u-1 are evaluated in chunks of this many terms (bounded memory).
_CHUNK = 1 << 20
#: Bernoulli numbers ``B_2 .. B_14`` for the asymptotic series of the trigamma function.
_TRIGAMMA_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def trigamma(x: FloatArray) -> FloatArray:
    """``psi'(x) = zeta(2, x)`` elementwise, as ``scipy.special.zeta`` but faster on long arrays.

    A histogram with thousands of distinct class sizes makes ``zeta`` over them the largest
    cost of each Newton step. For arrays of 64 or more, arguments ``x >= 64`` take
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


def u_sums_loop(u: int, theta: float, alpha: float) -> tuple[float, float, float, float, float]:
    """The sums over ``i = 1..u-1`` term by term (chunked, exact to rounding); O(u).

    Not used by the solver (see :func:`u_sums`); the reference in the tests.
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


def u_sums_closed_form(
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

    Not on the solver's path (:func:`u_sums` is accurate everywhere, including where this
    declines): an independent digamma-based check of it in the tests.
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


#: ``S0, S1, Q0, Q1, Q2``: the sums over ``i = 1..u-1`` of ``1/d``, ``i/d``, ``1/d^2``,
#: ``i/d^2`` and ``i^2/d^2`` with ``d = theta + i*alpha``.
USums = tuple[float, float, float, float, float]
#: Terms whose denominator ``|theta/alpha + i|`` is below this are summed one by one; the rest
#: by Euler-Maclaurin (see :func:`em_run` for the error bound that depends on it).
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


def u_sums(u: int, theta: float, alpha: float) -> USums:
    """The sums over ``i = 1..m`` (``m = u - 1``) of the score equations, in O(1).

    ``S0 = sum 1/d``, ``S1 = sum i/d``, ``Q0 = sum 1/d^2``, ``Q1 = sum i/d^2`` and
    ``Q2 = sum i^2/d^2`` with ``d = theta + i*alpha``, for any ``u``, ``theta`` and ``alpha``;
    where a term is infinite (``d = 0``) the result is not finite, as with the term-by-term
    loop :func:`u_sums_loop` (the reference in the tests), and the Newton try ends.

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
      ``1/(x+i)^q = (-1)^q / |x+i|^q``, ``|x + i|`` decreasing); :func:`em_run` sums each
      in O(1) to a relative 1e-14 whatever ``x`` and ``u``.

    Error: below 1e-14 relative (~1e-16 observed) plus the conditioning of the terms
    themselves, which the loop shares: where ``|theta + i alpha| << |theta|`` (near a pole)
    a term is sensitive to the rounding of ``theta/alpha`` here, of ``i*alpha`` there, by
    ``~1e-16 |theta| / |theta + i alpha|``. When the pole lies inside ``1..m`` the terms change
    sign and the sums are accurate relative to the sums of the terms' magnitudes (as any
    summation is). The digamma closed form (:func:`u_sums_closed_form`) loses ``~eps x/u``
    and needs the O(u) loop for large ``x``, small ``|alpha|`` and poles; nothing here
    depends on ``u`` beyond O(1) work.
    """
    m = u - 1
    if m <= 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    if alpha == 0.0 or abs(alpha) * m <= _NEARLY_CONSTANT * abs(theta):
        return _u_sums_nearly_constant(m, theta, alpha)
    x = theta / alpha
    left, right = _em_run_bounds(m, x)
    t01 = t11 = t02 = t12 = t22 = 0.0
    if right <= m:
        t01, t11, t02, t12, t22 = em_run(right, m, x + right, 1)
    if left >= 1:
        l01, l11, l02, l12, l22 = em_run(1, left, -x - 1.0, -1)
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


def _em_run_bounds(m: int, x: float) -> tuple[int, int]:
    """``(left, right)``: the runs ``i = 1..left`` (``x + i <= -64``) and ``i = right..m``
    (``x + i >= 64``) that Euler-Maclaurin sums; either may be empty (``left = 0``,
    ``right = m + 1``), and the terms between them are summed one by one."""
    big = _EM_MIN_DENOMINATOR
    right = 1 if x >= big - 1.0 else max(1, min(m + 1, math.ceil(big - x)))
    while right <= m and x + right < big:
        right += 1
    left = 0 if x > -big - 1.0 else max(0, min(m, math.floor(-big - x)))
    while left >= 1 and x + left > -big:
        left -= 1
    return left, right


def _u_terms(first: int, last: int, theta: float, alpha: float) -> USums:
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


def _u_sums_nearly_constant(m: int, theta: float, alpha: float) -> USums:
    """:func:`u_sums` when ``|alpha| m <= 2^-20 |theta|``: series in ``e = alpha/theta``.

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


def em_run(i0: int, i1: int, y0: float, s: int) -> USums:
    """``sum_{i=i0}^{i1} i^p / y_i^q`` for the five ``(p, q)``, ``y_i = y0 + s (i - i0) >= 64``.

    ``s = +1`` (denominators increasing) or ``-1`` (decreasing). Euler-Maclaurin, with
    ``f(i) = i^p / y_i^q``::

        sum f(i) = int_{i0}^{i1} f + (f(i0) + f(i1))/2
                   + sum_{k=1}^{6} B_2k/(2k)! (f^(2k-1)(i1) - f^(2k-1)(i0)) + R,
        |R| <= |B_12|/12! int |f^(12)|.

    *Integral.* With ``v = i - i0``, ``i^p = (i0 + v)^p`` expands with non-negative
    coefficients into the integrals ``J_lq`` of :func:`_em_integrals`: ``int i/y =
    i0 J01 + J11``, ``int i/y^2 = i0 J02 + J12``, ``int i^2/y^2 = i0^2 J02 + 2 i0 J12 + J22``;
    each ``J`` is good to ~1e-15 and no difference of nearly equal sums is formed, so unlike
    the digamma form the accuracy does not depend on how large ``|x|`` is relative to ``u``.

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
    y1 = y0 + s * float(i1 - i0)
    j01, j02, j11, j12, j22 = _em_integrals(float(i1 - i0), y0, y1, s)
    a = float(i0)
    sigma = -float(s)
    b01, b11, b02, b12, b22 = _em_end(a, y0, sigma, -1.0)
    e01, e11, e02, e12, e22 = _em_end(float(i1), y1, sigma, 1.0)
    return (
        j01 + b01 + e01,
        a * j01 + j11 + b11 + e11,
        j02 + b02 + e02,
        a * j02 + j12 + b12 + e12,
        a * (a * j02 + 2.0 * j12) + j22 + b22 + e22,
    )


def _em_integrals(d: float, y0: float, y1: float, s: int) -> USums:
    """``(J01, J02, J11, J12, J22)``, ``J_lq = int_0^D v^l / (y0 + s v)^q dv``, ``D = d``.

    Each is positive and, with ``omega = D / max(y0, y1)``, ``rho = D / min(y0, y1) =
    omega/(1-omega)`` and ``L = log1p(rho) = -log(1 - omega)``, a positive combination of the
    positive series::

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
    good to ~1e-15.
    """
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
    j11, j12 = (y0 * p_sum, q_sum) if s > 0 else (y0 * q_sum, p_sum)
    return log_ratio, d / (y0 * y1), j11, j12, y0 * r_sum


def _em_end(i: float, y: float, sigma: float, sign: float) -> USums:
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
