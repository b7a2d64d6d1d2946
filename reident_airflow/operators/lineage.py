"""OpenLineage for the reident operators: the datasets read and written, one data-quality
assertion per threshold and the row count, as Airflow's common.sql check operators report
them.

Warning levels (``warn_*``) are assertions as well, named ``"<measure> <= <limit> (warning
level)"`` with severity ``"warn"``; ``success`` is whether the measure met the level, so a
crossed warning level reads ``success: false`` on a task that succeeded. The failing levels'
severity is ``"error"`` with ``on_breach="fail"`` and ``"warn"`` otherwise.

When the assessment holds an identifier scan, it is asserted too (:func:`report_assertions`):
the count of failing (or, under the ``"warn"`` policy, flagged) columns against 0, and one
assertion per flagged column, on that column.

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
    "file_dataset",
    "operator_lineage",
    "report_assertions",
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
) -> LineageAssertion:
    ok = actual is not None and (actual <= limit if bound == "<=" else actual >= limit)
    name = f"{measure} {bound} {_text(limit)}"
    return LineageAssertion(
        name=f"{name} (warning level)" if severity == "warn" else name,
        assertion=measure,
        expected=str(_text(limit)),
        actual=_text(actual),
        success=ok,
        column=column,
        severity=severity,
    )


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
    out = [
        LineageAssertion(
            name=f"{metric} <= 0",
            assertion=metric,
            expected="0",
            actual=str(len(counted)),
            success=not counted,
            severity=None if gating else "warn",
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
            )
        )
    return out


def _level_assertions(
    report: Mapping[str, Any], key: str, severity: str | None
) -> list[LineageAssertion]:
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
                out.append(_check(measure, distinct, bound, bound_limit, column, severity))
            continue
        value: Any = report
        for part in threshold.path:
            value = value.get(part) if isinstance(value, Mapping) else None
        out.append(_check(threshold.metric, _number(value), bound, bound_limit, None, severity))
    return out


def _datafly_assertions(report: Mapping[str, Any]) -> list[LineageAssertion]:
    k = _number(report.get("k"))
    limit = _number(report.get("suppression_limit"))
    out = []
    if k is not None:
        out.append(_check("k", _number(report.get("achieved_k")), ">=", k))
    if limit is not None:
        removed = report.get("suppressed_records")
        if removed is None:  # k not reached: the best attempt's records below k
            removed = report.get("below_k")
        out.append(_check("suppressed_records", _number(removed), "<=", limit))
    return out


def _direct_match_assertions(report: Mapping[str, Any]) -> list[LineageAssertion]:
    target = _number(report.get("target"))
    if target is None:
        return []
    out = [_check("protection", _number(report.get("protection")), ">=", target)]
    for entry in report.get("columns") or []:
        if isinstance(entry, Mapping) and isinstance(entry.get("column"), str):
            out.append(
                _check(
                    "protection", _number(entry.get("protection")), ">=", target, entry["column"]
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


def _named(operator: Any, refs: Sequence[tuple[str | None, str | None, str | None]]) -> list[Any]:
    out = []
    for conn_id, schema, table in refs:
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
            out.append(named)
    return out


def operator_lineage(operator: Any, task_instance: Any) -> Any:
    """The provider's ``OperatorLineage`` of a finished (or failed) reident task, or None
    without the OpenLineage provider."""
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
    report = _report_of(operator, task_instance)
    input_facets: dict[str, Any] = {}
    output_facets: dict[str, Any] = {}
    if report is not None:
        severity = "error" if getattr(operator, "on_breach", "fail") == "fail" else "warn"
        assertions = [
            dqa.Assertion(
                assertion=a.assertion,
                success=a.success,
                column=a.column,
                severity=a.severity or severity,
                name=a.name,
                expected=a.expected,
                actual=a.actual,
            )
            for a in report_assertions(report)
        ]
        if assertions:
            input_facets["dataQualityAssertions"] = dqa.DataQualityAssertionsDatasetFacet(
                assertions=assertions
            )
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
    inputs = [
        InputDataset(namespace=ns, name=name, inputFacets=dict(input_facets))
        for ns, name in _named(operator, operator.lineage_inputs())
    ]
    outputs = [
        OutputDataset(namespace=ns, name=name, outputFacets=dict(output_facets))
        for ns, name in _named(operator, operator.lineage_outputs())
    ]
    return OperatorLineage(inputs=inputs, outputs=outputs)
