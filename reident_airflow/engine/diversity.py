"""l-diversity of sensitive columns (docs/metrics.md §7; Machanavajjhala et al. 2007).

Re-identification risk measures how hard it is to find a person's record; it says nothing
about what a class discloses. If all 20 records of a class share one diagnosis, anyone known
to be in the class has that diagnosis disclosed, whatever the class's size (docs/metrics.md
§7). For each class and each sensitive column, with ``r_1 >= r_2 >= ... >= r_m`` the
counts of the column's values in the class (a missing value counting as one value):

- distinct l: ``m``, the number of distinct values;
- entropy l: ``exp(-sum_i p_i ln p_i)`` with ``p_i = r_i / f`` (``f`` the class size);
- recursive (c, l): the largest ``l`` with ``r_1 < c * (r_l + r_{l+1} + ... + r_m)``, and 1
  when no ``l >= 2`` qualifies (Machanavajjhala et al., definition 4.2).

The table's l is the minimum over its classes. Per-class values match sdcMicro 5.8.0's
``ldiversity()`` (``tests/engine/test_diversity.py``; its ``Multi*`` columns are not
reproduced: sdcMicro always reports them as 0). sdcMicro differs on missing sensitive
values: it counts them for distinct and entropy l only when the class has another value, and
never for recursive l; here a missing value is a value like any other, everywhere.

Input is :class:`~reident_airflow.engine.aggregates.ValueCounts`: per class, the counts of each
value (computed where the data is). The values themselves are never needed.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from reident_airflow.engine._arrays import FloatArray, IntArray
from reident_airflow.engine.aggregates import ValueCounts
from reident_airflow.engine.defaults import DEFAULT_RECURSIVE_C
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.numbers import as_number
from reident_airflow.engine.records import field_dict

__all__ = ["DEFAULT_RECURSIVE_C", "LDiversity", "l_diversity", "validate_recursive_c"]


#: The fields of :class:`LDiversity` in a column's JSON entry, in contract order.
_JSON_FIELDS = ("distinct", "entropy", "recursive", "c", "homogeneous_records")

# Pairs per block of the entropy sums (whole classes; a few MiB of temporaries).
_BLOCK = 1 << 18


def validate_recursive_c(value: Any) -> float:
    """c of recursive (c, l)-diversity: a finite number > 0."""
    c = as_number(value, "recursive c", kind="a number > 0")
    if not (math.isfinite(c) and c > 0):
        raise InvalidInputError(f"recursive c must be a finite number > 0, got {value!r}")
    return c


@dataclass(frozen=True)
class LDiversity:
    """l-diversity of one sensitive column: the minimum over classes, and per class.

    ``homogeneous_records`` is the share of records whose class has a single value of the
    column (distinct l = 1): what those classes disclose, they disclose about every member.
    ``per_class_entropy`` and ``per_class_recursive`` are computed when first read: a release
    gate needs only the minima, and those are exactly 1 as soon as one class has a single
    value (which the class starts already show), so the per-class arrays (a sort of every
    (class, value) pair for recursive l) are left for whoever asks for them.
    """

    column: str
    c: float
    records: int
    distinct: int
    entropy: float
    recursive: int
    homogeneous_records: float
    per_class_distinct: IntArray = field(repr=False, compare=False)
    #: The checked value counts the per-class arrays are computed from.
    counts: ValueCounts = field(repr=False, compare=False)
    #: ``(entropy, recursive)`` of every class when already computed (they then need no
    #: second computation).
    computed: InitVar[tuple[FloatArray, IntArray] | None] = None

    def __post_init__(self, computed: tuple[FloatArray, IntArray] | None) -> None:
        if computed is not None:  # the cached property's value is known
            object.__setattr__(self, "_per_class_arrays", computed)

    @cached_property
    def _per_class_arrays(self) -> tuple[FloatArray, IntArray]:
        """``(entropy, recursive)`` of every class."""
        return _per_class_of(self.counts, self.per_class_distinct, self.c)

    @property
    def per_class_entropy(self) -> FloatArray:
        """Entropy l of every class (1 exactly where the class has one value)."""
        return self._per_class_arrays[0]

    @property
    def per_class_recursive(self) -> IntArray:
        """Recursive (c, l) of every class."""
        return self._per_class_arrays[1]

    def to_dict(self) -> dict[str, Any]:
        """The entry of this column in the ``l_diversity`` object (docs/contract.md)."""
        return field_dict(self, _JSON_FIELDS)


def _run_lengths(first: NDArray[Any], n: int) -> IntArray:
    """The length of each run, from where the runs of ``n`` elements start (ascending)."""
    lengths = np.empty(first.shape[0], dtype=np.int64)
    np.subtract(first[1:], first[:-1], out=lengths[:-1])
    lengths[-1:] = n - first[-1:]
    return lengths


def _running_counts(cls: IntArray, cnt: IntArray, classes: int, top: int, total: int) -> Any:
    """Running sum of the counts, each class's counts taken in ascending order.

    Class j's counts ascending are the differences of the result over ``first[j] ..
    last[j]``. The pairs are ordered by one sort of a key holding the class above the count
    (32 bits when they fit); the running sum is taken in place in that key when the total
    fits it.
    """
    bits = top.bit_length()
    if (classes << bits) >= 1 << 63:  # pragma: no cover - more than 2**63 / max count classes
        return np.cumsum(cnt[np.lexsort((cnt, cls))])
    dtype: Any = np.uint32 if (classes << bits) < 1 << 32 else np.uint64
    key = np.empty(cls.shape[0], dtype=dtype)
    np.left_shift(cls, bits, out=key, casting="unsafe")
    np.bitwise_or(
        key, cnt.view(np.uint64) if dtype is np.uint64 else cnt, out=key, casting="unsafe"
    )
    key.sort()
    key &= dtype((1 << bits) - 1)
    if total < np.iinfo(dtype).max:
        return np.cumsum(key, out=key)
    return np.cumsum(key, dtype=np.int64)


def _entropy_sums(cls: IntArray, cnt: IntArray, first: IntArray, top: int) -> FloatArray:
    """``sum r ln r`` over each class's counts ``r``.

    ``r ln r`` is looked up in a table of the counts (small integers: the largest is at most
    n) and summed by a bincount over blocks of whole classes that stay in the CPU cache: each
    class's terms are added in the same order as by one bincount over all pairs.
    """
    u, pairs = first.shape[0], cls.shape[0]
    if top > 4 * pairs + 1024:  # a few very large counts
        summed = np.bincount(cls, weights=cnt * np.log(cnt), minlength=u)
        return summed.astype(np.float64, copy=False)
    r = np.arange(top + 1, dtype=np.float64)
    r[0] = 1.0
    r_log_r = r * np.log(r)
    out: FloatArray = np.empty(u, dtype=np.float64)
    starts = np.unique(np.searchsorted(first, np.arange(0, pairs, _BLOCK))).tolist()
    for j0, j1 in zip(starts, [*starts[1:], u], strict=True):
        p0 = int(first[j0])
        p1 = int(first[j1]) if j1 < u else pairs
        block = np.subtract(cls[p0:p1], j0)
        out[j0:j1] = np.bincount(block, weights=r_log_r[cnt[p0:p1]], minlength=j1 - j0)
    return out


def _recursive(
    running: Any,
    start: IntArray,
    m: IntArray,
    end: IntArray,
    before: IntArray,
    c: float,
) -> IntArray:
    """Recursive (c, l) of classes of two values or more, from the running sum of their
    ascending counts (``running``) and, per class, where its pairs start, how many there
    are (``m``) and the running total after and before it.

    With a class's counts ascending ``a_0 <= ... <= a_{m-1} = r_1``, the tail
    ``r_l + ... + r_m`` of the definition is the sum of the ``m - l + 1`` smallest counts, so
    ``l = m - T`` with ``T`` the number of prefixes ``a_0 + ... + a_t`` (``t <= m - 2``) with
    ``c * prefix <= r_1``, i.e. ``prefix <= floor(r_1 / c)``. The prefixes increase: ``T`` is
    0 when ``a_0`` exceeds the bound (with two values, the whole answer), else found by a
    binary search in the running sum.
    """
    largest = end - running[start + m - 2]
    bound = np.floor(largest / c).astype(np.int64)
    bound[c * bound > largest] -= 1  # floating rounding of r_1 / c: the true floor
    # a prefix of class j is running[start_j + t] - before_j: compare running with before + bound
    threshold = np.minimum(before + bound, end)
    below = (running[start] <= threshold).astype(np.int64)
    more = np.flatnonzero(below.astype(np.bool_) & (m >= 3))
    if more.shape[0]:
        found = np.searchsorted(running, threshold[more].astype(running.dtype), side="right")
        below[more] = np.minimum(found - start[more], m[more] - 1)
    out: IntArray = m - below
    return out


def l_diversity(
    counts: ValueCounts, sizes: IntArray, *, c: float = DEFAULT_RECURSIVE_C
) -> LDiversity:
    """Distinct, entropy and recursive (c, l)-diversity of one sensitive column.

    ``counts`` are the column's value counts per class, ``sizes`` the class sizes of the same
    class table (they must add up). Counts built against equal sizes are used as they are;
    any others are ordered by class and checked first (:meth:`ValueCounts.checked`).
    """
    c = validate_recursive_c(c)
    f = np.asarray(sizes, dtype=np.int64)
    if int(f.shape[0]) == 0:
        raise InvalidInputError("l-diversity of an empty class table")
    counts = counts.checked(f)
    assert counts.starts is not None  # checked counts know where each class starts
    first = counts.starts
    cnt = np.asarray(counts.counts, dtype=np.int64)
    distinct = _run_lengths(first, cnt.shape[0])  # pairs of each class
    n = int(f.sum())
    homogeneous = int(np.sum(f, where=distinct == 1))
    computed = None
    minima: tuple[int, float, int] = (1, 1.0, 1)  # a class with one value: every minimum is 1
    if not homogeneous:
        computed = _per_class_of(counts, distinct, c)
        minima = (int(distinct.min()), float(computed[0].min()), int(computed[1].min()))
    return LDiversity(
        column=counts.column,
        c=c,
        records=n,
        distinct=minima[0],
        entropy=minima[1],
        recursive=minima[2],
        homogeneous_records=homogeneous / n,
        per_class_distinct=distinct,
        counts=counts,
        computed=computed,
    )


def _per_class_of(counts: ValueCounts, distinct: IntArray, c: float) -> tuple[FloatArray, IntArray]:
    """Entropy l and recursive (c, l) of every class of checked value counts."""
    assert counts.sizes is not None and counts.starts is not None  # checked counts
    return _per_class(
        np.asarray(counts.classes, dtype=np.int64),
        np.asarray(counts.counts, dtype=np.int64),
        counts.sizes,
        counts.starts,
        distinct,
        c,
    )


def _per_class(
    cls: IntArray,
    cnt: IntArray,
    f: IntArray,
    first: IntArray,
    distinct: IntArray,
    c: float,
) -> tuple[FloatArray, IntArray]:
    """Entropy l and recursive (c, l) of every class (pairs grouped by class, checked)."""
    u = int(f.shape[0])
    top = int(cnt.max())
    running = _running_counts(cls, cnt, u, top, int(f.sum()))
    last = first + distinct - 1  # each class's last pair
    ends = running[last].astype(np.int64)  # running total after each class
    before = ends - f
    # one value: entropy l exactly 1, recursive l 1; the others, from their counts
    multi = np.flatnonzero(distinct > 1)
    m, size = distinct[multi], f[multi]
    s_r = _entropy_sums(cls, cnt, first, top)
    entropy = np.ones(u, dtype=np.float64)
    # exp(-sum p ln p) with p = r / f, i.e. exp(ln f - (sum r ln r) / f)
    ff = size.astype(np.float64)
    entropy[multi] = np.exp(np.log(ff) - s_r[multi] / ff)
    recursive = np.ones(u, dtype=np.int64)
    recursive[multi] = _recursive(running, first[multi], m, ends[multi], before[multi], c)
    return entropy, recursive
