"""Equivalence classes: the class table and the class-size histogram.

Records are grouped by their exact tuple of quasi-identifier (QI) values (docs/metrics.md §1). A
:class:`ClassTable` holds one row per class: its size and the integer code of each of its QI
values; a :class:`ClassSizes` holds only how many classes have each size. Every risk measure
is a function of one of the two, so a source (DuckDB for files and DataFrames, a database's
``GROUP BY``) only has to deliver counts.

The codes come from :mod:`reident_airflow.engine.encoding` (whose names this module
re-exports for the sources that build class tables); :func:`group_codes` groups tuples of
codes (rows of grouped results, or the generalized classes of Datafly) and
:func:`class_table_of` makes a class table of grouped codes.

Missing values: a missing value is a value of its own (every missing value of a column falls
into one group), as ARX does. A record whose QIs are *all* the suppression marker ``*`` is
excluded from every measure (ARX behaviour) and counted in :attr:`ClassTable.excluded_records`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from reident_airflow.engine._arrays import BoolArray, IntArray
from reident_airflow.engine.encoding import EncodedColumns, encode_arrow, encode_frame
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

if TYPE_CHECKING:  # pandas and Arrow are loaded by the functions that use them
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "ClassSizes",
    "ClassTable",
    "check_distinct_classes",
    "class_table_from_grouped",
    "class_table_of",
    "group_codes",
]


# Product of cardinalities up to which classes are counted by a direct bincount over the key.
_BINCOUNT_LIMIT = 1 << 24
# Largest key product that still fits a signed 64-bit integer with room for one more radix.
_KEY_LIMIT = (1 << 62) - 1


@dataclass(frozen=True, eq=False)
class ClassTable:
    """The equivalence classes of a table on its quasi-identifiers.

    ``sizes[j]`` is the number of records of class j (``f_j``) and ``codes[j, i]`` the code of
    its value of QI i (``0 <= code < cardinalities[i]``). ``dictionaries`` (optional) map codes
    back to values for joins; outputs never contain them.
    """

    quasi_identifiers: tuple[str, ...]
    sizes: IntArray
    codes: IntArray
    cardinalities: tuple[int, ...]
    dictionaries: tuple[Any, ...] | None = None
    excluded_records: int = 0

    def __post_init__(self) -> None:
        if self.sizes.ndim != 1 or self.codes.ndim != 2:
            raise InvalidInputError("class table: sizes must be 1-D and codes 2-D")
        if self.codes.shape != (self.sizes.shape[0], len(self.quasi_identifiers)):
            raise InvalidInputError(
                f"class table: codes have shape {self.codes.shape}, expected "
                f"({self.sizes.shape[0]}, {len(self.quasi_identifiers)})"
            )

    @property
    def records(self) -> int:
        """n: records that take part in the measures (excluded records not counted)."""
        return int(self.sizes.sum())

    @property
    def classes(self) -> int:
        """u: number of equivalence classes."""
        return int(self.sizes.shape[0])

    @property
    def k(self) -> int:
        """Smallest class size (the table is k-anonymous for this k)."""
        return int(self.sizes.min())

    def histogram(self) -> tuple[IntArray, IntArray]:
        """``(sizes, counts)``: the distinct class sizes ascending, and how many classes have each.

        Computed once and cached.
        """
        return self._histogram

    @cached_property
    def _histogram(self) -> tuple[IntArray, IntArray]:
        top = int(self.sizes.max())
        if top <= 4 * self.sizes.shape[0] + 1024:  # class sizes are small integers: count
            tally = np.bincount(self.sizes, minlength=top + 1)
            sizes = np.flatnonzero(tally)
            counts = tally[sizes]
        else:
            sizes, counts = np.unique(self.sizes, return_counts=True)
        return sizes.astype(np.int64), counts.astype(np.int64)

    def radix_keys(self) -> IntArray | None:
        """Each class's mixed-radix key over its codes, the first QI most significant.

        ``key = ((c_0 * card_1 + c_1) * card_2 + c_2) ...``: distinct classes, distinct keys.
        ``None`` when the product of the cardinalities does not fit 63 bits. Computed once
        and cached.
        """
        return self._radix_keys

    @cached_property
    def _radix_keys(self) -> IntArray | None:
        cards = [max(int(c), 1) for c in self.cardinalities]
        if prod(cards) > _KEY_LIMIT:
            return None
        key = np.zeros(self.classes, dtype=np.int64)
        column = np.empty_like(key)
        for i, card in enumerate(cards):
            key *= card
            np.copyto(column, self.codes[:, i], casting="unsafe")
            key += column
        return key


@dataclass(frozen=True, eq=False)
class ClassSizes:
    """The class-size histogram of a table on its quasi-identifiers, and nothing more.

    ``sizes`` are the distinct class sizes in ascending order and ``counts[i]`` how many
    classes have size ``sizes[i]`` (``c_s``). This is all that the sample risks, the attacker
    models and the population models need, so a source that can count in place (DuckDB, a
    database) hands over this instead of one row per class. The QI ranking, SUDA2, sampling
    weights, sensitive columns and a population register need the :class:`ClassTable`.
    """

    quasi_identifiers: tuple[str, ...]
    sizes: IntArray
    counts: IntArray
    excluded_records: int = 0

    def __post_init__(self) -> None:
        sizes = np.asarray(self.sizes, dtype=np.int64)
        counts = np.asarray(self.counts, dtype=np.int64)
        if sizes.ndim != 1 or sizes.shape != counts.shape:
            raise InvalidInputError("class-size histogram: sizes, counts must be 1-D of one length")
        if sizes.shape[0] == 0:
            raise EmptyDatasetError("the table has no records: there is nothing to assess")
        if (sizes < 1).any() or (counts < 1).any():
            raise InvalidInputError("class-size histogram: sizes and counts must be >= 1")
        if (np.diff(sizes) <= 0).any():
            raise InvalidInputError("class-size histogram: sizes must be distinct and ascending")
        if self.excluded_records < 0:
            raise InvalidInputError("class-size histogram: excluded records must be >= 0")
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "quasi_identifiers", tuple(self.quasi_identifiers))

    @property
    def records(self) -> int:
        """n: records that take part in the measures (excluded records not counted)."""
        return int((self.sizes * self.counts).sum())

    @property
    def classes(self) -> int:
        """u: number of equivalence classes."""
        return int(self.counts.sum())

    @property
    def k(self) -> int:
        """Smallest class size."""
        return int(self.sizes[0])

    def histogram(self) -> tuple[IntArray, IntArray]:
        """``(sizes, counts)``, as :meth:`ClassTable.histogram` returns them."""
        return self.sizes, self.counts


def _densify(key: IntArray) -> tuple[IntArray, int]:
    """Map arbitrary int64 keys to dense ids ``0..u-1`` by hashing."""
    import pandas as pd

    ids, uniques = pd.factorize(key)
    return ids.astype(np.int64, copy=False), len(uniques)


def group_codes(
    codes: Sequence[IntArray],
    cardinalities: Sequence[int],
    *,
    weights: IntArray | None = None,
    return_inverse: bool = False,
) -> tuple[IntArray, IntArray, IntArray | None]:
    """Group rows by their tuple of codes.

    Returns ``(class_codes, sizes, inverse)``: ``class_codes[j]`` the code tuple of class j
    (shape ``(u, m)``), ``sizes[j]`` its number of rows (or sum of ``weights``), and, with
    ``return_inverse``, the class id of every row.

    When the product of the cardinalities is small, the codes are combined into one
    mixed-radix key counted by :func:`numpy.bincount` (classes in ascending lexicographic
    order of their codes); otherwise they are combined column by column and grouped by
    hashing, re-densified before the key would overflow.
    """
    m = len(codes)
    if m == 0:
        raise InvalidInputError("no quasi-identifiers given: name at least one column")
    n = int(codes[0].shape[0])
    cards = [max(int(c), 1) for c in cardinalities]
    product = prod(cards)
    if product <= max(_BINCOUNT_LIMIT, 2 * n):
        key = _mixed_radix(codes, cards)
        counts = np.bincount(key, weights=weights, minlength=product)
        present = np.flatnonzero(counts)
        sizes = counts[present].astype(np.int64)
        inverse = None
        if return_inverse:
            lookup = np.zeros(product, dtype=np.int64)
            lookup[present] = np.arange(present.shape[0], dtype=np.int64)
            inverse = lookup[key]
        return _unravel_keys(present, cards), sizes, inverse
    key = codes[0].astype(np.int64, copy=True)
    span = cards[0]
    for col, card in zip(codes[1:], cards[1:], strict=True):
        if span * card > _KEY_LIMIT:
            key, span = _densify(key)
        key *= card
        key += col
        span *= card
    inverse_ids, u = _densify(key)
    sizes = np.bincount(inverse_ids, weights=weights, minlength=u).astype(np.int64)
    class_codes = np.empty((u, m), dtype=np.int64)
    for i, col in enumerate(codes):
        # every row of a class carries the same code, so any write order gives the same result
        class_codes[inverse_ids, i] = col
    return class_codes, sizes, (inverse_ids if return_inverse else None)


def _unravel_keys(keys: NDArray[Any], cards: Sequence[int]) -> IntArray:
    """The ``(u, m)`` code table of mixed-radix keys (first QI most significant).

    Unravelled column by column into the contiguous rows of an ``(m, u)`` array, whose
    transpose is returned: each QI's codes stay contiguous (what every measure reads).
    """
    m = len(cards)
    columns = np.empty((m, keys.shape[0]), dtype=np.int64)
    rest = keys.astype(np.int64, copy=True)
    quotient = np.empty_like(rest)
    for i in range(m - 1, 0, -1):
        np.floor_divide(rest, cards[i], out=quotient)
        np.multiply(quotient, cards[i], out=columns[i])
        np.subtract(rest, columns[i], out=columns[i])
        rest, quotient = quotient, rest
    if m:
        columns[0] = rest
    class_codes: IntArray = columns.T
    return class_codes


def _mixed_radix(codes: Sequence[IntArray], cards: Sequence[int]) -> IntArray:
    """``(((c0 * card1) + c1) * card2 + c2) ...`` in int64 (the caller checks the range).

    Computed over blocks of rows that stay in the CPU cache: one pass over each code column,
    one write of the key.
    """
    n = codes[0].shape[0]
    key = np.empty(n, dtype=np.int64)
    rows = 1 << 18  # 2 MiB of int64 per block
    for start in range(0, n, rows):
        part = key[start : start + rows]
        np.copyto(part, codes[0][start : start + rows], casting="unsafe")
        for col, card in zip(codes[1:], cards[1:], strict=True):
            part *= card
            np.add(part, col[start : start + rows], out=part, casting="unsafe")
    return key


def class_table_of(
    encoded: EncodedColumns, class_codes: IntArray, sizes: IntArray
) -> tuple[ClassTable, BoolArray | None]:
    """The class table of grouped codes without the fully suppressed classes (ARX
    behaviour), and which classes it kept (``None``: every one).

    A class is fully suppressed when its code in every QI is the suppression marker's; its
    records are counted in :attr:`ClassTable.excluded_records`. A table left without classes
    is an :class:`EmptyDatasetError`.
    """
    excluded = 0
    keep = None
    if all(mc is not None for mc in encoded.marker_codes):
        marker = np.array(encoded.marker_codes, dtype=np.int64)
        suppressed = np.all(class_codes == marker, axis=1)
        if suppressed.any():
            excluded = int(sizes[suppressed].sum())
            keep = ~suppressed
            class_codes = class_codes[keep]
            sizes = sizes[keep]
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
    )
    return table, keep


def class_table_from_grouped(
    grouped: pd.DataFrame | pa.Table, qis: Sequence[str], count_column: str
) -> ClassTable:
    """The class table from an already grouped result (one row per QI tuple plus a count).

    This is what a database ``GROUP BY`` returns (as a DataFrame or an Arrow table): each row
    with records is one class, as the database decided. Classes are never merged here: two
    rows whose values read back alike (a type whose printed form loses digits, a driver that
    decodes two byte strings to one text) are an error, since the grouping, not the client,
    says which records are equal (:func:`check_distinct_classes`).
    """
    import pyarrow as pa

    columns = grouped.column_names if isinstance(grouped, pa.Table) else list(grouped.columns)
    if count_column not in columns:
        raise InvalidInputError(f"grouped result has no count column {count_column!r}")
    if isinstance(grouped, pa.Table):
        encoded = encode_arrow(grouped, qis)
        counts = np.asarray(grouped.column(count_column).to_numpy(), dtype=np.int64)
    else:
        encoded = encode_frame(grouped, qis)
        counts = grouped[count_column].to_numpy(dtype=np.int64)
    if encoded.records == 0 or int(counts.sum()) == 0:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    if (counts < 0).any():
        raise InvalidInputError("grouped result has a negative count")
    class_codes, sizes, _ = group_codes(encoded.codes, encoded.cardinalities, weights=counts)
    present = sizes > 0
    check_distinct_classes(int(present.sum()), int((counts > 0).sum()), qis)
    return class_table_of(encoded, class_codes[present], sizes[present])[0]


def check_distinct_classes(decoded: int, grouped: int, qis: Sequence[str]) -> None:
    """Refuse class rows that read back as fewer distinct tuples than the database grouped.

    ``grouped`` classes (rows with records) came from the database; ``decoded`` distinct
    tuples of values remain after decoding them. Merging them would pass a table whose true
    k is smaller, so the read stops instead.
    """
    if decoded == grouped:
        return
    names = ", ".join(repr(str(q)) for q in qis)
    raise InvalidInputError(
        f"{grouped - decoded} of the {grouped} classes the database grouped on {names} read "
        "back with the same values as another: their values cannot be told apart on the "
        "client, and reident does not merge classes; cast the quasi-identifiers to text in "
        "a sql query (and report the column types as a bug)"
    )
