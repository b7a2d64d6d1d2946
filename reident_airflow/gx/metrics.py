"""Great Expectations metrics: count where the data is, compute nothing else.

Two table metrics, each with one implementation per execution engine:

``reident.class_table`` (value key ``quasi_identifiers``)
    The equivalence classes of the batch on its quasi-identifiers (metrics.md §1), as a plain,
    JSON-serialisable structure of integer codes and class sizes (:func:`class_table_payload`).
    pandas groups the DataFrame; SQLAlchemy runs one ``GROUP BY`` in the database and fetches
    one row per class, never a record. QI values are turned into integer codes before the
    metric returns, so GE's metric cache holds no value of any record.

``reident.direct_match_counts`` (value keys ``original_table``, ``original_schema``, ``key``,
``columns``, ``sep``)
    For each column, the number of rows whose released value equals the original one and the
    number of distinct released values (``m_c``, ``u_c`` of metrics.md §8). pandas reads the
    original table from a CSV or Parquet path and counts with the engine; SQLAlchemy joins the
    batch to the original table of the same database on ``key`` and counts in SQL.

``reident.sensitive_value_counts`` (value keys ``quasi_identifiers``, ``sensitive_columns``)
    The class table as above, plus, for each sensitive column, how many records of each class
    hold each of its values (one ``GROUP BY qis, column`` per column in the database). Only the
    counts are returned, never a value: l-diversity (metrics.md §7) needs nothing more.

The expectations (:mod:`reident_airflow.gx.expectations`) turn these counts into risk with the
engine (:func:`~reident_airflow.engine.assessment.assess`,
:func:`~reident_airflow.engine.direct_match.direct_match_from_counts`), so every execution
engine gives the same numbers, bit for bit, as ``reident assess`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
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
    ValueCounts,
    aggregate_frame,
    aggregate_grouped,
    check_extra_columns,
)
from reident_airflow.engine.classes import (
    ClassTable,
    class_table_from_frame,
    class_table_from_grouped,
    validate_quasi_identifiers,
)
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.sources.sql import (
    COUNT_LABEL,
    grouped_counts,
    grouped_value_counts,
    reflect_table,
)

__all__ = [
    "CLASS_TABLE_METRIC",
    "DIRECT_MATCH_METRIC",
    "SENSITIVE_COUNTS_METRIC",
    "ClassTableMetric",
    "DirectMatchCountsMetric",
    "SensitiveValueCountsMetric",
    "aggregates_from_payload",
    "aggregates_payload",
    "class_table_from_payload",
    "class_table_payload",
]

CLASS_TABLE_METRIC = "reident.class_table"
DIRECT_MATCH_METRIC = "reident.direct_match_counts"
SENSITIVE_COUNTS_METRIC = "reident.sensitive_value_counts"

_COLUMN_TYPES = "table.column_types"


# --------------------------------------------------------------------------- class table payload
def _reported(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Return an input error as ``{"error": message}`` instead of raising it.

    An unknown column or an empty table is a fact about the data, not a failure to compute:
    the expectation turns it into a failed result with the engine's message (aggregates only),
    and GE does not retry the metric.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return fn(*args, **kwargs)
        except InvalidInputError as exc:
            return {"error": str(exc)}

    return wrapper


def class_table_payload(table: ClassTable) -> dict[str, Any]:
    """A class table as plain Python types: codes and sizes only, never a value.

    ``codes[j][i]`` is the code of class j's value of QI i (``0 <= code < cardinalities[i]``)
    and ``sizes[j]`` its number of records; records whose QIs are all ``*`` are counted in
    ``excluded_records`` (ARX behaviour).
    """
    return {
        "quasi_identifiers": list(table.quasi_identifiers),
        "sizes": table.sizes.tolist(),
        "codes": table.codes.tolist(),
        "cardinalities": [int(c) for c in table.cardinalities],
        "excluded_records": int(table.excluded_records),
    }


def class_table_from_payload(payload: Mapping[str, Any]) -> ClassTable:
    """The :class:`ClassTable` back from :func:`class_table_payload`."""
    try:
        qis = tuple(str(q) for q in payload["quasi_identifiers"])
        sizes = np.asarray(payload["sizes"], dtype=np.int64).reshape(-1)
        codes = np.asarray(payload["codes"], dtype=np.int64).reshape(sizes.shape[0], len(qis))
        cards = tuple(int(c) for c in payload["cardinalities"])
        excluded = int(payload.get("excluded_records", 0))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"not a class table payload ({type(exc).__name__})") from None
    if sizes.shape[0] == 0:
        raise EmptyDatasetError("the table has no records: there is nothing to assess")
    return ClassTable(
        quasi_identifiers=qis,
        sizes=sizes,
        codes=codes,
        cardinalities=cards,
        excluded_records=excluded,
    )


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


def _with_dependency_on_column_types(
    dependencies: dict[str, MetricConfiguration],
    metric: MetricConfiguration,
    execution_engine: ExecutionEngine[Any] | None,
) -> dict[str, MetricConfiguration]:
    if isinstance(execution_engine, SqlAlchemyExecutionEngine):
        table_domain = {k: v for k, v in metric.metric_domain_kwargs.items() if k != "column"}
        dependencies[_COLUMN_TYPES] = MetricConfiguration(
            metric_name=_COLUMN_TYPES,
            metric_domain_kwargs=table_domain,
            metric_value_kwargs={"include_nested": True},
        )
    return dependencies


# --------------------------------------------------------------------------- class table metric
class ClassTableMetric(TableMetricProvider):
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
    ) -> dict[str, Any]:
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        df, _, _ = execution_engine.get_compute_domain(
            metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
        )
        return class_table_payload(class_table_from_frame(df, qis))

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
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        types = _column_types(metrics)
        validate_quasi_identifiers(qis, list(types))
        source = _batch_source(execution_engine, metric_domain_kwargs, qis, types, "reident_batch")
        with execution_engine.get_connection() as conn:
            grouped = grouped_counts(conn, source, qis)
        if grouped.empty:
            raise EmptyDatasetError("the table has no records: there is nothing to assess")
        return class_table_payload(class_table_from_grouped(grouped, qis, COUNT_LABEL))

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
        return _with_dependency_on_column_types(dependencies, metric, execution_engine)


# ------------------------------------------------------------------------ direct match metric
def _read_original(path: str, sep: str) -> pd.DataFrame:
    """The original table from a CSV (values as text, empty = missing) or Parquet file."""
    from reident_airflow.sources.files import file_columns, read_columns

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


def _selected_columns(
    original: Sequence[str], avatar: Sequence[str], key: str | None, columns: Any
) -> list[str]:
    """The columns to score, as :func:`direct_match_protection` selects them."""
    in_avatar = set(avatar)
    in_original = set(original)
    if columns is None:
        selected = [c for c in original if c in in_avatar and c != key]
    else:
        if isinstance(columns, str):
            raise InvalidInputError("columns must be a sequence of column names, not one string")
        selected = list(dict.fromkeys(str(c) for c in columns))
        if key is not None and key in selected:
            raise InvalidInputError(f"the key column {key!r} cannot also be scored")
        for name, present in (("original", in_original), ("avatar", in_avatar)):
            absent = [c for c in selected if c not in present]
            if absent:
                raise InvalidInputError(f"columns missing from the {name} table: {absent}")
    if not selected:
        raise InvalidInputError(
            "no column to compare: the tables have no column in common"
            + ("" if key is None else f" besides the key {key!r}")
        )
    return selected


def _same_kind(a: Any, b: Any) -> bool:
    """Whether two SQL types compare as they are (both text, both numbers, ...)."""
    if a is None or b is None:
        return True

    def kind(t: Any) -> str:
        if isinstance(t, sa.String):
            return "text"
        if isinstance(t, sa.Integer | sa.Numeric | sa.Float):
            return "number"
        if isinstance(t, sa.Boolean):
            return "boolean"
        return type(t).__name__

    return kind(a) == kind(b)


def _sql_direct_match_counts(
    conn: sa.Connection,
    avatar: sa.Subquery,
    original: sa.Table,
    key: str,
    selected: Sequence[str],
) -> tuple[int, dict[str, tuple[int, int]]]:
    """``n`` and ``(m_c, u_c)`` per column, counted by the database (aggregates only)."""
    sources = (("original", original), ("avatar", avatar))
    n: dict[str, int] = {}
    for name, source in sources:
        k = source.c[key]
        row = conn.execute(
            sa.select(sa.func.count(), sa.func.count(k), sa.func.count(sa.distinct(k)))
        ).one()
        total, present, distinct = (int(v) for v in row)
        if total == 0:
            raise EmptyDatasetError(f"the {name} table has no records")
        if present < total:
            raise InvalidInputError(
                f"key column {key!r} has {total - present} missing values in the {name} table"
            )
        if distinct < total:
            raise InvalidInputError(
                f"key column {key!r} is not unique in the {name} table: {distinct} distinct key "
                f"values on {total} records"
            )
        n[name] = total
    if n["original"] != n["avatar"]:
        raise InvalidInputError(
            f"the tables have different numbers of records: the original table has "
            f"{n['original']}, the avatar table has {n['avatar']}"
        )
    records = n["original"]
    joined = sa.join(avatar, original, avatar.c[key] == original.c[key])
    matched = int(conn.execute(sa.select(sa.func.count()).select_from(joined)).scalar_one())
    if matched != records:
        missing = records - matched
        raise InvalidInputError(
            f"key column {key!r} does not match between the tables: {missing} key values of "
            f"the original table are not in the avatar table, and {missing} key values of "
            f"the avatar table are not in the original table"
        )
    match_exprs: list[sa.ColumnElement[Any]] = []
    distinct_exprs: list[sa.ColumnElement[Any]] = []
    for c in selected:
        a: sa.ColumnElement[Any] = avatar.c[c]
        o: sa.ColumnElement[Any] = original.c[c]
        a_cmp, o_cmp = a, o
        if not _same_kind(a.type, o.type):  # compare by value text when the types differ
            a_cmp, o_cmp = sa.cast(a, sa.String), sa.cast(o, sa.String)
        same = sa.or_(a_cmp == o_cmp, sa.and_(a.is_(None), o.is_(None)))
        match_exprs.append(sa.func.sum(sa.case((same, 1), else_=0)))
        distinct_exprs.append(sa.func.count(sa.distinct(a)))
        distinct_exprs.append(sa.func.max(sa.case((a.is_(None), 1), else_=0)))
    match_row = tuple(conn.execute(sa.select(*match_exprs).select_from(joined)).one())
    distinct_row = tuple(conn.execute(sa.select(*distinct_exprs).select_from(avatar)).one())
    counts: dict[str, tuple[int, int]] = {}
    for i, c in enumerate(selected):
        u = int(distinct_row[2 * i] or 0) + int(distinct_row[2 * i + 1] or 0)
        counts[c] = (int(match_row[i] or 0), u)
    return records, counts


class DirectMatchCountsMetric(TableMetricProvider):
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

        avatar, _, _ = execution_engine.get_compute_domain(
            metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
        )
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
        avatar_columns = list(types)
        with execution_engine.get_connection() as conn:
            original = reflect_table(conn, str(name), metric_value_kwargs.get("original_schema"))
            original_columns = [c.name for c in original.columns]
            for side, cols in (("original", original_columns), ("avatar", avatar_columns)):
                if key not in cols:
                    raise InvalidInputError(f"key column {key!r} is missing from the {side} table")
            selected = _selected_columns(
                original_columns, avatar_columns, key, metric_value_kwargs.get("columns")
            )
            avatar = _batch_source(
                execution_engine,
                metric_domain_kwargs,
                [key, *selected],
                types,
                "reident_avatar",
            )
            records, counts = _sql_direct_match_counts(conn, avatar, original, key, selected)
        in_avatar, in_original = set(avatar_columns), set(original_columns)
        return _counts_payload(
            records,
            counts,
            key,
            [c for c in original_columns if c not in in_avatar],
            [c for c in avatar_columns if c not in in_original],
        )

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
        return _with_dependency_on_column_types(dependencies, metric, execution_engine)


# --------------------------------------------------------------- sensitive value counts metric
def aggregates_payload(aggregates: ClassAggregates) -> dict[str, Any]:
    """A class table and its sensitive value counts as plain Python types (no value)."""
    return {
        **class_table_payload(aggregates.table),
        "sensitive": {
            name: {"classes": vc.classes.tolist(), "counts": vc.counts.tolist()}
            for name, vc in aggregates.sensitive.items()
        },
    }


def aggregates_from_payload(
    payload: Mapping[str, Any],
) -> tuple[ClassTable, dict[str, ValueCounts]]:
    """The class table and value counts back from :func:`aggregates_payload`."""
    table = class_table_from_payload(payload)
    try:
        sensitive = {
            str(name): ValueCounts(
                str(name),
                np.asarray(item["classes"], dtype=np.int64).reshape(-1),
                np.asarray(item["counts"], dtype=np.int64).reshape(-1),
            )
            for name, item in dict(payload["sensitive"]).items()
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"not a value counts payload ({type(exc).__name__})") from None
    return table, sensitive


def _column_list(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise InvalidInputError(f"{what} must be a list of column names")
    return tuple(str(v) for v in value)


class SensitiveValueCountsMetric(TableMetricProvider):
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
    ) -> dict[str, Any]:
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        columns = _column_list(metric_value_kwargs.get("sensitive_columns"), "sensitive_columns")
        df, _, _ = execution_engine.get_compute_domain(
            metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
        )
        return aggregates_payload(aggregate_frame(df, qis, sensitive=columns))

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
        qis = _qi_list(metric_value_kwargs.get("quasi_identifiers"))
        columns = _column_list(metric_value_kwargs.get("sensitive_columns"), "sensitive_columns")
        types = _column_types(metrics)
        validate_quasi_identifiers(qis, list(types))
        _, columns = check_extra_columns(qis, list(types), sensitive=columns)
        source = _batch_source(
            execution_engine, metric_domain_kwargs, [*qis, *columns], types, "reident_batch"
        )
        with execution_engine.get_connection() as conn:
            counts = grouped_counts(conn, source, qis)
            value_counts = {c: grouped_value_counts(conn, source, qis, c) for c in columns}
        if counts.empty:
            raise EmptyDatasetError("the table has no records: there is nothing to assess")
        aggregates = aggregate_grouped(counts, qis, COUNT_LABEL, value_counts=value_counts)
        return aggregates_payload(aggregates)

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
        return _with_dependency_on_column_types(dependencies, metric, execution_engine)
