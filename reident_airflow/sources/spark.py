"""The assessment of a Spark DataFrame: grouped by Spark, measured by the engine.

:func:`assess_spark_frame` takes a ``pyspark.sql.DataFrame`` -- of a classic
``SparkSession`` or of a Spark Connect session (``pyspark.sql.connect``), for example inside
Airflow's ``@task.pyspark`` -- and returns the
:class:`~reident_airflow.engine.assessment.Assessment` whose JSON equals the one the command
line computes from the same records in a file. The records are grouped in Spark's executors
(:mod:`~reident_airflow.sources.spark_grouping`); only aggregates reach the driver: one row
per distinct class size (per ranked QI subset), per distinct ``(class size, weight sum)`` pair
and per distinct profile of sensitive value counts, handed to the engine as its
:class:`~reident_airflow.engine.distributions.Distributions` (``collected_rows`` says how
many). The measures are the engine's arithmetic on them
(:func:`~reident_airflow.engine.assessment.assess`).

Each measure asked for runs one Spark job over the DataFrame (the verdict and the ranking
one, the weights one, each sensitive column one): cache the DataFrame when it is costly to
recompute. A DataFrame whose records change between jobs (a sample without a seed) is
detected by its histograms disagreeing, and refused.

PySpark is imported only by the functions that use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from reident_airflow.engine.assessment import Assessment, assess, refuse_per_class
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.distributions import (
    Distributions,
    SubsetHistograms,
    ValueProfiles,
    WeightPairs,
    ranked_subsets,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.engine.options import AssessmentOptions
from reident_airflow.sources.spark_grouping import (
    SparkSource,
    class_size_rows,
    is_spark_frame,
    open_spark_frame,
    profile_rows,
    spark_errors,
    weight_rows,
)

__all__ = [
    "aggregates_from_spark",
    "assess_spark_frame",
    "histogram_from_spark",
    "is_spark_frame",
    "open_spark_frame",
]


def _sizes(
    source: SparkSource,
    names: tuple[str, ...],
    rows: Sequence[tuple[int, bool, int]],
) -> ClassSizes:
    """The :class:`ClassSizes` of ``(size, suppressed, classes)`` rows (sizes may repeat)."""
    kept: dict[int, int] = {}
    excluded = 0
    for size, star, classes in rows:
        if star:
            excluded += int(size) * int(classes)
        else:
            kept[int(size)] = kept.get(int(size), 0) + int(classes)
    if not kept:
        if excluded:
            raise EmptyDatasetError(
                f"{source.label}: every record ({excluded}) is fully suppressed ('*' in every "
                "quasi-identifier): there is nothing to assess"
            )
        raise EmptyDatasetError(f"{source.label}: the table has no records: nothing to assess")
    order = sorted(kept)
    return ClassSizes(
        names,
        np.array(order, dtype=np.int64),
        np.array([kept[s] for s in order], dtype=np.int64),
        excluded_records=excluded,
    )


def _ranked(
    source: SparkSource, names: tuple[str, ...], pos: list[int], max_subset_size: int | None
) -> tuple[ClassSizes, SubsetHistograms, int]:
    """The histogram and the ranked subsets' histograms, in one Spark job."""
    subsets = ranked_subsets(len(pos), max_subset_size)
    if not subsets:  # one QI: the ranking is the table's own
        rows = class_size_rows(source, pos)
        return _sizes(source, names, rows), SubsetHistograms({}), len(rows)
    collected = class_size_rows(source, pos, subsets)
    full = [(f, False, c) for sid, f, c, _ in collected if sid == 0 and f > 0]
    excluded = sum(x for sid, _, _, x in collected if sid == 0)
    table = _sizes(source, names, [*full, (excluded, True, 1)] if excluded else full)
    per: dict[int, dict[int, int]] = {i: {} for i in range(1, len(subsets) + 1)}
    for sid, f, c, _ in collected:
        if sid and f > 0:
            per[sid][f] = c
    hists = {
        subsets[sid - 1]: (
            np.array(sorted(h), dtype=np.int64),
            np.array([h[s] for s in sorted(h)], dtype=np.int64),
        )
        for sid, h in per.items()
    }
    return table, SubsetHistograms(hists), len(collected)


def _weights(
    source: SparkSource, names: tuple[str, ...], pos: list[int], weight: str
) -> tuple[ClassSizes, WeightPairs, int]:
    from reident_airflow.engine.aggregates import check_weight_counts

    (wpos,) = source.positions([weight], kind="weight column")
    if source.kinds[wpos] not in ("number", "float", "text"):
        raise InvalidInputError(
            f"weight column {weight!r} is not numeric (neither numbers nor text holding them)"
        )
    rows, totals = weight_rows(source, pos, wpos)
    check_weight_counts(
        weight,
        not_numeric=totals["wtext"],
        missing=totals["wmissing"],
        not_finite=totals["winfinite"],
        nonpositive=totals["wnonpositive"],
    )
    table = _sizes(source, names, [(f, star, c) for f, _, star, c in rows])
    kept = [r for r in rows if not r[2]]
    pairs = WeightPairs(
        weight,
        sizes=np.array([int(r[0]) for r in kept], dtype=np.int64),
        sums=np.array([float(r[1]) for r in kept], dtype=np.float64),
        classes=np.array([int(r[3]) for r in kept], dtype=np.int64),
    )
    return table, pairs, len(rows)


def _profiles(
    source: SparkSource, names: tuple[str, ...], pos: list[int], column: str
) -> tuple[ClassSizes, ValueProfiles, int]:
    (spos,) = source.positions([column], kind="sensitive column")
    rows = profile_rows(source, pos, spos)
    table = _sizes(source, names, [(f, star, c) for f, _, star, c in rows])
    kept = sorted((r for r in rows if not r[2]), key=lambda r: (int(r[0]), list(r[1])))
    lengths = np.array([len(r[1]) for r in kept], dtype=np.int64)
    starts = np.zeros(len(kept), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    profiles = ValueProfiles(
        column,
        sizes=np.array([int(r[0]) for r in kept], dtype=np.int64),
        counts=np.array([int(v) for r in kept for v in r[1]], dtype=np.int64),
        starts=starts,
        classes=np.array([int(r[3]) for r in kept], dtype=np.int64),
    )
    return table, profiles, len(rows)


def _same(first: ClassSizes, other: ClassSizes, source: SparkSource) -> None:
    same = (
        np.array_equal(first.sizes, other.sizes)
        and np.array_equal(first.counts, other.counts)
        and first.excluded_records == other.excluded_records
    )
    if not same:
        raise InvalidInputError(
            f"{source.label}: its records changed between two Spark jobs (the class-size "
            "histograms differ): make it deterministic, or cache it, before assessing it"
        )


def aggregates_from_spark(
    frame: Any,
    qis: Sequence[str],
    *,
    weight: str | None = None,
    sensitive: Sequence[str] = (),
    rank_attributes: bool = False,
    max_subset_size: int | None = None,
) -> Distributions:
    """Count in Spark what an assessment of ``frame`` on ``qis`` needs (see the module).

    A failing Spark job raises an error naming its kind, never Spark's message (which may
    quote values): :class:`InvalidInputError` for an analysis error (a column Spark cannot
    group), :class:`~reident_airflow.sources.spark_grouping.SparkJobError` otherwise."""
    with spark_errors():
        return _aggregates(
            frame,
            qis,
            weight=weight,
            sensitive=sensitive,
            rank_attributes=rank_attributes,
            max_subset_size=max_subset_size,
        )


def _aggregates(
    frame: Any,
    qis: Sequence[str],
    *,
    weight: str | None,
    sensitive: Sequence[str],
    rank_attributes: bool,
    max_subset_size: int | None,
) -> Distributions:
    from reident_airflow.engine.aggregates import check_extra_columns

    source = open_spark_frame(frame)
    names, pos = source.qi_positions(qis)
    if isinstance(sensitive, str):
        sensitive = [sensitive]
    if weight is not None or sensitive:
        spos = [source.positions([s], kind="sensitive column")[0] for s in sensitive]
        weight, extra = check_extra_columns(
            names, source.names, weight=weight, sensitive=[source.names[i] for i in spos]
        )
        sensitive = list(extra)
    tables: list[ClassSizes] = []
    collected = 0
    subsets = pairs = None
    if rank_attributes or (weight is None and not sensitive):
        if rank_attributes:
            table, subsets, n_rows = _ranked(source, names, pos, max_subset_size)
        else:
            rows = class_size_rows(source, pos)
            table, n_rows = _sizes(source, names, rows), len(rows)
        tables.append(table)
        collected += n_rows
    if weight is not None:
        table, pairs, n_rows = _weights(source, names, pos, weight)
        tables.append(table)
        collected += n_rows
    profiles = {}
    for column in sensitive:
        table, profiles[column], n_rows = _profiles(source, names, pos, column)
        tables.append(table)
        collected += n_rows
    for other in tables[1:]:
        _same(tables[0], other, source)
    return Distributions(tables[0], subsets, pairs, profiles, collected)


def histogram_from_spark(frame: Any, qis: Sequence[str]) -> ClassSizes:
    """The class-size histogram of a Spark DataFrame, counted by Spark: one row per
    distinct class size reaches the driver."""
    return aggregates_from_spark(frame, qis).histogram


def assess_spark_frame(frame: Any, options: AssessmentOptions | Sequence[str]) -> Assessment:
    """Assess a Spark DataFrame under ``options`` (an
    :class:`~reident_airflow.engine.options.AssessmentOptions`, or only the QI names: every
    other option at its default).

    The JSON of the result (``to_dict()``) is the command line's on the same records. SUDA2
    and a population register need one row per class and are refused
    (:class:`InvalidInputError` naming the option).
    """
    if not isinstance(options, AssessmentOptions):
        options = AssessmentOptions(quasi_identifiers=tuple(options))
    refuse_per_class(options)
    counted = aggregates_from_spark(
        frame,
        options.quasi_identifiers,
        weight=options.weight,
        sensitive=options.sensitive,
        rank_attributes=options.rank_attributes,
        max_subset_size=options.max_subset_size,
    )
    return assess(counted, options)
