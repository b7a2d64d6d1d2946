"""Airflow provider metadata, registered through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

__all__ = ["documentation_url", "get_provider_info"]


def documentation_url() -> str | None:
    """The ``Documentation`` URL the installed distribution declares, or ``None``.

    It comes from ``[project.urls]`` in ``pyproject.toml`` (the ``Project-URL`` metadata),
    the same field Airflow shows as the provider's documentation link; without one, the
    integration names no URL rather than a page that does not exist.
    """
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        entries = metadata("reident-airflow").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in entries:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "documentation" and url.strip():
            return str(url.strip())
    return None


def get_provider_info() -> dict[str, Any]:
    from reident_airflow import __version__

    integration: dict[str, Any] = {
        "integration-name": "Re-identification risk",
        "tags": ["privacy"],
    }
    doc_url = documentation_url()
    if doc_url is not None:
        integration["external-doc-url"] = doc_url
    return {
        "package-name": "reident-airflow",
        "name": "Re-identification risk (reident-airflow)",
        "description": "Gate data releases on re-identification risk (ARX-compatible engine).",
        "versions": [__version__],
        "integrations": [integration],
        "operators": [
            {
                "integration-name": "Re-identification risk",
                "python-modules": [
                    "reident_airflow.operators.risk",
                    "reident_airflow.operators.direct_match",
                    "reident_airflow.operators.datafly",
                    "reident_airflow.operators.sign_off",
                ],
            }
        ],
        "notifications": ["reident_airflow.notifiers.breach.ReidentBreachNotifier"],
        "extra-links": ["reident_airflow.operators.report_link.ReidentReportLink"],
        "config": {
            "reident": {
                "description": "reident-airflow operators.",
                "options": {
                    "report_base_url": {
                        "description": "Base URL under which the HTML reports are served: "
                        "the operators' report link is this URL joined with the report's "
                        "file name (an operator's report_base_url overrides it).",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "https://reports.example.org/reident/",
                        "default": "",
                    }
                },
            }
        },
    }
