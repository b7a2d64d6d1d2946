"""Great Expectations metrics: count where the data is, compute nothing else.

Four table metrics, each with one implementation per execution engine. A DataFrame batch is
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
    the class table below, reduced to its histogram.

``reident.class_table`` (value key ``quasi_identifiers``)
    The equivalence classes of the batch (metrics.md §1), a
    :class:`~reident_airflow.engine.classes.ClassTable` (``sizes``, ``codes``,
    ``cardinalities``: numpy arrays), for the QI ranking. pandas: DuckDB groups the DataFrame;
    SQLAlchemy: one ``GROUP BY`` in the database, one row per class fetched, never a record.

``reident.sensitive_value_counts`` (value keys ``quasi_identifiers``, ``sensitive_columns``)
    The class table as above, plus, for each sensitive column, how many records of each class
    hold each of its values: a :class:`~reident_airflow.engine.aggregates.ClassAggregates`
    (one ``GROUP BY qis, column`` per column in the database). Only the counts are returned,
    never a value: l-diversity (metrics.md §7) needs nothing more.

``reident.direct_match_counts`` (value keys ``original_table``, ``original_schema``, ``key``,
``columns``, ``sep``)
    For each column, the number of rows whose released value equals the original one and the
    number of distinct released values (``m_c``, ``u_c`` of metrics.md §8), as a small dict.
    pandas reads the original table from a CSV or Parquet path and counts with the engine;
    SQLAlchemy joins the batch to the original table of the same database on ``key`` and counts
    in SQL.

A problem the data reveals (an unknown column, an empty table, a DataFrame column holding values
of different kinds) is returned as a :class:`MetricError` carrying the engine's message (names
and counts only): the expectation turns it into a failed result, and GE does not retry.

The expectations (:mod:`reident_airflow.gx.expectations`) turn these counts into risk with the
engine (:func:`~reident_airflow.engine.assessment.assess`,
:func:`~reident_airflow.engine.direct_match.direct_match_from_counts`), so every execution
engine gives the same numbers, bit for bit, as ``reident assess`` does.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import sqlalchemy as sa
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine.execution_engine import ExecutionEngine
from great_expectations.execution_engine.pandas_execution_engine import PandasExecutionEngine
from great_expectations.execution_engine.sqlalchemy_execution_engine import (
    SqlAlchemyExecutionEngine,
)
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
from great_expectations.validator.metric_configuration import MetricConfiguration

from reident_airflow.engine.aggregates import (
    ClassAggregates,
    aggregate_grouped,
    check_extra_columns,
)
from reident_airflow.engine.classes import (
    ClassSizes,
    ClassTable,
    class_table_from_grouped,
    validate_quasi_identifiers,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources.direct_match_sql import direct_match_counts_sql
from reident_airflow.sources.files import (
    aggregates_from_frame,
    class_table_from_frame,
    file_columns,
    histogram_from_frame,
    read_columns,
    resolve_columns,
)
from reident_airflow.sources.sql import (
    COUNT_LABEL,
    grouped_counts,
    grouped_histogram,
    grouped_value_counts,
    reflect_table,
)

__all__ = [
    "CLASS_TABLE_METRIC",
    "DIRECT_MATCH_METRIC",
    "HISTOGRAM_METRIC",
    "SENSITIVE_COUNTS_METRIC",
    "ClassSizeHistogramMetric",
    "ClassTableMetric",
    "DirectMatchCountsMetric",
    "MetricError",
    "SensitiveValueCountsMetric",
    "codes_only",
]

CLASS_TABLE_METRIC = "reident.class_table"
HISTOGRAM_METRIC = "reident.class_size_histogram"
DIRECT_MATCH_METRIC = "reident.direct_match_counts"
SENSITIVE_COUNTS_METRIC = "reident.sensitive_value_counts"

_COLUMN_TYPES = "table.column_types"

_T = TypeVar("_T")


# ------------------------------------------------------------------------------ metric values
@dataclasses.dataclass(frozen=True)
class MetricError:
    """An input error met while computing a metric: the engine's message, names and counts only.

    An unknown column or an empty table is a fact about the data, not a failure to compute:
    the expectation turns it into a failed result with this message, and GE does not retry
    the metric.
    """

    message: str


def _reported(fn: Callable[..., _T]) -> Callable[..., _T | MetricError]:
    """Return an input error as a :class:`MetricError` instead of raising it."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> _T | MetricError:
        try:
            return fn(*args, **kwargs)
        except InvalidInputError as exc:
            return MetricError(str(exc))

    return wrapper


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


def _qi_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError("quasi_identifiers must be a list of column names")
    return validate_quasi_identifiers([str(v) for v in value], [str(v) for v in value])


# ------------------------------------------------------------------------------- SQL helpers
def _column_types(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Column name -> SQLAlchemy type, from GE's ``table.column_types`` metric."""
    out: dict[str, Any] = {}
    for item in metrics.get(_COLUMN_TYPES) or []:
        name = str(item["name"])
        sql_type = item.get("type")
        out[name] = sql_type if isinstance(sql_type, sa.types.TypeEngine) else None
    return out


def _batch_source(
    execution_engine: SqlAlchemyExecutionEngine,
    metric_domain_kwargs: dict[str, Any],
    columns: Sequence[str],
    types: Mapping[str, Any],
    name: str,
) -> sa.Subquery:
    """The batch (table, query or filtered table) as a subquery whose columns are known."""
    selectable, _, _ = execution_engine.get_compute_domain(
        metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
    )
    if isinstance(selectable, sa.Select):
        selectable = selectable.subquery()
    cols = [sa.column(c, types.get(c)) for c in columns]
    return sa.select(*cols).select_from(selectable).subquery(name)


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


def _pandas_frame(
    execution_engine: PandasExecutionEngine, metric_domain_kwargs: dict[str, Any]
) -> pd.DataFrame:
    """The batch as a DataFrame."""
    df, _, _ = execution_engine.get_compute_domain(
        metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
    )
    frame: pd.DataFrame = df
    return frame


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
    execution_engine: SqlAlchemyExecutionEngine,
    metric_domain_kwargs: dict[str, Any],
    metrics: Mapping[str, Any],
    qis: Sequence[str],
    sensitive: Sequence[str] = (),
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """One ``GROUP BY qis`` (and one ``GROUP BY qis, column`` per sensitive column) in SQL.

    The QIs and sensitive columns are checked against the batch's columns first; an empty
    batch is an :class:`EmptyDatasetError`.
    """
    types = _column_types(metrics)
    validate_quasi_identifiers(qis, list(types))
    if sensitive:
        _, sensitive = check_extra_columns(qis, list(types), sensitive=sensitive)
    source = _batch_source(
        execution_engine, metric_domain_kwargs, [*qis, *sensitive], types, "reident_batch"
    )
    with execution_engine.get_connection() as conn:
        grouped = grouped_counts(conn, source, qis)
        value_counts = {c: grouped_value_counts(conn, source, qis, c) for c in sensitive}
    if grouped.empty:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    return grouped, value_counts


# --------------------------------------------------------------------------- class table metric
class ClassTableMetric(_ReidentTableMetric):
    """``reident.class_table``: the batch's equivalence classes on ``quasi_identifiers``."""

    metric_name = CLASS_TABLE_METRIC
    value_keys = ("quasi_identifiers",)

    @metric_value(engine=PandasExecutionEngine)
    @_reported
    def _pandas(
        cls,
        execution_engine: PandasExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> ClassTable:
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        df = _read_columns(_pandas_frame(execution_engine, metric_domain_kwargs), qis)
        return codes_only(class_table_from_frame(df, qis))

    @metric_value(engine=SqlAlchemyExecutionEngine)
    @_reported
    def _sqlalchemy(
        cls,
        execution_engine: SqlAlchemyExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> ClassTable:
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        grouped, _ = _sql_class_counts(execution_engine, metric_domain_kwargs, metrics, qis)
        return codes_only(class_table_from_grouped(grouped, qis, COUNT_LABEL))


# ---------------------------------------------------------------------- class size histogram
class ClassSizeHistogramMetric(_ReidentTableMetric):
    """``reident.class_size_histogram``: how many classes of each size, on ``quasi_identifiers``.

    pandas: DuckDB counts the histogram itself; SQLAlchemy: the database does, in one
    statement. Either way one row per distinct class size is fetched, none per class.
    """

    metric_name = HISTOGRAM_METRIC
    value_keys = ("quasi_identifiers",)

    @metric_value(engine=PandasExecutionEngine)
    @_reported
    def _pandas(
        cls,
        execution_engine: PandasExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> ClassSizes:
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        df = _read_columns(_pandas_frame(execution_engine, metric_domain_kwargs), qis)
        return histogram_from_frame(df, qis)

    @metric_value(engine=SqlAlchemyExecutionEngine)
    @_reported
    def _sqlalchemy(
        cls,
        execution_engine: SqlAlchemyExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> ClassSizes:
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        types = _column_types(metrics)
        validate_quasi_identifiers(qis, list(types))
        source = _batch_source(execution_engine, metric_domain_kwargs, qis, types, "reident_batch")
        with execution_engine.get_connection() as conn:
            return grouped_histogram(conn, source, qis, what="the batch")


# ------------------------------------------------------------------------ direct match metric
def _read_original(path: str, sep: str) -> pd.DataFrame:
    """The original table from a CSV (values as text, empty = missing) or Parquet file."""
    p = Path(path)
    columns = file_columns(p, sep=sep)
    frame: pd.DataFrame = read_columns(p, columns, sep=sep, dictionary=False).to_pandas()
    return frame


def _counts_payload(
    records: int,
    counts: Mapping[str, tuple[int, int]],
    key: str | None,
    only_in_original: Sequence[str],
    only_in_avatar: Sequence[str],
) -> dict[str, Any]:
    return {
        "records": int(records),
        "counts": [[str(c), int(m), int(u)] for c, (m, u) in counts.items()],
        "key": key,
        "only_in_original": [str(c) for c in only_in_original],
        "only_in_avatar": [str(c) for c in only_in_avatar],
    }


class DirectMatchCountsMetric(_ReidentTableMetric):
    """``reident.direct_match_counts``: ``(m_c, u_c)`` of the batch against its original."""

    metric_name = DIRECT_MATCH_METRIC
    value_keys = ("original_table", "original_schema", "key", "columns", "sep")

    @metric_value(engine=PandasExecutionEngine)
    @_reported
    def _pandas(
        cls,
        execution_engine: PandasExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> dict[str, Any]:
        from reident_airflow.engine.direct_match import direct_match_protection

        avatar = _pandas_frame(execution_engine, metric_domain_kwargs)
        path = metric_value_kwargs.get("original_table")
        if not path:
            raise InvalidInputError("original_table is required")
        original = _read_original(str(path), str(metric_value_kwargs.get("sep") or ","))
        key = metric_value_kwargs.get("key")
        columns = metric_value_kwargs.get("columns")
        result = direct_match_protection(original, avatar, key=key, target=0.0, columns=columns)
        order = {c.column: c for c in result.columns}
        scored = [str(c) for c in original.columns if str(c) in order]
        counts = {c: (order[c].matches, order[c].distinct_avatar_values) for c in scored}
        return _counts_payload(
            result.records, counts, key, result.only_in_original, result.only_in_avatar
        )

    @metric_value(engine=SqlAlchemyExecutionEngine)
    @_reported
    def _sqlalchemy(
        cls,
        execution_engine: SqlAlchemyExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> dict[str, Any]:
        name = metric_value_kwargs.get("original_table")
        if not name:
            raise InvalidInputError("original_table is required")
        key = metric_value_kwargs.get("key")
        if not key:
            raise InvalidInputError(
                "a database table has no row order: give key=COLUMN, a column of both tables "
                "that identifies each record, to align the released rows with the original ones"
            )
        types = _column_types(metrics)
        with execution_engine.get_connection() as conn:
            original = reflect_table(conn, str(name), metric_value_kwargs.get("original_schema"))
            avatar = _batch_source(
                execution_engine, metric_domain_kwargs, list(types), types, "reident_batch"
            )
            counted = direct_match_counts_sql(
                conn, original, avatar, key=str(key), columns=metric_value_kwargs.get("columns")
            )
        return _counts_payload(
            counted.records,
            counted.counts,
            key,
            counted.only_in_original,
            counted.only_in_avatar,
        )


# --------------------------------------------------------------- sensitive value counts metric
def _column_list(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise InvalidInputError(f"{what} must be a list of column names")
    return tuple(str(v) for v in value)


class SensitiveValueCountsMetric(_ReidentTableMetric):
    """``reident.sensitive_value_counts``: classes and per-class counts of sensitive values."""

    metric_name = SENSITIVE_COUNTS_METRIC
    value_keys = ("quasi_identifiers", "sensitive_columns")

    @metric_value(engine=PandasExecutionEngine)
    @_reported
    def _pandas(
        cls,
        execution_engine: PandasExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> ClassAggregates:
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        columns = _column_list(metric_value_kwargs.get("sensitive_columns"), "sensitive_columns")
        df = _read_columns(_pandas_frame(execution_engine, metric_domain_kwargs), qis, columns)
        return _aggregates_codes_only(aggregates_from_frame(df, qis, sensitive=columns))

    @metric_value(engine=SqlAlchemyExecutionEngine)
    @_reported
    def _sqlalchemy(
        cls,
        execution_engine: SqlAlchemyExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> ClassAggregates:
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        columns = _column_list(metric_value_kwargs.get("sensitive_columns"), "sensitive_columns")
        counts, value_counts = _sql_class_counts(
            execution_engine, metric_domain_kwargs, metrics, qis, sensitive=columns
        )
        aggregates = aggregate_grouped(counts, qis, COUNT_LABEL, value_counts=value_counts)
        return _aggregates_codes_only(aggregates)
