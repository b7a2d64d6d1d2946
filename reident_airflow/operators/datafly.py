"""``DataflyOperator``: k-anonymize a staged table with Datafly and publish it atomically."""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from reident_airflow._compat import BaseOperator, Context
from reident_airflow.engine.errors import (
    AnonymizationInfeasibleError,
    InvalidInputError,
    ReidentError,
)
from reident_airflow.engine.hierarchies import Hierarchy
from reident_airflow.operators._common import (
    as_configuration_error,
    check_paths,
    local_file,
    parse_columns,
    parse_number,
    push_report,
    sqlalchemy_engine,
)
from reident_airflow.operators.errors import ReidentConfigurationError, ReidentificationBreach

__all__ = ["HIERARCHY_BUILDERS", "DataflyOperator", "resolve_hierarchies"]

#: The ``"type"`` of a hierarchy spec given as a dict, and the keys each one takes.
HIERARCHY_BUILDERS: dict[str, tuple[str, ...]] = {
    "arx": ("path", "sep"),
    "interval": ("widths", "top"),
    "masking": ("mask_char", "steps"),
    "date": ("top",),
}


def _parse_mapping(value: Any, field: str) -> dict[str, Any]:
    """A rendered mapping: a dict, or its JSON (or Python literal) text."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        text = value.strip()
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(parsed, Mapping):
                return dict(parsed)
    raise ReidentConfigurationError(
        f"{field} must be a mapping {{column: hierarchy}} (a dict, or its JSON text)"
    )


def _hierarchy_files(specs: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """The files the hierarchy specs read, as ``(description, path)`` pairs."""
    files: list[tuple[str, str | None]] = []
    for column, spec in specs.items():
        path = spec.get("path") if isinstance(spec, Mapping) else spec
        if isinstance(path, str | os.PathLike):
            files.append((f"the hierarchy file of {column}", os.fspath(path)))
    return files


def resolve_hierarchies(
    specs: Mapping[str, Any],
    frame: pd.DataFrame,
    qis: Sequence[str],
    *,
    sep: str = ";",
) -> dict[str, Hierarchy]:
    """Build the hierarchy of each QI from its spec.

    A spec is one of: a path (local or object storage) to a hierarchy in ARX's CSV format
    (``sep``-separated); ``{"type": "arx", "path": ..., "sep": ";"}``; a builder made from
    the column's own values -- ``{"type": "interval", "widths": [5, 10, 20], "top": "*"}``
    (integers), ``{"type": "masking", "mask_char": "*", "steps": [1, 2]}`` (codes such as
    postcodes), ``{"type": "date", "top": "*"}`` (day -> month -> year); or a
    :class:`~reident_airflow.engine.hierarchies.Hierarchy`. Specs of columns that are not
    QIs are ignored (one mapping can serve runs on different QIs); a QI without a spec is an
    error of :func:`~reident_airflow.engine.datafly.datafly`, which also catches a typo.
    """
    from reident_airflow.engine.hierarchies import (
        date_hierarchy,
        interval_hierarchy,
        load_hierarchy,
        masking_hierarchy,
    )

    out: dict[str, Hierarchy] = {}
    for column, spec in specs.items():
        if column not in qis:
            continue  # a library of hierarchies may cover more columns than this run's QIs
        if isinstance(spec, Hierarchy):
            out[column] = spec
            continue
        if isinstance(spec, str):
            spec = {"type": "arx", "path": spec}
        if not isinstance(spec, Mapping):
            raise InvalidInputError(
                f"the hierarchy of {column!r} must be a path or a builder spec (a dict)"
            )
        kind = spec.get("type")
        if kind not in HIERARCHY_BUILDERS:
            raise InvalidInputError(
                f"the hierarchy of {column!r} has type {kind!r}; use one of "
                f"{', '.join(map(repr, HIERARCHY_BUILDERS))}"
            )
        extra = sorted(set(spec) - {"type", *HIERARCHY_BUILDERS[kind]})
        if extra:
            raise InvalidInputError(
                f"the {kind} hierarchy of {column!r} does not take {', '.join(extra)}"
            )
        if kind == "arx":
            path = spec.get("path")
            if not isinstance(path, str) or not path:
                raise InvalidInputError(f"the arx hierarchy of {column!r} needs a path")
            with local_file(path) as local:
                out[column] = load_hierarchy(local, sep=spec.get("sep", sep), column=column)
            continue
        if column not in frame.columns:
            continue  # reported by Datafly as an unknown quasi-identifier
        values = frame[column].unique()
        if kind == "interval":
            out[column] = interval_hierarchy(
                values,
                widths=spec.get("widths", (5, 10, 20)),
                top=spec.get("top", "*"),
                column=column,
            )
        elif kind == "masking":
            out[column] = masking_hierarchy(
                values,
                mask_char=spec.get("mask_char", "*"),
                steps=spec.get("steps"),
                column=column,
            )
        else:
            out[column] = date_hierarchy(values, top=spec.get("top", "*"), column=column)
    return out


class DataflyOperator(BaseOperator):
    """k-anonymize a staged table with Datafly (metrics.md §9) and publish the result atomically.

    Generalizes the quasi-identifiers one level at a time (the QI with the most distinct values
    first) until every record shares its QI values with at least ``k - 1`` others, except at
    most ``suppression_limit`` records, which are removed. Non-QI columns are untouched, so an
    id column passes through (it is what aligns the result with the original later).

    Source (read whole, never modified): ``conn_id`` with ``table`` (and ``schema``) or
    ``sql``; or ``path``, a CSV (``sep``, read as text) or Parquet file, local or an
    object-storage URL Airflow supports.

    Target (written atomically: readers see the previous release or the new one, never a part;
    a failed run leaves the previous release as it was): ``target_table`` (with
    ``target_schema``) on ``target_conn_id`` (default ``conn_id``), written to
    ``<target_table>__reident_new`` and swapped in (see :mod:`reident_airflow.sources.writers`);
    or ``target_path``, a local ``*.csv`` (``target_sep``, default ``sep``) or ``*.parquet``
    file, written to a temporary file and renamed. The target may not be the source.

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

    Returns the ``reident.datafly/v1`` report (aggregates only: levels, steps, counts,
    information loss) with ``"passed": true`` and ``"output"`` (where it wrote and how many
    records) as XCom, also pushed under ``reident_report``. When k cannot be reached within the
    limit the task fails without retries (:class:`ReidentificationBreach`, ``check="datafly"``)
    after pushing the best attempt (``"passed": false``); nothing is written. Bad parameters and
    input (unknown QI, a hierarchy that does not cover a value) fail now too; connection and
    SQL errors are raised as they are, so Airflow's retries apply.

    ``report_path`` (templated; a local path or an object-storage URL): where to write a
    self-contained HTML report of the run, also when k cannot be reached; its location is
    pushed to XCom under ``reident_report_path``. Needs the ``report`` extra (matplotlib).
    """

    template_fields: Sequence[str] = (
        "conn_id",
        "table",
        "schema",
        "sql",
        "path",
        "sep",
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
        "report_path",
    )
    ui_color = "#e4ffe8"

    def __init__(
        self,
        *,
        quasi_identifiers: str | Sequence[str],
        k: int | str,
        hierarchies: Mapping[str, Any] | str,
        suppression_limit: int | float | str | None = None,
        conn_id: str | None = None,
        table: str | None = None,
        schema: str | None = None,
        sql: str | None = None,
        path: str | None = None,
        sep: str = ",",
        hierarchy_sep: str = ";",
        target_table: str | None = None,
        target_schema: str | None = None,
        target_conn_id: str | None = None,
        target_path: str | None = None,
        target_sep: str | None = None,
        chunk_rows: int | None = None,
        report_path: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.quasi_identifiers = quasi_identifiers
        self.k = k
        self.hierarchies = hierarchies
        self.suppression_limit = suppression_limit
        self.conn_id = conn_id
        self.table = table
        self.schema = schema
        self.sql = sql
        self.path = path
        self.sep = sep
        self.hierarchy_sep = hierarchy_sep
        self.target_table = target_table
        self.target_schema = target_schema
        self.target_conn_id = target_conn_id
        self.target_path = target_path
        self.target_sep = target_sep
        self.chunk_rows = chunk_rows
        self.report_path = report_path

    # -- seams -----------------------------------------------------------------------------
    def get_engine(self, conn_id: str) -> Engine:
        """The SQLAlchemy engine of an Airflow connection (tests may replace this)."""
        return sqlalchemy_engine(conn_id)

    # -- validation (after rendering) ------------------------------------------------------
    def _validated(self) -> dict[str, Any]:
        qis = parse_columns(self.quasi_identifiers, "quasi_identifiers")
        if not qis:
            raise ReidentConfigurationError("quasi_identifiers needs one or more column names")
        k = parse_number(self.k, "k", integer=True)
        if k is None:
            raise ReidentConfigurationError("k is required")
        limit: int | float | None
        if isinstance(self.suppression_limit, str):
            text = self.suppression_limit.strip()
            if text.lower() in {"", "none"}:
                limit = None
            else:
                import argparse

                from reident_airflow.commands.datafly import parse_suppression_limit

                try:
                    limit = parse_suppression_limit(text)
                except argparse.ArgumentTypeError as exc:
                    raise ReidentConfigurationError(f"suppression_limit {exc}") from None
        elif self.suppression_limit is None or isinstance(self.suppression_limit, int | float):
            limit = self.suppression_limit
        else:
            raise ReidentConfigurationError("suppression_limit must be a number or None")
        hierarchies = _parse_mapping(self.hierarchies, "hierarchies")
        for name, value in (("sep", self.sep), ("hierarchy_sep", self.hierarchy_sep)):
            if not isinstance(value, str) or len(value) != 1:
                raise ReidentConfigurationError(f"{name} must be a single character")
        target_sep = self.target_sep or self.sep
        if not isinstance(target_sep, str) or len(target_sep) != 1:
            raise ReidentConfigurationError("target_sep must be a single character")

        has_db = bool(self.conn_id)
        if has_db == bool(self.path):
            raise ReidentConfigurationError("give either conn_id (with table or sql) or path")
        if has_db and bool(self.table) == bool(self.sql):
            raise ReidentConfigurationError("with conn_id, give either table or sql")
        if bool(self.target_table) == bool(self.target_path):
            raise ReidentConfigurationError("give either target_table or target_path")
        target_conn = self.target_conn_id or self.conn_id or None
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
        if self.target_path:
            from reident_airflow.sources.writers import file_format

            if "://" in self.target_path:
                raise ReidentConfigurationError(
                    "target_path must be a local file: an object-storage upload cannot be "
                    "made atomic here; write to a table or a local path"
                )
            try:
                file_format(self.target_path)
            except ReidentError as exc:
                raise as_configuration_error(exc) from None
        check_paths(
            [("target_path", self.target_path), ("report_path", self.report_path)],
            [("the source file", self.path), *_hierarchy_files(hierarchies)],
        )
        return {
            "qis": qis,
            "k": int(k),
            "limit": limit,
            "hierarchies": hierarchies,
            "target_conn": target_conn,
            "target_sep": target_sep,
        }

    # -- work ------------------------------------------------------------------------------
    def _read(self, qis: Sequence[str]) -> tuple[pd.DataFrame, dict[str, Any]]:
        from reident_airflow.sources.writers import read_file_frame, read_sql_frame

        if self.path:
            with local_file(self.path) as local:
                return read_file_frame(local, sep=self.sep, categorical=qis), {}
        engine = self.get_engine(str(self.conn_id))
        try:
            return read_sql_frame(
                engine, table=self.table or None, sql=self.sql or None, schema=self.schema or None
            )
        finally:
            engine.dispose()

    def _write(
        self, params: dict[str, Any], table: pd.DataFrame, types: dict[str, Any]
    ) -> dict[str, Any]:
        from reident_airflow.sources import writers

        if self.target_path:
            options: dict[str, Any] = {"sep": params["target_sep"]}
            if self.chunk_rows:
                options["chunk_rows"] = self.chunk_rows
            written = writers.write_file_atomic(table, self.target_path, **options)
            return {"path": self.target_path, "records": written}
        engine = self.get_engine(params["target_conn"])
        try:
            options = {"schema": self.target_schema or None}
            if types and params["target_conn"] == self.conn_id:  # the source's own types
                options["column_types"] = {c: t for c, t in types.items() if c not in params["qis"]}
            if self.chunk_rows:
                options["chunk_rows"] = self.chunk_rows
            written = writers.write_table_atomic(engine, table, str(self.target_table), **options)
        finally:
            engine.dispose()
        return {
            "conn_id": params["target_conn"],
            "schema": self.target_schema or None,
            "table": self.target_table,
            "records": written,
        }

    def execute(self, context: Context) -> dict[str, Any]:
        from reident_airflow.commands.datafly import infeasible_report
        from reident_airflow.engine.datafly import datafly

        params = self._validated()
        qis, k = params["qis"], params["k"]
        try:
            frame, types = self._read(qis)
            hierarchies = resolve_hierarchies(
                params["hierarchies"], frame, qis, sep=self.hierarchy_sep
            )
            self.log.info("Datafly on %s records, quasi-identifiers %s, k=%s", len(frame), qis, k)
            result = datafly(frame, qis, hierarchies, k, params["limit"], self.log.info)
        except AnonymizationInfeasibleError as exc:
            report = infeasible_report(exc, len(frame), k)
            push_report(context, report)
            location = self._html_report(report, context)
            if location:  # the alert and the XCom point to the evidence of the run
                report = dict(report, report_location=location)
                push_report(context, report)
            raise ReidentificationBreach(
                f"Datafly cannot anonymize {self._where()!r}: {exc}",
                breaches=[
                    {
                        "metric": "datafly.records_below_k",
                        "observed": report["below_k"],
                        "limit": report["suppression_limit"],
                    }
                ],
                report=report,
                check="datafly",
                quasi_identifiers=qis,
                k=k,
            ) from None
        except ReidentError as exc:
            raise as_configuration_error(exc) from None
        self.log.info(
            "k=%s reached: levels %s, %s of %s records suppressed; writing %s records",
            k,
            result.levels,
            result.suppressed_records,
            result.records,
            result.released_records,
        )
        from reident_airflow.sources.writers import TableWriteError

        try:
            output = self._write(params, result.table, types)
        except TableWriteError as exc:
            if exc.deterministic:  # a value, a type, a constraint, the SQL: a retry fails alike
                raise as_configuration_error(exc) from None
            raise  # connection and timeout errors keep Airflow's retries
        except ReidentError as exc:
            raise as_configuration_error(exc) from None
        report = result.to_dict()
        report["passed"] = True
        report["output"] = output
        push_report(context, report)
        self._html_report(report, context)
        return report

    def _html_report(self, report: dict[str, Any], context: Context) -> str | None:
        """Write the HTML report when ``report_path`` is set; its location, or None."""
        if not self.report_path:
            return None
        from reident_airflow.report.runs import operator_report

        return operator_report(
            self.report_path,
            report,
            kind="datafly",
            context=context,
            source=self._where(),
            logger=self.log,
        )

    def _where(self) -> str:
        return str(self.table or ("query" if self.sql else self.path))
