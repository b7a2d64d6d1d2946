"""``DirectMatchProtectionOperator``: gate a release on Column Direct Match Protection."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reident_airflow._compat import Context
from reident_airflow.engine.direct_match import DEFAULT_TARGET, DirectMatchResult
from reident_airflow.operators.base import ReidentOperator, check_paths
from reident_airflow.operators.params import parse_columns, parse_number
from reident_airflow.operators.spark_table import read_spark_table, spark_session
from reident_airflow.outcomes import ReidentConfigurationError

__all__ = ["DirectMatchOptions", "DirectMatchProtectionOperator"]


@dataclass(frozen=True)
class DirectMatchOptions:
    """The rendered ``key``, ``target`` and ``columns`` of a
    :class:`DirectMatchProtectionOperator` run, checked once
    (:meth:`DirectMatchProtectionOperator._validated`), as the counting functions take them."""

    #: The column aligning the two tables (``None``: rows aligned by position, files only).
    key: str | None
    #: The lowest acceptable protection, in percent.
    target: float
    #: The columns scored (``None``: every column of both tables but the key).
    columns: tuple[str, ...] | None


class DirectMatchProtectionOperator(ReidentOperator):
    """Compare a released ("avatar") table with its original and fail the task when a column
    was released too close to the original (Column Direct Match Protection, docs/metrics.md §8).

    For each column ``c``: ``P_c = 100 * (1 - m_c * u_c / n^2)`` with ``m_c`` the records whose
    released value equals the original one and ``u_c`` the distinct released values; the
    protection is ``min_c P_c`` and the gate passes when it is at least ``target``.

    Each table is either in a database or a file:

    * ``original_table`` on ``conn_id``; ``avatar_table`` on ``avatar_conn_id`` (default: the
      same ``conn_id``). ``schema`` applies to both tables, ``avatar_schema`` overrides it for
      the avatar table. A ``key`` is required, since a database table has no row order. When
      both tables are on the same connection the counting runs in the database (a join on the
      key, per column ``SUM(CASE WHEN o.c = a.c ...)`` and ``COUNT(DISTINCT a.c)``): only
      aggregates are fetched. Otherwise both tables are read and compared in pandas.
    * ``original_path`` / ``avatar_path``: CSV (``sep``, values read as text and compared by
      value) or Parquet, local or an object-storage URL Airflow supports. Without ``key`` the
      rows are aligned by position.
    * a ``conn_id`` of the apache-spark provider (``spark`` or ``spark_connect``): the tables
      of its session's catalog or Parquet paths, joined on ``key`` (required) and counted by
      Spark (:func:`~reident_airflow.sources.spark_release.direct_match_spark`); only counts
      reach the driver. Both sides are read by the same session, so ``avatar_conn_id`` is
      the source's connection or unset.

    :param key: column of both tables identifying each record, unique in each; not scored.
    :param target: lowest acceptable protection, in percent. Default 50
        (:data:`~reident_airflow.engine.direct_match.DEFAULT_TARGET`): ``P_c < 50`` means that
        more than half of the individuals are expected to be re-identified from that one column,
        which takes both most values released unchanged and most values distinct, i.e. an
        identifier or near-identifier left in place. At 50 the gate never fails a
        low-cardinality column, nor a column that was mostly perturbed; raise it (e.g. 90) for a
        stricter release.
    :param columns: score only these columns (list or comma-separated string); default: every
        column of both tables but the key.

    ``report_path`` (templated; a local path or an object-storage URL): where to write the HTML
    report of the run; its location is pushed to XCom under ``report_location`` and its URL
    (``report_base_url``, or an object-storage URL) under ``report_url``, the task's
    "Re-identification report" link. ``on_breach``: ``"fail"`` (default:
    :class:`ReidentificationBreach`, no retries, the breach notifier's ``check`` is
    ``"direct_match"``), ``"skip"`` (the task and its downstream are skipped) or ``"warn"``
    (log, succeed). Both, and ``database`` / ``hook_params``, are
    :class:`~reident_airflow.operators.base.ReidentOperator`'s.

    Returns the ``reident.direct_match/v1`` JSON (aggregates only: counts, protections, column
    names; it is what ``reident direct-match --json`` writes) as XCom (``return_value``, pushed
    before failing on a breach too). Bad parameters and bad input (different row
    counts, a key missing or not unique, no column in common, an empty table) fail now;
    connection and SQL errors are raised as they are, so Airflow's retries apply.
    """

    template_fields: Sequence[str] = (
        "conn_id",
        "avatar_conn_id",
        "original_table",
        "avatar_table",
        "schema",
        "avatar_schema",
        "original_path",
        "avatar_path",
        "sep",
        "key",
        "target",
        "columns",
        *ReidentOperator.template_fields,
    )
    ui_color = "#e4f0ff"
    check = "direct_match"
    report_kind = "direct_match"
    key: str | None
    target: float | str
    columns: str | Sequence[str] | None
    conn_id: str | None
    schema: str | None
    original_table: str | None
    original_path: str | None
    sep: str
    avatar_conn_id: str | None
    avatar_schema: str | None
    avatar_table: str | None
    avatar_path: str | None

    def __init__(
        self,
        *,
        key: str | None = None,
        target: float | str = DEFAULT_TARGET,
        columns: str | Sequence[str] | None = None,
        conn_id: str | None = None,
        schema: str | None = None,
        original_table: str | None = None,
        original_path: str | None = None,
        sep: str = ",",
        avatar_conn_id: str | None = None,
        avatar_schema: str | None = None,
        avatar_table: str | None = None,
        avatar_path: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.key = key
        self.target = target
        self.columns = columns
        self.conn_id = conn_id
        self.schema = schema
        self.original_table = original_table
        self.original_path = original_path
        self.sep = sep
        self.avatar_conn_id = avatar_conn_id
        self.avatar_schema = avatar_schema
        self.avatar_table = avatar_table
        self.avatar_path = avatar_path

    # -- work ------------------------------------------------------------------------------
    def _avatar_conn(self) -> str | None:
        return self.avatar_conn_id or self.conn_id or None

    def lineage_inputs(self) -> list[tuple[str | None, str | None, str | None]]:
        """The original and the released (avatar) table: both are read and compared."""
        avatar_schema = self.avatar_schema or self.schema or None
        return [
            (self.conn_id or None, self.schema or None, self.original_table)
            if self.original_table
            else (None, None, self.original_path),
            (self._avatar_conn(), avatar_schema, self.avatar_table)
            if self.avatar_table
            else (None, None, self.avatar_path),
        ]

    def _validated(self, spark: Any = None) -> DirectMatchOptions:
        """The parameters, checked (``spark``: the Spark connection of ``conn_id``, if any):
        ``key``, ``target`` and ``columns``, as the counting functions take them."""
        self.check_on_breach()
        self.check_report_base_url()
        sides = (
            ("original", self.original_table, self.original_path, self.conn_id or None),
            ("avatar", self.avatar_table, self.avatar_path, self._avatar_conn()),
        )
        for name, table, path, conn in sides:
            if bool(table) == bool(path):
                raise ReidentConfigurationError(
                    f"give either {name}_table (with a connection) or {name}_path"
                )
            if table and not conn:
                what = "conn_id" if name == "original" else "avatar_conn_id or conn_id"
                raise ReidentConfigurationError(f"{name}_table needs {what}")
        if not isinstance(self.sep, str) or len(self.sep) != 1:
            raise ReidentConfigurationError(f"sep must be a single character, got {self.sep!r}")
        key = self.key.strip() if isinstance(self.key, str) else self.key
        if key is not None and not isinstance(key, str):
            raise ReidentConfigurationError("key must be a column name")
        key = key or None
        if spark is not None:
            self._check_spark_sides(key)
        if key is None and (self.original_table or self.avatar_table):
            from reident_airflow.sources.direct_match_sql import NO_KEY_MESSAGE

            raise ReidentConfigurationError(f"{NO_KEY_MESSAGE} (key=...)")
        target = parse_number(self.target, "target")
        target = DEFAULT_TARGET if target is None else float(target)
        from reident_airflow.engine.direct_match import validate_target

        with self.input_errors():
            target = validate_target(target)
        columns = None if self.columns in (None, "") else parse_columns(self.columns, "columns")
        check_paths(
            [("report_path", self.report_path)],
            [("the original file", self.original_path), ("the avatar file", self.avatar_path)],
        )
        return DirectMatchOptions(
            key=key, target=target, columns=None if columns is None else tuple(columns)
        )

    def _frame(
        self, table: str | None, path: str | None, conn_id: str | None, schema: Any
    ) -> pd.DataFrame:
        """One side, every column Arrow-backed as the engine compares them, through the
        side's source (:meth:`open_source`,
        :meth:`~reident_airflow.sources.Source.comparison_rows`): a file's rows (one without
        records an empty frame: the engine names the empty side), or a whole table typed
        from its reflected column types."""
        with self.open_source(
            path=path, conn_id=conn_id, sep=self.sep, table=table, schema=schema or None
        ) as source:
            return source.comparison_rows()

    def _compute(self, options: DirectMatchOptions, spark: Any = None) -> DirectMatchResult:
        if spark is not None:
            return self._direct_match_on_spark(options, spark)
        avatar_schema = self.avatar_schema or self.schema or None
        if (
            self.original_table
            and self.avatar_table
            and (self.avatar_conn_id or self.conn_id) == self.conn_id
        ):
            from reident_airflow.sources.direct_match_sql import direct_match_in_database

            with self.connected(self.conn_id) as engine:
                return direct_match_in_database(
                    engine,
                    self.original_table,
                    self.avatar_table,
                    key=options.key,
                    target=options.target,
                    columns=options.columns,
                    schema=self.schema or None,
                    avatar_schema=avatar_schema,
                )
        from reident_airflow.engine.direct_match import direct_match_protection

        original = self._frame(self.original_table, self.original_path, self.conn_id, self.schema)
        avatar = self._frame(
            self.avatar_table, self.avatar_path, self._avatar_conn(), avatar_schema
        )
        return direct_match_protection(
            original, avatar, key=options.key, target=options.target, columns=options.columns
        )

    # -- on a Spark connection (issue 18) --------------------------------------------------
    def _check_spark_sides(self, key: str | None) -> None:
        """What a Spark connection can compare, checked before any reading: both sides read
        by its session, aligned on a key."""
        if self.avatar_conn_id and self.avatar_conn_id != self.conn_id:
            raise ReidentConfigurationError(
                f"the original is read by the Spark connection {self.conn_id!r}: the avatar is "
                f"read by the same session, so avatar_conn_id must be it (or unset), not "
                f"{self.avatar_conn_id!r}"
            )
        if key is None:
            raise ReidentConfigurationError(
                "on a Spark connection the records are aligned by a key column: give key=..."
            )

    def _direct_match_on_spark(self, options: DirectMatchOptions, conn: Any) -> DirectMatchResult:
        """Column Direct Match Protection of the two sides (catalog tables or Parquet paths),
        joined on the key and counted by the session of ``conn``: only counts reach the
        driver."""
        from reident_airflow.sources.cancel import SparkJobs
        from reident_airflow.sources.spark_release import direct_match_spark

        with (
            spark_session(str(self.conn_id), conn) as session,
            SparkJobs(session) as jobs,
            self.cancelling(jobs),
        ):
            original = read_spark_table(
                session, self.original_table, self.schema, self.original_path
            )
            avatar = read_spark_table(
                session, self.avatar_table, self.avatar_schema or self.schema, self.avatar_path
            )
            return direct_match_spark(
                original, avatar, key=options.key, target=options.target, columns=options.columns
            )

    def execute(self, context: Context) -> dict[str, Any]:
        from reident_airflow.operators.spark_table import spark_connection

        spark = spark_connection(self.conn_id)
        options = self._validated(spark)
        with self.input_errors():
            result = self._compute(options, spark)
        from reident_airflow.engine.direct_match import direct_match_report
        from reident_airflow.summary import direct_match_summary

        report = direct_match_report(result)
        # the HTML report is written before acting on a breach: the evidence of the run
        location = self.publish(context, report, source=str(self.avatar_table or self.avatar_path))
        self.log.info("%s", direct_match_summary(report))
        if not result.passed:
            self.gate(context, report, message=self._breach_message(result), location=location)
        return report

    def _breach_message(self, result: DirectMatchResult) -> str:
        where = self.avatar_table or self.avatar_path
        below = result.below_target
        shown = ", ".join(below[:10]) + (f" and {len(below) - 10} more" if len(below) > 10 else "")
        return (
            f"column direct match protection gate breached for {where!r} ({result.records} "
            f"records): protection = {result.protection:.4g} (limit: at least "
            f"{result.target:g}); columns below target: {shown}"
        )
