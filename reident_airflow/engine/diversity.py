"""l-diversity of sensitive columns (metrics.md §7; Machanavajjhala et al. 2007).

Re-identification risk measures how hard it is to find a person's record; it says nothing
about what a class discloses. If all 20 records of a class share one diagnosis, anyone known
to be in the class has that diagnosis disclosed, whatever the class's size (seed 003,
limitations). For each class and each sensitive column, with ``r_1 >= r_2 >= ... >= r_m`` the
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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from reident_airflow.engine.aggregates import ValueCounts
from reident_airflow.engine.errors import InvalidInputError

__all__ = ["DEFAULT_RECURSIVE_C", "LDiversity", "l_diversity", "validate_recursive_c"]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

#: Default constant c of recursive (c, l)-diversity (sdcMicro's ``l_recurs_c`` default).
DEFAULT_RECURSIVE_C = 2.0


def validate_recursive_c(value: Any) -> float:
    """c of recursive (c, l)-diversity: a finite number > 0."""
    if isinstance(value, bool):
        raise InvalidInputError(f"recursive c must be a number > 0, got {value!r}")
    try:
        c = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"recursive c must be a number > 0, got {value!r}") from None
    if not (math.isfinite(c) and c > 0):
        raise InvalidInputError(f"recursive c must be a finite number > 0, got {value!r}")
    return c


@dataclass(frozen=True)
class LDiversity:
    """l-diversity of one sensitive column: the minimum over classes, and per class.

    ``homogeneous_records`` is the share of records whose class has a single value of the
    column (distinct l = 1): what those classes disclose, they disclose about every member.
    """

    column: str
    c: float
    records: int
    distinct: int
    entropy: float
    recursive: int
    homogeneous_records: float
    per_class_distinct: IntArray = field(repr=False, compare=False)
    per_class_entropy: FloatArray = field(repr=False, compare=False)
    per_class_recursive: IntArray = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The entry of this column in the ``l_diversity`` object (contract.md)."""
        return {
            "distinct": self.distinct,
            "entropy": self.entropy,
            "recursive": self.recursive,
            "c": self.c,
            "homogeneous_records": self.homogeneous_records,
        }


def l_diversity(
    counts: ValueCounts, sizes: IntArray, *, c: float = DEFAULT_RECURSIVE_C
) -> LDiversity:
    """Distinct, entropy and recursive (c, l)-diversity of one sensitive column.

    ``counts`` are the column's value counts per class, ``sizes`` the class sizes of the same
    class table (they must add up).
    """
    c = validate_recursive_c(c)
    f = np.asarray(sizes, dtype=np.int64)
    u = int(f.shape[0])
    cls = np.asarray(counts.classes, dtype=np.int64)
    cnt = np.asarray(counts.counts, dtype=np.int64)
    if cls.shape != cnt.shape or cls.ndim != 1:
        raise InvalidInputError(f"value counts of {counts.column!r}: misaligned arrays")
    if u == 0:
        raise InvalidInputError("l-diversity of an empty class table")
    if cls.size and (cls.min() < 0 or cls.max() >= u or (cnt <= 0).any()):
        raise InvalidInputError(f"value counts of {counts.column!r} do not fit the class table")
    if not np.array_equal(np.bincount(cls, weights=cnt, minlength=u).astype(np.int64), f):
        raise InvalidInputError(
            f"value counts of {counts.column!r} do not add up to the class sizes"
        )
    # order the pairs by class, then by count descending: one sort of a combined key, from
    # which both are read back (no permutation needed)
    top = int(cnt.max()) + 1
    if u * top < 1 << 62:
        key = cls * top + (top - 1 - cnt)
        key.sort()
        cls, rest = np.divmod(key, top)
        cnt = top - 1 - rest
    else:  # pragma: no cover - more than 2**62 / n classes
        order = np.lexsort((-cnt, cls))
        cls, cnt = cls[order], cnt[order]
    distinct = np.bincount(cls, minlength=u).astype(np.int64)
    # entropy l: exp(-sum p ln p), p = r / f
    p = cnt / f[cls].astype(np.float64)
    entropy = np.exp(-np.bincount(cls, weights=p * np.log(p), minlength=u))
    # recursive (c, l): within a class (counts descending, 0-based position j), l - 1 is the
    # number of positions j >= 1 with r_0 < c * (r_j + ... + r_last); the tail sums fall with
    # j, so those positions are 1..l-1.
    first = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]])
    start = np.repeat(first, distinct[distinct > 0])
    running = np.cumsum(cnt)
    before = running - cnt  # sum of the pairs before this one (all classes)
    tail = f[cls] - (before - (running[start] - cnt[start]))  # this pair and the rest
    qualifies = (np.arange(cls.shape[0]) > start) & (cnt[start] < c * tail)
    recursive = 1 + np.bincount(cls, weights=qualifies, minlength=u).astype(np.int64)
    n = int(f.sum())
    return LDiversity(
        column=counts.column,
        c=c,
        records=n,
        distinct=int(distinct.min()),
        entropy=float(entropy.min()),
        recursive=int(recursive.min()),
        homogeneous_records=int(f[distinct == 1].sum()) / n,
        per_class_distinct=distinct,
        per_class_entropy=entropy,
        per_class_recursive=recursive,
    )
