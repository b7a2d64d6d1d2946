"""Per-class aggregates beyond the class size: sums of weights, value counts of sensitive columns.

The class table (:mod:`reident_airflow.engine.classes`) counts records per equivalence class.
Individual risk (metrics.md §6) also needs each class's sum of sampling weights (``F_k``), and
l-diversity (§7) the value counts of each sensitive column within each class. Both are computed
in the same pass that groups the rows, where the data is:

- rows in memory (:func:`aggregate_codes`, :func:`aggregate_frame`, :func:`aggregate_arrow`):
  the QI codes are combined into one mixed-radix key; with a small key space the classes are
  counted by :func:`numpy.bincount` (and every row's class is a table lookup); otherwise, when
  the key fits 32 bits, each key is packed with its row number into one 64-bit word and the
  words are sorted once: the sort yields the classes (runs of equal keys) and the permutation
  that gathers weights and sensitive codes class by class. Anything larger is grouped by
  hashing.
- rows in a database: ``GROUP BY qis`` with ``sum(weight)``, and ``GROUP BY qis, sensitive``
  with ``count(*)`` (:mod:`reident_airflow.sources.sql`); :func:`aggregate_grouped` turns
  those results into the same structures.

Only aggregates leave this module: sums, counts, class indices. Sensitive *values* are reduced
to their counts per class (no measure needs the value itself, and it is never kept).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray
from scipy import sparse

from reident_airflow.engine._parallel import runs_in_parallel, submitter
from reident_airflow.engine.classes import (
    ClassTable,
    EncodedColumns,
    dictionary_indices,
    encode_arrow,
    encode_arrow_column,
    encode_frame,
    encode_series,
    group_codes,
    mixed_radix,
    radix_keys,
    unravel_keys,
    validate_quasi_identifiers,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

__all__ = [
    "ClassAggregates",
    "ClassWeights",
    "ValueCounts",
    "aggregate_arrow",
    "aggregate_codes",
    "aggregate_frame",
    "aggregate_grouped",
    "check_extra_columns",
    "check_weight_sums",
    "classes_from_starts",
    "weights_from_values",
]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
#: Codes of a sensitive column (any integer type wide enough for its cardinality).
CodeArray = NDArray[np.integer[Any]]

# Key space up to which classes (and class/value pairs) are counted with a direct bincount.
_BINCOUNT_LIMIT = 1 << 24
_MASK32 = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True, eq=False)
class ClassWeights:
    """``sums[j]``: the sum of the sampling weights of class j's records (``F_j``)."""

    column: str
    sums: FloatArray
    #: The class sizes these sums were checked against (finite, ``F_j >= f_j``): set by the
    #: aggregation that computed both; individual risk then does not check them again.
    checked_against: IntArray | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, eq=False, init=False)
class ValueCounts:
    """Value counts of one sensitive column within each class.

    One entry per (class, value) pair present in the table, ordered by class: ``classes[p]``
    is the class index of pair p and ``counts[p]`` how many of the class's records have that
    value. A missing value is a value of its own. The values themselves are not kept.

    The pairs' classes may be given instead by ``starts``, where each class's pairs begin
    (every class has at least one pair, the classes in index order): ``classes`` is then
    derived when first read (a grouping knows the starts; an array of the class of every
    pair costs 8 bytes per pair).
    """

    column: str
    counts: IntArray
    starts: IntArray | None = field(repr=False)
    #: The class sizes these counts are known to add up to, class by class, with the pairs
    #: ordered by class: set by the aggregation that computed both (l-diversity then skips
    #: checking what holds by construction). ``None``: to be checked.
    consistent_with: IntArray | None = field(repr=False)
    _classes: list[IntArray] = field(repr=False)

    def __init__(
        self,
        column: str,
        classes: IntArray | None = None,
        counts: IntArray | None = None,
        *,
        starts: IntArray | None = None,
        consistent_with: IntArray | None = None,
    ) -> None:
        if counts is None:
            raise InvalidInputError(f"value counts of {column!r}: no counts given")
        if classes is None and starts is None:
            raise InvalidInputError(
                f"value counts of {column!r}: give the class of each pair or where each "
                "class's pairs start"
            )
        for name, value in (
            ("column", column),
            ("counts", counts),
            ("starts", starts),
            ("consistent_with", consistent_with),
            ("_classes", [] if classes is None else [classes]),
        ):
            object.__setattr__(self, name, value)

    @property
    def classes(self) -> IntArray:
        """The class index of every pair (derived from ``starts`` when not given)."""
        if not self._classes:
            assert self.starts is not None
            self._classes.append(classes_from_starts(self.starts, int(self.counts.shape[0])))
        return self._classes[0]


def classes_from_starts(starts: NDArray[Any], pairs: int) -> IntArray:
    """The class of every pair from where each class's pairs start (``starts[0] == 0``)."""
    index = np.zeros(pairs, dtype=np.int64)
    index[np.asarray(starts[1:], dtype=np.int64)] = 1
    np.cumsum(index, out=index)
    return index


class _Counted(NamedTuple):
    """One sensitive column's (class, value) pairs as a grouping found them, ordered by
    class: their counts, and the class of each pair or where each class's pairs start."""

    counts: IntArray
    classes: IntArray | None = None
    starts: IntArray | None = None


@dataclass(frozen=True, eq=False)
class ClassAggregates:
    """A class table with the per-class aggregates computed in the same pass.

    ``inverse[i]`` (when asked for) is the class index of row i, ``-1`` for a record excluded
    as fully suppressed.
    """

    table: ClassTable
    weights: ClassWeights | None = None
    sensitive: Mapping[str, ValueCounts] = field(default_factory=dict)
    inverse: IntArray | None = field(default=None, repr=False)


# ----------------------------------------------------------------------------- validation
def check_extra_columns(
    qis: Sequence[str],
    available: Sequence[str],
    *,
    weight: str | None = None,
    sensitive: Sequence[str] = (),
) -> tuple[str | None, tuple[str, ...]]:
    """Check the weight and sensitive column names against the QIs and the table's columns.

    A sensitive or weight column that is also a quasi-identifier is an error (a column cannot
    be both what the attacker knows and what the release protects); so are unknown names,
    duplicates, and a weight column that is also listed as sensitive.
    """
    avail = [str(a) for a in available]
    qi_set = set(qis)
    if isinstance(sensitive, str):
        sensitive = [sensitive]
    names = tuple(str(s).strip() for s in sensitive)
    if any(not s for s in names):
        raise InvalidInputError("an empty sensitive column name was given")
    seen: set[str] = set()
    for s in names:
        if s in seen:
            raise InvalidInputError(f"sensitive column {s!r} is listed twice")
        seen.add(s)
        if s in qi_set:
            raise InvalidInputError(
                f"sensitive column {s!r} is also a quasi-identifier: l-diversity measures what "
                "a class discloses about a column the attacker does not know; remove it from "
                "one of the two lists"
            )
    if weight is not None:
        weight = str(weight).strip()
        if not weight:
            raise InvalidInputError("an empty weight column name was given")
        if weight in qi_set:
            raise InvalidInputError(f"weight column {weight!r} is also a quasi-identifier")
        if weight in seen:
            raise InvalidInputError(f"weight column {weight!r} is also listed as sensitive")
    for kind, cols in (("weight", [] if weight is None else [weight]), ("sensitive", names)):
        missing = [c for c in cols if c not in avail]
        if missing:
            raise InvalidInputError(
                f"unknown {kind} column{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}; available columns: "
                f"{', '.join(repr(a) for a in avail)}"
            )
    return weight, names


def _not_numeric(column: str, bad: int) -> InvalidInputError:
    return InvalidInputError(
        f"weight column {column!r} is not numeric: {max(bad, 1)} value(s) cannot be read as a "
        "number"
    )


def weights_from_values(values: Any, column: str) -> FloatArray:
    """Sampling weights from a column (numbers, or text holding numbers), validated.

    Every weight must be a finite number greater than 0: a missing, non-numeric, zero or
    negative weight is an error naming the column and how many records are affected (never a
    value).
    """
    chunks = _weight_chunks(values, column)
    if len(chunks) == 1:
        return chunks[0]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float64)


def _weight_chunks(values: Any, column: str) -> list[FloatArray]:
    """:func:`weights_from_values`, one array per chunk of an Arrow column (views of its
    buffers, not copies, when the column holds doubles without nulls)."""
    if isinstance(values, pa.ChunkedArray | pa.Array):
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        typ = values.type
        missing = int(values.null_count)
        if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
            numbers = values.cast(pa.float64())
        elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
            try:
                numbers = pc.cast(values, pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                # count the unreadable values for the message
                text = pd.Series(values.to_pandas())
                bad = int(pd.to_numeric(text, errors="coerce").isna().sum()) - missing
                raise _not_numeric(column, bad) from None
        else:
            raise InvalidInputError(f"weight column {column!r} is not numeric (type {typ})")
        parts = numbers.chunks if isinstance(numbers, pa.ChunkedArray) else [numbers]
        arrays = [
            np.asarray(part.to_numpy(zero_copy_only=False), dtype=np.float64)
            for part in parts
            if len(part)
        ]
    else:
        series = values if isinstance(values, pd.Series) else pd.Series(values)
        if series.dtype == bool:
            raise InvalidInputError(f"weight column {column!r} is boolean, not numeric")
        missing = int(series.isna().sum())
        numeric = pd.to_numeric(series, errors="coerce")
        bad = int(numeric.isna().sum()) - missing
        if bad:
            raise _not_numeric(column, bad)
        arrays = [numeric.to_numpy(dtype=np.float64, na_value=np.nan)]
    if missing:
        raise InvalidInputError(
            f"weight column {column!r} has {missing} missing value(s): every record needs a "
            "sampling weight"
        )
    if all(float(a.min()) > 0 and float(a.max()) < np.inf for a in arrays if a.size):
        return arrays  # every weight a finite number > 0 (NaN would fail the comparisons)
    nonfinite = sum(int((~np.isfinite(a)).sum()) for a in arrays)
    if nonfinite:
        raise InvalidInputError(f"weight column {column!r} has {nonfinite} non-finite value(s)")
    nonpositive = sum(int((a <= 0).sum()) for a in arrays)
    raise InvalidInputError(
        f"weight column {column!r} has {nonpositive} zero or negative weight(s): a sampling "
        "weight is the number of population units a record stands for, and must be > 0"
    )


def _weight_sums(key: NDArray[Any], chunks: Sequence[FloatArray], minlength: int) -> FloatArray:
    """The weights summed by key (the rows' keys, the weights in chunks of consecutive rows).

    Each bin adds its weights in row order, as one :func:`numpy.bincount` would: chunk by
    chunk with :meth:`numpy.ufunc.at` when the weights come in several chunks (no copy).
    """
    if len(chunks) == 1:
        summed = np.bincount(key, weights=chunks[0], minlength=minlength)
        return summed.astype(np.float64, copy=False)
    out = np.zeros(minlength, dtype=np.float64)
    pos = 0
    for chunk in chunks:
        np.add.at(out, key[pos : pos + chunk.shape[0]], chunk)
        pos += chunk.shape[0]
    return out


def _weighed_classes(
    key: NDArray[Any], weights: Sequence[FloatArray], space: int, cards: Sequence[int] | None
) -> tuple[FloatArray, IntArray | None, IntArray | None]:
    """The weights summed by class key (over the whole key space); with ``cards``, also the
    keys of the classes present (those with a weight sum: every weight is > 0) and their
    codes."""
    summed = _weight_sums(key, weights, space)
    if cards is None:
        return summed, None, None
    present = np.flatnonzero(summed > 0)  # a comparison first: nonzero is slow on floats
    return summed, present, unravel_keys(present, cards)


def check_weight_sums(sizes: IntArray, weights: ClassWeights) -> None:
    """``F_k >= f_k`` for every class: a class cannot stand for fewer people than it holds."""
    if weights.sums.shape != sizes.shape:
        raise InvalidInputError(f"{weights.sums.shape[0]} weight sums for {sizes.shape[0]} classes")
    if not np.isfinite(weights.sums).all():
        raise InvalidInputError(f"weight column {weights.column!r} sums to a non-finite value")
    below = weights.sums < sizes
    if below.any():
        raise InvalidInputError(
            f"the weights of {int(below.sum())} class(es) ({int(sizes[below].sum())} records) "
            f"in column {weights.column!r} sum to less than their number of records: a class "
            "cannot stand for fewer population units than it holds (sampling weights estimate "
            "population counts, so they are usually >= 1)"
        )


# ------------------------------------------------------------------------------- grouping
def _class_index(class_keys: NDArray[Any]) -> IntArray:
    """0, 1, 2, ... for a sorted array of class keys (equal keys, equal index)."""
    index = np.zeros(class_keys.shape[0], dtype=np.int64)
    np.not_equal(class_keys[1:], class_keys[:-1], out=index[1:], casting="unsafe")
    np.cumsum(index, out=index)
    return index


class _Pairs(NamedTuple):
    """The (class, value) pairs of one sensitive column, ordered by class: each pair's count
    and where each class's pairs start; with ``classes``, also each class's mixed-radix key
    and size."""

    counts: IntArray
    starts: IntArray
    class_keys: NDArray[Any] | None = None
    sizes: IntArray | None = None

    def counted(self) -> _Counted:
        """The pairs as the grouping hands them on: counts and class starts."""
        return _Counted(self.counts, starts=self.starts)


def _pair_dtype(space: int, card: int, rows: int) -> Any:
    """The unsigned type in which pair keys ``class_key * card + code`` are sorted, or
    ``None`` when they are not: their range is small enough to be counted by a bincount, or
    the rows are partitioned instead (:func:`_partitioned_pairs`)."""
    pair_space = space * max(int(card), 1)
    if pair_space <= max(_BINCOUNT_LIMIT, 2 * rows) or _partitions(space, card, rows):
        return None
    return np.uint32 if pair_space <= 1 << 32 else np.uint64


# How many rows' (class, value) pairs are put in order: "sort" (one numpy sort of their
# 32- or 64-bit keys) or "partition" (:func:`_partitioned_pairs`); None: chosen by
# :func:`_sort_is_slow` on this machine. Tests set it to run both.
_PAIR_ORDER: str | None = None
_SORT_SPEED: list[bool] = []  # the measurement, once per process
_SORT_SPEED_LOCK = threading.Lock()
# Nanoseconds per element of a numpy sort of 2**16 random 32-bit keys above which the
# partition is faster: numpy's SIMD sorts take 3-6 ns there, scalar sorts 25-40 ns.
_SLOW_SORT_NS = 12.0


def _sort_is_slow() -> bool:
    """Whether numpy sorts 32-bit keys slowly on this machine (measured once, ~1 ms).

    With AVX2, or AVX-512 on Intel, numpy sorts 10M 32-bit keys in ~0.07 s; where it runs
    its AVX-512 sort on AMD Zen 4, whose compress-store instruction is microcoded
    (numpy/x86-simd-sort issue 6), or has no SIMD sort at all, it takes ~0.4 s, and the
    (class, value) pairs of the rows are better put in order by a partition (~0.15 s,
    whatever the CPU).
    """
    with _SORT_SPEED_LOCK:
        if not _SORT_SPEED:
            keys = np.random.default_rng(0).integers(0, 1 << 32, 1 << 16, dtype=np.uint32)
            best = float("inf")
            for _ in range(3):
                copy = keys.copy()
                start = time.perf_counter()
                copy.sort()
                best = min(best, time.perf_counter() - start)
            _SORT_SPEED.append(best * 1e9 / keys.shape[0] > _SLOW_SORT_NS)
        return _SORT_SPEED[0]


def _partition_blocks(space: int, card: int) -> tuple[int, int, int]:
    """``(value_bits, key_bits, blocks)`` of :func:`_partitioned_pairs`: a value code takes
    ``value_bits``, a class key's place in its block ``key_bits`` (16 bits together), and
    the key space is cut into ``blocks`` blocks of ``2**key_bits`` keys."""
    value_bits = (max(int(card), 1) - 1).bit_length()
    key_bits = 16 - value_bits
    blocks = ((space - 1) >> key_bits) + 1 if key_bits > 0 else 0
    return value_bits, key_bits, blocks


def _partitions(space: int, card: int, rows: int) -> bool:
    """Whether the pairs of ``rows`` rows are put in order by :func:`_partitioned_pairs`."""
    order = _PAIR_ORDER or ("partition" if _sort_is_slow() else "sort")
    if order != "partition" or rows >= 1 << 31:
        return False
    _, key_bits, blocks = _partition_blocks(space, card)
    # a block per 16 rows at most (else the loop over blocks costs more than it saves)
    return key_bits >= 4 and blocks * 16 <= rows


def _partitioned_pairs(
    key: NDArray[Any], space: int, codes: CodeArray, card: int, *, classes: bool
) -> _Pairs:
    """:func:`_count_pairs` without a comparison sort (where :func:`_partitions` says so).

    The key space is cut into blocks of consecutive class keys, small enough that a key's
    place in its block and the value code fit 16 bits together. The rows are grouped by
    block with a counting sort (scipy's CSR to CSC transpose: linear time), then each
    block's 16-bit words are sorted by numpy's radix sort: the pairs come out in the order
    of one sort of ``class_key * card + code``.
    """
    n = key.shape[0]
    value_bits, key_bits, blocks = _partition_blocks(space, card)
    block = np.empty(n, dtype=np.int32)
    np.right_shift(key, key_bits, out=block, casting="unsafe")
    word = np.empty(n, dtype=np.uint16)
    np.bitwise_and(key, (1 << key_bits) - 1, out=word, casting="unsafe")
    np.left_shift(word, value_bits, out=word, casting="unsafe")
    np.bitwise_or(word, codes, out=word, casting="unsafe")
    rows = sparse.csr_array((word, block, np.arange(n + 1, dtype=np.int32)), shape=(n, blocks))
    del block, word
    by_block = rows.tocsc()
    del rows
    words, bounds = by_block.data, by_block.indptr
    del by_block
    edges = bounds.tolist()
    for begin, end in pairwise(edges):
        if end - begin > 1:
            words[begin:end].sort(kind="stable")  # a radix sort for 16-bit integers
    first = _run_starts(words, breaks=bounds[1:-1])
    counts = _run_lengths(first, n)
    class_keys = np.repeat(
        np.arange(blocks, dtype=np.int64), np.diff(np.searchsorted(first, bounds))
    )
    class_keys <<= key_bits
    class_keys |= words[first] >> value_bits
    del words
    return _pairs_by_class(class_keys, counts, first, n, classes=classes)


def _count_pairs(
    key: NDArray[Any], space: int, codes: CodeArray, card: int, *, classes: bool = False
) -> _Pairs:
    """Count the (class, value) pairs of the rows.

    ``key`` are the rows' mixed-radix class keys (``< space``). The pair key
    ``key * card + code`` is counted by a bincount when small, else put in order by one sort
    (of 32-bit words when they suffice) or, where numpy sorts slowly, by a partition
    (:func:`_partitioned_pairs`); no permutation of the rows is needed. Ascending class keys are
    ascending class indices; with ``classes``, the classes themselves (keys and sizes) are
    read off the pairs, so that the rows need not be grouped a second time.
    """
    card = max(int(card), 1)
    n = key.shape[0]
    if space * card <= max(_BINCOUNT_LIMIT, 2 * n):
        pair = key.astype(np.int64, copy=True)
        pair *= card
        pair += codes
        tally = np.bincount(pair, minlength=space * card)
        present = np.flatnonzero(tally)
        counts = tally[present].astype(np.int64)
        return _pairs_by_class(present // card, counts, None, n, classes=classes)
    if _partitions(space, card, n):
        return _partitioned_pairs(key, space, codes, card, classes=classes)
    pair = np.empty(n, dtype=np.uint32 if space * card <= 1 << 32 else np.uint64)
    np.multiply(key, card, out=pair, casting="unsafe")  # < 2**32 (or 2**64): exact
    np.add(pair, codes, out=pair, casting="unsafe")
    return _count_sorted_pairs(pair, card, classes=classes)


# Rows per block when the run starts of a sorted array are listed (2 MiB of int64 at most).
_RUN_BLOCK = 1 << 18


def _run_starts(sorted_values: NDArray[Any], breaks: NDArray[Any] | None = None) -> NDArray[Any]:
    """Where each run of equal values starts, in int32 when the positions fit; a run also
    starts at each position of ``breaks`` (those below the length).

    Listed block by block into an array of the final length (one count first), so that no
    int64 array of every run is made on the way.
    """
    n = sorted_values.shape[0]
    starts = np.empty(n, dtype=np.bool_)
    starts[:1] = True
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=starts[1:])
    if breaks is not None:
        starts[breaks[breaks < n]] = True
    out = np.empty(int(np.count_nonzero(starts)), dtype=np.int32 if n < 1 << 31 else np.int64)
    pos = 0
    for begin in range(0, n, _RUN_BLOCK):
        found = np.flatnonzero(starts[begin : begin + _RUN_BLOCK])
        np.add(found, begin, out=out[pos : pos + found.shape[0]], casting="unsafe")
        pos += found.shape[0]
    return out


def _run_lengths(first: NDArray[Any], n: int) -> IntArray:
    """The length of each run, from where the runs of ``n`` elements start (ascending)."""
    lengths = np.empty(first.shape[0], dtype=np.int64)
    np.subtract(first[1:], first[:-1], out=lengths[:-1])
    lengths[-1:] = n - first[-1:]
    return lengths


def _count_sorted_pairs(pair: NDArray[Any], card: int, *, classes: bool = False) -> _Pairs:
    """:func:`_count_pairs` from the rows' pair keys (an array of our own: sorted in place)."""
    n = pair.shape[0]
    pair.sort()
    first = _run_starts(pair)  # the row where each pair's run starts
    class_keys = pair[first]
    del pair  # freed before the counts are allocated (their pages can be reused at once)
    class_keys //= class_keys.dtype.type(card)
    counts = _run_lengths(first, n)
    return _pairs_by_class(class_keys, counts, first, n, classes=classes)


def _pairs_by_class(
    class_keys: NDArray[Any], counts: IntArray, first: NDArray[Any] | None, n: int, *, classes: bool
) -> _Pairs:
    """Where each class's pairs start, from the class key of each pair (ascending); with
    ``classes``, each class's key and size (from ``first``, the row where each pair's run
    starts, when the rows were sorted)."""
    new_class = np.empty(counts.shape[0], dtype=np.bool_)
    new_class[:1] = True
    np.not_equal(class_keys[1:], class_keys[:-1], out=new_class[1:])
    starts = np.flatnonzero(new_class)
    keys = sizes = None
    if classes:
        keys = class_keys[starts]
        # from the counts, or the rows between the first rows of consecutive classes
        sizes = np.add.reduceat(counts, starts) if first is None else _run_lengths(first[starts], n)
    return _Pairs(counts, starts, keys, sizes)


@dataclass(frozen=True, eq=False)
class _Grouping:
    """How rows map to classes.

    ``key`` (when the class key fits 64 bits): each row's mixed-radix class key, ascending
    keys being ascending class indices, ``space`` its range; ``inverse``: each row's class;
    ``perm`` / ``first``: the rows listed class by class and where each class starts.
    """

    classes: int
    key: NDArray[Any] | None = None
    space: int = 0
    present: IntArray | None = None
    class_keys: NDArray[Any] | None = None
    inverse: IntArray | None = None
    perm: IntArray | None = None
    sorted_class: IntArray | None = None
    first: IntArray | None = None

    def sums(self, values: FloatArray) -> FloatArray:
        if self.present is not None:  # small key space: one weighted bincount
            assert self.key is not None
            summed = np.bincount(self.key, weights=values, minlength=self.space)[self.present]
        elif self.inverse is not None:
            summed = np.bincount(self.inverse, weights=values, minlength=self.classes)
        else:
            assert self.perm is not None and self.first is not None
            summed = np.add.reduceat(values[self.perm], self.first)
        out: FloatArray = summed.astype(np.float64, copy=False)
        return out

    def pairs(self, codes: CodeArray, card: int) -> _Counted:
        """The (class, value) pairs of the rows and their counts, ordered by class."""
        if self.key is not None and self.space * max(int(card), 1) < 1 << 63:
            return _count_pairs(self.key, self.space, codes, card).counted()
        # each row's class index is a key of its own (``< classes``)
        if self.inverse is not None:
            return _count_pairs(self.inverse, self.classes, codes, card).counted()
        assert self.perm is not None and self.sorted_class is not None
        return _count_pairs(self.sorted_class, self.classes, codes[self.perm], card).counted()

    def row_classes(self, rows: int) -> IntArray:
        if self.inverse is not None:
            return self.inverse
        if self.present is not None:
            assert self.key is not None
            lookup = np.zeros(self.space, dtype=np.int64)
            lookup[self.present] = np.arange(self.present.shape[0], dtype=np.int64)
            out: IntArray = lookup[self.key]
            return out
        if self.class_keys is not None:
            assert self.key is not None
            found: IntArray = np.searchsorted(self.class_keys, self.key).astype(np.int64)
            return found
        assert self.perm is not None and self.sorted_class is not None
        out = np.empty(rows, dtype=np.int64)
        out[self.perm] = self.sorted_class
        return out


class _Grouped(NamedTuple):
    """What :func:`_group` finds: the classes, their mixed-radix keys (``None`` when the key
    did not fit 64 bits), how to reach their rows, the (class, value) pairs it counted by
    sensitive column index, and the weight sums if it computed them."""

    codes: IntArray
    sizes: IntArray
    keys: IntArray | None
    grouping: _Grouping
    pairs: dict[int, _Counted]
    sums: FloatArray | None


def _group(
    codes: list[IntArray],
    cardinalities: Sequence[int],
    n: int,
    *,
    weighted: bool,
    sensitive: Sequence[tuple[CodeArray, int]] = (),
    weights: Sequence[FloatArray] | None = None,
    own_codes: bool = False,
) -> _Grouped:
    """Classes of the rows (codes, sizes, keys) and how to reach each class's rows.

    ``codes`` holds the QI codes of the rows; the list is emptied as soon as the grouping no
    longer needs them (a caller that holds no other reference frees them early: on 10M rows
    of 5 QIs they are 400 MB). With ``own_codes`` (nothing else reads them), the class keys
    may be written over them. ``sensitive`` holds the codes and cardinality of each
    sensitive column.

    With a small key space the classes are counted one of two ways. Without a sensitive
    column, or on a large table without weights, by a bincount of the rows' class keys (the
    sensitive pairs, if any, are sorted meanwhile on worker threads: numpy releases the GIL).
    Otherwise their sizes are read off the first sensitive column's pairs, put in order here
    (the rows are counted once); with weights, a worker meanwhile sums the weights and lists
    the classes present. Pairs computed here come back by column index
    (the others are left to :meth:`_Grouping.pairs`).
    """
    cards = [max(int(c), 1) for c in cardinalities]
    product = 1
    for c in cards:
        product *= c
    if product <= max(_BINCOUNT_LIMIT, 2 * n):
        submit = submitter(n)
        fits = [i for i, (_, card) in enumerate(sensitive) if product * max(card, 1) < 1 << 63]
        # The classes (keys and sizes) are read off the first sensitive column's pairs, unless
        # the rows are counted here anyway: no weights to sum, and the pairs put in order
        # meanwhile on worker threads. With weights, the classes present are those with a
        # weight sum (every weight is > 0), found on a worker thread while the pairs are put
        # in order here.
        lead = fits[0] if fits and (weights is not None or not runs_in_parallel(n)) else None
        extra = []
        if lead is not None:
            values, card = sensitive[lead]
            dtype = _pair_dtype(product, card, n)
            if dtype is not None:  # to be sorted: the lead's pair keys in the same pass as the keys
                extra.append((values, max(card, 1), dtype))
        # with codes of our own, the keys are written over them (pages already in memory)
        key, *lead_key = radix_keys(codes, cards, dtype=np.int64, extra=extra, into_codes=own_codes)
        codes.clear()
        counted: dict[int, _Counted] = {}
        jobs = {
            i: submit(_count_pairs, key, product, *sensitive[i], classes=i == lead)
            for i in fits
            if i != lead
        }
        side = None
        if weights is not None:
            want = None if lead is None else cards  # the classes present from the sums
            side = submit(_weighed_classes, key, weights, product, want)
        summed: FloatArray | None = None
        present: IntArray | None = None
        class_codes: IntArray | None = None
        if lead is None:
            counts = np.bincount(key, minlength=product)
            present = np.flatnonzero(counts)
            sizes = counts[present].astype(np.int64)
            del counts
            class_codes = unravel_keys(present, cards)
            summed = None if side is None else side.result()[0]
        else:
            if lead_key:
                found = _count_sorted_pairs(lead_key.pop(), extra[0][1], classes=True)
            else:  # a bincount or a partition
                found = _count_pairs(key, product, *sensitive[lead], classes=True)
            assert found.class_keys is not None and found.sizes is not None
            sizes = found.sizes
            if side is not None:
                summed, present, class_codes = side.result()
            if present is None or present.shape != sizes.shape:
                present = found.class_keys.astype(np.int64, copy=False)
                class_codes = unravel_keys(present, cards)
            counted[lead] = found.counted()
        assert class_codes is not None and present is not None
        for i, job in jobs.items():
            counted[i] = job.result().counted()
        grouping = _Grouping(classes=int(present.shape[0]), key=key, space=product, present=present)
        sums = None if summed is None else summed[present].astype(np.float64, copy=False)
        return _Grouped(class_codes, sizes, present, grouping, counted, sums)
    if product <= 1 << 32 and n < 1 << 32 and weighted:
        # one 64-bit word per row: the class key above, the row number below. One sort gives
        # the classes (runs of equal keys) and the permutation that lists rows class by class
        # (to sum the weights of each class).
        key32 = mixed_radix(codes, cards, dtype=np.uint32)
        codes.clear()
        packed = key32.astype(np.uint64)
        packed <<= np.uint64(32)
        packed |= np.arange(n, dtype=np.uint64)
        packed.sort()
        perm = (packed & _MASK32).astype(np.int64)
        packed >>= np.uint64(32)
        first = _run_starts(packed)
        sorted_class = _class_index(packed)
        sizes = _run_lengths(first, n)
        keys = packed[first].astype(np.int64)
        del packed
        grouping = _Grouping(
            classes=int(first.shape[0]),
            key=key32,
            space=product,
            perm=perm,
            sorted_class=sorted_class,
            first=first,
        )
        return _Grouped(unravel_keys(keys, cards), sizes, keys, grouping, {}, None)
    if product < 1 << 62 and not weighted:
        dtype = np.uint32 if product <= 1 << 32 else np.uint64
        key = mixed_radix(codes, cards, dtype=dtype)
        codes.clear()
        lead_pairs: dict[int, _Counted] = {}
        if sensitive and product * max(int(sensitive[0][1]), 1) < 1 << 63:
            pairs = _count_pairs(key, product, *sensitive[0], classes=True)
            assert pairs.class_keys is not None and pairs.sizes is not None
            keys, sizes = pairs.class_keys, pairs.sizes
            lead_pairs[0] = pairs.counted()
        else:
            ordered = np.sort(key)
            first = _run_starts(ordered)
            sizes = _run_lengths(first, n)
            keys = ordered[first]
            del ordered
        grouping = _Grouping(classes=int(keys.shape[0]), key=key, space=product, class_keys=keys)
        keys64 = keys.astype(np.int64, copy=False)
        return _Grouped(unravel_keys(keys64, cards), sizes, keys64, grouping, lead_pairs, None)
    class_codes, sizes, inverse = group_codes(codes, cards, return_inverse=True)
    codes.clear()
    assert inverse is not None
    grouping = _Grouping(classes=int(sizes.shape[0]), inverse=inverse)
    return _Grouped(class_codes, sizes, None, grouping, {}, None)


def aggregate_codes(
    encoded: EncodedColumns,
    *,
    weights: FloatArray | Sequence[FloatArray] | None = None,
    weight_column: str | None = None,
    sensitive: Sequence[tuple[str, CodeArray, int]] = (),
    return_inverse: bool = False,
) -> ClassAggregates:
    """Group row-level QI codes into classes, with weight sums and sensitive value counts.

    ``weights`` (validated with :func:`weights_from_values`; or in chunks of consecutive rows)
    are summed per class; ``sensitive`` holds ``(column, codes, cardinality)`` per sensitive
    column (codes as :func:`~reident_airflow.engine.classes.encode_series` makes them). The
    class table holds the classes :func:`~reident_airflow.engine.classes.class_table_from_codes`
    finds (fully suppressed records excluded), possibly in another order.
    """
    return _aggregate(
        encoded,
        list(encoded.codes),
        weights=weights,
        weight_column=weight_column,
        sensitive=sensitive,
        return_inverse=return_inverse,
    )


def _without_codes(encoded: EncodedColumns) -> tuple[EncodedColumns, list[IntArray]]:
    """The columns' description (names, cardinalities, dictionaries) and, apart, their codes:
    a caller that drops its own reference lets :func:`_aggregate` free the codes early."""
    return replace(encoded, codes=()), list(encoded.codes)


def _aggregate(
    encoded: EncodedColumns,
    codes: list[IntArray],
    *,
    weights: FloatArray | Sequence[FloatArray] | None = None,
    weight_column: str | None = None,
    sensitive: Sequence[tuple[str, CodeArray, int]] = (),
    return_inverse: bool = False,
    own_codes: bool = False,
) -> ClassAggregates:
    """:func:`aggregate_codes` with the row codes in a list of their own, emptied (and the
    codes freed, if nothing else holds them) as soon as the grouping is done with them;
    ``own_codes``: nothing else holds them, their memory may be reused."""
    n = int(codes[0].shape[0]) if codes else 0
    if n == 0:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    chunks = None
    if weights is not None:
        chunks = [weights] if isinstance(weights, np.ndarray) else list(weights)
        given = sum(int(chunk.shape[0]) for chunk in chunks)
        if given != n:
            raise InvalidInputError(f"{given} weights for {n} records")
    grouped = _group(
        codes,
        encoded.cardinalities,
        n,
        weighted=chunks is not None,
        sensitive=[(values, int(card)) for _, values, card in sensitive],
        weights=chunks,
        own_codes=own_codes,
    )
    grouping, counted, sums = grouped.grouping, grouped.pairs, grouped.sums
    submit = submitter(n)
    jobs = {
        i: submit(grouping.pairs, values, card)
        for i, (_, values, card) in enumerate(sensitive)
        if i not in counted
    }
    if chunks is not None and sums is None:
        sums = grouping.sums(chunks[0] if len(chunks) == 1 else np.concatenate(chunks))
    pairs = {
        name: counted[i] if i in counted else jobs[i].result()
        for i, (name, _, _) in enumerate(sensitive)
    }
    inverse = grouping.row_classes(n) if return_inverse else None
    return _finish(
        encoded,
        grouped.codes,
        grouped.sizes,
        keys=grouped.keys,
        sums=sums,
        weight_column=weight_column,
        pairs=pairs,
        inverse=inverse,
    )


def _finish(
    encoded: EncodedColumns,
    class_codes: IntArray,
    sizes: IntArray,
    *,
    keys: IntArray | None = None,
    sums: FloatArray | None,
    weight_column: str | None,
    pairs: Mapping[str, _Counted],
    inverse: IntArray | None,
) -> ClassAggregates:
    """Exclude fully suppressed classes (ARX behaviour) and check the weights per class."""
    excluded = 0
    if all(mc is not None for mc in encoded.marker_codes):
        marker = np.array(encoded.marker_codes, dtype=np.int64)
        suppressed = np.all(class_codes == marker, axis=1)
        if suppressed.any():
            excluded = int(sizes[suppressed].sum())
            keep = ~suppressed
            remap = np.cumsum(keep, dtype=np.int64) - 1
            remap[suppressed] = -1
            class_codes = class_codes[keep]
            sizes = sizes[keep]
            keys = None if keys is None else keys[keep]
            if sums is not None:
                sums = sums[keep]
            kept: dict[str, _Counted] = {}
            for name, found in pairs.items():
                cls = found.classes
                if cls is None:
                    assert found.starts is not None
                    cls = classes_from_starts(found.starts, int(found.counts.shape[0]))
                stays = keep[cls]
                kept[name] = _Counted(found.counts[stays], classes=remap[cls][stays])
            pairs = kept
            if inverse is not None:
                inverse = remap[inverse]
    if sizes.shape[0] == 0:
        raise EmptyDatasetError(
            f"every record ({excluded}) is fully suppressed ('*' in every quasi-identifier): "
            "there is nothing to assess"
        )
    table = ClassTable(
        quasi_identifiers=encoded.names,
        sizes=sizes,
        codes=class_codes,
        cardinalities=encoded.cardinalities,
        dictionaries=encoded.dictionaries,
        excluded_records=excluded,
        _keys=[] if keys is None else [keys],  # handed over: the QI ranking reuses them
    )
    weights = None
    if sums is not None:
        weights = ClassWeights(column=weight_column or "weight", sums=sums)
        check_weight_sums(table.sizes, weights)
        weights = replace(weights, checked_against=table.sizes)
    return ClassAggregates(
        table=table,
        weights=weights,
        # every caller's pairs add up to the class sizes (by construction, or checked)
        sensitive={
            name: ValueCounts(
                name,
                found.classes,
                found.counts,
                starts=found.starts,
                consistent_with=table.sizes,
            )
            for name, found in pairs.items()
        },
        inverse=inverse,
    )


def _value_codes(column: pa.ChunkedArray | pa.Array) -> tuple[CodeArray, int]:
    """Codes of a sensitive column read by Arrow: ``(codes, cardinality)``.

    Only the grouping of equal values matters (the values are never kept), so the codes take
    the narrowest unsigned type the cardinality allows: a dictionary column (Parquet
    ``read_dictionary``) has its chunks' dictionaries unified and their indices copied chunk
    by chunk; a null is one more value. Any other column is encoded as a QI column is.
    """
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    typ = column.type
    if not pa.types.is_dictionary(typ) or column.num_chunks == 0:
        codes, card, _ = encode_arrow_column(column)
        return codes, card
    if any(chunk.dictionary.null_count for chunk in column.chunks):
        codes, card, _ = encode_arrow_column(column)  # a null inside a dictionary
        return codes, card
    column = column.unify_dictionaries()
    card = len(column.chunk(0).dictionary)
    with_null = card + (1 if column.null_count else 0)
    dtype: Any = next(
        t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if with_null <= np.iinfo(t).max + 1
    )
    return dictionary_indices(column, dtype), max(with_null, 1)


# ------------------------------------------------------------------------------ front ends
def aggregate_frame(
    frame: pd.DataFrame,
    qis: Sequence[str],
    *,
    weight: str | None = None,
    sensitive: Sequence[str] = (),
    return_inverse: bool = False,
) -> ClassAggregates:
    """:func:`aggregate_codes` on a pandas DataFrame."""
    encoded, codes = _without_codes(encode_frame(frame, qis))
    weight, names = check_extra_columns(
        encoded.names, [str(c) for c in frame.columns], weight=weight, sensitive=sensitive
    )
    weights = None if weight is None else weights_from_values(frame[weight], weight)
    extra = []
    for name in names:
        values, card, _ = encode_series(frame[name])
        extra.append((name, values, card))
    return _aggregate(
        encoded,
        codes,
        weights=weights,
        weight_column=weight,
        sensitive=extra,
        return_inverse=return_inverse,
        own_codes=True,
    )


def aggregate_arrow(
    table: pa.Table,
    qis: Sequence[str],
    *,
    weight: str | None = None,
    sensitive: Sequence[str] = (),
    return_inverse: bool = False,
) -> ClassAggregates:
    """:func:`aggregate_codes` on an Arrow table (a CSV or Parquet file read by Arrow)."""
    weight, names = check_extra_columns(
        validate_quasi_identifiers(qis, table.column_names),
        table.column_names,
        weight=weight,
        sensitive=sensitive,
    )
    # the weight and sensitive columns are read while the QIs are encoded (on large tables)
    submit = submitter(table.num_rows)
    weighing = None if weight is None else submit(_weight_chunks, table.column(weight), weight)
    encoding = [(name, submit(_value_codes, table.column(name))) for name in names]
    encoded, codes = _without_codes(encode_arrow(table, qis))
    weights = None if weighing is None else weighing.result()
    extra = [(name, *job.result()) for name, job in encoding]
    return _aggregate(
        encoded,
        codes,
        weights=weights,
        weight_column=weight,
        sensitive=extra,
        return_inverse=return_inverse,
        own_codes=True,
    )


def aggregate_grouped(
    counts: pd.DataFrame,
    qis: Sequence[str],
    count_column: str,
    *,
    weight: str | None = None,
    weight_sum_column: str | None = None,
    value_counts: Mapping[str, pd.DataFrame] | None = None,
) -> ClassAggregates:
    """Aggregates from database ``GROUP BY`` results (one DataFrame each).

    ``counts`` has one row per QI tuple with its record count in ``count_column`` (and, with
    ``weight``, the sum of the weights in ``weight_sum_column``); ``value_counts[col]`` has
    one row per (QI tuple, value of ``col``) with its count in ``count_column``. All results
    are encoded together, so rows of different results that hold the same QI tuple meet in
    one class; rows whose tuples coincide after decoding (two spellings of a missing value)
    are merged.
    """
    names = tuple(qis)
    extra = dict(value_counts or {})
    frames = [counts, *extra.values()]
    for f in frames:
        absent = [c for c in (*names, count_column) if c not in f.columns]
        if absent:
            raise InvalidInputError(f"grouped result lacks column(s) {absent}")
    if len(counts) == 0:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    lengths = [len(f) for f in frames]
    stacked = pd.concat([f[list(names)] for f in frames], ignore_index=True)
    encoded = encode_frame(stacked, names)
    all_codes, _, inverse = group_codes(encoded.codes, encoded.cardinalities, return_inverse=True)
    assert inverse is not None
    bounds = np.cumsum([0, *lengths])
    own = inverse[: bounds[1]]
    row_counts = counts[count_column].to_numpy(dtype=np.int64)
    if (row_counts < 0).any():
        raise InvalidInputError("grouped result has a negative count")
    u_all = int(all_codes.shape[0])
    sizes_all = np.bincount(own, weights=row_counts, minlength=u_all).astype(np.int64)
    present = sizes_all > 0
    if not present.any():
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    remap = np.cumsum(present, dtype=np.int64) - 1
    class_codes = all_codes[present]
    sizes = sizes_all[present]
    sums = None
    if weight is not None:
        column = weight_sum_column or weight
        values = counts[column].to_numpy(dtype=np.float64, na_value=np.nan)
        sums = np.bincount(own, weights=values, minlength=u_all)[present].astype(np.float64)
    pairs: dict[str, _Counted] = {}
    for i, (name, frame) in enumerate(extra.items(), start=1):
        cls_all = inverse[bounds[i] : bounds[i + 1]]
        cnt = frame[count_column].to_numpy(dtype=np.int64)
        if not present[cls_all[cnt > 0]].all():
            raise InvalidInputError(
                f"the value counts of {name!r} hold classes the table does not: the queries "
                "saw different data"
            )
        cls = remap[cls_all]
        value_codes, card, _ = encode_series(frame[name])
        key = cls * max(card, 1) + value_codes
        uniq, pos = np.unique(key, return_inverse=True)
        merged = np.bincount(pos.reshape(-1), weights=cnt, minlength=uniq.shape[0])
        keep = merged > 0
        pair_cls = uniq[keep] // max(card, 1)
        pair_cnt = merged[keep].astype(np.int64)
        per_class = np.bincount(pair_cls, weights=pair_cnt, minlength=sizes.shape[0])
        if not np.array_equal(per_class.astype(np.int64), sizes):
            raise InvalidInputError(
                f"the value counts of {name!r} do not add up to the class sizes: the queries "
                "saw different data"
            )
        pairs[name] = _Counted(pair_cnt, classes=pair_cls.astype(np.int64))
    return _finish(
        encoded,
        class_codes,
        sizes,
        sums=sums,
        weight_column=weight,
        pairs=pairs,
        inverse=None,
    )
