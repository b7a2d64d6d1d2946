"""The staged table of a Spark connection (issue 18): a catalog table or a Parquet path read
by a ``SparkSession`` of an Airflow connection of the apache-spark provider.

- ``spark``: ``host`` is the master (``local[2]``, ``spark://host`` with ``port``), the
  extras are Spark settings -- as the provider's ``@task.pyspark`` builds its session.
- ``spark_connect``: a Spark Connect server; its URL ``sc://host:port`` is built by the
  provider's ``SparkConnectHook`` (user id, token, ``use_ssl``).

The session is got or created and never stopped: other code of the process may share it.
The records are grouped by Spark (:class:`~reident_airflow.sources.spark.SparkSource`);
only aggregates reach the driver. PySpark is imported only here, only on this path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from reident_airflow.outcomes import ReidentConfigurationError

if TYPE_CHECKING:
    from reident_airflow.engine.options import AssessmentOptions
    from reident_airflow.operators.base import StagedTableOperator
    from reident_airflow.sources.spark import SparkSource

__all__ = [
    "SPARK_CONN_TYPES",
    "check_spark_source",
    "check_spark_staged",
    "read_spark_frame",
    "read_spark_table",
    "spark_connection",
    "spark_session",
    "spark_source",
]

#: The connection types of the apache-spark provider read by a SparkSession.
SPARK_CONN_TYPES = frozenset({"spark", "spark_connect"})


def spark_connection(conn_id: str | None) -> Any | None:
    """The Airflow connection ``conn_id`` when it is of a Spark type, else ``None`` (also when
    it cannot be looked up: the database path then reports that as it always has)."""
    if not conn_id:
        return None
    from reident_airflow._compat import BaseHook

    try:
        conn = BaseHook.get_connection(str(conn_id))
    except Exception:  # not defined here: not a Spark connection we could use either
        return None
    if (conn.conn_type or "").lower() not in SPARK_CONN_TYPES:
        return None
    return conn


def check_spark_source(op: StagedTableOperator) -> None:
    """What a Spark connection can read: a ``table`` or a ``path``, narrowed by ``where``;
    refused (configuration errors, before any reading): ``sql``, both or neither of
    ``table`` and ``path``."""
    if op.sql:
        raise ReidentConfigurationError(
            f"connection {op.conn_id!r} is a Spark connection: give table or path, not sql "
            "(narrow a table with where)"
        )
    if bool(op.table) == bool(op.path):
        raise ReidentConfigurationError(
            f"with the Spark connection {op.conn_id!r}, give either table or path"
        )
    if op.where is not None and not str(op.where).strip():
        op.where = None


def check_spark_staged(op: StagedTableOperator, options: AssessmentOptions) -> None:
    """:func:`check_spark_source`, and the assessment's options a Spark connection cannot
    serve: SUDA2 and a population register (both need one row per class on the driver)."""
    check_spark_source(op)
    for name, used in (
        ("suda", options.suda),
        ("population_table", options.population_table),
    ):
        if used:
            raise ReidentConfigurationError(
                f"{name} is not available on a Spark connection (it needs one row per class "
                "on the driver): assess the table through a database or a file"
            )


@contextmanager
def spark_session(conn_id: str, conn: Any) -> Iterator[Any]:
    """The session of the Spark connection ``conn``, for the ``with`` block
    (:func:`~reident_airflow.sources.spark_session.spark_session`: a classic session is got or
    created and never stopped here; a Spark Connect session is created for the block and
    stopped after it). The connection's extras are the session's configuration."""
    from reident_airflow.sources.spark_session import spark_session as session_block

    extras = {str(k): str(v) for k, v in _extras(conn_id, conn).items()}
    if (conn.conn_type or "").lower() != "spark_connect":
        if not conn.host:
            raise ReidentConfigurationError(f"Spark connection {conn_id!r} names no master (host)")
        master = f"{conn.host}:{conn.port}" if conn.port else str(conn.host)
        with session_block(master=master, conf=extras) as session:
            yield session
        return
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    try:
        url = SparkConnectHook(conn_id).get_connection_url()
    except ValueError as exc:
        raise ReidentConfigurationError(f"connection {conn_id!r}: {exc}") from None
    with session_block(remote=url, conf=extras) as session:
        yield session


def _extras(conn_id: str, conn: Any) -> dict[str, Any]:
    try:
        extra = conn.extra_dejson
    except Exception:  # its text may hold secrets: not quoted
        raise ReidentConfigurationError(
            f"connection {conn_id!r}: extra is not valid JSON"
        ) from None
    if not isinstance(extra, dict):
        raise ReidentConfigurationError(f"connection {conn_id!r}: extra is not a JSON object")
    extra = dict(extra)
    if (conn.conn_type or "").lower() == "spark_connect":
        extra.pop("use_ssl", None)  # part of the URL
    return extra


def read_spark_table(session: Any, table: str | None, schema: str | None, path: str | None) -> Any:
    """The DataFrame of ``schema.table`` of the session's catalog, or of the Parquet at
    ``path`` (lazily: Spark reads it when it counts)."""
    if table:
        return session.read.table(f"{schema}.{table}" if schema else str(table))
    return session.read.parquet(str(path))


@contextmanager
def spark_source(op: StagedTableOperator, conn: Any) -> Iterator[SparkSource]:
    """The staged table of the Spark connection ``conn`` as one source for the block: the
    :class:`~reident_airflow.sources.spark.SparkSource` of :func:`read_spark_frame`, in the
    session of :func:`spark_session` (``path`` kept for its fingerprint; the tables beside a
    ``table`` are tables of the catalog, those beside a ``path`` Parquet paths)."""
    from reident_airflow.sources.spark import SparkSource

    with spark_session(str(op.conn_id), conn) as session:
        frame = read_spark_frame(op, session)
        path = str(op.path) if op.path else None
        yield SparkSource(frame, label=op.source_name(), path=path, tables=bool(op.table))


def read_spark_frame(op: StagedTableOperator, session: Any) -> Any:
    """The staged DataFrame: ``schema.table`` of the session's catalog, or the Parquet at
    ``path``; narrowed by ``where`` (a Spark SQL condition of the DAG's author)."""
    frame = read_spark_table(session, op.table, op.schema, op.path)
    if op.where:
        frame = frame.where(str(op.where))
    return frame
