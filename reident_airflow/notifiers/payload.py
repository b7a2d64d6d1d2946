"""The alert's content: a JSON-safe dict built field by field from a breach (or the report
the operator pushed to XCom), never the report or the exception's message wholesale.

The report is read through :class:`~reident_airflow.report.view.VerdictView`, the part of a
result an alert may carry (names that are strings, numbers that are numbers, lists and names
bounded); the exception's own fields are read the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reident_airflow.outcomes import ReidentificationBreach
from reident_airflow.report.view import (
    MAX_NAME,
    BreachView,
    VerdictView,
    name_or_none,
    whole_or_none,
)

if TYPE_CHECKING:
    from reident_airflow.engine.advice import BreachAdvice

__all__ = [
    "ALERT_SCHEMA",
    "BREACH_EVENT",
    "FAILURE_EVENT",
    "OUTCOMES",
    "OUTCOME_TEXT",
    "WARNING_ONLY_TEXT",
    "advice_of",
    "as_text",
    "breach_payload",
    "is_warning_only",
    "scan_sentence",
]

#: ``schema`` of the webhook JSON (and of :func:`breach_payload`'s dict).
ALERT_SCHEMA = "reident.alert/v1"
#: ``event`` of an alert on a breached gate.
BREACH_EVENT = "reidentification_breach"
#: ``event`` of an alert on any other failure of the task.
FAILURE_EVENT = "task_failed"

#: The check named in an alert built from a report alone (no exception at hand).
_CHECK_OF_SCHEMA = {
    "reident.assessment/v1": "reidentification_risk",
    "reident.direct_match/v1": "direct_match",
}
#: The outcomes of a breach (the operators' ``on_breach``): each alerts unless opted out.
OUTCOMES = ("fail", "skip", "warn")
OUTCOME_TEXT = {
    "fail": "the task failed: the data were not published",
    "skip": "the task was skipped (on_breach='skip'): downstream tasks did not run",
    "warn": "the task succeeded with a warning (on_breach='warn'): the release went ahead",
}
#: What happened when only warning levels were crossed.
WARNING_ONLY_TEXT = "the task succeeded: the release went ahead"


def as_text(value: int | float | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return str(value)
    return f"{value:.6g}"


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # a property that needs a running Airflow (e.g. ti.log_url)
        return None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _empty_payload(context: Mapping[str, Any], exc: Any) -> dict[str, Any]:
    """The alert's keys with the task's ids and nothing of a breach yet."""
    return {
        "schema": ALERT_SCHEMA,
        "event": FAILURE_EVENT,
        **_task_ids(context),
        "exception_class": type(exc).__name__ if isinstance(exc, BaseException) else None,
        "check": None,
        "breaches": [],
        "quasi_identifiers": [],
        "k": None,
        "records": None,
        "classes": None,
        "columns_below_target": [],
        "report_schema": None,
        "outcome": None,
        "report_location": None,
        "report_url": None,
        "warnings": [],
        "advice": None,
    }


def breach_payload(context: Mapping[str, Any], *, report: Any = None) -> dict[str, Any]:
    """The alert for a failed task, as a JSON-safe dict (``"schema": "reident.alert/v1"``).

    ``context`` is the Airflow context of a failure callback: ``context["exception"]`` (a
    :class:`ReidentificationBreach` or any other error), ``context["ti"]`` (ids, try number,
    ``log_url``), else ``context["dag"]`` / ``context["dag_run"]``. ``report`` is the report
    the operator pushed to XCom, used when the context holds no exception object (a DAG-level
    callback); it counts as a breach only if it says ``"passed": false`` and lists breaches.

    Keys: ``schema``, ``event`` (:data:`BREACH_EVENT` or :data:`FAILURE_EVENT`), ``dag_id``,
    ``task_id``, ``run_id``, ``try_number``, ``map_index`` (None unless mapped), ``log_url``,
    ``exception_class``, ``check``, ``breaches`` (``[{"metric", "observed", "limit"}]``),
    ``quasi_identifiers``, ``k`` (smallest equivalence class), ``records``, ``classes``,
    ``columns_below_target`` (direct match), ``report_schema``, ``outcome`` (of a breach:
    ``"fail"``, ``"skip"`` or ``"warn"``, the operator's ``on_breach``), ``report_location``
    (where the operator wrote its HTML report, when it did), ``report_url`` (its URL for a
    browser, when it has one), ``warnings`` (the warning levels crossed, as ``breaches``; a
    table that crossed only those alerts with no breach and outcome ``"warn"``), ``advice``
    (on a ``min_k`` breach: :func:`advice_of`, with its ``sentence``), ``identifier_scan``
    (only when the report holds a scan: ``{"policy", "failing", "flagged"}``, the policy and
    the names of the columns it failed and flagged) and ``text`` (a one-line
    summary, the field Slack/Mattermost-style webhooks display). Values missing from the source are
    None (or ``[]``). Only these fields are copied, each checked for type: numbers stay numbers,
    names stay strings, and nothing else of the report or the exception's message is included.
    """
    exc = context.get("exception")
    payload = _empty_payload(context, exc)
    source = _breach_fields(payload, exc, report)
    if source is not None:
        payload.update(  # the payload's keys keep the order of _empty_payload
            report_schema=source.schema,
            records=source.records,
            classes=source.classes,
            columns_below_target=list(source.below_target),
            outcome=source.outcome if source.outcome in OUTCOMES else "fail",
            warnings=_crossings(source.warnings),
            advice=advice_of(source.advice),
            report_location=source.report_location,
            report_url=source.report_url,
        )
        if source.identifier_scan is not None:
            payload["identifier_scan"] = source.identifier_scan.to_dict()
    payload["text"] = _summary(payload)
    return payload


def _crossings(items: Sequence[BreachView]) -> list[dict[str, Any]]:
    """``[{"metric", "observed", "limit"}]`` of the breaches (or warnings) read."""
    return [{"metric": b.metric, "observed": b.observed, "limit": b.limit} for b in items]


def _task_ids(context: Mapping[str, Any]) -> dict[str, Any]:
    """Which task try failed: from the task instance, else the DAG, task and run."""
    ti = context.get("ti") or context.get("task_instance")
    dag_run = context.get("dag_run")
    map_index = whole_or_none(_attr(ti, "map_index"))
    return {
        "dag_id": _text(_attr(ti, "dag_id") or _attr(context.get("dag"), "dag_id")),
        "task_id": _text(_attr(ti, "task_id") or _attr(context.get("task"), "task_id")),
        "run_id": _text(_attr(ti, "run_id") or context.get("run_id") or _attr(dag_run, "run_id")),
        "try_number": whole_or_none(_attr(ti, "try_number")),
        "map_index": map_index if map_index is not None and map_index >= 0 else None,
        "log_url": _text(_attr(ti, "log_url")),
    }


def _breach_fields(payload: dict[str, Any], exc: Any, report: Any) -> VerdictView | None:
    """Fill the breach's fields of ``payload`` from the exception (or, without one, from the
    XCom report); returns the verdict of the report they came from, or None when it was no
    breach."""
    if isinstance(exc, ReidentificationBreach):
        source = VerdictView.from_dict(exc.report)
        given = VerdictView.from_dict(
            {"breaches": exc.breaches, "quasi_identifiers": exc.quasi_identifiers, "k": exc.k}
        )
        payload.update(
            event=BREACH_EVENT,
            check=name_or_none(exc.check, MAX_NAME),
            breaches=_crossings(given.breaches or source.breaches),
            quasi_identifiers=list(given.quasi_identifiers or source.quasi_identifiers),
            k=given.k if given.k is not None else source.k,
        )
        return source
    if isinstance(exc, BaseException) or not isinstance(report, Mapping):
        return None
    source = VerdictView.from_dict(report)
    if not source.breached:
        return None
    payload.update(
        event=BREACH_EVENT,
        check=_CHECK_OF_SCHEMA.get(source.schema or ""),
        breaches=_crossings(source.breaches),
        quasi_identifiers=list(source.quasi_identifiers),
        k=source.k,
    )
    return source


def _where(payload: Mapping[str, Any]) -> str:
    return f"{payload.get('dag_id')}.{payload.get('task_id')} (run {payload.get('run_id')})"


def _failure_cause(payload: Mapping[str, Any]) -> str:
    cls = payload.get("exception_class")
    if cls:
        return f"(not a re-identification breach): {cls}"
    return "(cause not available to this callback; see the task log)"


def _listed(items: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(
        f"{b['metric']} observed {as_text(b['observed'])} (limit {as_text(b['limit'])})"
        for b in items
    )


def is_warning_only(payload: Mapping[str, Any]) -> bool:
    """Whether the alert is about warning levels alone (the table passed its gate)."""
    return (
        payload.get("event") == BREACH_EVENT
        and not payload.get("breaches")
        and bool(payload.get("warnings"))
    )


def _summary(payload: Mapping[str, Any]) -> str:
    if payload.get("event") != BREACH_EVENT:
        return f"Task {_where(payload)} failed {_failure_cause(payload)}"
    breaches = payload.get("breaches") or []
    warnings = payload.get("warnings") or []
    check = payload.get("check") or "check"
    if is_warning_only(payload):
        text = (
            f"Re-identification warning in {_where(payload)}: {check} crossed "
            f"{len(warnings)} warning level(s): {_listed(warnings)}; {WARNING_ONLY_TEXT}"
        )
    else:
        text = (
            f"Re-identification breach in {_where(payload)}: {check} "
            f"breached {len(breaches)} threshold(s): {_listed(breaches)}"
        )
        if payload.get("outcome") in ("skip", "warn"):
            text += f"; {OUTCOME_TEXT[payload['outcome']]}"
        if warnings:
            text += f"; warning levels crossed: {_listed(warnings)}"
    scan = scan_sentence(payload)
    if scan is not None:
        text += f"; {scan}"
    advice = payload.get("advice")
    if isinstance(advice, Mapping) and advice.get("sentence"):
        text += f"; what to do: {advice['sentence']}"
    if payload.get("report_url") or payload.get("report_location"):
        text += f"; report: {payload.get('report_url') or payload['report_location']}"
    return text


def scan_sentence(payload: Mapping[str, Any]) -> str | None:
    """The identifier scan in words, from the alert's ``identifier_scan`` field (names only);
    ``None`` when the alert has none."""
    scan = payload.get("identifier_scan")
    if not isinstance(scan, Mapping):
        return None
    failing, flagged = list(scan.get("failing") or []), list(scan.get("flagged") or [])
    policy = scan.get("policy")
    head = f"identifier scan (policy {policy})" if policy else "identifier scan"
    parts = []
    if flagged:
        parts.append(f"{len(flagged)} column(s) flagged ({', '.join(map(str, flagged))})")
    if failing:
        parts.append(f"{len(failing)} failing ({', '.join(map(str, failing))})")
    return f"{head}: " + (", ".join(parts) or "every column clear")


def advice_of(advice: BreachAdvice | None) -> dict[str, Any] | None:
    """The advice on a ``min_k`` breach as the alert carries it (the report's advice read by
    :class:`~reident_airflow.report.view.VerdictView`: counts, the driving column's name and
    its distinctions, Datafly's levels per QI), with its ``sentence`` written from those
    fields alone; None when the report holds none."""
    if advice is None:
        return None
    return {**advice.to_dict(), "sentence": advice.describe()}
