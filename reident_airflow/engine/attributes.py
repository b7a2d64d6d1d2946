"""Quasi-identifier risk: which columns re-identify (docs/metrics.md §5; ARX's attribute risk).

For a subset S of the QIs, with ``F_j`` the sizes of the classes formed on S alone:

- distinction = number of classes on S / n  (Motwani & Xu's "distinct ratio");
- separation = share of record pairs that differ on S = ``1 - sum_j C(F_j, 2) / C(n, 2)``.

Both are computed from the class table, never from rows: the classes on S are the classes
of the full table merged on S, weighted by their sizes. When every subset is ranked, they are
computed top down, each subset merged from a superset one column larger (dropping one digit
of a mixed-radix key, or summing a dense array of counts along one axis when the subset has
few code combinations: then a whole level costs a few passes over small arrays). When only
small subsets are ranked (many QIs), they are visited depth first instead (each one regroups
its parent's class ids with one more column), so that at most ``m`` intermediate groupings
are alive at once and each step costs O(number of classes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from math import prod
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from reident_airflow.engine._arrays import IntArray
from reident_airflow.engine.classes import ClassTable
from reident_airflow.engine.errors import InvalidInputError

__all__ = [
    "AttributeRisk",
    "SubsetScratch",
    "attribute_risks",
    "gate_subsets",
    "subset_groupings",
    "subset_sizes",
]


# Code combinations up to which a regrouping (or a subset's marginal) may be dense whatever
# the number of classes; above it, only when at most 4 combinations per class merged.
_DENSE_LIMIT = 1 << 16
# Radix product up to which a depth-first regrouping marks present pairs in a dense array
# instead of hashing them.
_REGROUP_DENSE_LIMIT = 1 << 22
# Largest mixed-radix span a subset key may reach in int64.
_KEY_LIMIT = (1 << 63) - 1


@dataclass(frozen=True)
class AttributeRisk:
    """Distinction and separation of one subset of the QIs (columns in QI order)."""

    columns: tuple[str, ...]
    distinction: float
    separation: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "distinction": self.distinction,
            "separation": self.separation,
        }


def _regroup(
    parent: IntArray, parent_count: int, codes: IntArray, card: int
) -> tuple[IntArray, int]:
    """Dense ids of the pairs (parent id, code) over the classes of the full table."""
    card = max(card, 1)
    key = parent * card + codes
    span = parent_count * card
    if span <= max(_REGROUP_DENSE_LIMIT, 4 * key.shape[0]):
        present = np.zeros(span, dtype=np.bool_)
        present[key] = True
        lookup = np.cumsum(present, dtype=np.int64) - 1
        return lookup[key], int(lookup[-1]) + 1
    ids, uniques = pd.factorize(key)
    return ids.astype(np.int64, copy=False), len(uniques)


def _measures(ids: IntArray, count: int, sizes: NDArray[np.float64], n: int) -> tuple[float, float]:
    merged = np.bincount(ids, weights=sizes, minlength=count).astype(np.int64)
    same_pairs = int((merged * (merged - 1) // 2).sum())
    all_pairs = n * (n - 1) // 2
    separation = 1.0 - same_pairs / all_pairs if all_pairs else 0.0
    return count / n, separation


def subset_groupings(
    table: ClassTable, max_size: int
) -> Iterator[tuple[tuple[int, ...], IntArray, int]]:
    """Yield ``(columns, ids, count)`` for every QI subset up to ``max_size`` columns: each
    class's id among the ``count`` classes of the subset. Depth first, each subset regrouping
    its prefix's ids with one more column, so that one grouping per column is alive at once."""
    m = len(table.quasi_identifiers)
    zeros = np.zeros(table.classes, dtype=np.int64)
    stack: list[tuple[tuple[int, ...], IntArray, int]] = [((), zeros, 1)]
    while stack:
        cols, ids, count = stack.pop()
        if cols:
            yield cols, ids, count
        if len(cols) >= max_size:
            continue
        start = cols[-1] + 1 if cols else 0
        # push in reverse so that lower column indices are expanded first
        for j in range(m - 1, start - 1, -1):
            new_ids, new_count = _regroup(ids, count, table.codes[:, j], table.cardinalities[j])
            stack.append(((*cols, j), new_ids, new_count))


def _radices(cols: tuple[int, ...], cards: list[int]) -> dict[int, int]:
    """Mixed-radix place value of each column of ``cols`` (last column least significant)."""
    out: dict[int, int] = {}
    r = 1
    for c in reversed(cols):
        out[c] = r
        r *= cards[c]
    return out


def _group_sum(key: IntArray, weights: IntArray, span: int) -> tuple[IntArray, IntArray]:
    """Distinct keys and the summed weights of each (keys ascending)."""
    shift = int(weights.max()).bit_length()
    if span.bit_length() + shift <= 63:
        # one sort of (key, weight) packed into int64, then run sums: no argsort needed
        packed = (key << shift) | weights
        packed.sort()
        keys = packed >> shift
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        sums = np.add.reduceat(packed & ((1 << shift) - 1), starts)
        return keys[starts], sums.astype(np.int64)
    ids, uniques = pd.factorize(key, sort=True)
    return np.asarray(uniques, dtype=np.int64), np.bincount(ids, weights=weights).astype(np.int64)


@dataclass(frozen=True, eq=False)
class _Marginal:
    """The classes of one QI subset: a dense array of counts over every code combination
    (shape = the subset's cardinalities), or the sparse ascending keys and their counts."""

    cols: tuple[int, ...]
    dense: NDArray[Any] | None = None
    keys: IntArray | None = None
    sums: IntArray | None = None

    @property
    def cost(self) -> int:
        """Rough work to merge this marginal once (a dense cell is far cheaper than a key)."""
        if self.dense is not None:
            return int(self.dense.size)
        assert self.keys is not None
        return 16 * int(self.keys.shape[0])


def _stats(marginal: _Marginal, n: int) -> tuple[int, int]:
    """``(classes, same-value pairs)`` of a marginal: nonzero cells, ``sum C(F, 2)``."""
    if marginal.dense is not None:
        counts = marginal.dense.ravel()
        classes = int(np.count_nonzero(counts))
        if n * n < 1 << 53:  # every partial sum of squares is an exact float64 integer
            as_float = counts.astype(np.float64)
            squares = int(as_float @ as_float)
        elif n * n < 1 << 63:  # exact in int64
            wide = counts.astype(np.int64)
            squares = int(wide @ wide)
        else:  # pragma: no cover - beyond 3 billion records: Python integers
            squares = sum(int(f) * int(f) for f in counts[counts > 0].tolist())
        return classes, (squares - n) // 2
    assert marginal.sums is not None
    sums = marginal.sums
    return int(sums.shape[0]), int((sums * (sums - 1) // 2).sum())


def _dense_limit(entries: int) -> int:
    """Cells up to which the merge of ``entries`` classes is held dense: a few per class, so
    that a dense array never costs much more than the keys it replaces."""
    return max(_DENSE_LIMIT, 4 * entries)


def _merge(
    parent: _Marginal,
    cols: tuple[int, ...],
    cards: list[int],
    codes: IntArray | None = None,
) -> _Marginal:
    """The marginal of ``cols`` from a superset one column larger.

    ``codes``: the class table's code columns, when ``parent`` is the full table (its
    classes in the same order as ``parent.keys``): the subset's key is then built from the
    codes, which is cheaper than dividing the parent's key.
    """
    (dropped,) = set(parent.cols) - set(cols)
    if parent.dense is not None:
        count_type = parent.dense.dtype
        merged = parent.dense.sum(axis=parent.cols.index(dropped), dtype=count_type)
        return _Marginal(cols, dense=merged)
    assert parent.keys is not None and parent.sums is not None
    if codes is not None:
        sub_key = np.zeros(parent.keys.shape[0], dtype=np.int64)
        column = np.empty_like(sub_key)
        for c in cols:
            sub_key *= cards[c]
            np.copyto(column, codes[:, c], casting="unsafe")
            sub_key += column
    else:
        low = _radices(parent.cols, cards)[dropped]
        high = low * cards[dropped]
        sub_key = (parent.keys // high) * low + parent.keys % low
    span = prod(cards[c] for c in cols)
    if span <= _dense_limit(sub_key.shape[0]):
        summed = np.bincount(sub_key, weights=parent.sums, minlength=span)
        shape = tuple(cards[c] for c in cols)
        return _Marginal(cols, dense=summed.astype(np.int64).reshape(shape))
    keys, sums = _group_sum(sub_key, parent.sums, span)
    return _Marginal(cols, keys=keys, sums=sums)


def _top_down(table: ClassTable, cards: list[int]) -> list[tuple[tuple[int, ...], int, int]]:
    """``(columns, classes, same-value pairs)`` of every subset, each from a superset.

    Each subset's classes are merged from those of its cheapest already-computed superset
    one column larger, so the small subsets never touch the full class table; only one level
    of subsets is kept at a time. A subset whose code combinations are few (at most
    :func:`_dense_limit`) is held as a dense array of counts, and its own subsets are then
    sums along one axis; the others as sorted keys with their counts.
    """
    m = len(cards)
    n = table.records
    full = tuple(range(m))
    key = table.radix_keys()
    assert key is not None  # the caller checked that the product of cardinalities fits
    sizes = table.sizes.astype(np.int64, copy=False)
    span = prod(cards)
    if span <= _dense_limit(table.classes):
        cube = np.zeros(span, dtype=np.int32 if n < 1 << 31 else np.int64)
        cube[key] = sizes  # keys are distinct: one cell per class
        top = _Marginal(full, dense=cube.reshape(cards))
    else:
        top = _Marginal(full, keys=key, sums=sizes)
    level = {full: top}
    out = [(full, *_stats(_Marginal(full, dense=sizes), n))]  # the classes themselves
    for size in range(m - 1, 0, -1):
        nxt: dict[tuple[int, ...], _Marginal] = {}
        for cols in combinations(range(m), size):
            parents = [level[tuple(sorted((*cols, j)))] for j in range(m) if j not in cols]
            parent = min(parents, key=lambda p: p.cost)
            from_rows = table.codes if parent is top else None
            merged = _merge(parent, cols, cards, from_rows)
            nxt[cols] = merged
            out.append((cols, *_stats(merged, n)))
        level = nxt
    return out


def gate_subsets(m: int) -> list[tuple[int, ...]]:
    """The subsets ranked by default, by size then QI order: each single column, each subset
    with one QI left out, and the full set (``2m + 1`` subsets, fewer when ``m <= 2``; every
    subset when ``m <= 3``). What the advice reads: the driver is the QI whose leaving out
    lowers the distinction the most."""
    sizes = sorted({1, m - 1, m} - {0})
    return [c for size in sizes for c in combinations(range(m), size)]


def _subset_key(table: ClassTable, cols: tuple[int, ...], cards: list[int]) -> tuple[IntArray, int]:
    """Each class's mixed-radix key over ``cols`` and its span, built from the codes and
    compressed to dense ids whenever the next column would make it overflow 63 bits."""
    key = np.zeros(table.classes, dtype=np.int64)
    column = np.empty_like(key)
    span = 1
    for c in cols:
        if span > _KEY_LIMIT // cards[c]:
            ids, uniques = pd.factorize(key)
            key, span = ids.astype(np.int64, copy=False), max(len(uniques), 1)
        key *= cards[c]
        np.copyto(column, table.codes[:, c], casting="unsafe")
        key += column
        span *= cards[c]
    return key, span


class SubsetScratch:
    """Working arrays for :func:`subset_sizes`, one per class, reused from one subset to the
    next: a large array freshly allocated is fresh memory pages, whose first touch costs
    more than the arithmetic on them (bench/README.md), so a ranking of many subsets
    allocates them once."""

    def __init__(self, table: ClassTable) -> None:
        n = table.classes
        self.key = np.empty(n, dtype=np.int64)
        self.other = np.empty(n, dtype=np.int64)
        self.new = np.empty(n, dtype=np.bool_)
        #: the class sizes as floats (exact: a class size is far below 2^53), for bincount
        self.weights = table.sizes.astype(np.float64)


def subset_sizes(
    table: ClassTable, cols: tuple[int, ...], scratch: SubsetScratch | None = None
) -> IntArray:
    """The sizes of the classes formed on ``cols`` alone (in no set order): the table's
    classes merged on ``cols``, weighted by their sizes, one grouping of the class table.

    A single column's sizes are its codes counted with the class sizes as weights. A
    mixed-radix key over ``cols`` is the full table's key less one digit when one QI is
    left out, else built from the codes (:func:`_subset_key`); when its span is small (at most
    one column of the table) the sizes are summed into a dense array, else the keys, each
    with its class's size in the low bits, are sorted in place and summed by runs.
    ``scratch`` (:class:`SubsetScratch` of this table) lends the working arrays."""
    cards = [max(int(c), 1) for c in table.cardinalities]
    work = scratch if scratch is not None else SubsetScratch(table)
    if len(cols) == 1:
        (c,) = cols
        merged = np.bincount(table.codes[:, c], weights=work.weights, minlength=cards[c])
        return merged[merged > 0].astype(np.int64)
    weights = table.sizes.astype(np.int64, copy=False)
    left_out = [c for c in range(len(cards)) if c not in cols]
    full = table.radix_keys() if len(left_out) == 1 else None
    if full is not None:  # one QI left out: its digit dropped from the full table's key
        low = prod(cards[left_out[0] + 1 :])
        key = work.key
        np.floor_divide(full, low * cards[left_out[0]], out=key)
        key *= low
        np.remainder(full, low, out=work.other)
        key += work.other
        span = prod(cards[c] for c in cols)
    else:
        key, span = _subset_key(table, cols, cards)
    if span <= max(_DENSE_LIMIT, table.classes):  # no larger than one column of the table
        merged = np.bincount(key, weights=work.weights, minlength=span)
        return merged[merged > 0].astype(np.int64)
    shift = int(weights.max(initial=0)).bit_length()
    if span.bit_length() + shift > 63:
        ids, uniques = pd.factorize(key)
        return np.bincount(ids, weights=work.weights, minlength=len(uniques)).astype(np.int64)
    # one in-place sort of (key, size) packed into int64, then run sums: a sort costs a
    # fraction of a hash grouping, and no argsort is needed
    key <<= shift
    key |= weights
    key.sort()
    new, high = work.new, work.other
    new[:1] = True
    np.right_shift(key, shift, out=high)
    np.not_equal(high[1:], high[:-1], out=new[1:])
    key &= (1 << shift) - 1
    return np.add.reduceat(key, np.flatnonzero(new)).astype(np.int64, copy=False)


def _gate_risks(table: ClassTable) -> tuple[AttributeRisk, ...]:
    """:func:`attribute_risks` of :func:`gate_subsets`: each subset one grouping of the
    class table (the full set is the table itself), one at a time."""
    m = len(table.quasi_identifiers)
    n = table.records
    all_pairs = n * (n - 1) // 2
    found: list[tuple[tuple[int, ...], float, float]] = []
    scratch = SubsetScratch(table)
    for cols in gate_subsets(m):
        sizes = table.sizes if len(cols) == m else subset_sizes(table, cols, scratch)
        sizes = sizes.astype(np.int64, copy=False)
        same_pairs = int((sizes * (sizes - 1) // 2).sum())
        separation = 1.0 - same_pairs / all_pairs if all_pairs else 0.0
        found.append((cols, int(sizes.shape[0]) / n, separation))
    return _ranked(table, found)


def attribute_risks(table: ClassTable, max_size: int | None = None) -> tuple[AttributeRisk, ...]:
    """Distinction and separation of QI subsets, most re-identifying first.

    By default (``max_size`` ``None``) the subsets the gate and the advice need
    (:func:`gate_subsets`: single columns, each QI left out, the full set); with
    ``max_size`` every subset of up to that many columns plus the full set, so that
    ``max_size >= m`` ranks the full lattice (``2^m - 1`` subsets). Ranking: distinction
    descending, then separation descending, then fewer columns, then QI order.
    """
    m = len(table.quasi_identifiers)
    if max_size is None:
        return _gate_risks(table)
    if max_size < 1:
        raise InvalidInputError(f"attribute subset size must be at least 1, got {max_size}")
    max_size = min(max_size, m)
    n = table.records
    found: list[tuple[tuple[int, ...], float, float]] = []
    cards = [max(int(c), 1) for c in table.cardinalities]
    if max_size == m and table.radix_keys() is not None:
        all_pairs = n * (n - 1) // 2
        for cols, count, same_pairs in _top_down(table, cards):
            separation = 1.0 - same_pairs / all_pairs if all_pairs else 0.0
            found.append((cols, count / n, separation))
        return _ranked(table, found)
    sizes = table.sizes.astype(np.float64)
    for cols, ids, count in subset_groupings(table, max_size):
        d, s = _measures(ids, count, sizes, n)
        found.append((cols, d, s))
    if max_size < m:  # the full set is always reported: it is the table's own distinction
        all_ids = np.arange(table.classes, dtype=np.int64)
        d, s = _measures(all_ids, table.classes, sizes, n)
        found.append((tuple(range(m)), d, s))
    return _ranked(table, found)


def _ranked(
    table: ClassTable, found: list[tuple[tuple[int, ...], float, float]]
) -> tuple[AttributeRisk, ...]:
    found.sort(key=lambda r: (-r[1], -r[2], len(r[0]), r[0]))
    names = table.quasi_identifiers
    return tuple(
        AttributeRisk(columns=tuple(names[i] for i in cols), distinction=d, separation=s)
        for cols, d, s in found
    )
