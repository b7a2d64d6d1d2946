"""What an operator does on a breach: fail (no retries), skip or warn, and the alerts of a
skip or a warn (which fail nothing, so no failure callback runs)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from reident_airflow._compat import AirflowSkipException, Context
from reident_airflow.outcomes import ReidentificationBreach

__all__ = ["act_on_breach"]

log = logging.getLogger(__name__)


def act_on_breach(
    *,
    on_breach: str,
    check: str,
    message: str,
    breaches: Sequence[dict[str, Any]],
    report: dict[str, Any],
    quasi_identifiers: Sequence[str] = (),
    k: int | None = None,
    logger: Any = log,
    context: Context | None = None,
    report_location: str | None = None,
    report_url: str | None = None,
) -> None:
    """Fail (no retries), skip (downstream does not run) or warn (task succeeds).

    A ``"warn"`` with no ``breaches`` is a warning level crossed by a table that passed: it
    alerts (``outcome`` ``"warn"``) and the task succeeds, whatever ``on_breach`` says.

    When the HTML report was written, the breach's report (what the alert reads) carries its
    ``report_location`` and, when it has one, its ``report_url``; the report in XCom stays the
    one the CLI writes (the location has its own XCom keys). The breach handed to the alert
    names the ``outcome`` (in its report; none means a fail). A skip or a warn leaves no
    failure for ``on_failure_callback``: the task's
    :class:`~reident_airflow.notifiers.ReidentBreachNotifier` callbacks are called here (each
    decides by its ``outcomes``). A fail is alerted by the failure callback itself, once.
    """
    if report_location:
        report = dict(report, report_location=str(report_location))
        if report_url:
            report["report_url"] = str(report_url)
    breach = ReidentificationBreach(
        message,
        breaches=breaches,
        report=report if on_breach == "fail" else dict(report, outcome=on_breach),
        check=check,
        quasi_identifiers=quasi_identifiers,
        k=k,
    )
    if on_breach in ("skip", "warn") and context is not None:
        _alert_from_task(context, breach, logger)
    if on_breach == "warn":
        why = "on_breach='warn'" if breaches else "warning levels only"
        logger.warning("%s (%s: the task succeeds)", message, why)
        return
    if on_breach == "skip":
        logger.warning("%s (on_breach='skip': downstream tasks are skipped)", message)
        raise AirflowSkipException(message)
    raise breach


def _alert_from_task(context: Context, breach: ReidentificationBreach, logger: Any) -> None:
    """Call the task's breach notifiers (wired as ``on_failure_callback``) for a skip/warn."""
    from reident_airflow.notifiers.breach import ReidentBreachNotifier

    callbacks = getattr(context.get("task"), "on_failure_callback", None)
    if callbacks is None:
        return
    if callable(callbacks):
        callbacks = [callbacks]
    for callback in callbacks:
        if not isinstance(callback, ReidentBreachNotifier):
            continue
        try:
            callback({**context, "exception": breach})
        except Exception as exc:  # an alert must not change the gate's outcome
            logger.error("Breach alert NOT sent: %s", type(exc).__name__)
