"""Airflow operators over the reident-airflow engine: the release gate on re-identification
risk, Column Direct Match Protection, and Datafly k-anonymization, on one base; and the
sign-off of a release in Airflow (human-in-the-loop, Airflow 3.1+)."""

from __future__ import annotations

from reident_airflow.operators.base import ReidentOperator
from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.operators.direct_match import DirectMatchProtectionOperator
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.operators.sign_off import ReleaseSignOffOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach

__all__ = [
    "DataflyOperator",
    "DirectMatchProtectionOperator",
    "ReidentConfigurationError",
    "ReidentOperator",
    "ReidentificationBreach",
    "ReidentificationRiskOperator",
    "ReleaseSignOffOperator",
]
