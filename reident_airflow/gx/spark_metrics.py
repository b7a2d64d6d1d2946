"""The reident metrics on GX's Spark data source: Spark counts, the driver gets aggregates.

A batch of ``context.data_sources.add_spark(...)`` (GX's ``SparkDFExecutionEngine``) is a
``pyspark.sql.DataFrame`` -- of a classic session or of a Spark Connect one. Each function here
is the Spark counting of one metric of :mod:`reident_airflow.gx.metrics`, by the Spark backend
(:mod:`reident_airflow.sources.spark`): the records are grouped in Spark's executors and only
aggregates reach the driver (one row per distinct class size, per ranked QI subset, per
distinct profile of sensitive value counts), never a row per class nor a value.

So the class-table metric, which the expectations read for the QI ranking, is on Spark the
ranked subsets' histograms (the engine's
:class:`~reident_airflow.engine.distributions.Distributions`), not a class table: the
expectations hand either to :func:`~reident_airflow.engine.assessment.assess`, whose
arithmetic on distributions gives the observed values of pandas and SQL, bit for bit.
PySpark is imported only by the Spark backend, when a Spark batch is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from great_expectations.core.metric_domain_types import MetricDomainTypes

from reident_airflow.engine import ClassSizes, Distributions, InvalidInputError
from reident_airflow.engine.direct_match import DirectMatchResult
from reident_airflow.gx.parameters import metric_quasi_identifiers, metric_sensitive_columns
from reident_airflow.sources.spark import aggregates_from_spark
from reident_airflow.sources.spark_release import direct_match_spark

_FILE_SUFFIXES = (".csv", ".tsv", ".txt")

__all__ = [
    "class_table_spark",
    "direct_match_from_spark",
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
) -> Distributions:
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


def class_table_spark(frame: Any, kwargs: Mapping[str, Any]) -> Distributions:
    """``reident.class_table`` on Spark (read for the QI ranking): the histogram and the
    ranked QI subsets' histograms."""
    return _ranked(frame, kwargs, rank=True)


def sensitive_counts_spark(frame: Any, kwargs: Mapping[str, Any]) -> Distributions:
    """``reident.sensitive_value_counts`` on Spark: the histogram, the ranked subsets'
    histograms unless ``rank_attributes`` is false and, per sensitive column, the distinct
    profiles of per-class value counts."""
    rank = kwargs.get("rank_attributes") is not False
    return _ranked(frame, kwargs, rank=rank, sensitive=metric_sensitive_columns(kwargs))


def _original_frame(frame: Any, kwargs: Mapping[str, Any]) -> Any:
    """The original table, read by the batch's Spark session: a Parquet file, a CSV file
    (header, values as text, empty = missing, ``sep``) or a table of the catalog
    (``original_schema.original_table``)."""
    name = str(kwargs.get("original_table") or "")
    if not name:
        raise InvalidInputError("original_table is required")
    spark = frame.sparkSession
    if name.lower().endswith(".parquet"):
        return spark.read.parquet(name)
    if name.lower().endswith(_FILE_SUFFIXES):
        sep = str(kwargs.get("sep") or ",")
        return spark.read.csv(name, header=True, sep=sep, inferSchema=False)
    schema = kwargs.get("original_schema")
    return spark.table(f"{schema}.{name}" if schema else name)


def direct_match_from_spark(
    frame: Any, kwargs: Mapping[str, Any]
) -> tuple[DirectMatchResult, list[str]]:
    """``reident.direct_match_counts`` on Spark: the batch joined to its original on ``key``
    by Spark (:func:`~reident_airflow.sources.spark_release.direct_match_spark`, counts
    only), and the original's column names (their order ranks the columns)."""
    original = _original_frame(frame, kwargs)
    key = kwargs.get("key")
    result = direct_match_spark(
        original,
        frame,
        key=None if key is None else str(key),
        target=0.0,
        columns=kwargs.get("columns"),
    )
    return result, [str(c) for c in original.columns]
