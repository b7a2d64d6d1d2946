"""The reident metrics on GX's Spark data source: Spark counts, the driver gets aggregates.

A batch of ``context.data_sources.add_spark(...)`` (GX's ``SparkDFExecutionEngine``) is a
``pyspark.sql.DataFrame`` -- of a classic session or of a Spark Connect one. Each function here
is the Spark counting of one metric of :mod:`reident_airflow.gx.metrics`, by the Spark backend
(:mod:`reident_airflow.sources.spark`): the records are grouped in Spark's executors and only
aggregates reach the driver (one row per distinct class size, per ranked QI subset, per
distinct profile of sensitive value counts), never a row per class nor a value.

So the class-table metric, which the expectations read for the QI ranking, is on Spark the
ranked subsets' histograms (:class:`~reident_airflow.sources.spark.SparkAggregates`), not a
class table: the expectations assess either with the engine's same arithmetic
(:func:`~reident_airflow.sources.spark_measures.assessment_of`), so the observed values are
those of pandas and SQL, bit for bit. PySpark is imported only by the Spark backend, when a
Spark batch is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from great_expectations.core.metric_domain_types import MetricDomainTypes

from reident_airflow.engine import ClassSizes
from reident_airflow.gx.parameters import metric_quasi_identifiers, metric_sensitive_columns
from reident_airflow.sources.spark import SparkAggregates, aggregates_from_spark

__all__ = [
    "class_table_spark",
    "histogram_spark",
    "sensitive_counts_spark",
    "spark_frame",
]


def spark_frame(execution_engine: Any, domain: dict[str, Any], metrics: Mapping[str, Any]) -> Any:
    """The batch of a ``SparkDFExecutionEngine`` as a Spark DataFrame (GX's row condition, if
    any, applied by GX)."""
    frame, _, _ = execution_engine.get_compute_domain(domain, domain_type=MetricDomainTypes.TABLE)
    return frame


def histogram_spark(frame: Any, kwargs: Mapping[str, Any]) -> ClassSizes:
    """``reident.class_size_histogram`` on Spark: one row per distinct class size collected."""
    return aggregates_from_spark(frame, metric_quasi_identifiers(kwargs)).histogram


def _ranked(
    frame: Any, kwargs: Mapping[str, Any], *, rank: bool, sensitive: Sequence[str] = ()
) -> SparkAggregates:
    """Spark's aggregates on the QIs: the ranked subsets' histograms if ``rank``
    (``max_subset_size`` sizes the ranking, as ``reident assess`` does)."""
    size = kwargs.get("max_subset_size")
    return aggregates_from_spark(
        frame,
        metric_quasi_identifiers(kwargs),
        sensitive=sensitive,
        rank_attributes=rank,
        max_subset_size=None if size is None or not rank else int(size),
    )


def class_table_spark(frame: Any, kwargs: Mapping[str, Any]) -> SparkAggregates:
    """``reident.class_table`` on Spark (read for the QI ranking): the histogram and the
    ranked QI subsets' histograms."""
    return _ranked(frame, kwargs, rank=True)


def sensitive_counts_spark(frame: Any, kwargs: Mapping[str, Any]) -> SparkAggregates:
    """``reident.sensitive_value_counts`` on Spark: the histogram, the ranked subsets'
    histograms unless ``rank_attributes`` is false and, per sensitive column, the distinct
    profiles of per-class value counts."""
    rank = kwargs.get("rank_attributes") is not False
    return _ranked(frame, kwargs, rank=rank, sensitive=metric_sensitive_columns(kwargs))
