"""``DataflyOperator``: k-anonymize a staged table with Datafly and publish it atomically."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, cast

import pandas as pd

from reident_airflow._atomic import DEFAULT_LOCK_TIMEOUT
from reident_airflow._compat import Context
from reident_airflow.engine.catalogue import COMPARED_THRESHOLDS
from reident_airflow.engine.errors import AnonymizationInfeasibleError, InvalidInputError
from reident_airflow.engine.numbers import is_unset
from reident_airflow.engine.options import AssessmentOptions, Breach, Thresholds
from reident_airflow.operators.base import StagedTableOperator, check_paths
from reident_airflow.operators.hierarchy_specs import (
    HIERARCHY_BUILDERS,
    hierarchy_files,
    resolve_hierarchies,
)
from reident_airflow.operators.params import (
    parse_columns,
    parse_flag,
    parse_mapping,
    parse_number,
)
from reident_airflow.operators.spark_table import read_spark_frame
from reident_airflow.outcomes import ReidentConfigurationError

__all__ = [
    "ATOMIC_RENAME_SCHEMES",
    "HIERARCHY_BUILDERS",
    "DataflyOperator",
    "DataflyOptions",
    "resolve_hierarchies",
]

#: The schemes of a Spark release's ``target_path`` whose file system renames a folder in one
#: step.
ATOMIC_RENAME_SCHEMES = frozenset({"", "file", "hdfs"})


@dataclass(frozen=True)
class DataflyOptions:
    """The rendered parameters of a :class:`DataflyOperator` run, checked once
    (:meth:`DataflyOperator._validated`) and read by its steps."""

    #: The QI columns, in the order that breaks ties.
    quasi_identifiers: tuple[str, ...]
    k: int
    #: Most records removed: a count, a fraction of the records, or ``None`` for k records.
    suppression_limit: int | float | None
    #: ``{qi: spec}`` as given (see :func:`resolve_hierarchies`).
    hierarchies: Mapping[str, Any]
    #: The connection the release is written through (``None`` for a file).
    target_conn: str | None
    target_sep: str
    chunk_rows: int | None
    #: Seconds a run waits for another publishing the same target.
    lock_timeout: float
    #: The limits on the difference from the release replaced (``None``: not compared).
    compared: Thresholds | None = None
    #: Their warning levels (``warn_min_arrival_k``, ...; none set: no warning).
    compared_warn: Thresholds = field(default_factory=Thresholds)
    #: Keep a release ledger beside the target (docs/metrics.md §12).
    release_ledger: bool = False


class DataflyOperator(StagedTableOperator):
    """k-anonymize a staged table with Datafly (docs/metrics.md §9) and publish the result
    atomically.

    Generalizes the quasi-identifiers one level at a time (the QI with the most distinct values
    first) until every record shares its QI values with at least ``k - 1`` others, except at
    most ``suppression_limit`` records, which are removed. Non-QI columns are untouched, so an
    id column passes through (it is what aligns the result with the original later).

    Source (read whole, never modified): ``conn_id`` with ``table`` (and ``schema``) or
    ``sql``; or ``path``, a CSV (``sep``, read as text) or Parquet file, local or an
    object-storage URL Airflow supports.

    Target (written atomically: readers see the previous release or the new one, never a part;
    a failed run leaves the previous release as it was): ``target_table`` (with
    ``target_schema``) on ``target_conn_id`` (default ``conn_id``), written to a staging table
    of the run's own, ``<target_table>__reident_<8 hex>``, and swapped in (see
    :mod:`reident_airflow.sources.publish`); or ``target_path``, a local ``*.csv``
    (``target_sep``, default ``sep``) or ``*.parquet`` file, written to a temporary file and
    renamed. The target may not be the source.

    One writer per target: the run holds the target's lock while it writes and swaps
    (PostgreSQL advisory lock, MariaDB/MySQL ``GET_LOCK``, a lock file beside a SQLite database
    or a file target), so a backfill beside a scheduled run never mixes the rows of both.
    ``lock_timeout`` (seconds, default 600): how long a run waits for another publishing the
    same target; it then publishes its own release in full, or past the timeout fails with
    :class:`~reident_airflow.engine.errors.TargetBusyError` ("another run is publishing ..."),
    which Airflow retries (an infrastructure error, not the data's). DAGs that publish should
    still set ``max_active_runs=1``.

    With a ``conn_id`` of the apache-spark provider (``spark`` or ``spark_connect``), the
    ``table`` or Parquet ``path`` is read by that connection's session, the search runs on
    histograms Spark counts, and Spark writes the release: ``target_table`` (with
    ``target_schema``) of the session's catalog, or ``target_path``, a Parquet folder (local or
    ``hdfs://``; classic sessions only): records never reach the driver. Builder hierarchies
    (interval, masking, date) are made from each QI's distinct values, which Spark collects (a
    hierarchy lists them anyway). The release is written as a new table and swapped in, or as
    a Parquet folder written beside ``target_path`` and renamed into place through Hadoop's
    file system (renames on object storage are copies, so such a target is refused).

    :param quasi_identifiers: QI columns (list, or comma-separated string); the order breaks
        ties between QIs with as many distinct values.
    :param k: the k to reach.
    :param hierarchies: ``{qi: spec}``, one per QI (a dict, or its JSON text once rendered).
        A spec is a path to an ARX CSV hierarchy (``hierarchy_sep``, default ``;``), or a
        builder spec: ``{"type": "interval", "widths": [5, 10, 20]}``,
        ``{"type": "masking", "steps": [1, 2, 3]}``, ``{"type": "date"}``,
        ``{"type": "arx", "path": ..., "sep": ";"}`` (see :func:`resolve_hierarchies`).
    :param suppression_limit: most records that may be removed: a count (``5``), a fraction of
        the records (``0.01``), or ``None`` for ``k`` records (Sweeney's default).
    :param min_arrival_k: compare the anonymized release with the one it replaces before
        publishing (docs/metrics.md §12): the records new since then must be at least this
        many in every class they arrive in. ``max_arrival_risk``, ``min_departure_k``,
        ``max_departure_risk``: the other limits on that difference. With any of them (or
        ``previous_release``) the release is compared, the difference is reported under
        ``since_last_release``, and a breach acts as ``on_breach`` says (``"fail"``: the task
        fails and nothing is published). On a Spark connection the release (not yet
        written) is compared by Spark with the one it replaces, read by the same session.
    :param warn_min_arrival_k: warning level of ``min_arrival_k`` (and
        ``warn_max_arrival_risk``, ``warn_min_departure_k``, ``warn_max_departure_risk`` of
        the others), as the risk operator's: as strict as its failing level or stricter;
        crossing it logs one line, alerts (outcome ``"warn"``, through the
        :class:`~reident_airflow.notifiers.ReidentBreachNotifier` of ``on_failure_callback``)
        and lists it under ``warnings`` in the report: the release is published and the task
        succeeds. A warning level alone also has the release compared.
    :param previous_release: the release replaced (templated): a file for ``target_path``, a
        table of the target's connection for ``target_table`` (on Spark: a Parquet path, or a
        table of the session's catalog, in ``target_schema``). Default: the target itself,
        as the previous run published it. When it does not exist yet (the first run) there is
        nothing to compare: ``since_last_release`` is ``null`` and the release is published.
        The candidate is written once to a scratch file (or a scratch table of the target's
        database, dropped after) to be compared where the data is; with more than one run
        publishing the same target, set ``max_active_runs=1`` so that the release compared
        is the one replaced. It may name a release ledger instead (a ``<target>.ledger.parquet``
        file, a ``<target>__ledger`` table): the same counts, from the digests.
    :param release_ledger: keep a release ledger beside the target (docs/metrics.md §12): a
        digest of every published row and of its class, in ``<target_path>.ledger.parquet``
        (DuckDB) or the table ``<target_table>__ledger`` (the database), written with the
        release under its lock (on a database, swapped in with it in one step). Then, when
        the release itself is gone (deleted, shipped away), the next run compares the
        candidate with the ledger: the same counts. Default ``False``: no ledger, nothing
        else written. Not on a Spark connection yet.

    Returns the ``reident.datafly/v1`` report (aggregates only: levels, steps, counts,
    information loss, ``before`` and ``after``: k, risks and loss of the input as staged and
    of the release) with ``"passed": true``, ``"output"`` (where it wrote and how many
    records), ``"input"`` and ``"output_fingerprint"`` (the fingerprints of the staged input
    and of the written release, :mod:`reident_airflow.sources.fingerprint`; ``null`` on a
    Spark connection) as XCom (``return_value``). When k cannot be reached within the
    limit the task fails without retries (:class:`ReidentificationBreach`, ``check="datafly"``)
    after pushing the best attempt (``"passed": false``, as ``return_value``); nothing is
    written. Bad parameters and
    input (unknown QI, a hierarchy that does not cover a value) fail now too; connection and
    SQL errors are raised as they are, so Airflow's retries apply.

    ``report_path`` (templated; a local path or an object-storage URL): where to write a
    self-contained HTML report of the run, also when k cannot be reached; its location is
    pushed to XCom under ``report_location`` and its URL, when it has one (``report_base_url``
    or an object-storage URL), under ``report_url``: the task's "Re-identification report"
    link. Needs the ``report`` extra (matplotlib). ``where``, ``database``, ``hook_params``:
    see :class:`~reident_airflow.operators.base.ReidentOperator` and ``StagedTableOperator``.
    """

    template_fields: Sequence[str] = (
        "quasi_identifiers",
        "k",
        "suppression_limit",
        "hierarchies",
        "hierarchy_sep",
        "target_conn_id",
        "target_table",
        "target_schema",
        "target_path",
        "target_sep",
        "chunk_rows",
        "lock_timeout",
        "previous_release",
        "release_ledger",
        *COMPARED_THRESHOLDS,
        *(f"warn_{name}" for name in COMPARED_THRESHOLDS),
        *StagedTableOperator.template_fields,
    )
    ui_color = "#e4ffe8"
    check = "datafly"
    report_kind = "datafly"
    quasi_identifiers: str | Sequence[str]
    k: int | str
    hierarchies: Mapping[str, Any] | str
    suppression_limit: int | float | str | None
    hierarchy_sep: str
    target_conn_id: str | None
    target_table: str | None
    target_schema: str | None
    target_path: str | None
    target_sep: str | None
    chunk_rows: int | str | None
    lock_timeout: float | str | None
    previous_release: str | None
    release_ledger: bool | str
    min_arrival_k: int | str | None
    max_arrival_risk: float | str | None
    min_departure_k: int | str | None
    max_departure_risk: float | str | None
    warn_min_arrival_k: int | str | None
    warn_max_arrival_risk: float | str | None
    warn_min_departure_k: int | str | None
    warn_max_departure_risk: float | str | None

    def __init__(
        self,
        *,
        quasi_identifiers: str | Sequence[str],
        k: int | str,
        hierarchies: Mapping[str, Any] | str,
        suppression_limit: int | float | str | None = None,
        hierarchy_sep: str = ";",
        target_conn_id: str | None = None,
        target_table: str | None = None,
        target_schema: str | None = None,
        target_path: str | None = None,
        target_sep: str | None = None,
        chunk_rows: int | str | None = None,
        lock_timeout: float | str | None = None,
        previous_release: str | None = None,
        min_arrival_k: int | str | None = None,
        max_arrival_risk: float | str | None = None,
        min_departure_k: int | str | None = None,
        max_departure_risk: float | str | None = None,
        warn_min_arrival_k: int | str | None = None,
        warn_max_arrival_risk: float | str | None = None,
        warn_min_departure_k: int | str | None = None,
        warn_max_departure_risk: float | str | None = None,
        release_ledger: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.quasi_identifiers = quasi_identifiers
        self.k = k
        self.hierarchies = hierarchies
        self.suppression_limit = suppression_limit
        self.hierarchy_sep = hierarchy_sep
        self.target_conn_id = target_conn_id
        self.target_table = target_table
        self.target_schema = target_schema
        self.target_path = target_path
        self.target_sep = target_sep
        self.chunk_rows = chunk_rows
        self.lock_timeout = lock_timeout
        self.previous_release = previous_release
        self.min_arrival_k = min_arrival_k
        self.max_arrival_risk = max_arrival_risk
        self.min_departure_k = min_departure_k
        self.max_departure_risk = max_departure_risk
        self.warn_min_arrival_k = warn_min_arrival_k
        self.warn_max_arrival_risk = warn_max_arrival_risk
        self.warn_min_departure_k = warn_min_departure_k
        self.warn_max_departure_risk = warn_max_departure_risk
        self.release_ledger = release_ledger

    def _validated(self, spark: Any = None) -> DataflyOptions:
        """The parameters, checked (``spark``: the Spark connection of the source, if any)."""
        self.check_report_base_url()
        qis = parse_columns(self.quasi_identifiers, "quasi_identifiers")
        if not qis:
            raise ReidentConfigurationError("quasi_identifiers needs one or more column names")
        k = parse_number(self.k, "k", integer=True)
        if k is None:
            raise ReidentConfigurationError("k is required")
        hierarchies = parse_mapping(self.hierarchies, "hierarchies")
        chunk_rows = parse_number(self.chunk_rows, "chunk_rows", integer=True)
        if chunk_rows is not None and chunk_rows < 1:
            raise ReidentConfigurationError(f"chunk_rows must be 1 or more, got {chunk_rows}")
        lock_timeout = parse_number(self.lock_timeout, "lock_timeout")
        if lock_timeout is not None and not lock_timeout >= 0:
            raise ReidentConfigurationError(
                f"lock_timeout must be 0 or more seconds, got {self.lock_timeout!r}"
            )
        target_sep = self.target_sep or self.sep
        for name, value in (
            ("sep", self.sep),
            ("hierarchy_sep", self.hierarchy_sep),
            ("target_sep", target_sep),
        ):
            if not isinstance(value, str) or len(value) != 1:
                raise ReidentConfigurationError(f"{name} must be a single character")
        if spark is not None:
            from reident_airflow.operators.spark_table import check_spark_source

            check_spark_source(self)
        else:
            self.check_staged()
        target_conn = self._checked_target(spark)
        ledger = parse_flag(self.release_ledger, "release_ledger")
        if ledger and spark is not None:
            raise ReidentConfigurationError(
                "release_ledger is not kept on a Spark connection yet: publish to a database "
                "table or a local file"
            )
        # a Spark release is a folder, checked by _check_spark_target
        target_path = None if spark is not None else self.target_path
        check_paths(
            [("target_path", target_path), ("report_path", self.report_path)],
            [("the source file", self.path), *hierarchy_files(hierarchies)],
        )
        compared = self._compared_limits(qis)
        return DataflyOptions(
            quasi_identifiers=tuple(qis),
            k=int(k),
            suppression_limit=self._suppression_limit(),
            hierarchies=hierarchies,
            target_conn=target_conn,
            target_sep=target_sep,
            chunk_rows=None if chunk_rows is None else int(chunk_rows),
            lock_timeout=DEFAULT_LOCK_TIMEOUT if lock_timeout is None else float(lock_timeout),
            compared=None if compared is None else compared[0],
            compared_warn=Thresholds() if compared is None else compared[1],
            release_ledger=ledger,
        )

    def _compared_limits(self, qis: Sequence[str]) -> tuple[Thresholds, Thresholds] | None:
        """The limits on the difference from the release replaced and their warning levels,
        checked (``None``: no limit, no warning level and no ``previous_release``: not
        compared)."""
        names = (*COMPARED_THRESHOLDS, *(f"warn_{name}" for name in COMPARED_THRESHOLDS))
        limits = {name: getattr(self, name) for name in names}
        given = {name: value for name, value in limits.items() if not is_unset(value)}
        if not given and is_unset(self.previous_release):
            return None
        with self.input_errors():
            options = AssessmentOptions.from_mapping(
                {"quasi_identifiers": list(qis), "previous_release": "target", **given}
            )
        return options.thresholds, options.warn_thresholds

    def _suppression_limit(self) -> int | float | None:
        """``suppression_limit`` as a count or a fraction (``None``: k records)."""
        value = self.suppression_limit
        if is_unset(value):
            return None
        if isinstance(value, str):
            from reident_airflow.engine.datafly import parse_suppression_limit

            try:
                return parse_suppression_limit(value)
            except InvalidInputError as exc:
                raise ReidentConfigurationError(f"suppression_limit {exc}") from exc
        if isinstance(value, int | float):
            return value
        raise ReidentConfigurationError("suppression_limit must be a number or None")

    def _checked_target(self, spark: Any = None) -> str | None:
        """Where the release goes: one target, never the source; its connection, if any
        (``spark``: the source's Spark connection, which writes the release too)."""
        if bool(self.target_table) == bool(self.target_path):
            raise ReidentConfigurationError("give either target_table or target_path")
        target_conn = self.target_conn_id or self.conn_id or None
        if spark is not None:
            self._check_spark_target(spark)
        if self.target_table:
            if not target_conn:
                raise ReidentConfigurationError("target_table needs target_conn_id (or conn_id)")
            if (
                self.table
                and target_conn == self.conn_id
                and self.target_table == self.table
                and (self.target_schema or None) == (self.schema or None)
            ):
                raise ReidentConfigurationError(
                    f"target_table {self.target_table!r} is the source table: Datafly never "
                    "overwrites its input"
                )
        elif spark is None:  # a local file (a Spark release folder: _check_spark_target)
            if "://" in str(self.target_path):
                raise ReidentConfigurationError(
                    "target_path must be a local file: an object-storage upload cannot be "
                    "made atomic here; write to a table or a local path"
                )
            from reident_airflow.sources.writers import file_format

            with self.input_errors():
                file_format(str(self.target_path))
        return target_conn

    def lineage_outputs(self) -> list[tuple[str | None, str | None, str | None]]:
        """The published release: ``target_table`` or ``target_path``."""
        if self.target_path:
            return [(None, None, str(self.target_path))]
        if self.target_table:
            target_conn = self.target_conn_id or self.conn_id or None
            return [(target_conn, self.target_schema or None, str(self.target_table))]
        return []

    # -- work ------------------------------------------------------------------------------
    def _read(
        self, qis: Sequence[str]
    ) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any] | None]:
        """The staged table's rows, read through its source
        (:meth:`~reident_airflow.sources.Source.release_rows`: the QIs of a file as
        Categoricals), the SQL types of its columns when it is a database's (a release
        written back to the source's connection keeps them), and the source's fingerprint
        (:meth:`~reident_airflow.sources.Source.fingerprint`; the report's ``input``)."""
        with self.source() as source:
            frame, types = source.release_rows(qis)
            found = source.fingerprint(rows=len(frame))
        return frame, types, None if found is None else found.to_dict()

    def _write(
        self, options: DataflyOptions, table: pd.DataFrame, types: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Write the release; where it went and how many records (the report's ``output``),
        and the fingerprint of what was written (``output_fingerprint``: a file's SHA-256, a
        table's row count and snapshot, :mod:`reident_airflow.sources.fingerprint`)."""
        from reident_airflow.sources import writers
        from reident_airflow.sources.fingerprint import fingerprint_file
        from reident_airflow.sources.sql import fingerprint_sql

        chunk_rows = options.chunk_rows
        writing: dict[str, Any] = {"lock_timeout": options.lock_timeout}
        if chunk_rows:
            writing["chunk_rows"] = chunk_rows
        if options.release_ledger:
            writing["ledger"] = list(options.quasi_identifiers)
        if self.target_path:
            writing["sep"] = options.target_sep
            written = writers.write_file_atomic(table, self.target_path, **writing)
            written_file = fingerprint_file(self.target_path, rows=written)
            return {"path": self.target_path, "records": written}, written_file.to_dict()
        if types and options.target_conn == self.conn_id:  # the source's own types
            qis = options.quasi_identifiers
            writing["column_types"] = {c: t for c, t in types.items() if c not in qis}
        with self.connected(options.target_conn) as engine:
            written = writers.write_table_atomic(
                engine, table, str(self.target_table), schema=self.target_schema or None, **writing
            )
            written_table = fingerprint_sql(
                engine, table=str(self.target_table), schema=self.target_schema or None
            )
        return {
            "conn_id": options.target_conn,
            "schema": self.target_schema or None,
            "table": self.target_table,
            "records": written,
        }, written_table.to_dict()

    def _datafly(
        self, options: DataflyOptions
    ) -> tuple[Any, dict[str, Any] | None, Any, dict[str, Any] | None]:
        """Datafly on the staged file or database table: the result (``None`` when k cannot
        be reached), the best attempt's report when it cannot, the source's column types
        and its fingerprint."""
        from reident_airflow.engine.datafly import datafly, infeasible_report

        qis, k = list(options.quasi_identifiers), options.k
        frame, types, fingerprint = self._read(qis)
        hierarchies = resolve_hierarchies(options.hierarchies, frame, qis, sep=self.hierarchy_sep)
        self.log.info("Datafly on %s records, quasi-identifiers %s, k=%s", len(frame), qis, k)
        try:
            result = datafly(frame, qis, hierarchies, k, options.suppression_limit, self.log.info)
        except AnonymizationInfeasibleError as exc:
            return None, infeasible_report(exc, len(frame), k), types, fingerprint
        return result, None, types, fingerprint

    # -- on a Spark connection (issue 18) --------------------------------------------------
    def _check_spark_target(self, conn: Any) -> None:
        """What only a Spark connection ``conn`` adds to the target checks (one target, never
        the source table), before any reading: the target is written by the same session; a
        path only where a rename is atomic, written as Parquet, by a classic session, and
        never the source path."""
        if self.target_conn_id and self.target_conn_id != self.conn_id:
            raise ReidentConfigurationError(
                f"the source is read by the Spark connection {self.conn_id!r}: its release is "
                f"written by the same session, so target_conn_id must be it (or unset), not "
                f"{self.target_conn_id!r}"
            )
        if not self.target_path:
            return
        if (conn.conn_type or "").lower() == "spark_connect":
            raise ReidentConfigurationError(
                f"connection {self.conn_id!r} is a Spark Connect server, which cannot rename a "
                "path into place: write the release to a table (target_table)"
            )
        path = str(self.target_path)
        scheme = path.split("://", 1)[0].lower() if "://" in path else ""
        if scheme not in ATOMIC_RENAME_SCHEMES:
            raise ReidentConfigurationError(
                f"target_path on {scheme}:// cannot be swapped in atomically (its renames are "
                "copies): write the release to a table (target_table), or to a local or hdfs:// "
                "path"
            )
        if path.lower().endswith((".csv", ".tsv", ".txt")):
            raise ReidentConfigurationError(
                "a release written by Spark is a Parquet folder: name target_path without .csv"
            )
        if self.path and path.rstrip("/") == str(self.path).rstrip("/"):
            raise ReidentConfigurationError(
                "target_path is the source path: Datafly never overwrites its input"
            )

    def _datafly_on_spark(
        self, options: DataflyOptions, session: Any
    ) -> tuple[Any, dict[str, Any] | None]:
        """Run Datafly on the staged table, read by the Spark ``session`` of the operator's
        connection (:func:`~reident_airflow.operators.spark_table.spark_session`), on class
        histograms Spark counts: the result (a
        :class:`~reident_airflow.sources.spark_release_datafly.SparkDataflyResult`, its
        release not yet computed), or ``None`` and the report of the best attempt when k
        cannot be reached."""
        from reident_airflow.engine.datafly import infeasible_report
        from reident_airflow.sources.spark_release_datafly import datafly_spark

        qis, k = list(options.quasi_identifiers), options.k
        frame = read_spark_frame(self, session)

        def distinct(column: str) -> list[Any]:
            return [row[0] for row in frame.select(column).distinct().collect()]

        hierarchies = resolve_hierarchies(
            options.hierarchies, frame, qis, sep=self.hierarchy_sep, distinct=distinct
        )
        self.log.info("Datafly on Spark, quasi-identifiers %s, k=%s", qis, k)
        try:
            limit = options.suppression_limit
            result = datafly_spark(frame, qis, hierarchies, k, limit, self.log.info)
        except AnonymizationInfeasibleError as exc:
            return None, infeasible_report(exc, int(frame.count()), k)
        return result, None

    def _write_spark_release(
        self, result: Any, lock_timeout: float | None = None
    ) -> dict[str, Any]:
        """Have Spark compute and write the release to the target; where it went and how
        many records (the ``output`` of the report). ``lock_timeout``: how long a local
        ``target_path`` waits for another run writing it (see
        :func:`~reident_airflow.sources.spark_release_datafly.write_frame_path`)."""
        from reident_airflow.sources.spark_release_datafly import (
            write_release_path,
            write_release_table,
        )

        if self.target_path:
            if lock_timeout is None:
                write_release_path(result, str(self.target_path))
            else:
                write_release_path(result, str(self.target_path), lock_timeout=lock_timeout)
            return {"path": str(self.target_path), "records": result.released_records}
        schema, table = self.target_schema, self.target_table
        name = f"{schema}.{table}" if schema else str(table)
        write_release_table(result, name)
        return {
            "conn_id": self.conn_id,
            "schema": self.target_schema or None,
            "table": self.target_table,
            "records": result.released_records,
        }

    def execute(self, context: Context) -> dict[str, Any]:
        from reident_airflow.operators.spark_table import spark_connection, spark_session

        conn = spark_connection(self.conn_id)
        options = self._validated(conn)
        if conn is None:
            return self._run(context, options, None)
        from reident_airflow.sources.cancel import SparkJobs

        with (
            spark_session(str(self.conn_id), conn) as session,  # open until the release is written
            SparkJobs(session) as jobs,
            self.cancelling(jobs),
        ):
            return self._run(context, options, session)

    def _run(self, context: Context, options: DataflyOptions, spark: Any) -> dict[str, Any]:
        """Anonymize, then publish; ``spark``: the Spark session that reads the source."""
        qis, k = list(options.quasi_identifiers), options.k
        types: dict[str, Any] = {}
        fingerprint: dict[str, Any] | None = None  # of the input; not taken on Spark
        with self.input_errors():
            if spark is None:
                result, infeasible, types, fingerprint = self._datafly(options)
            else:
                result, infeasible = self._datafly_on_spark(options, spark)
        if infeasible is None:
            from reident_airflow.engine.datafly import empty_release_error, infeasible_report

            empty = empty_release_error(result)
            if empty is not None:  # every record suppressed: never published
                infeasible = infeasible_report(empty, result.records, k)
        if infeasible is not None:
            infeasible["input"] = fingerprint
            self._infeasible(context, infeasible, qis, k)
        self.log.info(
            "k=%s reached: levels %s, %s of %s records suppressed; writing %s records",
            k,
            result.levels,
            result.suppressed_records,
            result.records,
            result.released_records,
        )
        since: dict[str, Any] | None = None
        warnings: tuple[Breach, ...] = ()
        if options.compared is not None:
            since, warnings = self._compare(context, options, result, types, spark)
        written: dict[str, Any] | None = None  # the output's fingerprint; not taken on Spark
        with self.input_errors():  # a lost connection keeps Airflow's retries
            if spark is None:
                output, written = self._write(options, result.table, types)
            else:
                output = self._write_spark_release(result, options.lock_timeout)
        report: dict[str, Any] = result.to_dict()
        report["passed"] = True
        report["output"] = output
        report["input"] = fingerprint
        report["output_fingerprint"] = written
        if options.compared is not None:
            report["since_last_release"] = since
        if options.compared_warn.to_dict():
            report["warnings"] = [w.to_dict() for w in warnings]
        location = self.publish(context, report, source=self.source_name())
        if warnings:
            self._warn(context, report, warnings, location, qis, k)
        return report

    def _warn(
        self,
        context: Context,
        report: dict[str, Any],
        warnings: Sequence[Breach],
        location: str | None,
        qis: Sequence[str],
        k: int,
    ) -> None:
        """The warning levels the published release crossed: one log line each, then one
        alert (outcome ``"warn"``); the task succeeds."""
        for warning in warnings:
            self.log.warning(
                "warning level crossed: %s; the release goes ahead", warning.describe()
            )
        message = (
            f"the release of {self.source_name()!r} crosses warning levels on the difference "
            f"from the previous release: {'; '.join(w.describe() for w in warnings)}"
        )
        self.gate(
            context,
            report,
            message=message,
            location=location,
            quasi_identifiers=qis,
            k=k,
            breaches=[],
            outcome="warn",
        )

    # -- the release it replaces (issue 28) ------------------------------------------------
    def _compare(
        self,
        context: Context,
        options: DataflyOptions,
        result: Any,
        types: dict[str, Any],
        spark: Any = None,
    ) -> tuple[dict[str, Any] | None, tuple[Breach, ...]]:
        """The anonymized release compared with the one it replaces, before anything is
        published: the difference's JSON (``None`` on a first run, nothing to compare) and
        the warning levels it crosses (not for a limit it breaches). A breach of the limits
        acts as ``on_breach`` says: the report (with ``breaches``) is pushed and, unless
        ``"warn"``, the task stops here, the target untouched. ``spark``: the session that
        reads the source, which compares its release."""
        from reident_airflow.engine.differencing import differencing, hold_back_advice

        gate = cast("Thresholds", options.compared)
        qis = list(options.quasi_identifiers)
        with self.input_errors():
            if spark is None:
                changes = self._release_changes(options, result.table, types)
            else:
                changes = self._spark_changes(options, result.table)
        if changes is None:
            self.log.info("previous release: none yet (the first release): nothing to compare")
            return None, ()
        difference = differencing(changes)
        self.log.info(
            "since the previous release: %s arrivals, %s departures",
            difference.arrivals.records,
            difference.departures.records,
        )
        breaches = gate.check_difference(difference)
        failed = {b.metric for b in breaches}
        warned = options.compared_warn.check_difference(difference)
        warnings = tuple(w for w in warned if w.metric not in failed)
        if not breaches:
            return difference.to_dict(), warnings
        report: dict[str, Any] = result.to_dict()
        report["passed"] = False
        report["since_last_release"] = difference.to_dict()
        report["breaches"] = [b.to_dict() for b in breaches]
        if options.compared_warn.to_dict():
            report["warnings"] = [w.to_dict() for w in warnings]
        location = self.publish(context, report, source=self.source_name())
        message = (
            f"the release of {self.source_name()!r} breaches the limits on the difference from "
            f"the previous release: {'; '.join(b.describe() for b in breaches)}"
        )
        held = hold_back_advice(difference, gate.min_arrival_k, gate.max_arrival_risk)
        if held is not None:
            message += f". What to do: {held}"
        self.gate(
            context,
            report,
            message=message,
            location=location,
            quasi_identifiers=qis,
            k=options.k,
        )
        # on_breach="warn": published all the same, its warnings alerted with the breach
        return difference.to_dict(), ()

    def _release_changes(
        self, options: DataflyOptions, table: pd.DataFrame, types: dict[str, Any]
    ) -> Any:
        """The arrivals and departures of ``table`` against the release replaced
        (``previous_release``, else the target), or ``None`` when there is none yet. The
        candidate is written as the release would be -- a scratch file of the target's
        format, or a scratch table of the target's database, dropped after -- so that both
        sides are read alike, and compared where the data is. The release replaced is read
        beside the candidate (:func:`~reident_airflow.sources.previous_release`); when it is
        gone, and no ``previous_release`` is named, its ledger if one is kept."""
        import tempfile
        from pathlib import Path

        from reident_airflow.sources import previous_release, writers
        from reident_airflow.sources.release_ledger import ledger_path

        qis = list(options.quasi_identifiers)
        previous = None if is_unset(self.previous_release) else str(self.previous_release)
        if self.target_path:
            from reident_airflow.sources.files import FileSource

            old = previous or str(self.target_path)
            ledger = ledger_path(old) if previous is None and options.release_ledger else None
            suffix = "".join(Path(str(self.target_path)).suffixes) or ".csv"
            with tempfile.TemporaryDirectory(prefix="reident-") as tmp:
                scratch = Path(tmp) / f"candidate{suffix}"
                with FileSource(scratch, sep=options.target_sep) as new:
                    before = previous_release(new, old, ledger=ledger)
                    if before is None:
                        return None
                    writers.write_file_atomic(table, scratch, sep=options.target_sep)
                    with before:
                        return new.release_changes(before, qis)
        return self._table_changes(options, table, types, previous)

    def _spark_changes(self, options: DataflyOptions, release: Any) -> Any:
        """:meth:`_release_changes` on a Spark connection: the release, a Spark DataFrame not
        yet written, compared by Spark in one job with the release replaced
        (``previous_release``, else the target) read by the same session -- a table of its
        catalog (in ``target_schema``) for ``target_table``, else the Parquet folder at the
        path; ``None`` when there is none yet."""
        from reident_airflow.sources.spark import SparkSource

        previous = None if is_unset(self.previous_release) else str(self.previous_release)
        if self.target_table:
            name = previous or str(self.target_table)
            if self.target_schema:
                name = f"{self.target_schema}.{name}"
        else:
            name = previous or str(self.target_path)
        from reident_airflow.sources import previous_release

        new = SparkSource(release, label="the release", tables=bool(self.target_table))
        before = previous_release(new, name)
        if before is None:
            return None
        return new.release_changes(before, list(options.quasi_identifiers))

    def _table_changes(
        self,
        options: DataflyOptions,
        table: pd.DataFrame,
        types: dict[str, Any],
        previous: str | None,
    ) -> Any:
        """:meth:`_release_changes` for a ``target_table``: the candidate written to a
        scratch table beside the previous release, compared in the database, dropped."""
        import uuid

        from reident_airflow.sources import previous_release, writers
        from reident_airflow.sources.release_ledger import ledger_table
        from reident_airflow.sources.sql import SqlSource

        schema = self.target_schema or None
        old = previous or str(self.target_table)
        ledger = ledger_table(old) if previous is None and options.release_ledger else None
        with self.connected(options.target_conn) as engine:
            scratch = f"reident_compare_{uuid.uuid4().hex[:12]}"
            new = SqlSource(engine, table=scratch, schema=schema)
            before = previous_release(new, old, ledger=ledger)
            if before is None:
                return None
            column_types = {}
            if types and options.target_conn == self.conn_id:
                qis = options.quasi_identifiers
                column_types = {c: t for c, t in types.items() if c not in qis}
            writers.write_table_atomic(
                engine, table, scratch, schema=schema, column_types=column_types
            )
            try:
                return new.release_changes(before, list(options.quasi_identifiers))
            finally:
                import sqlalchemy as sa

                with engine.begin() as conn:
                    sa.Table(scratch, sa.MetaData(), schema=schema).drop(conn, checkfirst=True)

    def _infeasible(
        self, context: Context, report: dict[str, Any], qis: Sequence[str], k: int
    ) -> NoReturn:
        """k cannot be reached within the limit: the best attempt is reported, nothing is
        written, and the task fails without retries."""
        below = {
            "metric": "datafly.records_below_k",
            "observed": report["below_k"],
            "limit": report["suppression_limit"],
        }
        location = self.publish(context, report, source=self.source_name())
        message = f"Datafly cannot anonymize {self.source_name()!r}: {report['message']}"
        self.gate(
            context,
            report,
            message=message,
            location=location,
            quasi_identifiers=qis,
            k=k,
            breaches=[below],
        )
        raise AssertionError("on_breach='fail' always raises")  # pragma: no cover
