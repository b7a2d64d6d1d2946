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

from reident_airflow.engine._arrays import FloatArray, IntArray
from reident_airflow.engine._exact import order_free_sum
from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    from reident_airflow.engine.attributes import AttributeRisk
    from reident_airflow.engine.classes import ClassSizes
    from reident_airflow.engine.diversity import LDiversity
    from reident_airflow.engine.individual_risk import IndividualRisk

__all__ = [
    "Distributions",
    "SubsetHistograms",
    "ValueProfiles",
    "WeightPairs",
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
    attribute_risks`), less the full set: every subset of up to ``max_subset_size`` columns
    (by default all when ``m <= 8``, else up to 2)."""
    from reident_airflow.engine.attributes import ALL_SUBSETS_UP_TO, DEFAULT_MAX_SUBSET_SIZE

    max_size = max_subset_size
    if max_size is None:
        max_size = m if m <= ALL_SUBSETS_UP_TO else DEFAULT_MAX_SUBSET_SIZE
    if max_size < 1:
        raise InvalidInputError(f"attribute subset size must be at least 1, got {max_size}")
    max_size = min(max_size, m)
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
