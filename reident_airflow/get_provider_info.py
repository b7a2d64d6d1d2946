"""Airflow provider metadata, registered through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

__all__ = ["get_provider_info"]


def get_provider_info() -> dict[str, Any]:
    from reident_airflow import __version__

    return {
        "package-name": "reident-airflow",
        "name": "Re-identification risk (reident-airflow)",
        "description": "Gate data releases on re-identification risk (ARX-compatible engine).",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Re-identification risk",
                "external-doc-url": "https://pypi.org/project/reident-airflow/",
                "tags": ["privacy"],
            }
        ],
        "operators": [
            {
                "integration-name": "Re-identification risk",
                "python-modules": [
                    "reident_airflow.operators.risk",
                    "reident_airflow.operators.direct_match",
                    "reident_airflow.operators.datafly",
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
