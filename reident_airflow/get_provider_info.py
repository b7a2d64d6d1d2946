"""Airflow provider metadata, registered through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    from reident_airflow import __version__

    return {
        "package-name": "reident-airflow",
        "name": "Re-identification risk (reident-airflow)",
        "description": "Gate data releases on re-identification risk (ARX-compatible engine).",
        "versions": [__version__],
    }
