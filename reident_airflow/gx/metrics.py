"""Great Expectations metrics: count where the data is, compute nothing else.

Seven table metrics. Each returns one type whatever the execution engine (pandas, SQLAlchemy,
Spark), as GE's own metrics do; a metric whose type needs one row per class is not offered on
Spark. A DataFrame batch is
read by the embedded engine (DuckDB, :mod:`reident_airflow.sources.files`) under the reading
contract of ``docs/reading.md``, exactly as ``reident assess`` reads a file; a SQLAlchemy batch
is grouped by its database. A metric's value is the engine's own object, handed to the
expectation in memory (GE 1.x keeps metric values in a dictionary and passes them to the
expectation as they are: nothing is serialised). It holds integer codes and counts only: the
codes' dictionaries (the QI values) are dropped before the metric returns, so GE's metric cache
holds no value of any record.

``reident.class_size_histogram`` (value key ``quasi_identifiers``)
    The class-size histogram of the batch on its quasi-identifiers, a
    :class:`~reident_airflow.engine.classes.ClassSizes`: how many classes have each size, and
    nothing per class. Every verdict of the risk and k-anonymity expectations needs no more.
    pandas: one DuckDB statement returns one row per distinct class size. SQLAlchemy: for now
    the class table below, reduced to its histogram. Spark: one row per distinct class size
    collected.

``reident.class_distributions`` (value keys ``quasi_identifiers``, ``sensitive_columns``,
``rank_attributes``, ``max_subset_size``)
    What every assessing expectation reads when it needs more than the histogram, a
    :class:`~reident_airflow.engine.distributions.Distributions`: the histogram, the ranked QI
    subsets' histograms (unless ``rank_attributes`` is false; ``max_subset_size`` sizes the
    ranking as ``reident assess`` does) and, for each of ``sensitive_columns`` (optional), the
    distinct profiles of per-class value counts. pandas and SQLAlchemy: the class table (with
    its value counts) below, summarised by the engine
    (:func:`~reident_airflow.engine.distributions.distributions_of`); Spark: counted by Spark
    (:func:`~reident_airflow.sources.spark.aggregates_from_spark`), no row per class reaching
    the driver. The engine assesses them with the same arithmetic either way.

``reident.class_table`` (value key ``quasi_identifiers``; pandas and SQLAlchemy)
    The equivalence classes of the batch (``docs/metrics.md`` §1), a
    :class:`~reident_airflow.engine.classes.ClassTable` (``sizes``, ``codes``,
    ``cardinalities``: numpy arrays). pandas: DuckDB groups the DataFrame; SQLAlchemy: one
    ``GROUP BY`` in the database, one row per class fetched, never a record.

``reident.sensitive_value_counts`` (value keys ``quasi_identifiers``, ``sensitive_columns``;
pandas and SQLAlchemy)
    The class table as above, plus, for each sensitive column, how many records of each class
    hold each of its values: a :class:`~reident_airflow.engine.aggregates.ClassAggregates`
    (one ``GROUP BY qis, column`` per column in the database). Only the counts are returned,
    never a value.

``reident.identifier_scan`` (value keys ``quasi_identifiers``, ``allow_columns``,
``safe_harbor``, ``extra_names``, ``phone_regions``, ``sample_size``, ``approximate``)
    The identifier scan of every column of the batch, an
    :class:`~reident_airflow.engine.identifiers.IdentifierScan` (``docs/identifier-scan.md``):
    the batch's source (a :class:`~reident_airflow.sources.frames.FrameSource` of the
    DataFrame, the SQLAlchemy batch itself, a :class:`~reident_airflow.sources.spark.SparkSource`
    of the Spark DataFrame) counts each column's profile where the data is
    (:func:`~reident_airflow.engine.identifiers.scan_columns`), and the engine gives the
    verdicts. Counts and shares only: the sampled values checked in Python stay in the
    profiles, which the metric does not return.

``reident.direct_match_counts`` (value keys ``original_table``, ``original_schema``, ``key``,
``columns``, ``sep``)
    For each column, the number of rows whose released value equals the original one and the
    number of distinct released values (``m_c``, ``u_c`` of ``docs/metrics.md`` §8), as a
    small dict.
    pandas reads the original table from a CSV or Parquet path and counts with the engine;
    SQLAlchemy joins the batch to the original table of the same database on ``key`` and counts
    in SQL; Spark joins it to a Parquet/CSV path or a catalog table, counting in Spark.

``reident.release_changes`` (value keys ``quasi_identifiers``, ``previous_release``,
``previous_schema``, ``columns``, ``sep``)
    The batch (the candidate release) compared with the release it replaces
    (``docs/metrics.md`` §12), a
    :class:`~reident_airflow.engine.differencing.ReleaseChanges`: the class-size histograms
    of the arrivals and of the departures on the QIs, and the two record counts. pandas: the
    previous release is a CSV (``sep``) or Parquet path, read with the DataFrame by one
    DuckDB; SQLAlchemy: a table of the batch's database (``previous_schema`` optional),
    compared in one statement there; Spark: a table of the session's catalog, or a Parquet
    path (a name holding ``/`` or ending in ``.parquet``), compared by Spark. Each backend's
    :meth:`~reident_airflow.sources.Source.release_changes` counts it; only one row per
    distinct ``(a(c), d(c))`` pair comes back.

GE calls a metric through one method per execution engine, with a fixed signature; here each
such method is made by :func:`_on_pandas`, :func:`_on_sql` or :func:`_on_spark` around a
function that only counts, so the plumbing (the batch, the column types, the error report) is
written once. A Spark batch (``context.data_sources.add_spark(...)``, a classic session or a
Spark Connect one) is counted by the Spark backend (:mod:`reident_airflow.sources.spark`):
grouped in Spark's executors, only aggregates reach the driver (the QI ranking's class table
aside, up to a bound: docs/spark.md), and no value ever reaches a result; PySpark is imported
only when a Spark batch is counted.

A problem the data reveals (an unknown column, an empty table, a DataFrame column holding values
of different kinds) is returned as a :class:`MetricError` carrying the engine's message (names
and counts only): the expectation turns it into a failed result, and GE does not retry.

The expectations (:mod:`reident_airflow.gx.expectations`) turn these counts into risk with the
engine (:func:`~reident_airflow.engine.assessment.assess`, which takes what any engine
counted,
:func:`~reident_airflow.engine.direct_match.direct_match_from_counts`), so every execution
engine gives the same numbers, bit for bit, as ``reident assess`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine.execution_engine import ExecutionEngine
from great_expectations.execution_engine.pandas_execution_engine import PandasExecutionEngine
from great_expectations.execution_engine.sparkdf_execution_engine import SparkDFExecutionEngine
from great_expectations.execution_engine.sqlalchemy_execution_engine import (
    SqlAlchemyExecutionEngine,
)
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
from great_expectations.validator.metric_configuration import MetricConfiguration

from reident_airflow.engine import (
    ClassAggregates,
    ClassSizes,
    ClassTable,
    DirectMatchResult,
    Distributions,
    EmptyDatasetError,
    InvalidInputError,
    aggregate_grouped,
    check_extra_columns,
    class_table_from_grouped,
    direct_match_protection,
    distributions_of,
    validate_quasi_identifiers,
)
from reident_airflow.engine.differencing import ReleaseChanges
from reident_airflow.engine.identifiers import (
    ColumnPlan,
    ColumnProfile,
    IdentifierScan,
    ScanOptions,
    scan_columns,
)
from reident_airflow.gx.parameters import metric_quasi_identifiers as _qis
from reident_airflow.gx.parameters import metric_sensitive_columns as _sensitive
from reident_airflow.sources import Source, previous_release
from reident_airflow.sources.column_profile import check_plans
from reident_airflow.sources.direct_match_sql import direct_match_counts_sql
from reident_airflow.sources.files import file_columns, read_columns, resolve_columns
from reident_airflow.sources.frames import (
    FrameSource,
    aggregates_from_frame,
    class_table_from_frame,
    histogram_from_frame,
)
from reident_airflow.sources.spark import SparkSource, aggregates_from_spark
from reident_airflow.sources.spark_release import direct_match_spark
from reident_airflow.sources.sql import (
    COUNT_LABEL,
    grouped_counts,
    grouped_histogram,
    grouped_value_counts,
    reflect_table,
    release_changes_sql,
)
from reident_airflow.sources.sql_profile import column_kinds, profile_columns

__all__ = [
    "CLASS_DISTRIBUTIONS_METRIC",
    "CLASS_TABLE_METRIC",
    "DIRECT_MATCH_METRIC",
    "HISTOGRAM_METRIC",
    "IDENTIFIER_SCAN_METRIC",
    "RELEASE_CHANGES_METRIC",
    "SCAN_KEYS",
    "SENSITIVE_COUNTS_METRIC",
    "ClassDistributionsMetric",
    "ClassSizeHistogramMetric",
    "ClassTableMetric",
    "DirectMatchCountsMetric",
    "IdentifierScanMetric",
    "MetricError",
    "ReleaseChangesMetric",
    "SensitiveValueCountsMetric",
    "SqlBatch",
    "codes_only",
    "scan_options",
]

CLASS_TABLE_METRIC = "reident.class_table"
CLASS_DISTRIBUTIONS_METRIC = "reident.class_distributions"
HISTOGRAM_METRIC = "reident.class_size_histogram"
DIRECT_MATCH_METRIC = "reident.direct_match_counts"
SENSITIVE_COUNTS_METRIC = "reident.sensitive_value_counts"
IDENTIFIER_SCAN_METRIC = "reident.identifier_scan"
RELEASE_CHANGES_METRIC = "reident.release_changes"

#: The options of the identifier scan a metric (and its expectation) takes, as
#: :class:`~reident_airflow.engine.identifiers.ScanOptions` names them.
SCAN_KEYS = (
    "quasi_identifiers",
    "allow_columns",
    "safe_harbor",
    "extra_names",
    "phone_regions",
    "sample_size",
    "approximate",
)

_COLUMN_TYPES = "table.column_types"
_FILE_SUFFIXES = (".csv", ".tsv", ".txt")  # an original Spark reads as CSV


# ------------------------------------------------------------------------------ metric values
@dataclasses.dataclass(frozen=True)
class MetricError:
    """An input error met while computing a metric: the engine's message, names and counts only.

    An unknown column or an empty table is a fact about the data, not a failure to compute:
    the expectation turns it into a failed result with this message, and GE does not retry
    the metric.
    """

    message: str


def codes_only(table: ClassTable) -> ClassTable:
    """The class table without its dictionaries: codes and sizes, no value of any record.

    The arrays are shared, not copied. ``codes[j, i]`` is the code of class j's value of QI i
    (``0 <= code < cardinalities[i]``) and ``sizes[j]`` its number of records; records whose
    QIs are all ``*`` are counted in ``excluded_records`` (ARX behaviour).
    """
    if table.dictionaries is None:
        return table
    return dataclasses.replace(table, dictionaries=None)


def _aggregates_codes_only(aggregates: ClassAggregates) -> ClassAggregates:
    """Class aggregates whose class table holds no value (see :func:`codes_only`)."""
    return dataclasses.replace(aggregates, table=codes_only(aggregates.table))


# --------------------------------------------------------------------------- the two engines
@dataclasses.dataclass(frozen=True)
class SqlBatch:
    """A batch on a SQLAlchemy engine, with its column types as GE's metric reports them."""

    execution_engine: SqlAlchemyExecutionEngine
    domain: dict[str, Any]
    types: Mapping[str, Any]

    @classmethod
    def of(
        cls,
        execution_engine: SqlAlchemyExecutionEngine,
        domain: dict[str, Any],
        metrics: Mapping[str, Any],
    ) -> SqlBatch:
        """The batch of a metric call; ``metrics`` holds GE's ``table.column_types``."""
        types: dict[str, Any] = {}
        for item in metrics.get(_COLUMN_TYPES) or []:
            sql_type = item.get("type")
            types[str(item["name"])] = (
                sql_type if isinstance(sql_type, sa.types.TypeEngine) else None
            )
        return cls(execution_engine, domain, types)

    @property
    def columns(self) -> list[str]:
        """The batch's column names."""
        return list(self.types)

    def select(self, columns: Sequence[str]) -> sa.Subquery:
        """The batch (table, query or filtered table) as a subquery of ``columns``."""
        selectable, _, _ = self.execution_engine.get_compute_domain(
            self.domain, domain_type=MetricDomainTypes.TABLE
        )
        if isinstance(selectable, sa.Select):
            selectable = selectable.subquery()
        cols = [sa.column(c, self.types.get(c)) for c in columns]
        return sa.select(*cols).select_from(selectable).subquery("reident_batch")

    def connect(self) -> Any:
        """A connection of the execution engine (a context manager)."""
        return self.execution_engine.get_connection()

    # the identifier scan's ColumnCounter: the batch counted by its database
    def column_kinds(self) -> dict[str, str]:
        """Each column's kind (:func:`~reident_airflow.sources.sql_profile.column_kinds`)."""
        with self.connect() as conn:
            return column_kinds(conn, self.select(self.columns))

    def profile(
        self, plans: Sequence[ColumnPlan], *, approximate: bool = False
    ) -> tuple[ColumnProfile, ...]:
        """What each plan asks, counted by the database
        (:func:`~reident_airflow.sources.sql_profile.profile_columns`); counts are exact."""
        check_plans(plans, approximate=approximate, exact_only="the batch")
        with self.connect() as conn:
            return profile_columns(conn, self.select(self.columns), plans, label="the batch")


def _implementation(
    engine: type[ExecutionEngine[Any]],
    batch_of: Callable[[Any, dict[str, Any], Mapping[str, Any]], Any],
    count: Callable[[Any, Mapping[str, Any]], Any],
) -> Any:
    """One engine's implementation of a metric, in the signature GE calls it with.

    ``batch_of(execution_engine, domain, metrics)`` is the batch as ``count`` reads it; an
    input error ``count`` raises is returned as a :class:`MetricError` (GE would retry a raise).
    """

    def implementation(
        cls: Any,
        execution_engine: Any,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> Any:
        try:
            batch = batch_of(execution_engine, metric_domain_kwargs, metrics)
            return count(batch, metric_value_kwargs)
        except InvalidInputError as exc:
            return MetricError(str(exc))

    return metric_value(engine=engine)(implementation)


def _pandas_frame(
    execution_engine: PandasExecutionEngine, domain: dict[str, Any], metrics: Mapping[str, Any]
) -> pd.DataFrame:
    """The batch as a DataFrame."""
    frame: pd.DataFrame
    frame, _, _ = execution_engine.get_compute_domain(domain, domain_type=MetricDomainTypes.TABLE)
    return frame


def _on_pandas(count: Callable[[pd.DataFrame, Mapping[str, Any]], Any]) -> Any:
    """The pandas implementation of a metric: ``count(batch frame, value keys)``."""
    return _implementation(PandasExecutionEngine, _pandas_frame, count)


def _on_sql(count: Callable[[SqlBatch, Mapping[str, Any]], Any]) -> Any:
    """The SQLAlchemy implementation of a metric: ``count(batch, value keys)``."""
    return _implementation(SqlAlchemyExecutionEngine, SqlBatch.of, count)


def _spark_frame(execution_engine: Any, domain: dict[str, Any], metrics: Mapping[str, Any]) -> Any:
    """The batch of a ``SparkDFExecutionEngine`` as a Spark DataFrame (GX's row condition, if
    any, applied by GX)."""
    frame, _, _ = execution_engine.get_compute_domain(domain, domain_type=MetricDomainTypes.TABLE)
    return frame


def _on_spark(count: Callable[[Any, Mapping[str, Any]], Any]) -> Any:
    """The Spark implementation of a metric: ``count(batch Spark DataFrame, value keys)``."""
    return _implementation(SparkDFExecutionEngine, _spark_frame, count)


class _ReidentTableMetric(TableMetricProvider):
    """A table metric that, on SQLAlchemy, also depends on ``table.column_types``.

    No ``metric_name``: GE registers nothing for this base, only for its subclasses.
    """

    @classmethod
    def _get_evaluation_dependencies(
        cls,
        metric: MetricConfiguration,
        configuration: Any = None,
        execution_engine: ExecutionEngine[Any] | None = None,
        runtime_configuration: dict[str, Any] | None = None,
    ) -> dict[str, MetricConfiguration]:
        dependencies: dict[str, MetricConfiguration] = super()._get_evaluation_dependencies(
            metric=metric,
            configuration=configuration,
            execution_engine=execution_engine,
            runtime_configuration=runtime_configuration,
        )
        if isinstance(execution_engine, SqlAlchemyExecutionEngine):
            table_domain = {k: v for k, v in metric.metric_domain_kwargs.items() if k != "column"}
            dependencies[_COLUMN_TYPES] = MetricConfiguration(
                metric_name=_COLUMN_TYPES,
                metric_domain_kwargs=table_domain,
                metric_value_kwargs={"include_nested": True},
            )
        return dependencies


def _read_columns(
    frame: pd.DataFrame, qis: Sequence[str], sensitive: Sequence[str] = ()
) -> pd.DataFrame:
    """The columns of the batch a metric reads, for the DuckDB reader.

    The reader converts every column it is handed (an object column value by value), so the
    others are left out: a wide DataFrame costs what its QIs cost, and a column the metric does
    not read cannot fail it. Names are resolved as the reader resolves them (exact name first,
    then without surrounding spaces; its messages list every column of the batch); the reader
    then finds the same columns among these.
    """
    names = [str(c) for c in frame.columns]
    positions = list(resolve_columns(qis, names))
    for name in sensitive:
        (position,) = resolve_columns([name], names, kind="sensitive column")
        if position not in positions:  # a sensitive QI: the reader reports it
            positions.append(position)
    if positions == list(range(len(names))):
        return frame
    return frame.iloc[:, positions]


def _sql_class_counts(
    batch: SqlBatch, qis: Sequence[str], sensitive: Sequence[str] = ()
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """One ``GROUP BY qis`` (and one ``GROUP BY qis, column`` per sensitive column) in SQL.

    The QIs and sensitive columns are checked against the batch's columns first; an empty
    batch is an :class:`EmptyDatasetError`.
    """
    validate_quasi_identifiers(qis, batch.columns)
    if sensitive:
        _, sensitive = check_extra_columns(qis, batch.columns, sensitive=sensitive)
    source = batch.select([*qis, *sensitive])
    with batch.connect() as conn:
        grouped = grouped_counts(conn, source, qis)
        value_counts = {c: grouped_value_counts(conn, source, qis, c) for c in sensitive}
    if grouped.empty:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    return grouped, value_counts


# ---------------------------------------------------------------- class table and aggregates
def _frame_table(frame: pd.DataFrame, qis: Sequence[str]) -> ClassTable:
    """The class table of a DataFrame batch, grouped by DuckDB."""
    return class_table_from_frame(_read_columns(frame, qis), qis)


def _frame_aggregates(
    frame: pd.DataFrame, qis: Sequence[str], columns: Sequence[str]
) -> ClassAggregates:
    """The class table of a DataFrame batch with the value counts of ``columns``."""
    return aggregates_from_frame(_read_columns(frame, qis, columns), qis, sensitive=columns)


def _sql_table(batch: SqlBatch, qis: Sequence[str]) -> ClassTable:
    """The class table of a SQLAlchemy batch: one ``GROUP BY`` in the database."""
    grouped, _ = _sql_class_counts(batch, qis)
    return class_table_from_grouped(grouped, qis, COUNT_LABEL)


def _sql_aggregates(batch: SqlBatch, qis: Sequence[str], columns: Sequence[str]) -> ClassAggregates:
    """The class table of a SQLAlchemy batch with the value counts of ``columns``."""
    counts, value_counts = _sql_class_counts(batch, qis, sensitive=columns)
    return aggregate_grouped(counts, qis, COUNT_LABEL, value_counts=value_counts)


def _class_table_pandas(frame: pd.DataFrame, kwargs: Mapping[str, Any]) -> ClassTable:
    return codes_only(_frame_table(frame, _qis(kwargs)))


def _class_table_sql(batch: SqlBatch, kwargs: Mapping[str, Any]) -> ClassTable:
    return codes_only(_sql_table(batch, _qis(kwargs)))


class ClassTableMetric(_ReidentTableMetric):
    """``reident.class_table``: the batch's equivalence classes on ``quasi_identifiers``.

    pandas and SQLAlchemy only: on Spark no row per class reaches the driver.
    """

    metric_name = CLASS_TABLE_METRIC
    value_keys = ("quasi_identifiers",)

    _pandas = _on_pandas(_class_table_pandas)
    _sqlalchemy = _on_sql(_class_table_sql)


# ------------------------------------------------------------------ class distributions metric
def _ranking(kwargs: Mapping[str, Any]) -> tuple[bool, int | None]:
    """Whether to rank the QI subsets (unless ``rank_attributes`` is false) and up to which
    size (``max_subset_size``, as ``reident assess`` sizes the ranking)."""
    rank = kwargs.get("rank_attributes") is not False
    size = kwargs.get("max_subset_size")
    return rank, None if size is None or not rank else int(size)


def _sensitive_if_any(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``sensitive_columns`` value key when given, else none."""
    return () if kwargs.get("sensitive_columns") is None else _sensitive(kwargs)


def _distributions_of(
    table_of: Callable[[Sequence[str]], ClassTable],
    aggregates_of: Callable[[Sequence[str], Sequence[str]], ClassAggregates],
    kwargs: Mapping[str, Any],
) -> Distributions:
    """The distributions of a class table counted where the data is (``table_of``), or of the
    class aggregates with the sensitive value counts when sensitive columns are asked for."""
    qis, columns = _qis(kwargs), _sensitive_if_any(kwargs)
    rank, size = _ranking(kwargs)
    if not columns:
        return distributions_of(table_of(qis), rank_attributes=rank, max_subset_size=size)
    aggregates = aggregates_of(qis, columns)
    return distributions_of(
        aggregates.table,
        sensitive=aggregates.sensitive,
        rank_attributes=rank,
        max_subset_size=size,
    )


def _distributions_pandas(frame: pd.DataFrame, kwargs: Mapping[str, Any]) -> Distributions:
    return _distributions_of(
        lambda qis: _frame_table(frame, qis),
        lambda qis, columns: _frame_aggregates(frame, qis, columns),
        kwargs,
    )


def _distributions_sql(batch: SqlBatch, kwargs: Mapping[str, Any]) -> Distributions:
    return _distributions_of(
        lambda qis: _sql_table(batch, qis),
        lambda qis, columns: _sql_aggregates(batch, qis, columns),
        kwargs,
    )


def _distributions_spark(frame: Any, kwargs: Mapping[str, Any]) -> Distributions:
    """Counted by Spark: one row per distinct class size (per ranked subset) and per distinct
    profile of sensitive value counts reaches the driver."""
    rank, size = _ranking(kwargs)
    return aggregates_from_spark(
        frame,
        _qis(kwargs),
        sensitive=_sensitive_if_any(kwargs),
        rank_attributes=rank,
        max_subset_size=size,
    )


class ClassDistributionsMetric(_ReidentTableMetric):
    """``reident.class_distributions``: the batch's class-size histogram, its ranked QI
    subsets' histograms and its sensitive columns' value-count profiles, on every engine."""

    metric_name = CLASS_DISTRIBUTIONS_METRIC
    value_keys = ("quasi_identifiers", "sensitive_columns", "rank_attributes", "max_subset_size")

    _pandas = _on_pandas(_distributions_pandas)
    _sqlalchemy = _on_sql(_distributions_sql)
    _spark = _on_spark(_distributions_spark)


# ---------------------------------------------------------------------- class size histogram
def _histogram_pandas(frame: pd.DataFrame, kwargs: Mapping[str, Any]) -> ClassSizes:
    qis = _qis(kwargs)
    return histogram_from_frame(_read_columns(frame, qis), qis)


def _histogram_sql(batch: SqlBatch, kwargs: Mapping[str, Any]) -> ClassSizes:
    qis = _qis(kwargs)
    validate_quasi_identifiers(qis, batch.columns)
    source = batch.select(qis)
    with batch.connect() as conn:
        return grouped_histogram(conn, source, qis, what="the batch")


def _histogram_spark(frame: Any, kwargs: Mapping[str, Any]) -> ClassSizes:
    """One row per distinct class size collected."""
    return aggregates_from_spark(frame, _qis(kwargs)).histogram


class ClassSizeHistogramMetric(_ReidentTableMetric):
    """``reident.class_size_histogram``: how many classes of each size, on ``quasi_identifiers``.

    pandas: DuckDB counts the histogram itself; SQLAlchemy: the database does, in one
    statement. Either way one row per distinct class size is fetched, none per class.
    """

    metric_name = HISTOGRAM_METRIC
    value_keys = ("quasi_identifiers",)

    _pandas = _on_pandas(_histogram_pandas)
    _sqlalchemy = _on_sql(_histogram_sql)
    _spark = _on_spark(_histogram_spark)


# ------------------------------------------------------------------------ direct match metric
def _read_original(path: str, sep: str) -> pd.DataFrame:
    """The original table from a CSV (values as text, empty = missing) or Parquet file."""
    p = Path(path)
    columns = file_columns(p, sep=sep)
    frame: pd.DataFrame = read_columns(p, columns, sep=sep, dictionary=False).to_pandas()
    return frame


def _original_table(kwargs: Mapping[str, Any]) -> str:
    name = kwargs.get("original_table")
    if not name:
        raise InvalidInputError("original_table is required")
    return str(name)


def _counts_payload(counted: Any, key: str | None) -> dict[str, Any]:
    """The metric's value: records, ``[column, m_c, u_c]`` rows and the unmatched columns."""
    return {
        "records": int(counted.records),
        "counts": [[str(c), int(m), int(u)] for c, (m, u) in counted.counts.items()],
        "key": key,
        "only_in_original": [str(c) for c in counted.only_in_original],
        "only_in_avatar": [str(c) for c in counted.only_in_avatar],
    }


@dataclasses.dataclass(frozen=True)
class _FrameCounts:
    """The counts of a direct match computed on DataFrames, shaped as the SQL counts are."""

    records: int
    counts: dict[str, tuple[int, int]]
    only_in_original: Sequence[str]
    only_in_avatar: Sequence[str]


def _result_payload(result: Any, original: Sequence[str], key: Any) -> dict[str, Any]:
    """The payload of an engine's (or Spark's) result: counts in the original's column order."""
    order = {c.column: c for c in result.columns}
    scored = [str(c) for c in original if str(c) in order]
    counts = {c: (order[c].matches, order[c].distinct_avatar_values) for c in scored}
    return _counts_payload(
        _FrameCounts(result.records, counts, result.only_in_original, result.only_in_avatar), key
    )


def _direct_match_pandas(avatar: pd.DataFrame, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    original = _read_original(_original_table(kwargs), str(kwargs.get("sep") or ","))
    key = kwargs.get("key")
    columns = kwargs.get("columns")
    result = direct_match_protection(original, avatar, key=key, target=0.0, columns=columns)
    return _result_payload(result, [str(c) for c in original.columns], key)


def _original_frame(frame: Any, kwargs: Mapping[str, Any]) -> Any:
    """The original table, read by the batch's Spark session: a Parquet file, a CSV file
    (header, values as text, empty = missing, ``sep``) or a table of the catalog
    (``original_schema.original_table``)."""
    name = _original_table(kwargs)
    spark = frame.sparkSession
    if name.lower().endswith(".parquet"):
        return spark.read.parquet(name)
    if name.lower().endswith(_FILE_SUFFIXES):
        sep = str(kwargs.get("sep") or ",")
        return spark.read.csv(name, header=True, sep=sep, inferSchema=False)
    schema = kwargs.get("original_schema")
    return spark.table(f"{schema}.{name}" if schema else name)


def _direct_match_spark(avatar: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The batch joined to its original on ``key`` by Spark
    (:func:`~reident_airflow.sources.spark_release.direct_match_spark`, counts only); the
    original's column order ranks the columns."""
    original = _original_frame(avatar, kwargs)
    key = kwargs.get("key")
    result: DirectMatchResult = direct_match_spark(
        original,
        avatar,
        key=None if key is None else str(key),
        target=0.0,
        columns=kwargs.get("columns"),
    )
    return _result_payload(result, [str(c) for c in original.columns], key)


def _direct_match_sql(batch: SqlBatch, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    name = _original_table(kwargs)
    key = kwargs.get("key")
    if not key:
        raise InvalidInputError(
            "a database table has no row order: give key=COLUMN, a column of both tables "
            "that identifies each record, to align the released rows with the original ones"
        )
    with batch.connect() as conn:
        original = reflect_table(conn, name, kwargs.get("original_schema"))
        counted = direct_match_counts_sql(
            conn, original, batch.select(batch.columns), key=str(key), columns=kwargs.get("columns")
        )
    return _counts_payload(counted, key)


class DirectMatchCountsMetric(_ReidentTableMetric):
    """``reident.direct_match_counts``: ``(m_c, u_c)`` of the batch against its original."""

    metric_name = DIRECT_MATCH_METRIC
    value_keys = ("original_table", "original_schema", "key", "columns", "sep")

    _pandas = _on_pandas(_direct_match_pandas)
    _sqlalchemy = _on_sql(_direct_match_sql)
    _spark = _on_spark(_direct_match_spark)


# --------------------------------------------------------------- sensitive value counts metric
def _sensitive_counts_pandas(frame: pd.DataFrame, kwargs: Mapping[str, Any]) -> ClassAggregates:
    aggregates = _frame_aggregates(frame, _qis(kwargs), _sensitive(kwargs))
    return _aggregates_codes_only(aggregates)


def _sensitive_counts_sql(batch: SqlBatch, kwargs: Mapping[str, Any]) -> ClassAggregates:
    aggregates = _sql_aggregates(batch, _qis(kwargs), _sensitive(kwargs))
    return _aggregates_codes_only(aggregates)


class SensitiveValueCountsMetric(_ReidentTableMetric):
    """``reident.sensitive_value_counts``: classes and per-class counts of sensitive values.

    pandas and SQLAlchemy only: on Spark no row per class reaches the driver.
    """

    metric_name = SENSITIVE_COUNTS_METRIC
    value_keys = ("quasi_identifiers", "sensitive_columns")

    _pandas = _on_pandas(_sensitive_counts_pandas)
    _sqlalchemy = _on_sql(_sensitive_counts_sql)


# ------------------------------------------------------------------------ identifier scan
def scan_options(kwargs: Mapping[str, Any]) -> ScanOptions:
    """The scan's options from a metric's value keys (:data:`SCAN_KEYS`; one missing or
    ``None`` keeps its default), under the ``"fail"`` policy: an expectation is a gate, and
    GX's own ``severity`` says whether its failure stops the release or warns."""
    given = {k: kwargs[k] for k in SCAN_KEYS if kwargs.get(k) is not None}
    return ScanOptions.from_mapping({**given, "policy": "fail"})


def _scan_pandas(frame: pd.DataFrame, kwargs: Mapping[str, Any]) -> IdentifierScan:
    """Counted by the embedded DuckDB on the DataFrame, as ``reident scan`` counts a file."""
    with FrameSource(frame, label="the batch") as source:
        return scan_columns(source, scan_options(kwargs))


def _scan_sql(batch: SqlBatch, kwargs: Mapping[str, Any]) -> IdentifierScan:
    """Counted by the database: one statement of counts (and one of sampled matches)."""
    return scan_columns(batch, scan_options(kwargs))


def _scan_spark(frame: Any, kwargs: Mapping[str, Any]) -> IdentifierScan:
    """Counted by Spark in one job; only counts (and the sampled matches) reach the driver."""
    return scan_columns(SparkSource(frame, label="the batch"), scan_options(kwargs))


class IdentifierScanMetric(_ReidentTableMetric):
    """``reident.identifier_scan``: every column of the batch scanned for what identifies a
    person on its own, on every engine (an
    :class:`~reident_airflow.engine.identifiers.IdentifierScan`)."""

    metric_name = IDENTIFIER_SCAN_METRIC
    value_keys = SCAN_KEYS

    _pandas = _on_pandas(_scan_pandas)
    _sqlalchemy = _on_sql(_scan_sql)
    _spark = _on_spark(_scan_spark)


# ---------------------------------------------------------------------- release comparison
def _previous_name(kwargs: Mapping[str, Any]) -> str:
    name = kwargs.get("previous_release")
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("previous_release must name the previous release")
    return name


def _compared(kwargs: Mapping[str, Any]) -> list[str] | None:
    columns = kwargs.get("columns")
    return None if columns is None else [str(c) for c in columns]


def _changes_pandas(frame: pd.DataFrame, kwargs: Mapping[str, Any]) -> ReleaseChanges:
    """The DataFrame and the previous release's file, compared by one DuckDB."""
    name = _previous_name(kwargs)
    new = FrameSource(frame, label="the batch", sep=str(kwargs.get("sep") or ","))
    return _changes(new, name, _previous_missing(name, "path"), kwargs)


def _changes_sql(batch: SqlBatch, kwargs: Mapping[str, Any]) -> ReleaseChanges:
    """The batch and a table of its database, compared there in one statement."""
    name = _previous_name(kwargs)
    schema = kwargs.get("previous_schema")
    with batch.connect() as conn:
        previous = reflect_table(conn, name, None if schema is None else str(schema))
        label = f"table {name!r}"
        return release_changes_sql(
            conn,
            batch.select(batch.columns),
            previous,
            _qis(kwargs),
            _compared(kwargs),
            labels=("the batch", label),
        )


def _changes_spark(frame: Any, kwargs: Mapping[str, Any]) -> ReleaseChanges:
    """The batch and a table of its session's catalog (or a Parquet path), compared by
    Spark in one job."""
    name = _previous_name(kwargs)
    path = "/" in name or name.lower().endswith(".parquet")
    schema = kwargs.get("previous_schema")
    if not path and schema:
        name = f"{schema}.{name}"
    new = SparkSource(frame, label="the batch", tables=not path)
    return _changes(new, name, _previous_missing(name, "path" if path else "table"), kwargs)


def _previous_missing(name: str, what: str) -> str:
    return f"the previous release ({what} {name!r}) does not exist"


def _changes(new: Source, name: str, missing: str, kwargs: Mapping[str, Any]) -> ReleaseChanges:
    """The batch's source ``new`` and the previous release ``name`` beside it
    (:func:`~reident_airflow.sources.previous_release`), compared where the data is; a
    previous release that does not exist is an input error (``missing``)."""
    previous = previous_release(new, name)
    if previous is None:
        raise InvalidInputError(missing)
    with new, previous:
        return new.release_changes(previous, _qis(kwargs), _compared(kwargs))


class ReleaseChangesMetric(_ReidentTableMetric):
    """``reident.release_changes``: the arrivals and departures of the batch against the
    release it replaces, grouped on ``quasi_identifiers``, on every engine (a
    :class:`~reident_airflow.engine.differencing.ReleaseChanges`: histograms only)."""

    metric_name = RELEASE_CHANGES_METRIC
    value_keys = ("quasi_identifiers", "previous_release", "previous_schema", "columns", "sep")

    _pandas = _on_pandas(_changes_pandas)
    _sqlalchemy = _on_sql(_changes_sql)
    _spark = _on_spark(_changes_spark)
