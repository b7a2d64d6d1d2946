"""Exceptions raised by the operators.

A breached threshold is a data-policy failure: retrying would give the same answer, so it is
an :class:`AirflowFailException` (no retries). Connection and SQL errors are left as they
are, so Airflow's normal retries apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reident_airflow._compat import AirflowFailException

__all__ = ["REPORT_XCOM_KEY", "ReidentConfigurationError", "ReidentificationBreach"]

#: XCom key under which every operator pushes its full report (aggregates only), also when
#: it fails on a breach, so that notifiers and later tasks can read it.
REPORT_XCOM_KEY = "reident_report"


class ReidentificationBreach(AirflowFailException):
    """A release gate's threshold was breached; the task fails without retries.

    Carries ``breaches`` (``[{"metric", "observed", "limit"}, ...]``), the full ``report``
    (the JSON the operator computed), and, for risk assessments, the QIs and ``k``.
    """

    def __init__(
        self,
        message: str,
        *,
        breaches: Sequence[dict[str, Any]],
        report: dict[str, Any],
        check: str,
        quasi_identifiers: Sequence[str] = (),
        k: int | None = None,
    ) -> None:
        super().__init__(message)
        self.breaches = list(breaches)
        self.report = report
        self.check = check
        self.quasi_identifiers = list(quasi_identifiers)
        self.k = k


class ReidentConfigurationError(AirflowFailException):
    """The task's (rendered) parameters or input cannot be used: retrying will not help."""
