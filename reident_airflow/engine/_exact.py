"""A sum of floats that does not depend on the order of its terms.

A total must not depend on the order of the classes (a file and a database list them
differently). Summing the values sorted would cost a sort of millions of floats, and a float
sum still rounds at every addition. Here every term is cut, at one power-of-two scale set by the
largest term, into an integer part and a fraction given to 42 bits; both are added as int64
(integer addition is exact, so associative: any order gives the same total) and the two
totals are combined in a Python integer and rounded once.

Error: each term is represented to within ``2**-84`` times the largest term, so the result is
within ``n * 2**-84 * max|x|`` of the exact sum, plus its final rounding (n = 2**30 terms:
half a unit in the last place of the largest term). The sum of sorted values that this
replaces rounded at every addition.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["order_free_sum"]

_FRACTION_BITS = 42  # the fraction of each scaled term, as an integer (|.| <= 2**42)
_SCALE_BITS = 42  # every scaled term is below 2**42 in magnitude
# Terms per block: small enough that the block's temporaries stay in the CPU cache. The int64
# sums cannot overflow below 2**20 terms of magnitude <= 2**42.
_CHUNK = 1 << 15


def order_free_sum(values: NDArray[Any], repeats: NDArray[Any] | None = None) -> float:
    """The sum of ``values`` (floats), identical for every order of the terms.

    Within ``n * 2**-84 * max|x|`` of the exact sum, rounded once. With a non-finite term the
    result is numpy's sum (``inf`` or ``nan``).

    ``repeats`` (non-negative integers, one per value) counts each value that many times:
    the result is ``order_free_sum(np.repeat(values, repeats))``, without repeating (each
    term is cut into the same integer, which is added ``repeats`` times).
    """
    x = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    r = None
    if repeats is not None:
        r = np.asarray(repeats, dtype=np.int64).reshape(-1)
        x, r = x[r > 0], r[r > 0]
    n = x.shape[0]
    if n == 0:
        return 0.0
    high, low = float(x.max()), float(x.min())  # NaN if there is one
    if not (math.isfinite(high) and math.isfinite(low)):
        with np.errstate(invalid="ignore", over="ignore"):
            return float(np.sum(x))
    largest = max(high, -low)
    if largest == 0.0:
        return 0.0
    _, top = math.frexp(largest)  # largest < 2**top
    shift = _SCALE_BITS - top  # |x| * 2**shift < 2**42: exact (a power of two), no overflow
    if r is not None:
        return _to_float(_repeated_total(x, r, shift), -(shift + _FRACTION_BITS))
    total = 0
    for start in range(0, n, _CHUNK):
        scaled = np.ldexp(x[start : start + _CHUNK], shift)
        whole = np.trunc(scaled)
        scaled -= whole  # exact: the fraction of each term, |.| < 1
        scaled *= float(1 << _FRACTION_BITS)  # exact
        np.rint(scaled, out=scaled)
        wholes = int(whole.astype(np.int64).sum())
        fractions = int(scaled.astype(np.int64).sum())
        total += (wholes << _FRACTION_BITS) + fractions
    return _to_float(total, -(shift + _FRACTION_BITS))


def _repeated_total(x: NDArray[np.float64], repeats: NDArray[np.int64], shift: int) -> int:
    """The integer total of the terms of ``x`` scaled by ``2**shift``, each counted
    ``repeats`` times: in Python integers (a term times its repeats may exceed int64)."""
    scaled = np.ldexp(x, shift)
    whole = np.trunc(scaled)
    fraction = np.rint((scaled - whole) * float(1 << _FRACTION_BITS))
    terms = (whole.astype(np.int64).astype(object) << _FRACTION_BITS) + fraction.astype(
        np.int64
    ).astype(object)
    return int((terms * repeats.astype(object)).sum())


def _to_float(total: int, exponent: int) -> float:
    """``total * 2**exponent`` rounded once to the nearest float (ties to even)."""
    try:
        if exponent >= 0:  # float() rounds once, the power of two scales exactly
            return math.ldexp(float(total), exponent)
        return total / (1 << -exponent)  # Python's int division rounds once (subnormals too)
    except OverflowError:
        return math.inf if total > 0 else -math.inf
