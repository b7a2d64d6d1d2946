"""Writing a run's report from the command line (``--report``) and from the operators
(``report_path``): what the run says about itself, and where the report goes."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.report.charts import ChartUnavailableError
from reident_airflow.report.render import render_report
from reident_airflow.report.writer import write_report

__all__ = ["REPORT_PATH_XCOM_KEY", "cli_report", "operator_report", "source_text"]

log = logging.getLogger(__name__)

#: XCom key under which the operators push where they wrote the HTML report.
REPORT_PATH_XCOM_KEY = "reident_report_path"


def source_text(value: Any) -> str | None:
    """A data source as the report names it: a path as given; a URL without its password."""
    if value is None:
        return None
    text = str(value)
    if "://" not in text:
        return text
    import sqlalchemy as sa

    try:
        url = sa.make_url(text)
        if url.password is not None:
            return url.render_as_string(hide_password=True)
        return text
    except (sa.exc.ArgumentError, ValueError):  # not a SQLAlchemy URL: hide any user info
        parts = urlsplit(text)
        if "@" in parts.netloc:
            host = parts.netloc.rsplit("@", 1)[1]
            return urlunsplit(parts._replace(netloc=f"***@{host}"))
        return text


def _same_file(a: str, b: str | os.PathLike[str] | None) -> bool:
    if b is None or str(b) in {"", "-"} or "://" in a or "://" in str(b):
        return False
    from reident_airflow._atomic import same_path

    return same_path(a, b)  # links and hard links too


def cli_report(args: argparse.Namespace, payload: Mapping[str, Any], *, kind: str) -> None:
    """Write ``--report PATH`` of a ``reident`` command, if given (input errors: exit 2)."""
    dest = getattr(args, "report", None)
    if not dest:
        return
    for other in ("json", "output", "input"):
        if _same_file(dest, getattr(args, other, None)):
            raise InvalidInputError(f"--report and --{other} name the same file: {dest}")
    context = {
        "source": source_text(getattr(args, "input", None)),
        "table": getattr(args, "table", None),
        "region": getattr(args, "region", None),
        "population_table": source_text(getattr(args, "population_table", None)),
    }
    html = render_report(payload, kind=kind, extra={k: v for k, v in context.items() if v})
    write_report(dest, html)


def operator_report(
    report_path: str | None,
    payload: Mapping[str, Any],
    *,
    kind: str,
    context: Mapping[str, Any],
    source: str | None = None,
    logger: Any = log,
) -> str | None:
    """Render and write an operator's report to ``report_path`` (templated: a local path or an
    object-storage URL) and push its location to XCom under :data:`REPORT_PATH_XCOM_KEY`.

    Returns the location, or ``None`` without a ``report_path``. A report that cannot be drawn
    (matplotlib missing, a path naming a directory) fails the task now
    (``ReidentConfigurationError``); storage errors are raised as they are, so retries apply.
    """
    if report_path is None or not str(report_path).strip():
        return None
    ti = context.get("ti")
    extra: dict[str, Any] = {"source": source_text(source)}
    for attr in ("dag_id", "task_id", "run_id", "try_number"):
        value = getattr(ti, attr, None)
        if isinstance(value, str | int) and not isinstance(value, bool):
            extra[attr] = value
    logical = context.get("logical_date")
    if logical is not None:
        extra["logical_date"] = str(logical)
    try:
        html = render_report(
            payload, kind=kind, extra={k: v for k, v in extra.items() if v is not None}
        )
        location = write_report(str(report_path), html)
    except (ChartUnavailableError, InvalidInputError) as exc:
        from reident_airflow.outcomes import ReidentConfigurationError

        raise ReidentConfigurationError(f"report_path: {exc}") from None
    if ti is not None:
        ti.xcom_push(key=REPORT_PATH_XCOM_KEY, value=location)
    logger.info("risk report written to %s", location)
    return location
