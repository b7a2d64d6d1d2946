"""Measures over distributions: what a source counts when it cannot hand over a class table.

A source that groups records where they are without sending a row per class to the caller
(Spark: :mod:`~reident_airflow.sources.spark`) hands over distributions
(:class:`Distributions`): the class-size histogram of the QIs and of each ranked subset of
them, how many classes share each ``(size, weight sum)`` pair, and how many share each profile
of sensitive value counts. :func:`~reident_airflow.engine.assessment.assess` takes them as it
takes a class table; every measure of docs/metrics.md that they determine is computed here by
the engine's own functions, so that its value is the one computed from the full class table:

- the verdict (§2-§4): the sample's measures on the histogram;
- the QI ranking (§5, :func:`ranking_of`): distinction ``classes / n`` and separation
  ``1 - sum C(F, 2) / C(n, 2)`` of each subset, in exact integers, ranked as the engine ranks
  them;
- the individual risk (§6, :func:`individual_risk_of`):
  :func:`~reident_airflow.engine.individual_risk.benedetti_franconi` on each distinct
  ``(f, F)`` pair, its totals summed with each pair's multiplicity by the order-free sum of
  :mod:`reident_airflow.engine._exact` (the same integer total, rounded once, as over one
  term per class);
- l-diversity (§7, :func:`l_diversity_of`):
  :func:`~reident_airflow.engine.diversity.l_diversity` on each distinct profile (the minima
  are those over the classes), the homogeneous records counted with each profile's
  multiplicity.

A source that does hand over a class table (DuckDB, a database) gets the same distributions
from it with :func:`distributions_of`, so that a caller that reads only distributions (the GX
metrics, whatever the execution engine) needs no second path.

What needs one row per class -- SUDA2 (its minimal sample uniques are combinations of QI
values) and a population register (matched class by class) -- is refused
(:func:`~reident_airflow.engine.assessment.refuse_per_class`). In the results,
``IndividualRisk.risk`` holds one risk per distinct ``(f, F)`` pair and ``LDiversity``'s
per-class arrays one entry per distinct profile, not per class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from reident_airflow.engine._arrays import FloatArray, IntArray
from reident_airflow.engine._exact import order_free_sum
from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    from reident_airflow.engine.aggregates import ClassWeights, ValueCounts
    from reident_airflow.engine.attributes import AttributeRisk
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.engine.diversity import LDiversity
    from reident_airflow.engine.individual_risk import IndividualRisk

__all__ = [
    "Distributions",
    "SubsetHistograms",
    "ValueProfiles",
    "WeightPairs",
    "distributions_of",
    "individual_risk_of",
    "l_diversity_of",
    "ranked_subsets",
    "ranking_of",
]


@dataclass(frozen=True)
class SubsetHistograms:
    """Per ranked QI subset (column indices, ascending), its classes' sizes ``F`` and how
    many classes have each (the full set is not among them: its histogram is the table's)."""

    histograms: Mapping[tuple[int, ...], tuple[IntArray, IntArray]]


@dataclass(frozen=True)
class WeightPairs:
    """The distinct ``(class size f, weight sum F)`` pairs and how many classes have each."""

    column: str
    sizes: IntArray
    sums: FloatArray
    classes: IntArray


@dataclass(frozen=True)
class ValueProfiles:
    """The distinct profiles of one sensitive column: a class size, the class's value counts
    (ascending, ``counts[starts[p]:starts[p + 1]]``) and how many classes have it."""

    column: str
    sizes: IntArray
    counts: IntArray
    starts: IntArray
    classes: IntArray


@dataclass(frozen=True)
class Distributions:
    """What a source counted for one assessment without a class table: the class-size
    histogram, the ranked subsets' histograms, the weight pairs and the sensitive profiles
    (each ``None``/empty when not asked for), and how many rows the source collected to hand
    them over (Spark: rows reaching the driver)."""

    histogram: ClassSizes
    subsets: SubsetHistograms | None = None
    weights: WeightPairs | None = None
    profiles: Mapping[str, ValueProfiles] = field(default_factory=dict)
    collected_rows: int = 0

    @property
    def quasi_identifiers(self) -> tuple[str, ...]:
        """The QIs of the histogram."""
        return self.histogram.quasi_identifiers


def ranked_subsets(m: int, max_subset_size: int | None) -> list[tuple[int, ...]]:
    """The QI subsets the engine ranks (:func:`~reident_airflow.engine.attributes.
    attribute_risks`), less the full set: by default (``None``) each single column and each
    subset with one QI left out (:func:`~reident_airflow.engine.attributes.gate_subsets`);
    else every subset of up to ``max_subset_size`` columns (the full lattice when it is at
    least ``m``)."""
    from reident_airflow.engine.attributes import gate_subsets

    if max_subset_size is None:
        return [c for c in gate_subsets(m) if len(c) < m]
    if max_subset_size < 1:
        raise InvalidInputError(f"attribute subset size must be at least 1, got {max_subset_size}")
    max_size = min(max_subset_size, m)
    return [c for size in range(1, max_size + 1) for c in combinations(range(m), size) if size < m]


def _pairs(sizes: IntArray, counts: IntArray) -> int:
    """``sum C(F, 2)`` over classes: same-value record pairs, in exact integers."""
    return sum(int(c) * (int(f) * (int(f) - 1) // 2) for f, c in zip(sizes, counts, strict=True))


def ranking_of(
    names: Sequence[str], table: ClassSizes, subsets: SubsetHistograms
) -> tuple[AttributeRisk, ...]:
    """Distinction and separation of the full set and every subset, ranked as the engine
    ranks them (distinction, separation descending, then fewer columns, then QI order)."""
    from reident_airflow.engine.attributes import AttributeRisk

    n = table.records
    all_pairs = n * (n - 1) // 2
    hists = {tuple(range(len(names))): (table.sizes, table.counts), **subsets.histograms}
    found = []
    for cols, (sizes, counts) in hists.items():
        separation = 1.0 - _pairs(sizes, counts) / all_pairs if all_pairs else 0.0
        found.append((cols, int(counts.sum()) / n, separation))
    found.sort(key=lambda r: (-r[1], -r[2], len(r[0]), r[0]))
    return tuple(
        AttributeRisk(columns=tuple(names[i] for i in cols), distinction=d, separation=s)
        for cols, d, s in found
    )


def individual_risk_of(pairs: WeightPairs, record_threshold: float) -> IndividualRisk:
    """The individual risk of docs/metrics.md §6 from the distinct ``(f, F)`` pairs."""
    from reident_airflow.engine.individual_risk import (
        benedetti_franconi,
        individual_risk_summary,
    )
    from reident_airflow.engine.sample import validate_threshold

    f, mult = pairs.sizes, pairs.classes
    risk = benedetti_franconi(f, pairs.sums)
    return individual_risk_summary(
        pairs.column,
        f * mult,
        risk,
        record_threshold=validate_threshold(record_threshold),
        global_risk=order_free_sum(f * risk, repeats=mult),
        estimated_population=order_free_sum(pairs.sums, repeats=mult),
    )


def l_diversity_of(profiles: ValueProfiles, c: float) -> LDiversity:
    """l-diversity of docs/metrics.md §7 from the distinct profiles of one column."""
    from reident_airflow.engine.aggregates import ValueCounts
    from reident_airflow.engine.diversity import l_diversity

    counts = ValueCounts(
        profiles.column, counts=profiles.counts, starts=profiles.starts, sizes=profiles.sizes
    )
    per_profile = l_diversity(counts, profiles.sizes, c=c)
    records = profiles.sizes * profiles.classes
    n = int(records.sum())
    homogeneous = int(np.sum(records, where=per_profile.per_class_distinct == 1))
    return replace(per_profile, records=n, homogeneous_records=homogeneous / n)


# -------------------------------------------------------------- from a class table to them
def distributions_of(
    table: ClassTable,
    *,
    weights: ClassWeights | None = None,
    sensitive: Mapping[str, ValueCounts] | None = None,
    rank_attributes: bool = False,
    max_subset_size: int | None = None,
) -> Distributions:
    """The distributions of a class table and its aggregates: what Spark counts
    (:func:`~reident_airflow.sources.spark.aggregates_from_spark`) for the same options.

    The histogram always; the ranked subsets' histograms if ``rank_attributes``
    (``max_subset_size`` sizing the ranking as :func:`ranked_subsets` does); the distinct
    ``(f, F)`` pairs of ``weights`` (sums aligned with ``table``); for each column of
    ``sensitive``, the distinct profiles of its value counts (checked against the class
    sizes first). ``collected_rows`` is 0: nothing was collected to hand them over.
    """
    from reident_airflow.engine.aggregates import check_weight_sums
    from reident_airflow.engine.classes import ClassSizes

    histogram = ClassSizes(
        table.quasi_identifiers, *table.histogram(), excluded_records=table.excluded_records
    )
    subsets = _subset_histograms(table, max_subset_size) if rank_attributes else None
    pairs = None
    if weights is not None:
        check_weight_sums(table.sizes, weights)
        pairs = _weight_pairs(table.sizes, weights)
    profiles = {
        column: _value_profiles(counts.checked(table.sizes))
        for column, counts in (sensitive or {}).items()
    }
    return Distributions(histogram, subsets, pairs, profiles)


def _histogram_of(sizes: IntArray) -> tuple[IntArray, IntArray]:
    """The distinct sizes ascending and how many classes have each."""
    found, counts = np.unique(sizes, return_counts=True)
    return found.astype(np.int64), counts.astype(np.int64)


def _subset_histograms(table: ClassTable, max_subset_size: int | None) -> SubsetHistograms:
    """Each ranked subset's classes: the table's classes merged on the subset, weighted by
    their sizes (by default each subset one grouping of the class table, one at a time)."""
    from reident_airflow.engine.attributes import SubsetScratch, subset_groupings, subset_sizes

    wanted = ranked_subsets(len(table.quasi_identifiers), max_subset_size)
    hists: dict[tuple[int, ...], tuple[IntArray, IntArray]] = {}
    if max_subset_size is None:
        scratch = SubsetScratch(table)
        for cols in wanted:
            hists[cols] = _histogram_of(subset_sizes(table, cols, scratch))
        return SubsetHistograms(hists)
    deepest = max((len(cols) for cols in wanted), default=0)
    sizes = table.sizes.astype(np.float64)  # exact: a class size is far below 2^53
    chosen = set(wanted)
    for cols, ids, count in subset_groupings(table, deepest):
        if cols in chosen:
            merged = np.bincount(ids, weights=sizes, minlength=count).astype(np.int64)
            hists[cols] = _histogram_of(merged)
    return SubsetHistograms(hists)


def _runs(new: NDArray[np.bool_]) -> tuple[IntArray, IntArray]:
    """Where each run starts (``new[i]``: element i starts one) and how long it is."""
    starts = np.flatnonzero(new)
    return starts, np.diff(np.r_[starts, new.shape[0]]).astype(np.int64)


def _weight_pairs(sizes: IntArray, weights: ClassWeights) -> WeightPairs:
    """The distinct ``(f, F)`` pairs, ascending, and how many classes have each."""
    f = np.asarray(sizes, dtype=np.int64)
    sums = np.asarray(weights.sums, dtype=np.float64)
    order = np.lexsort((sums, f))
    f, sums = f[order], sums[order]
    new = np.ones(f.shape[0], dtype=np.bool_)
    new[1:] = (f[1:] != f[:-1]) | (sums[1:] != sums[:-1])
    starts, classes = _runs(new)
    return WeightPairs(weights.column, sizes=f[starts], sums=sums[starts], classes=classes)


def _value_profiles(counts: ValueCounts) -> ValueProfiles:
    """The distinct profiles ``(class size, value counts ascending)`` of checked counts.

    Each class's counts are sorted; classes are then told apart one position at a time
    (first by size and number of values, then by the count at position 0, 1, ...), so that
    two classes end in one group exactly when their profiles are equal.
    """
    assert counts.starts is not None and counts.sizes is not None  # checked counts
    sizes = counts.sizes
    first = np.asarray(counts.starts, dtype=np.int64)
    pairs = np.asarray(counts.counts, dtype=np.int64)
    owner = np.asarray(counts.classes, dtype=np.int64)
    pairs = pairs[np.lexsort((pairs, owner))]  # each class's counts ascending
    lengths = np.diff(np.r_[first, pairs.shape[0]]).astype(np.int64)
    group = _dense(sizes, lengths)
    for position in range(int(lengths.max())):
        longer = np.flatnonzero(lengths > position)
        refined = _dense(group[longer], pairs[first[longer] + position])
        # the classes as long as `position` or shorter are in groups of their own lengths
        group[longer] = refined + int(group.max()) + 1
    _, representative, classes = np.unique(group, return_index=True, return_counts=True)
    kept = lengths[representative]
    starts = np.zeros(kept.shape[0], dtype=np.int64)
    np.cumsum(kept[:-1], out=starts[1:])
    taken = np.repeat(first[representative] - starts, kept) + np.arange(int(kept.sum()))
    return ValueProfiles(
        counts.column,
        sizes=sizes[representative],
        counts=pairs[taken],
        starts=starts,
        classes=classes.astype(np.int64),
    )


def _dense(left: IntArray, right: IntArray) -> IntArray:
    """Dense ids ``0..g-1`` of the pairs ``(left[i], right[i])`` of non-negative integers:
    equal pairs, equal ids."""
    import pandas as pd

    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    span = int(right.max()) + 1
    if int(left.max()) < (1 << 62) // span:  # one int64 key per pair
        ids, _ = pd.factorize(left * span + right)
        return ids.astype(np.int64, copy=False)
    _, inverse = np.unique(np.stack([left, right]), axis=1, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)
