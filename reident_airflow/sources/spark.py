"""The assessment of a Spark DataFrame: grouped by Spark, measured by the engine.

:func:`assess_spark_frame` takes a ``pyspark.sql.DataFrame`` -- of a classic
``SparkSession`` or of a Spark Connect session (``pyspark.sql.connect``), for example inside
Airflow's ``@task.pyspark`` -- and returns the
:class:`~reident_airflow.engine.assessment.Assessment` whose JSON equals the one the command
line computes from the same records in a file. The records are grouped in Spark's executors
(:mod:`~reident_airflow.sources.spark_grouping`); only aggregates reach the driver: one row
per distinct class size, per distinct ``(class size, weight sum)`` pair and per distinct
profile of sensitive value counts, handed to the engine as its
:class:`~reident_airflow.engine.distributions.Distributions` (``collected_rows`` says how
many). The measures are the engine's arithmetic on them
(:func:`~reident_airflow.engine.assessment.assess`).

The QI ranking is the exception, under a bound: a class table of at most
:data:`DRIVER_CLASSES` classes (the session's ``reident.ranking.driverClasses``) comes to the
driver as Arrow, one row per class, and the engine derives every ranked subset from it, as
it does from DuckDB's class table, instead of one Spark ``GROUPING SETS`` job that repeats
each class once per subset (measured in bench/README.md). The table is held in memory for
the ranking and dropped; nothing of it is logged or returned. A larger class table stays in
Spark, which then counts each subset's histogram (the job that found it too large is
repeated).

Each measure asked for runs one Spark job over the DataFrame (the verdict and the ranking
one, the weights one, each sensitive column one): cache the DataFrame when it is costly to
recompute. A DataFrame whose records change between jobs (a sample without a seed) is
detected by its histograms disagreeing, and refused.

PySpark is imported only by the functions that use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Self, cast

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
from reident_airflow.sources import Source
from reident_airflow.sources.cancel import SparkJobs
from reident_airflow.sources.spark_grouping import (
    SparkTable,
    change_rows,
    class_size_rows,
    class_table_arrow,
    column_kinds,
    column_profiles,
    is_spark_frame,
    open_spark_frame,
    profile_rows,
    spark_errors,
    spark_kinds,
    weight_rows,
)

if TYPE_CHECKING:
    import pandas as pd

    from reident_airflow.engine.advice import BreachAdvice
    from reident_airflow.engine.classes import ClassTable
    from reident_airflow.engine.differencing import ReleaseChanges
    from reident_airflow.engine.hierarchies import Hierarchy
    from reident_airflow.engine.identifiers import ColumnPlan, ColumnProfile
    from reident_airflow.sources.fingerprint import InputFingerprint

__all__ = [
    "SparkSource",
    "aggregates_from_spark",
    "assess_spark_frame",
    "histogram_from_spark",
    "is_spark_frame",
    "open_spark_frame",
]


def _sizes(
    source: SparkTable,
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


#: The most classes whose class table the driver takes to rank the QIs itself; the Spark
#: configuration ``reident.ranking.driverClasses`` sets another limit (0: always in Spark).
DRIVER_CLASSES = 10_000_000
DRIVER_CLASSES_CONF = "reident.ranking.driverClasses"


def _driver_classes(source: SparkTable) -> int:
    """The class limit of the ranking on the driver: the session's setting, else the
    default."""
    value = _session_of(source.frame).conf.get(DRIVER_CLASSES_CONF, None)
    if value is None:
        return DRIVER_CLASSES
    try:
        limit = int(str(value).strip())
    except ValueError:
        limit = -1
    if limit < 0:
        raise InvalidInputError(
            f"the Spark setting {DRIVER_CLASSES_CONF} must be a whole number of classes (0 or more)"
        )
    return limit


def _ranked(
    source: SparkTable, names: tuple[str, ...], pos: list[int], max_subset_size: int | None
) -> tuple[ClassSizes, SubsetHistograms, int]:
    """The histogram and the ranked subsets' histograms, in one Spark job (two when the
    class table proves too large for the driver).

    Up to :data:`DRIVER_CLASSES` classes, the class table comes to the driver (as Arrow) and
    the engine derives every subset from it, as it does from DuckDB's or a database's; a
    larger one, or QIs of a type Arrow does not carry exactly, stays in Spark, where one
    ``GROUPING SETS`` job over it counts every subset."""
    subsets = ranked_subsets(len(pos), max_subset_size)
    if not subsets:  # one QI: the ranking is the table's own
        rows = class_size_rows(source, pos)
        return _sizes(source, names, rows), SubsetHistograms({}), len(rows)
    limit = _driver_classes(source)
    classes = class_table_arrow(source, pos, limit) if limit else None
    if classes is not None:
        return _ranked_on_driver(source, names, pos, classes, max_subset_size)
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


def _ranked_on_driver(
    source: SparkTable,
    names: tuple[str, ...],
    pos: list[int],
    classes: Any,
    max_subset_size: int | None,
) -> tuple[ClassSizes, SubsetHistograms, int]:
    """The histogram and the ranked subsets' histograms of a class table Spark grouped and
    the driver holds (:func:`~reident_airflow.sources.spark_grouping.class_table_arrow`)."""
    from reident_airflow.engine.aggregates import aggregate_arrow
    from reident_airflow.engine.distributions import distributions_of

    try:
        table = aggregate_arrow(classes, [f"c{i}" for i in pos], names).table
    except EmptyDatasetError:
        # no classes, or only the fully suppressed one: said as the Spark histogram says it
        records = int(np.asarray(classes.column("size").to_numpy(zero_copy_only=False)).sum())
        _sizes(source, names, [(records, True, 1)] if records else [])
        raise
    found = distributions_of(table, rank_attributes=True, max_subset_size=max_subset_size)
    assert found.subsets is not None
    return found.histogram, found.subsets, classes.num_rows


def _weights(
    source: SparkTable, names: tuple[str, ...], pos: list[int], weight: str
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
    source: SparkTable, names: tuple[str, ...], pos: list[int], column: str
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


def _same(first: ClassSizes, other: ClassSizes, source: SparkTable) -> None:
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


def _session_of(frame: Any) -> Any:
    """The Spark session a DataFrame belongs to (classic or Spark Connect)."""
    return frame.sparkSession


class SparkSource:
    """A Spark DataFrame, counted by Spark: the :class:`~reident_airflow.sources.Source` of
    Spark (classic sessions and Spark Connect).

    ``label`` names it in messages (a table's name or a path); ``path`` is the Parquet file or
    folder it was read from, if any (for the fingerprint). ``session``: the
    :func:`~reident_airflow.sources.spark_session.spark_session` block the source was opened
    in, ended by :meth:`close` (a Spark Connect session is then stopped); without it the
    session is the caller's and :meth:`close` leaves it open. ``tables``: whether the
    sources beside it (:meth:`sibling`) are tables of the catalog (``True``) or Parquet
    paths (``False``); ``None``: as each name looks (a path holds ``/`` or ends with
    ``.parquet``). Only aggregates reach the
    driver (the QI ranking's bounded class table aside, see the module), so the options
    needing one row per class (SUDA2, a register) are refused, as is :meth:`class_table`.
    """

    def __init__(
        self,
        frame: Any,
        *,
        label: str = "Spark DataFrame",
        path: str | None = None,
        session: AbstractContextManager[Any] | None = None,
        tables: bool | None = None,
    ):
        self._frame = frame
        self.label = label
        self.path = path
        self.session = session
        self.tables = tables
        self._jobs: SparkJobs | None = None

    @property
    def frame(self) -> Any:
        """The DataFrame. The first reading of it tags the Spark jobs its thread starts from
        then on until :meth:`close`, so that :meth:`cancel` stops them (a refusal touches
        nothing of the frame)."""
        if self._jobs is None:
            self._jobs = SparkJobs(_session_of(self._frame)).__enter__()
        return self._frame

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """End the session block the source was opened in, if it was given one."""
        if self._jobs is not None:
            self._jobs.__exit__(None, None, None)
        session, self.session = self.session, None
        if session is not None:
            session.__exit__(None, None, None)

    def cancel(self) -> None:
        """Interrupt the Spark jobs the thread that opened the source started since, from any
        thread (:class:`~reident_airflow.sources.cancel.SparkJobs`)."""
        if self._jobs is not None:
            self._jobs.cancel()

    def count(self, options: AssessmentOptions) -> Distributions:
        """What Spark counts for an assessment under ``options``
        (:func:`aggregates_from_spark`); SUDA2 and a register are refused."""
        refuse_per_class(options)
        return aggregates_from_spark(
            self.frame,
            options.quasi_identifiers,
            weight=options.weight,
            sensitive=options.sensitive,
            rank_attributes=options.rank_attributes,
            max_subset_size=options.max_subset_size,
        )

    def class_table(self, qis: Sequence[str]) -> ClassTable:
        """Refused: a class table is one row per class, and only aggregates reach the driver."""
        raise InvalidInputError(
            f"{self.label}: a class table has one row per class; it is not read on Spark "
            "(only aggregates reach the driver)"
        )

    def release_rows(
        self, qis: Sequence[str], columns: Sequence[str] | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Refused: Spark runs Datafly where the data is
        (:func:`~reident_airflow.sources.spark_release_datafly.datafly_spark`), and its rows
        never reach the driver."""
        raise InvalidInputError(
            f"{self.label}: Datafly on Spark runs where the data is (in Spark's executors); "
            "its rows are not read on the driver"
        )

    def comparison_rows(self) -> pd.DataFrame:
        """Refused: Spark counts direct match where the data is
        (:func:`~reident_airflow.sources.spark_release.direct_match_spark`), and its rows
        never reach the driver."""
        raise InvalidInputError(
            f"{self.label}: direct match on Spark is counted where the data is (in Spark's "
            "executors); its rows are not read on the driver"
        )

    def column_kinds(self) -> dict[str, str]:
        """Each column's kind (:data:`~reident_airflow.engine.identifiers.COLUMN_KINDS`), from
        the DataFrame's schema (nothing is computed)."""
        return column_kinds(self.frame, self.label)

    def profile(
        self, plans: Sequence[ColumnPlan], *, approximate: bool = False
    ) -> tuple[ColumnProfile, ...]:
        """What each plan asks of its column, counted by Spark in one job
        (:func:`~reident_airflow.sources.spark_grouping.column_profiles`); with
        ``approximate``, the distinct values are estimated (``approx_count_distinct``, no
        singletons) and the profile says so."""
        return column_profiles(
            open_spark_frame(self.frame, self.label), plans, approximate=approximate
        )

    def sibling(self, name: str) -> SparkSource | None:
        """The table or Parquet ``name`` read by the same session: a table of its catalog
        when this source's siblings are tables (``tables``), else the Parquet at the path
        ``name``; ``None`` when it does not exist
        (:class:`~reident_airflow.sources.HasSiblings`). Nothing is read but the schema."""
        from pathlib import Path

        table = self.tables
        if table is None:  # by the name's shape: a path names a folder or a Parquet file
            table = "/" not in name and not name.lower().endswith(".parquet")
        session = _session_of(self.frame)
        label = f"table {name!r}" if table else name
        with spark_errors(label):
            if table:
                if not session.catalog.tableExists(name):
                    return None
                return SparkSource(session.read.table(name), label=label)
            if "://" not in name and not Path(name).exists():
                return None
            try:
                frame = session.read.parquet(name)
            except Exception as exc:
                if "PATH_NOT_FOUND" in str(exc) or "Path does not exist" in str(exc):
                    return None
                raise
            return SparkSource(frame, label=label, path=name)

    def release_changes(
        self, previous: Source, qis: Sequence[str], columns: Sequence[str] | None = None
    ) -> ReleaseChanges:
        """The arrivals and departures of this release (the candidate) against ``previous``,
        a DataFrame of the same Spark session, grouped on ``qis`` and counted by Spark in
        one job over both
        (:func:`~reident_airflow.sources.spark_grouping.change_rows`): only one row per
        distinct ``(a(c), d(c))`` pair reaches the driver. Compared on ``columns``, by
        default every column both hold. A previous release of another backend, or of
        another session, is refused."""
        from reident_airflow.sources.release_changes import (
            changes_from_counts,
            check_kinds,
            compared_columns,
            other_backend,
        )

        if not isinstance(previous, SparkSource):
            raise other_backend(self.label, previous, "Spark")
        new = open_spark_frame(self.frame, self.label)
        old = open_spark_frame(previous.frame, previous.label)
        if _session_of(self.frame) is not _session_of(previous.frame):
            raise InvalidInputError(
                f"{self.label}: the previous release is a DataFrame of another Spark session: "
                "releases are compared where the data is, in one session"
            )
        labels = (new.label, old.label)
        compared = compared_columns(new.names, old.names, qis, columns, labels=labels)
        new.positions(compared.names, kind="compared column")  # collated text refused
        old.positions([old.names[j] for j in compared.previous], kind="compared column")
        check_kinds(compared, spark_kinds(new), spark_kinds(old), labels=labels)
        with spark_errors(self.label):
            rows = change_rows(new, old, compared.candidate, compared.previous, compared.qis)
        return changes_from_counts(compared.qi_names, rows, compared)

    def fingerprint(self, rows: int | None = None) -> InputFingerprint | None:
        """A local Parquet file's or folder's fingerprint (``rows``: the records read);
        ``None`` for a table, a glob or a remote URI (no one local file to hash)."""
        from pathlib import Path

        if self.path is None or "://" in self.path or not Path(self.path).exists():
            return None
        from reident_airflow.sources.fingerprint import fingerprint_file

        return fingerprint_file(self.path, rows=rows)

    def advise(
        self,
        result: Assessment,
        hierarchies: Mapping[str, Hierarchy],
        *,
        suppression_limit: int | float | None = None,
    ) -> tuple[BreachAdvice, tuple[str, ...]]:
        """The advice on a breach of ``min_k``, from Spark's aggregates only, never rows on
        the driver: the classes and records below k from the assessment's class-size
        histogram, the QI driving the risk from its ranking (none without one), and Datafly's
        outlook at k, at ``suppression_limit`` (``None``: k records), from Datafly run on
        histograms Spark counts (nothing is written); and the QIs lacking a hierarchy (then
        no outlook)."""
        from reident_airflow.engine.advice import breach_advice

        limit = cast(int, result.thresholds.min_k)
        pairs = result.class_size_histogram  # the histogram Spark counted for the assessment
        table = ClassSizes(
            result.quasi_identifiers,
            np.array([size for size, _ in pairs], dtype=np.int64),
            np.array([count for _, count in pairs], dtype=np.int64),
            excluded_records=result.excluded_records,
        )
        with spark_errors(self.label):
            outlook, missing = self._outlook(result, hierarchies, suppression_limit)
        ranking = result.attributes or None
        return breach_advice(table, limit, ranking=ranking, datafly=outlook), missing

    def _outlook(
        self,
        result: Assessment,
        hierarchies: Mapping[str, Hierarchy],
        suppression_limit: int | float | None,
    ) -> tuple[Any, tuple[str, ...]]:
        """Datafly's outlook at k, run on histograms Spark counts, and the QIs lacking a
        hierarchy (then no outlook)."""
        from reident_airflow.engine.advice import datafly_outlook
        from reident_airflow.engine.errors import AnonymizationInfeasibleError, HierarchyError
        from reident_airflow.sources.advice import hierarchies_for
        from reident_airflow.sources.spark_release_datafly import datafly_spark

        k = cast(int, result.thresholds.min_k)
        found, missing = hierarchies_for(result.quasi_identifiers, hierarchies)
        if missing:
            return None, missing
        try:
            outcome: Any = datafly_spark(
                self.frame, result.quasi_identifiers, found, k, suppression_limit
            )
        except AnonymizationInfeasibleError as exc:
            outcome = exc
        except HierarchyError:
            return None, tuple(q for q in result.quasi_identifiers if q not in hierarchies)
        # the trade-off's first row: the records in classes below k before any step, from the
        # histogram Spark counted for the assessment. What Datafly would suppress at level 0
        # but for the records whose QIs are all '*', which the assessment leaves out and
        # Datafly groups as a class (sources/advice.py, where a second run counts them)
        below = sum(size * count for size, count in result.class_size_histogram if size < k)
        # SparkDataflyResult carries the fields of DataflyResult the outlook reads
        return datafly_outlook(k, outcome, hierarchies=found, below_at_start=below), ()
