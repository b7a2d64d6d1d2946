"""``DataflyOperator`` on a Spark connection (issue 18).

The staged ``table`` (of the session's catalog) or Parquet ``path`` is read by the
connection's session (:mod:`~reident_airflow.operators.spark_table`); the search runs on class
histograms Spark counts, and the release is computed and written by Spark
(:func:`~reident_airflow.sources.spark_release_datafly.datafly_spark`): records never reach
the driver. Builder hierarchies (interval, masking, date) are made from each QI's distinct
values, which Spark collects (a hierarchy lists them anyway).

The release goes to ``target_table`` of the same session's catalog, written as a new table
and swapped in, or to ``target_path``, a Parquet folder written beside it and renamed into
place through Hadoop's file system (a local path, ``file://`` or ``hdfs://``: renames on
object storage are copies, so such a target is refused; write a table there instead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reident_airflow.engine.errors import AnonymizationInfeasibleError
from reident_airflow.operators.spark_table import read_spark_frame
from reident_airflow.outcomes import ReidentConfigurationError

if TYPE_CHECKING:
    from reident_airflow.operators.datafly import DataflyOperator

__all__ = [
    "ATOMIC_RENAME_SCHEMES",
    "check_spark_target",
    "datafly_on_spark",
    "write_spark_release",
]

#: The schemes of a ``target_path`` whose file system renames a folder in one step.
ATOMIC_RENAME_SCHEMES = frozenset({"", "file", "hdfs"})


def check_spark_target(op: DataflyOperator, conn: Any) -> None:
    """What only a Spark connection ``conn`` adds to the operator's target checks (one target,
    never the source table), before any reading: the target is written by the same session;
    a path only where a rename is atomic, written as Parquet, by a classic session, and never
    the source path."""
    if op.target_conn_id and op.target_conn_id != op.conn_id:
        raise ReidentConfigurationError(
            f"the source is read by the Spark connection {op.conn_id!r}: its release is "
            f"written by the same session, so target_conn_id must be it (or unset), not "
            f"{op.target_conn_id!r}"
        )
    if not op.target_path:
        return
    if (conn.conn_type or "").lower() == "spark_connect":
        raise ReidentConfigurationError(
            f"connection {op.conn_id!r} is a Spark Connect server, which cannot rename a path "
            "into place: write the release to a table (target_table)"
        )
    path = str(op.target_path)
    scheme = path.split("://", 1)[0].lower() if "://" in path else ""
    if scheme not in ATOMIC_RENAME_SCHEMES:
        raise ReidentConfigurationError(
            f"target_path on {scheme}:// cannot be swapped in atomically (its renames are "
            "copies): write the release to a table (target_table), or to a local or hdfs:// path"
        )
    if path.lower().endswith((".csv", ".tsv", ".txt")):
        raise ReidentConfigurationError(
            "a release written by Spark is a Parquet folder: name target_path without .csv"
        )
    if op.path and path.rstrip("/") == str(op.path).rstrip("/"):
        raise ReidentConfigurationError(
            "target_path is the source path: Datafly never overwrites its input"
        )


def datafly_on_spark(
    op: DataflyOperator, params: dict[str, Any], session: Any
) -> tuple[Any, dict[str, Any] | None]:
    """Run Datafly on the staged table, read by the Spark ``session`` of the operator's
    connection (:func:`~reident_airflow.operators.spark_table.spark_session`): the result (a
    :class:`~reident_airflow.sources.spark_release_datafly.SparkDataflyResult`, its release
    not yet computed), or ``None`` and the report of the best attempt when k cannot be
    reached."""
    from reident_airflow.engine.datafly import infeasible_report
    from reident_airflow.operators.hierarchy_specs import resolve_hierarchies
    from reident_airflow.sources.spark_release_datafly import datafly_spark

    qis, k = params["qis"], params["k"]
    frame = read_spark_frame(op, session)

    def distinct(column: str) -> list[Any]:
        return [row[0] for row in frame.select(column).distinct().collect()]

    hierarchies = resolve_hierarchies(
        params["hierarchies"], frame, qis, sep=op.hierarchy_sep, distinct=distinct
    )
    op.log.info("Datafly on Spark, quasi-identifiers %s, k=%s", qis, k)
    try:
        result = datafly_spark(frame, qis, hierarchies, k, params["limit"], op.log.info)
    except AnonymizationInfeasibleError as exc:
        return None, infeasible_report(exc, int(frame.count()), k)
    return result, None


def write_spark_release(
    op: DataflyOperator, result: Any, lock_timeout: float | None = None
) -> dict[str, Any]:
    """Have Spark compute and write the release where ``op`` says; where it went and how
    many records (the ``output`` of the report). ``lock_timeout``: how long a local
    ``target_path`` waits for another run writing it (see
    :func:`~reident_airflow.sources.spark_release_datafly.write_frame_path`)."""
    from reident_airflow.sources.spark_release_datafly import (
        write_release_path,
        write_release_table,
    )

    if op.target_path:
        if lock_timeout is None:
            write_release_path(result, str(op.target_path))
        else:
            write_release_path(result, str(op.target_path), lock_timeout=lock_timeout)
        return {"path": str(op.target_path), "records": result.released_records}
    name = f"{op.target_schema}.{op.target_table}" if op.target_schema else str(op.target_table)
    write_release_table(result, name)
    return {
        "conn_id": op.conn_id,
        "schema": op.target_schema or None,
        "table": op.target_table,
        "records": result.released_records,
    }
