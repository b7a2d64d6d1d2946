"""``DirectMatchProtectionOperator`` on a Spark connection (issue 18).

The original and the released (avatar) tables are catalog tables or Parquet paths read by the
connection's session; Spark joins them on the key and counts, per column, the records whose
value the release kept (:func:`~reident_airflow.sources.spark_release.direct_match_spark`):
only counts reach the driver. Both sides are read by the same session, so ``avatar_conn_id``
is the source's connection or unset, and a key is required (records are aligned by it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reident_airflow.operators.spark_table import read_spark_table, spark_session
from reident_airflow.outcomes import ReidentConfigurationError

if TYPE_CHECKING:
    from reident_airflow.engine.direct_match import DirectMatchResult
    from reident_airflow.operators.direct_match import DirectMatchProtectionOperator

__all__ = ["check_spark_sides", "direct_match_on_spark"]


def check_spark_sides(op: DirectMatchProtectionOperator, key: str | None) -> None:
    """What a Spark connection can compare, checked before any reading: both sides read by
    its session, aligned on a key."""
    if op.avatar_conn_id and op.avatar_conn_id != op.conn_id:
        raise ReidentConfigurationError(
            f"the original is read by the Spark connection {op.conn_id!r}: the avatar is read "
            f"by the same session, so avatar_conn_id must be it (or unset), not "
            f"{op.avatar_conn_id!r}"
        )
    if key is None:
        raise ReidentConfigurationError(
            "on a Spark connection the records are aligned by a key column: give key=..."
        )


def direct_match_on_spark(
    op: DirectMatchProtectionOperator, params: dict[str, Any], conn: Any
) -> DirectMatchResult:
    """Column Direct Match Protection of the two sides, counted by the session of ``conn``."""
    from reident_airflow.sources.spark_release import direct_match_spark

    with spark_session(str(op.conn_id), conn) as session:
        original = read_spark_table(session, op.original_table, op.schema, op.original_path)
        avatar = read_spark_table(
            session, op.avatar_table, op.avatar_schema or op.schema, op.avatar_path
        )
        return direct_match_spark(original, avatar, **params)
