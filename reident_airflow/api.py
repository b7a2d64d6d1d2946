"""The Python API: assess a table held in memory, where it is.

::

    from reident_airflow.api import assess

    result = assess(frame, {"quasi_identifiers": ["sex", "age", "zip"], "min_k": 5})
    if result.breaches:
        ...

``frame`` is a pandas or polars DataFrame, an Arrow table (counted by the embedded DuckDB in
place: :class:`~reident_airflow.sources.frames.FrameSource`) or a Spark DataFrame (counted by
Spark: :class:`~reident_airflow.sources.spark.SparkSource`). The source is chosen once, here,
from the object's type; the engine then computes the same
:class:`~reident_airflow.engine.assessment.Assessment` the command line and the operators
report. Files and databases have their adapters already (``reident assess``, the operators).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions

if TYPE_CHECKING:
    from reident_airflow.engine.assessment import Assessment
    from reident_airflow.engine.classes import ClassTable
    from reident_airflow.sources import Source

__all__ = ["assess", "open_source"]


def _is_spark(data: Any) -> bool:
    """Whether ``data`` is a Spark DataFrame (classic or Connect), without importing Spark."""
    kind = type(data)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pyspark.")


def open_source(data: Any, *, label: str | None = None) -> Source:
    """The source of a table held in memory: Spark's for a Spark DataFrame, the embedded
    DuckDB's for a pandas or polars DataFrame or an Arrow table (anything else is refused
    there, naming its type). ``label`` names it in messages."""
    if _is_spark(data):
        from reident_airflow.sources.spark import SparkSource

        return SparkSource(data, label=label or "the Spark DataFrame")
    from reident_airflow.sources.frames import FrameSource

    return FrameSource(data, label=label or "the DataFrame")


def _register(source: Source, options: AssessmentOptions) -> ClassTable | None:
    """The population register the options name (a CSV or Parquet file, next to
    ``source``: :func:`~reident_airflow.sources.population_register`), on their QIs."""
    if not options.population_table:
        return None
    from reident_airflow.sources import population_register

    with population_register(source, options.population_table) as register:
        return register.class_table(options.quasi_identifiers)


def assess(
    data: Any, options: AssessmentOptions | Mapping[str, Any], *, label: str | None = None
) -> Assessment:
    """The re-identification risk of ``data`` (a table in memory), under ``options``.

    ``options`` is an :class:`~reident_airflow.engine.options.AssessmentOptions` or the
    mapping its :meth:`~reident_airflow.engine.options.AssessmentOptions.from_mapping` takes
    (``quasi_identifiers``, the gate's limits, ``weight``, ``sensitive``, ...). A
    ``population_table`` names a CSV or Parquet file holding the register. The source counts
    what the options need where the data is; only aggregates reach the engine.
    """
    from reident_airflow.engine.assessment import assess as assess_counted

    if isinstance(options, Mapping):
        options = AssessmentOptions.from_mapping(options)
    elif not isinstance(options, AssessmentOptions):
        raise InvalidInputError(
            f"options: expected AssessmentOptions or a mapping, got {type(options).__name__}"
        )
    with open_source(data, label=label) as source:
        counted = source.count(options)
        register = _register(source, options)
    return assess_counted(counted, options, population_table=register)
