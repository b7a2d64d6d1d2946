"""How a release gate's outcome reaches Airflow: the errors that fail a task without retries,
and the XCom keys the operators push and the breach notifier reads.

Both errors belong to the one tree rooted in
:class:`~reident_airflow.engine.errors.ReidentError` and are also Airflow's
``AirflowFailException``, so Airflow does not retry them::

    ReidentError
     +-- InvalidInputError
     |    +-- ReidentConfigurationError   (+ AirflowFailException) parameters or input unusable
     +-- ThresholdBreached
          +-- ReidentificationBreach      (+ AirflowFailException) a gate's limit was breached

Connection and timeout errors are not converted: Airflow's retries apply to them.
Messages carry aggregates only (counts, column names, limits), never a record's values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from reident_airflow._compat import AirflowFailException
from reident_airflow.engine.errors import InvalidInputError, ReidentError, ThresholdBreached

__all__ = [
    "REPORT_PATH_XCOM_KEY",
    "REPORT_URL_XCOM_KEY",
    "REPORT_XCOM_KEY",
    "ReidentConfigurationError",
    "ReidentificationBreach",
    "fail_now",
]

#: XCom key of every operator's report (aggregates only): Airflow's own ``return_value``,
#: pushed by the operator before it acts on a breach (a failed task returns nothing), so
#: notifiers and later tasks read one copy whatever the outcome.
REPORT_XCOM_KEY = "return_value"

#: XCom key of where the HTML report was written (a local path or a URL), when it was.
REPORT_PATH_XCOM_KEY = "report_location"

#: XCom key of the report's URL for a browser (the extra link's target), when it has one.
REPORT_URL_XCOM_KEY = "report_url"


class ReidentificationBreach(ThresholdBreached, AirflowFailException):
    """A release gate's threshold was breached; the task fails without retries.

    Carries ``breaches`` (``[{"metric", "observed", "limit"}, ...]``), the full ``report``
    (the JSON the operator computed), the ``check`` that failed and, for risk assessments,
    the QIs and ``k``.
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
        super().__init__(message, breaches=list(breaches), report=report)
        self.breaches: list[dict[str, Any]] = list(breaches)
        self.report: dict[str, Any] = report
        self.check = check
        self.quasi_identifiers = list(quasi_identifiers)
        self.k = k


class ReidentConfigurationError(InvalidInputError, AirflowFailException):
    """The task's (rendered) parameters or input cannot be used: retrying will not help."""


def fail_now(exc: ReidentError) -> NoReturn:
    """Raise ``exc`` (a bad column, an empty table, a bad threshold) as a task failure
    without retries (:class:`ReidentConfigurationError`), with ``exc`` as its cause.

    The cause is kept only when every exception chained below it is one of ours: a driver's
    exception may carry statement parameters, which are record values, and Airflow logs the
    whole chain.
    """
    raise ReidentConfigurationError(str(exc)) from (exc if _only_ours(exc) else None)


def _only_ours(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if not isinstance(current, ReidentError):
            return False
        seen.add(id(current))
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return True
