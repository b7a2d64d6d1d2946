"""OpenLineage for the reident operators: the datasets read and written, one data-quality
assertion per threshold and the row count, as Airflow's common.sql check operators report
them.

The START event names the datasets already (the inputs, and the output a Datafly release
will be written to); every event gives each input its ``schema`` facet, column names and
types only (a file's as DuckDB describes it, a table's by SQLAlchemy's reflection). Each
assertion carries ``params`` as common.sql's do (``geq_to`` / ``leq_to``: the limit) and,
where the report counts it, ``failures``: the records in classes below k, the failing
columns of an identifier scan. A Datafly release's assertions (its k, the records
suppressed) are on its OUTPUT dataset, which they describe.

Warning levels (``warn_*``) are assertions as well, named ``"<measure> <= <limit> (warning
level)"`` with severity ``"warn"``; ``success`` is whether the measure met the level, so a
crossed warning level reads ``success: false`` on a task that succeeded. The failing levels'
severity is ``"error"`` with ``on_breach="fail"`` and ``"warn"`` otherwise.

When the assessment holds an identifier scan, it is asserted too (:func:`report_assertions`):
the count of failing (or, under the ``"warn"`` policy, flagged) columns against 0, and one
assertion per flagged column, on that column.

Only what the run evaluated is asserted: a limit whose measure the report does not hold (an
arrival limit on a first release, or on a release with no arrivals) asserts nothing. Each
assertion has a ``description`` in words and sits on the input dataset's facets, as
Airflow's common.sql (2.4+) attaches its checks, and among its input facets, where the
OpenLineage spec declares the facet. On a database the job also gets a ``sql`` facet: the
queries the task ran, literals elided (:meth:`~reident_airflow.sources.sql.SqlSource.statements`).

The assertions (:func:`report_assertions`) and the dataset names (:func:`dataset_of`) are
plain Python; :func:`operator_lineage` turns them into the OpenLineage provider's objects and
returns None when the provider (``apache-airflow-providers-openlineage``) is not installed.
Everything reported is an aggregate: names, limits, measured values, counts.

Naming follows the OpenLineage dataset naming spec: PostgreSQL ``postgres://host:port`` with
``database.schema.table``, MySQL / MariaDB ``mysql://host:port`` with ``database.table``, a
local file ``file://<host>`` with its absolute path, object storage ``<scheme>://<bucket>``
with the key.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reident_airflow.engine.catalogue import THRESHOLDS

__all__ = [
    "LineageAssertion",
    "dataset_of",
    "file_columns",
    "file_dataset",
    "operator_lineage",
    "report_assertions",
    "table_columns",
    "tables_in_sql",
]

_DEFAULT_PORTS = {"postgres": 5432, "mysql": 3306}
_SCHEMES = {"postgres": "postgres", "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql"}


@dataclass(frozen=True)
class LineageAssertion:
    """One threshold as an OpenLineage assertion (aggregates only)."""

    name: str
    assertion: str
    expected: str
    actual: str | None
    success: bool
    column: str | None = None
    severity: str | None = None
    """``"warn"`` for a warning level (``warn_*``): crossing it does not fail the task; None
    for a failing level, whose severity follows the operator's ``on_breach``."""
    params: Mapping[str, Any] | None = None
    """The check's parameters as common.sql names them (``geq_to`` / ``leq_to``: the limit)
    and ``failures``, the count of what fails it (e.g. the records in classes below k) where
    the report holds it; counts and limits only."""
    description: str | None = None
    """What the check asks, in words (e.g. "Smallest class size k at least 5")."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _text(value: float | None) -> str | None:
    if value is None:
        return None
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def _check(
    measure: str,
    actual: float | None,
    bound: str,
    limit: float,
    column: str | None = None,
    severity: str | None = None,
    failures: int | None = None,
    label: str | None = None,
) -> LineageAssertion:
    ok = actual is not None and (actual <= limit if bound == "<=" else actual >= limit)
    name = f"{measure} {bound} {_text(limit)}"
    words = f"{label or measure} {'at least' if bound == '>=' else 'at most'} {_text(limit)}"
    if column is not None:
        words += f", on {column}"
    if severity == "warn":
        words += " (warning level: crossing it does not fail the task)"
    whole = int(limit) if float(limit).is_integer() else limit
    params: dict[str, Any] = {"geq_to" if bound == ">=" else "leq_to": whole}
    if failures is not None:
        params["failures"] = failures
    return LineageAssertion(
        name=f"{name} (warning level)" if severity == "warn" else name,
        assertion=measure,
        expected=str(_text(limit)),
        actual=_text(actual),
        success=ok,
        column=column,
        severity=severity,
        params=params,
        description=words,
    )


def _records_below(report: Mapping[str, Any], k: float) -> int | None:
    """The records in classes smaller than ``k``, from the report's class-size histogram
    (``[[size, classes], ...]``); None without one."""
    histogram = report.get("class_size_histogram")
    if not isinstance(histogram, list):
        return None
    total = 0
    for pair in histogram:
        if not (isinstance(pair, list | tuple) and len(pair) == 2):
            return None
        size, classes = (_number(v) for v in pair)
        if size is None or classes is None:
            return None
        total += int(size * classes) if size < k else 0
    return total


def _assessment_assertions(report: Mapping[str, Any]) -> list[LineageAssertion]:
    """The failing levels (``thresholds``), then the warning levels (``warn_thresholds``),
    then the identifier scan's, when one ran."""
    return (
        _level_assertions(report, "thresholds", None)
        + _level_assertions(report, "warn_thresholds", "warn")
        + _scan_assertions(report.get("identifier_scan"))
    )


#: The scan's verdicts that fail a release under its ``"fail"`` policy
#: (:data:`~reident_airflow.engine.identifiers.FAILING_VERDICTS`).
_FAILING_VERDICTS = frozenset({"identifier", "quasi-identifier not declared"})


def _scan_assertions(scan: Any) -> list[LineageAssertion]:
    """The identifier scan (``reident.identifier_scan/v1``) as assertions, as the assessment
    gates it: under the ``"fail"`` policy ``identifier_scan.failing_columns <= 0`` (the
    columns whose verdict fails a release), otherwise ``identifier_scan.flagged_columns <= 0``
    with severity ``"warn"``; then one per flagged column, ``identifier_scan`` on that column,
    expected ``clear``, its verdict as the actual value (severity ``"warn"`` unless the
    verdict fails the release under ``"fail"``). Names, counts and verdicts only."""
    if not isinstance(scan, Mapping):
        return []
    options = scan.get("options")
    gating = isinstance(options, Mapping) and options.get("policy") == "fail"
    columns = [
        c
        for c in scan.get("columns") or []
        if isinstance(c, Mapping) and isinstance(c.get("column"), str)
    ]
    flagged = [c for c in columns if c.get("verdict") != "clear"]
    failing = [c for c in flagged if c.get("verdict") in _FAILING_VERDICTS]
    metric = "identifier_scan.failing_columns" if gating else "identifier_scan.flagged_columns"
    counted = failing if gating else flagged
    what = "failing a release" if gating else "flagged"
    out = [
        LineageAssertion(
            name=f"{metric} <= 0",
            assertion=metric,
            expected="0",
            actual=str(len(counted)),
            success=not counted,
            severity=None if gating else "warn",
            params={"leq_to": 0, "failures": len(counted)},
            description=f"No column {what} by the identifier scan",
        )
    ]
    for c in flagged:
        verdict = c.get("verdict")
        fails = gating and verdict in _FAILING_VERDICTS
        out.append(
            LineageAssertion(
                name=f"identifier_scan of {c['column']} is clear",
                assertion="identifier_scan",
                expected="clear",
                actual=verdict if isinstance(verdict, str) else None,
                success=False,
                column=c["column"],
                severity=None if fails else "warn",
                description=f"The identifier scan finds nothing in {c['column']}",
            )
        )
    return out


def _level_assertions(
    report: Mapping[str, Any], key: str, severity: str | None
) -> list[LineageAssertion]:
    """One assertion per limit of ``key`` whose measure the report holds: a limit whose
    measure was not evaluated asserts nothing (an arrival limit on a first release, or on a
    release with no arrivals: nothing to compare, no arrival to measure)."""
    out: list[LineageAssertion] = []
    thresholds = report.get(key) or {}
    for name, limit in thresholds.items():
        bound_limit = _number(limit)
        threshold = THRESHOLDS.get(name)
        if bound_limit is None or threshold is None:
            continue
        bound = ">=" if threshold.minimum else "<="
        if threshold.name == "min_l":  # one assertion per sensitive column
            measure = f"{threshold.metric}.distinct"
            for column, entry in (report.get("l_diversity") or {}).items():
                distinct = _number(entry.get("distinct")) if isinstance(entry, Mapping) else None
                if distinct is not None:
                    out.append(
                        _check(
                            measure,
                            distinct,
                            bound,
                            bound_limit,
                            column,
                            severity,
                            label=threshold.label,
                        )
                    )
            continue
        value: Any = report
        for part in threshold.path:
            value = value.get(part) if isinstance(value, Mapping) else None
        measured = _number(value)
        if measured is None:
            continue
        failures = _records_below(report, bound_limit) if threshold.name == "min_k" else None
        out.append(
            _check(
                threshold.metric,
                measured,
                bound,
                bound_limit,
                None,
                severity,
                failures,
                label=threshold.label,
            )
        )
    return out


def _datafly_assertions(report: Mapping[str, Any]) -> list[LineageAssertion]:
    """The release's: its k (``failures``: the records still in classes below k, 0 when k is
    reached) and the records suppressed against the limit. They describe the OUTPUT dataset
    (:func:`operator_lineage` attaches them there)."""
    k = _number(report.get("k"))
    limit = _number(report.get("suppression_limit"))
    out = []
    if k is not None:
        achieved = _number(report.get("achieved_k"))
        below = _number(report.get("below_k"))
        reached = achieved is not None and achieved >= k
        failures = 0 if reached else (int(below) if below is not None else None)
        out.append(_check("k", achieved, ">=", k, failures=failures, label="Smallest class size k"))
    if limit is not None:
        removed = report.get("suppressed_records")
        if removed is None:  # k not reached: the best attempt's records below k
            removed = report.get("below_k")
        out.append(
            _check("suppressed_records", _number(removed), "<=", limit, label="Records suppressed")
        )
    return out


def _direct_match_assertions(report: Mapping[str, Any]) -> list[LineageAssertion]:
    target = _number(report.get("target"))
    if target is None:
        return []
    label = "Column Direct Match Protection (percent)"
    out = [_check("protection", _number(report.get("protection")), ">=", target, label=label)]
    for entry in report.get("columns") or []:
        if isinstance(entry, Mapping) and isinstance(entry.get("column"), str):
            out.append(
                _check(
                    "protection",
                    _number(entry.get("protection")),
                    ">=",
                    target,
                    entry["column"],
                    label=label,
                )
            )
    return out


def report_assertions(report: Mapping[str, Any]) -> list[LineageAssertion]:
    """One assertion per threshold of a reident report (assessment, Datafly, direct match):
    name (e.g. ``"k >= 5"``), expected (the limit), actual (the measure), success.

    An assessment's warning levels are assertions too, named ``"k >= 10 (warning level)"``
    with severity ``"warn"``: ``success`` says whether the measure met the level, so a
    crossed warning level is ``success: false`` on a task that succeeded (the failing levels
    have severity ``"error"`` when ``on_breach="fail"``, else ``"warn"``)."""
    schema = str(report.get("schema") or "")
    if schema.startswith("reident.datafly"):
        return _datafly_assertions(report)
    if schema.startswith("reident.direct_match"):
        return _direct_match_assertions(report)
    return _assessment_assertions(report)


def file_dataset(path: str) -> tuple[str, str]:
    """``(namespace, name)`` of a file: ``file://<host>`` and its absolute path, or the
    bucket and key of an object-storage URL."""
    if "://" in path:
        parts = urllib.parse.urlsplit(path)
        if parts.scheme == "file":
            return f"file://{parts.netloc or socket.gethostname()}", parts.path
        return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")
    return f"file://{socket.gethostname()}", str(Path(path).resolve())


def dataset_of(
    conn_id: str | None, schema: str | None, table: str | None, *, database: str | None = None
) -> tuple[str, str] | None:
    """``(namespace, name)`` of a table of an Airflow connection (``database`` overrides the
    connection's), or of a file when ``conn_id`` is None; None when it cannot be named."""
    if not table:
        return None
    if conn_id is None:
        return file_dataset(table)
    import sqlalchemy as sa

    from reident_airflow._compat import BaseHook

    conn = BaseHook.get_connection(conn_id)
    url = (conn.extra_dejson or {}).get("sqlalchemy_url")
    if url:
        parsed = sa.make_url(str(url))
        kind, host, port = parsed.get_backend_name(), parsed.host, parsed.port
        db = database or parsed.database
    else:
        kind, host, port = (conn.conn_type or "").lower(), conn.host, conn.port
        db = database or conn.schema
    scheme = _SCHEMES.get(kind, kind)
    if scheme == "sqlite":
        return f"sqlite://{Path(str(db or host)).resolve()}", table
    port = port or _DEFAULT_PORTS.get(scheme)
    namespace = f"{scheme}://{host}" + (f":{port}" if port else "")
    if scheme == "postgres":
        return namespace, ".".join([str(db), schema or "public", table])
    return namespace, ".".join(str(p) for p in (schema or db, table) if p)


def tables_in_sql(sql: str) -> list[tuple[str | None, str]]:
    """``(schema, table)`` of each table a ``SELECT`` reads, by the OpenLineage provider's SQL
    parser; empty without the provider or when the statement cannot be parsed."""
    try:
        from airflow.providers.openlineage.sqlparser import SQLParser

        meta = SQLParser(dialect="generic").parse([sql])
    except Exception:  # no provider, or a statement the parser does not know
        return []
    if meta is None:
        return []
    return [(t.schema, t.name) for t in meta.in_tables]


def _report_of(operator: Any, task_instance: Any) -> Mapping[str, Any] | None:
    report = getattr(operator, "last_report", None)
    if report is None and task_instance is not None:
        from reident_airflow.outcomes import REPORT_XCOM_KEY

        try:
            report = task_instance.xcom_pull(task_ids=task_instance.task_id, key=REPORT_XCOM_KEY)
        except Exception:
            report = None
    return report if isinstance(report, Mapping) else None


def _named(
    operator: Any, refs: Sequence[tuple[str | None, str | None, str | None]]
) -> list[tuple[str, str, tuple[str | None, str | None, str | None]]]:
    """``(namespace, name, ref)`` of each ref that can be named."""
    out = []
    for ref in refs:
        conn_id, schema, table = ref
        own = conn_id is not None and conn_id == getattr(operator, "conn_id", None)
        try:
            named = dataset_of(
                conn_id,
                schema,
                table,
                database=getattr(operator, "database", None) if own else None,
            )
        except Exception as exc:  # a connection that cannot be read: no dataset, no failure
            operator.log.debug("OpenLineage: dataset not named (%s)", type(exc).__name__)
            named = None
        if named is not None:
            out.append((*named, ref))
    return out


def file_columns(path: str, sep: str | None = None) -> list[tuple[str, str]] | None:
    """``(name, type)`` of each column of a local CSV or Parquet file, as DuckDB describes
    it (its CSV sniffer reads a sample: names and types, never values); None for an
    object-storage URL, a glob or a file DuckDB cannot describe."""
    if "://" in path and not path.startswith("file://"):
        return None
    local = urllib.parse.urlsplit(path).path if path.startswith("file://") else path
    if any(c in local for c in "*?[") or not Path(local).is_file():
        return None
    import duckdb

    parquet = local.lower().endswith((".parquet", ".pq"))
    reader = "read_parquet(?)" if parquet else "read_csv(?, header = true, delim = ?)"
    params: list[Any] = [local] if parquet else [local, sep or ","]
    con = duckdb.connect()
    try:
        rows = con.execute(f"DESCRIBE SELECT * FROM {reader}", params).fetchall()
    finally:
        con.close()
    return [(str(r[0]), str(r[1])) for r in rows]


def table_columns(
    conn_id: str,
    schema: str | None,
    table: str,
    *,
    database: str | None = None,
    hook_params: dict[str, Any] | None = None,
) -> list[tuple[str, str]] | None:
    """``(name, type)`` of each column of a table of an Airflow connection, the type as the
    database names it (:meth:`~reident_airflow.sources.sql.SqlSource.column_types`:
    PostgreSQL's ``int8``, MySQL's ``bigint``, as common.sql reports them); None when the
    table has no columns to report."""
    from reident_airflow.connections import sqlalchemy_engine
    from reident_airflow.sources.sql import SqlSource

    engine = sqlalchemy_engine(conn_id, database=database, hook_params=hook_params)
    try:
        with SqlSource(engine, table=table, schema=schema) as source:
            return source.column_types() or None
    finally:
        engine.dispose()


def _columns_of(
    operator: Any, ref: tuple[str | None, str | None, str | None]
) -> list[tuple[str, str]] | None:
    conn_id, schema, table = ref
    if not table:
        return None
    try:
        if conn_id is None:
            return file_columns(table, getattr(operator, "sep", None))
        own = conn_id == getattr(operator, "conn_id", None)
        return table_columns(
            conn_id,
            schema,
            table,
            database=getattr(operator, "database", None) if own else None,
            hook_params=getattr(operator, "hook_params", None) if own else None,
        )
    except Exception as exc:  # a source that cannot be described: no schema, no failure
        operator.log.debug("OpenLineage: no schema (%s)", type(exc).__name__)
        return None


def _schema_facets(operator: Any, ref: tuple[str | None, str | None, str | None]) -> dict[str, Any]:
    from openlineage.client.facet_v2 import schema_dataset

    columns = _columns_of(operator, ref)
    if not columns:
        return {}
    fields = [schema_dataset.SchemaDatasetFacetFields(name=n, type=t) for n, t in columns]
    return {"schema": schema_dataset.SchemaDatasetFacet(fields=fields)}


def operator_lineage(operator: Any, task_instance: Any, *, start: bool = False) -> Any:
    """The provider's ``OperatorLineage`` of a reident task: on ``start`` the datasets it
    reads (with their ``schema`` facet) and writes; once finished (or failed) also the
    assertions, the row counts. None without the OpenLineage provider."""
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.event_v2 import InputDataset, OutputDataset
        from openlineage.client.facet_v2 import (
            data_quality_assertions_dataset as dqa,
        )
        from openlineage.client.facet_v2 import (
            data_quality_metrics_input_dataset as dqm,
        )
        from openlineage.client.facet_v2 import (
            output_statistics_output_dataset as stats,
        )
    except ImportError:
        return None
    report = None if start else _report_of(operator, task_instance)
    input_facets: dict[str, Any] = {}
    output_facets: dict[str, Any] = {}
    release_facets: dict[str, Any] = {}  # a Datafly release's assertions, on its output
    outputs_named = _named(operator, operator.lineage_outputs())
    if report is not None:
        severity = "error" if getattr(operator, "on_breach", "fail") == "fail" else "warn"
        assertions = [
            dqa.Assertion(
                assertion=a.assertion,
                success=a.success,
                column=a.column,
                severity=a.severity or severity,
                name=a.name,
                description=a.description,
                expected=a.expected,
                actual=a.actual,
                params=dict(a.params) if a.params is not None else None,
            )
            for a in report_assertions(report)
        ]
        if assertions:
            facet = dqa.DataQualityAssertionsDatasetFacet(assertions=assertions)
            datafly = str(report.get("schema") or "").startswith("reident.datafly")
            if datafly and outputs_named:
                release_facets["dataQualityAssertions"] = facet
            else:
                input_facets["dataQualityAssertions"] = facet
        records = report.get("records")
        if isinstance(records, int) and not isinstance(records, bool):
            input_facets["dataQualityMetrics"] = dqm.DataQualityMetricsInputDatasetFacet(
                columnMetrics={}, rowCount=records
            )
        output = report.get("output")
        written = output.get("records") if isinstance(output, Mapping) else None
        if isinstance(written, int) and not isinstance(written, bool):
            output_facets["outputStatistics"] = stats.OutputStatisticsOutputDatasetFacet(
                rowCount=written
            )
    # the assertions are on the dataset's facets, as common.sql (2.4+) attaches its checks,
    # and among its input facets, where the spec declares the facet
    checked = {k: v for k, v in input_facets.items() if k == "dataQualityAssertions"}
    inputs = [
        InputDataset(
            namespace=ns,
            name=name,
            facets={**_schema_facets(operator, ref), **checked},
            inputFacets=dict(input_facets),
        )
        for ns, name, ref in _named(operator, operator.lineage_inputs())
    ]
    outputs = [
        OutputDataset(
            namespace=ns, name=name, facets=dict(release_facets), outputFacets=dict(output_facets)
        )
        for ns, name, _ in outputs_named
    ]
    return OperatorLineage(inputs=inputs, outputs=outputs, job_facets=_sql_facets(operator, start))


def _sql_facets(operator: Any, start: bool) -> dict[str, Any]:
    """The ``sql`` job facet: the queries the task ran on its database, literals elided
    (:meth:`~reident_airflow.sources.sql.SqlSource.statements`), joined as common.sql joins
    its statements; none on start, for a file, or when nothing was run."""
    statements = () if start else getattr(operator, "last_statements", ())
    if not statements:
        return {}
    from openlineage.client.facet_v2 import sql_job

    return {"sql": sql_job.SQLJobFacet(query=";\n".join(statements))}
