"""The report one click away: the URL a browser opens for the HTML report, and the operator
extra link ("Re-identification report") that shows it on the task's page."""

from __future__ import annotations

import posixpath
import urllib.parse
from typing import Any

from reident_airflow._compat import BaseOperatorLink
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.outcomes import REPORT_URL_XCOM_KEY

__all__ = [
    "CONFIG_SECTION",
    "ReidentReportLink",
    "check_base_url",
    "configured_base_url",
    "is_web_link",
    "linkable",
    "report_url",
    "served_root",
]

#: The section of Airflow's configuration read for ``report_base_url``.
CONFIG_SECTION = "reident"
#: The schemes a report's URL may have to be shown as the task's link: a web address, or the
#: object-storage URL the report was written to. Any other (``javascript:``, ``data:``, ...)
#: is never rendered: a browser would run or show what the URL itself holds.
LINK_SCHEMES = frozenset(
    {
        "http",
        "https",
        "file",
        "s3",
        "s3a",
        "gs",
        "gcs",
        "abfs",
        "abfss",
        "az",
        "adl",
        "wasb",
        "wasbs",
        "hdfs",
        "webhdfs",
        "oss",
    }
)
_WEB = frozenset({"http", "https"})


def _split(value: str) -> urllib.parse.SplitResult | None:
    try:
        return urllib.parse.urlsplit(value.strip())
    except ValueError:  # an unbalanced [ in the host
        return None


def _is_web_url(value: str) -> bool:
    """An absolute ``http://`` or ``https://`` URL with a host."""
    parts = _split(value)
    return parts is not None and parts.scheme.lower() in _WEB and bool(parts.hostname)


def linkable(value: str | None) -> bool:
    """Whether ``value`` may be shown as the task's link: a URL of :data:`LINK_SCHEMES`
    written ``scheme://...`` (a web URL with a host), no control character in it."""
    if not value or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return False
    parts = _split(value)
    if parts is None or not value.strip().lower().startswith(f"{parts.scheme.lower()}://"):
        return False
    scheme = parts.scheme.lower()
    return scheme in LINK_SCHEMES and (scheme not in _WEB or bool(parts.hostname))


def is_web_link(value: str | None) -> bool:
    """Whether ``value`` is a :func:`linkable` ``http(s)`` URL with a host (a page of
    Airflow's UI, a served report)."""
    return linkable(value) and _is_web_url(str(value))


def check_base_url(value: str | None, name: str = "report_base_url") -> str | None:
    """``value`` as a report base URL (None when not given): an absolute ``http(s)`` URL with
    a host, else an input error naming ``name`` (never quoting the value)."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    if not _is_web_url(text) or not linkable(text):
        raise InvalidInputError(
            f"{name} must be an absolute http:// or https:// URL with a host "
            "(e.g. https://reports.example.org/runs/): the report link is built on it"
        )
    return text


def served_root(report_path: str | None) -> str | None:
    """The folder a templated local ``report_path`` keeps from run to run: its text before
    the first ``{{`` or ``{%``, up to the last ``/``.
    ``/data/reports/{{ dag.dag_id }}/{{ run_id }}/risk.html`` gives ``/data/reports/``: the
    folders under it change per run, so the report's URL keeps them (:func:`report_url`).
    None for a path with no template, an object-storage URL, or a template from its first
    character (the whole path may change)."""
    if not report_path or "://" in report_path:
        return None
    text = report_path.replace("\\", "/")
    starts = [i for i in (text.find("{{"), text.find("{%")) if i >= 0]
    if not starts:
        return None
    head = text[: min(starts)]
    return head[: head.rfind("/") + 1] or None


def _served_name(location: str, root: str | None) -> str:
    """The part of ``location`` served under the base URL: its path below ``root`` (the
    per-run folders, :func:`served_root`) when it lies there, else its file name."""
    path = posixpath.normpath(location.replace("\\", "/"))
    if root:
        base = posixpath.normpath(root.replace("\\", "/"))
        if path.startswith(base.rstrip("/") + "/"):
            below = posixpath.relpath(path, base)
            if below != "." and not below.startswith(".."):
                return below
    return posixpath.basename(path)


def report_url(
    location: str | None, base_url: str | None = None, root: str | None = None
) -> str | None:
    """The URL of the report written to ``location``, or None when it has none.

    ``location`` is already a URL when ``report_path`` was one (object storage: ``s3://``,
    ``gs://``, ``file://`` ...). Otherwise the report is a worker-local file, served under
    ``base_url`` (the operator's ``report_base_url``, else ``[reident] report_base_url`` of
    Airflow's configuration) by its path below ``root`` (the folder of ``report_path`` before
    its first template, :func:`served_root`), else by its file name:
    ``https://reports.example.org/runs/`` and ``/data/reports/risk.html`` give
    ``https://reports.example.org/runs/risk.html``; with ``root="/data/reports/"``,
    ``/data/reports/etl/manual__1/risk.html`` gives
    ``https://reports.example.org/runs/etl/manual__1/risk.html`` (each run its own URL).
    A base URL that is not ``http(s)`` is refused (:func:`check_base_url`); a location URL
    that may not be a link (:func:`linkable`) has none.
    """
    if not location:
        return None
    if "://" in location:
        return location if linkable(location) else None
    base = check_base_url(base_url) or check_base_url(
        configured_base_url(), f"[{CONFIG_SECTION}] report_base_url"
    )
    if not base:
        return None
    name = urllib.parse.quote(_served_name(location, root))
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
    (no ``report_path``, or a local path without a base URL) or when the stored URL may not
    be a link (:func:`linkable`: an older run's ``javascript:`` base URL is never shown)."""

    name = "Re-identification report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """The report's URL; ``""`` without asking for it when the task writes no report
        (``report_path`` not set, or rendered empty): a lookup of an XCom that was never
        pushed is logged as an error by Airflow's client, in every such run's log."""
        report_path = getattr(operator, "report_path", None)
        if operator is not None and (report_path is None or not str(report_path).strip()):
            return ""
        from airflow.sdk.execution_time.xcom import XCom

        value = XCom.get_value(ti_key=ti_key, key=REPORT_URL_XCOM_KEY)
        return str(value) if value and linkable(str(value)) else ""
