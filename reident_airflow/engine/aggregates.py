"""Per-class aggregates beyond the class size, checked when they are built.

The class table (:mod:`reident_airflow.engine.classes`) counts records per equivalence class.
Individual risk (docs/metrics.md §6) also needs each class's sum of sampling weights (``F_k``), and
l-diversity (§7) the value counts of each sensitive column within each class. A source
computes them where the data is (DuckDB for files and DataFrames,
:mod:`reident_airflow.sources.files`; the database's ``GROUP BY``,
:mod:`reident_airflow.sources.sql`) and hands them over in the types of this module:
:class:`ClassWeights`, :class:`ValueCounts`, together with the class table in
:class:`ClassAggregates`. :func:`aggregate_grouped` builds them from grouped results given as
DataFrames.

Each type checks what it holds when it is built, so holding one is the proof: a
:class:`ValueCounts` built with the class sizes has its pairs ordered by class and adding up
to those sizes, and a :class:`ClassAggregates` has weights and value counts that fit its
table. The measures compare sizes by value, never by object identity.

Only aggregates are kept: sums, counts, class indices. Sensitive *values* are reduced to their
counts per class (no measure needs the value itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from reident_airflow.engine._arrays import FloatArray, IntArray
from reident_airflow.engine.classes import (
    ClassTable,
    check_distinct_classes,
    class_table_of,
    group_codes,
)
from reident_airflow.engine.encoding import (
    EncodedColumns,
    distinct_names,
    encode_frame,
    encode_series,
    refuse_unknown,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

if TYPE_CHECKING:  # pandas is loaded by the function that uses it
    import pandas as pd

__all__ = [
    "ClassAggregates",
    "ClassWeights",
    "PairCounts",
    "ValueCounts",
    "aggregate_arrow",
    "aggregate_grouped",
    "build_aggregates",
    "check_extra_columns",
    "check_weight_counts",
    "check_weight_sums",
    "class_starts",
    "classes_from_starts",
]


@dataclass(frozen=True, eq=False)
class ClassWeights:
    """``sums[j]``: the sum of the sampling weights of class j's records (``F_j``).

    The sums are checked against class sizes where they meet them: in
    :class:`ClassAggregates` and in the individual risk (``F_j >= f_j``, finite).
    """

    column: str
    sums: FloatArray


@dataclass(frozen=True, eq=False, init=False)
class ValueCounts:
    """Value counts of one sensitive column within each class.

    One entry per (class, value) pair present in the table, ordered by class: ``classes[p]``
    is the class index of pair p and ``counts[p]`` how many of the class's records have that
    value. A missing value is a value of its own. The values themselves are not kept.

    The pairs' classes may be given instead by ``starts``, where each class's pairs begin
    (every class has at least one pair, the classes in index order): ``classes`` is then
    derived when first read (a source that groups knows the starts; an array of the class of
    every pair costs 8 bytes per pair).

    Built with ``sizes`` (the class sizes of the table the counts belong to), the counts are
    checked there and then: pairs ordered by class, every class present, counts positive and
    adding up to each class's size; ``starts`` is then always set. Without ``sizes`` nothing
    is proven yet: :func:`~reident_airflow.engine.diversity.l_diversity` checks such counts
    (and orders them) before use.
    """

    column: str
    counts: IntArray
    starts: IntArray | None = field(repr=False)
    #: The class sizes the counts were checked to add up to (``None``: not checked).
    sizes: IntArray | None = field(repr=False)

    def __init__(
        self,
        column: str,
        classes: IntArray | None = None,
        counts: IntArray | None = None,
        *,
        starts: IntArray | None = None,
        sizes: IntArray | None = None,
    ) -> None:
        if counts is None:
            raise InvalidInputError(f"value counts of {column!r}: no counts given")
        if classes is None and starts is None:
            raise InvalidInputError(
                f"value counts of {column!r}: give the class of each pair or where each "
                "class's pairs start"
            )
        if sizes is not None:
            sizes = np.asarray(sizes, dtype=np.int64)
            counts = np.asarray(counts, dtype=np.int64)
            starts = _checked_layout(column, classes, counts, starts, sizes)
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "sizes", sizes)
        if classes is not None:  # given: the cached property's value is known
            object.__setattr__(self, "classes", classes)

    @cached_property
    def classes(self) -> IntArray:
        """The class index of every pair (derived from ``starts`` when not given)."""
        assert self.starts is not None  # the constructor requires classes or starts
        return classes_from_starts(self.starts, int(self.counts.shape[0]))

    def checked(self, sizes: IntArray) -> ValueCounts:
        """These counts checked against ``sizes`` (the pairs ordered by class first).

        Returns ``self`` when it was built with equal sizes; raises
        :class:`InvalidInputError` when the counts do not fit the class table or do not add
        up to its sizes.
        """
        f = np.asarray(sizes, dtype=np.int64)
        if self.sizes is not None:
            if not np.array_equal(self.sizes, f):
                raise _unequal(self.column)
            return self
        cls = np.asarray(self.classes, dtype=np.int64)
        cnt = np.asarray(self.counts, dtype=np.int64)
        aligned = cls.shape == cnt.shape and cls.ndim == 1  # else refused when built
        if aligned and not bool((cls[1:] >= cls[:-1]).all()):
            order = np.argsort(cls, kind="stable")  # group the pairs by class
            cls, cnt = cls[order], cnt[order]
        return ValueCounts(self.column, cls, cnt, sizes=f)


def _unequal(column: str) -> InvalidInputError:
    return InvalidInputError(f"value counts of {column!r} do not add up to the class sizes")


def _checked_layout(
    column: str,
    classes: IntArray | None,
    counts: IntArray,
    starts: IntArray | None,
    sizes: IntArray,
) -> IntArray:
    """Where each class's pairs start, once the pairs are proven to fit ``sizes``.

    The pairs must be ordered by class with every class present, their counts positive and
    adding up to each class's size; either layout (``classes`` or ``starts``) is checked.
    """
    misfit = InvalidInputError(f"value counts of {column!r} do not fit the class table")
    misaligned = InvalidInputError(f"value counts of {column!r}: misaligned arrays")
    u = int(sizes.shape[0])
    if sizes.ndim != 1 or counts.ndim != 1:
        raise misaligned
    if starts is not None:
        first = np.asarray(starts, dtype=np.int64)
        if first.ndim != 1:
            raise misaligned
        if not counts.size or first.shape[0] != u:
            raise _unequal(column)
        if first[0] != 0 or first[-1] >= counts.shape[0] or int(counts.min()) <= 0:
            raise misfit
        if u > 1 and not bool((first[1:] > first[:-1]).all()):
            raise misfit
    else:
        assert classes is not None  # the constructor requires classes or starts
        cls = np.asarray(classes, dtype=np.int64)
        if cls.shape != counts.shape:
            raise misaligned
        if not cls.size:
            raise _unequal(column)
        if cls[0] < 0 or cls[-1] >= u or int(counts.min()) <= 0:
            raise misfit
        if cls.size > 1 and not bool((cls[1:] >= cls[:-1]).all()):
            raise InvalidInputError(f"value counts of {column!r}: pairs not ordered by class")
        first = class_starts(cls)
        if first.shape[0] != u:  # a class without values
            raise _unequal(column)
    if not np.array_equal(np.add.reduceat(counts, first), sizes):
        raise _unequal(column)
    return first


def class_starts(cls: IntArray) -> IntArray:
    """Where each class's run of pairs starts (pairs grouped by class)."""
    starts = np.empty(cls.shape[0], dtype=np.bool_)
    starts[:1] = True
    np.not_equal(cls[1:], cls[:-1], out=starts[1:])
    return np.flatnonzero(starts)


def classes_from_starts(starts: NDArray[Any], pairs: int) -> IntArray:
    """The class of every pair from where each class's pairs start (``starts[0] == 0``)."""
    index = np.zeros(pairs, dtype=np.int64)
    index[np.asarray(starts[1:], dtype=np.int64)] = 1
    np.cumsum(index, out=index)
    return index


class PairCounts(NamedTuple):
    """One sensitive column's (class, value) pairs as a source counted them, ordered by
    class: their counts, and the class of each pair or where each class's pairs start."""

    counts: IntArray
    classes: IntArray | None = None
    starts: IntArray | None = None


@dataclass(frozen=True, eq=False)
class ClassAggregates:
    """A class table with its per-class aggregates, checked against it when built.

    The weight sums must be finite and at least each class's size; every sensitive column's
    value counts must add up to the class sizes (counts built with other sizes, or without,
    are checked here and kept in their checked form).
    """

    table: ClassTable
    weights: ClassWeights | None = None
    sensitive: Mapping[str, ValueCounts] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sizes = self.table.sizes
        if self.weights is not None:
            check_weight_sums(sizes, self.weights)
        checked = {name: counts.checked(sizes) for name, counts in self.sensitive.items()}
        object.__setattr__(self, "sensitive", checked)


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
    for s in distinct_names("sensitive column", names):
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
        if weight in names:
            raise InvalidInputError(f"weight column {weight!r} is also listed as sensitive")
    refuse_unknown("weight column", [] if weight is None else [weight], avail)
    refuse_unknown("sensitive column", names, avail)
    return weight, names


def check_weight_counts(
    column: str,
    *,
    not_numeric: int = 0,
    missing: int = 0,
    not_finite: int = 0,
    nonpositive: int = 0,
) -> None:
    """Refuse a weight column by the counts of its bad records, as a source counted them.

    Every record needs a finite sampling weight > 0; the message names the column and how many
    records fail, never a value.
    """
    if not_numeric:
        raise InvalidInputError(
            f"weight column {column!r} is not numeric: {not_numeric} value(s) cannot be read "
            "as a number"
        )
    for bad, message in (
        (missing, "missing value(s): every record needs a sampling weight"),
        (not_finite, "value(s) that are not finite"),
        (
            nonpositive,
            "zero or negative weight(s): a sampling weight is the number of population units a "
            "record stands for, and must be > 0",
        ),
    ):
        if bad:
            raise InvalidInputError(f"weight column {column!r} has {bad} {message}")


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


# ------------------------------------------------------------------------------ building
def build_aggregates(
    encoded: EncodedColumns,
    class_codes: IntArray,
    sizes: IntArray,
    *,
    sums: FloatArray | None,
    weight_column: str | None,
    pairs: Mapping[str, PairCounts],
) -> ClassAggregates:
    """The aggregates of grouped classes: fully suppressed classes excluded (ARX behaviour)
    from the table, the weight sums and the value counts; everything checked per class."""
    table, keep = class_table_of(encoded, class_codes, sizes)
    if keep is not None:
        remap = np.cumsum(keep, dtype=np.int64) - 1
        remap[~keep] = -1
        if sums is not None:
            sums = sums[keep]
        kept: dict[str, PairCounts] = {}
        for name, found in pairs.items():
            cls = found.classes
            if cls is None:
                assert found.starts is not None
                cls = classes_from_starts(found.starts, int(found.counts.shape[0]))
            stays = keep[cls]
            kept[name] = PairCounts(found.counts[stays], classes=remap[cls][stays])
        pairs = kept
    weights = None
    if sums is not None:
        weights = ClassWeights(column=weight_column or "weight", sums=sums)
    return ClassAggregates(
        table=table,
        weights=weights,
        sensitive={
            name: ValueCounts(
                name, found.classes, found.counts, starts=found.starts, sizes=table.sizes
            )
            for name, found in pairs.items()
        },
    )


def _float_canonical(column: Any) -> Any:
    """-0.0 as 0.0 and every NaN as one NaN: the engines that group (DuckDB, Spark) treat
    them so, and the codes must agree."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_floating(column.type):
        return column
    column = pc.add(column, pa.scalar(0.0, type=column.type))
    return pc.if_else(pc.is_nan(column), pa.scalar(float("nan"), type=column.type), column)


def aggregate_arrow(
    table: Any,
    keys: Sequence[str],
    names: tuple[str, ...],
    *,
    weight: str | None = None,
    extra: Sequence[str] = (),
) -> ClassAggregates:
    """Aggregates from a class table grouped elsewhere and handed over as an Arrow table.

    One row per class: its QI values in the columns ``keys`` (named ``names`` in the
    result), its record count in ``size``, with ``weight`` the sum of the weights in
    ``wsum``, and per sensitive column ``extra[j]`` the list of its value counts in
    ``v{j}``. Each key column is coded exactly (:func:`~reident_airflow.engine.encoding.
    encode_arrow_column`, floats canonical first), so that two classes share a code tuple
    only where the engine that grouped them saw one value.
    """
    import pyarrow as pa

    from reident_airflow.engine._parallel import submitter
    from reident_airflow.engine.encoding import encode_arrow_column, encoded_columns

    # each column's codes written into its own column of one array (column-major: every
    # column contiguous), the columns coded side by side on the worker threads: no stacked
    # copy of the codes is made
    class_codes = np.empty((table.num_rows, len(keys)), dtype=np.int64, order="F")

    def code(j: int) -> tuple[int, Any]:
        codes, card, dictionary = encode_arrow_column(_float_canonical(table.column(keys[j])))
        class_codes[:, j] = codes
        return card, dictionary

    submit = submitter(table.num_rows * len(keys))
    coded = [submit(code, j) for j in range(len(keys))]
    parts = [(class_codes[:, j], *done.result()) for j, done in enumerate(coded)]
    encoded = encoded_columns(names, parts)
    sizes = np.asarray(table.column("size").to_numpy(zero_copy_only=False), dtype=np.int64)
    sums = None
    if weight is not None:
        sums = np.asarray(table.column("wsum").to_numpy(zero_copy_only=False), dtype=np.float64)
    pairs: dict[str, PairCounts] = {}
    for j, name in enumerate(extra):
        lists = table.column(f"v{j}").combine_chunks()
        if isinstance(lists, pa.ChunkedArray):  # pragma: no cover - an empty result
            lists = pa.concat_arrays(lists.chunks)
        offsets = np.asarray(lists.offsets.to_numpy(), dtype=np.int64)
        counts = np.asarray(lists.values.to_numpy(zero_copy_only=False), dtype=np.int64)
        pairs[name] = PairCounts(counts, starts=offsets[:-1])
    return build_aggregates(
        encoded, class_codes, sizes, sums=sums, weight_column=weight, pairs=pairs
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
    one class. Each row of ``counts`` with records is one class, as the database decided:
    two that read back alike are an error, never merged
    (:func:`~reident_airflow.engine.classes.check_distinct_classes`).
    """
    import pandas as pd

    names = tuple(qis)
    extra = dict(value_counts or {})
    frames = [counts, *extra.values()]
    _check_grouped(frames, (*names, count_column))
    lengths = [len(f) for f in frames]
    stacked = pd.concat([f[list(names)] for f in frames], ignore_index=True)
    encoded = encode_frame(stacked, names)
    all_codes, _, inverse = group_codes(encoded.codes, encoded.cardinalities, return_inverse=True)
    assert inverse is not None
    bounds = np.cumsum([0, *lengths])
    own = inverse[: bounds[1]]
    u_all = int(all_codes.shape[0])
    sizes_all = _grouped_sizes(counts[count_column], own, u_all)
    present = sizes_all > 0
    with_records = counts[count_column].to_numpy(dtype=np.int64) > 0
    check_distinct_classes(
        int(np.unique(own[with_records]).shape[0]), int(with_records.sum()), names
    )
    remap = np.cumsum(present, dtype=np.int64) - 1
    class_codes = all_codes[present]
    sizes = sizes_all[present]
    sums = None
    if weight is not None:
        values = counts[weight_sum_column or weight].to_numpy(dtype=np.float64, na_value=np.nan)
        sums = np.bincount(own, weights=values, minlength=u_all)[present].astype(np.float64)
    pairs: dict[str, PairCounts] = {}
    for i, (name, frame) in enumerate(extra.items(), start=1):
        cls_all = inverse[bounds[i] : bounds[i + 1]]
        counted = frame[count_column].to_numpy(dtype=np.int64)
        if not present[cls_all[counted > 0]].all():
            raise InvalidInputError(
                f"the value counts of {name!r} hold classes the table does not: the queries "
                "saw different data"
            )
        pairs[name] = _merged_pairs(name, frame[name], remap[cls_all], counted, sizes)
    return build_aggregates(
        encoded, class_codes, sizes, sums=sums, weight_column=weight, pairs=pairs
    )


def _grouped_sizes(row_counts: pd.Series, classes: IntArray, u: int) -> IntArray:
    """The size of each of ``u`` classes: the counts of the grouped rows, ``classes[r]`` the
    class of row r (a class none of whose rows has a record has size 0)."""
    counted = row_counts.to_numpy(dtype=np.int64)
    if (counted < 0).any():
        raise InvalidInputError("grouped result has a negative count")
    sizes = np.bincount(classes, weights=counted, minlength=u).astype(np.int64)
    if not (sizes > 0).any():
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    return sizes


def _check_grouped(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> None:
    """Every grouped result has the QI and count columns; the first has rows."""
    for f in frames:
        absent = [c for c in columns if c not in f.columns]
        if absent:
            raise InvalidInputError(f"grouped result lacks column(s) {absent}")
    if len(frames[0]) == 0:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")


def _merged_pairs(
    name: str, values: pd.Series, cls: IntArray, counted: IntArray, sizes: IntArray
) -> PairCounts:
    """One sensitive column's (class, value) pairs from grouped rows: rows that meet in one
    pair (two spellings of a missing value) merged, empty pairs dropped, ordered by class;
    the counts must add up to the class sizes (else the queries saw different data)."""
    value_codes, card, _ = encode_series(values)
    key = cls * max(card, 1) + value_codes
    uniq, pos = np.unique(key, return_inverse=True)
    merged = np.bincount(pos.reshape(-1), weights=counted, minlength=uniq.shape[0])
    keep = merged > 0
    pair_cls = uniq[keep] // max(card, 1)
    pair_cnt = merged[keep].astype(np.int64)
    per_class = np.bincount(pair_cls, weights=pair_cnt, minlength=sizes.shape[0])
    if not np.array_equal(per_class.astype(np.int64), sizes):
        raise InvalidInputError(
            f"the value counts of {name!r} do not add up to the class sizes: the queries "
            "saw different data"
        )
    return PairCounts(pair_cnt, classes=pair_cls.astype(np.int64))
