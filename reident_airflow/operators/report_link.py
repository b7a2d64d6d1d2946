"""The report one click away: the URL a browser opens for the HTML report, and the operator
extra link ("Re-identification report") that shows it on the task's page."""

from __future__ import annotations

import posixpath
import urllib.parse
from typing import Any

from reident_airflow._compat import BaseOperatorLink
from reident_airflow.outcomes import REPORT_URL_XCOM_KEY

__all__ = ["CONFIG_SECTION", "ReidentReportLink", "configured_base_url", "report_url"]

#: The section of Airflow's configuration read for ``report_base_url``.
CONFIG_SECTION = "reident"


def report_url(location: str | None, base_url: str | None = None) -> str | None:
    """The URL of the report written to ``location``, or None when it has none.

    ``location`` is already a URL when ``report_path`` was one (object storage: ``s3://``,
    ``gs://``, ``file://`` ...). Otherwise the report is a worker-local file, served under
    ``base_url`` (the operator's ``report_base_url``, else ``[reident] report_base_url`` of
    Airflow's configuration) by its file name: ``https://reports.example.org/runs/`` and
    ``/data/reports/risk.html`` give ``https://reports.example.org/runs/risk.html``.
    """
    if not location:
        return None
    if "://" in location:
        return location
    base = (base_url or configured_base_url() or "").strip()
    if not base:
        return None
    name = urllib.parse.quote(posixpath.basename(location.replace("\\", "/")))
    return f"{base.rstrip('/')}/{name}"


def configured_base_url() -> str | None:
    """``[reident] report_base_url`` of Airflow's configuration, when set."""
    try:
        from airflow.sdk.configuration import conf
    except ImportError:  # pragma: no cover - Airflow 2.x
        from airflow.configuration import conf
    value = conf.get(CONFIG_SECTION, "report_base_url", fallback=None)
    return str(value) if value else None


class ReidentReportLink(BaseOperatorLink):
    """The task's "Re-identification report" link: the report's URL, empty when it has none
    (no ``report_path``, or a local path without a base URL)."""

    name = "Re-identification report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        value = XCom.get_value(ti_key=ti_key, key=REPORT_URL_XCOM_KEY)
        return str(value) if value else ""
