"""The one place that decides where Airflow's names come from (Airflow 3 ``airflow.sdk``,
falling back to Airflow 2.x paths)."""

from __future__ import annotations

try:  # Airflow 3.x
    from airflow.sdk import (
        BaseHook,
        BaseNotifier,
        BaseOperator,
        BaseOperatorLink,
        Context,
        ObjectStoragePath,
    )
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    AIRFLOW_V3 = True
except ImportError:  # pragma: no cover - Airflow 2.x
    from airflow.exceptions import AirflowFailException, AirflowSkipException  # type: ignore
    from airflow.hooks.base import BaseHook  # type: ignore
    from airflow.io.path import ObjectStoragePath  # type: ignore
    from airflow.models import BaseOperator, BaseOperatorLink  # type: ignore
    from airflow.notifications.basenotifier import BaseNotifier  # type: ignore
    from airflow.utils.context import Context  # type: ignore

    AIRFLOW_V3 = False

__all__ = [
    "AIRFLOW_V3",
    "AirflowFailException",
    "AirflowSkipException",
    "BaseHook",
    "BaseNotifier",
    "BaseOperator",
    "BaseOperatorLink",
    "Context",
    "ObjectStoragePath",
]
