"""The alert's content: a JSON-safe dict built field by field from a breach (or the report
the operator pushed to XCom), never the report or the exception's message wholesale.

The report is read through :class:`~reident_airflow.report.view.VerdictView`, the part of a
result an alert may carry (names that are strings, numbers that are numbers, lists and names
bounded); the exception's own fields are read the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.catalogue import threshold_of
from reident_airflow.engine.direct_match import BREACH_METRIC as DIRECT_MATCH_METRIC
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
    "ERROR_EVENT",
    "EVENTS",
    "EVENT_OF_OUTCOME",
    "OUTCOMES",
    "OUTCOME_TEXT",
    "SKIPPED_EVENT",
    "WARNING_EVENT",
    "WARNING_ONLY_TEXT",
    "advice_of",
    "alert_kind",
    "as_text",
    "breach_payload",
    "is_gate_alert",
    "is_warning_only",
    "scan_sentence",
]

#: ``schema`` of the webhook JSON (and of :func:`breach_payload`'s dict). v2: ``event`` names
#: what happened to the release (v1 called a skip and a warning a breach, any other failure
#: ``task_failed``), keys that do not apply are left out, whole numbers are JSON integers.
ALERT_SCHEMA = "reident.alert/v2"
#: ``event`` of an alert on a breached gate that failed the task: nothing was published.
BREACH_EVENT = "reidentification_breach"
#: ``event`` of a breached gate acted on with ``on_breach="skip"``: downstream did not run.
SKIPPED_EVENT = "reidentification_skipped"
#: ``event`` of a release that went ahead with a warning: ``on_breach="warn"`` on a breach
#: (``breaches`` lists it), or warning levels alone crossed (``breaches`` is empty).
WARNING_EVENT = "reidentification_warning"
#: ``event`` of any other failure of the task (a database down, a bad parameter).
ERROR_EVENT = "reidentification_error"
#: Every ``event`` of an alert, worst first.
EVENTS = (BREACH_EVENT, SKIPPED_EVENT, WARNING_EVENT, ERROR_EVENT)

#: The check named in an alert built from a report alone (no exception at hand).
_CHECK_OF_SCHEMA = {
    "reident.assessment/v1": "reidentification_risk",
    "reident.direct_match/v1": "direct_match",
    "reident.datafly/v1": "datafly",
}
#: The outcomes of a breach (the operators' ``on_breach``): each alerts unless opted out.
OUTCOMES = ("fail", "skip", "warn")
#: The ``event`` of each outcome of a gate.
EVENT_OF_OUTCOME = {"fail": BREACH_EVENT, "skip": SKIPPED_EVENT, "warn": WARNING_EVENT}
OUTCOME_TEXT = {
    "fail": "the task failed: the data were not published",
    "skip": "the task was skipped (on_breach='skip'): downstream tasks did not run",
    "warn": "the task succeeded with a warning (on_breach='warn'): the release went ahead",
}
#: What happened when only warning levels were crossed.
WARNING_ONLY_TEXT = "the task succeeded: the release went ahead"

#: Breach metrics that count (records, columns) outside the engine's catalogue of thresholds:
#: Datafly's records below k (operators/datafly.py) and the identifier scan's failing columns.
_COUNT_METRICS = frozenset(
    {
        "datafly.records_below_k",
        "identifier_scan.failing_columns",
        "since_last_release.gained_quasi_identifiers",
    }
)
#: Breach metrics that are shares (or percentages) outside the catalogue.
_SHARE_METRICS = frozenset({DIRECT_MATCH_METRIC})


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


def is_gate_alert(payload: Mapping[str, Any]) -> bool:
    """Whether the alert is about a gate's verdict (a breach, a skip, a warning), not an
    error."""
    return payload.get("event") in (BREACH_EVENT, SKIPPED_EVENT, WARNING_EVENT)


#: What the log calls an alert of each ``event``.
_KINDS = {
    BREACH_EVENT: "Breach",
    SKIPPED_EVENT: "Skip",
    WARNING_EVENT: "Warning",
    ERROR_EVENT: "Error",
}


def alert_kind(payload: Mapping[str, Any]) -> str:
    """What the log calls the alert: ``"Breach"``, ``"Skip"``, ``"Warning"`` or ``"Error"``
    (``"Warning alert posted to webhook ..."``)."""
    return _KINDS.get(str(payload.get("event")), "Error")


def breach_payload(context: Mapping[str, Any], *, report: Any = None) -> dict[str, Any]:
    """The alert for a gate's verdict or a failed task, as a JSON-safe dict
    (``"schema": "reident.alert/v2"``; docs/contract.md §7, and the JSON Schema
    ``reident_airflow/schemas/reident.alert.v2.schema.json``).

    ``context`` is the Airflow context of a failure callback: ``context["exception"]`` (a
    :class:`ReidentificationBreach` or any other error), ``context["ti"]`` (ids, try number,
    ``log_url``), else ``context["dag"]`` / ``context["dag_run"]``. ``report`` is the report
    the operator pushed to XCom, used when the context holds no exception object (a DAG-level
    callback); it counts as a breach only if it says ``"passed": false`` and lists breaches.

    Every alert has ``schema``, ``event``, ``dag_id``, ``task_id``, ``run_id``,
    ``try_number``, ``map_index`` (None unless mapped), ``log_url``, ``exception_class`` and
    ``text`` (a one-line summary, the field Slack/Mattermost-style webhooks display). ``event``
    is :data:`BREACH_EVENT` (the gate failed the task), :data:`SKIPPED_EVENT`,
    :data:`WARNING_EVENT` (the release went ahead: ``on_breach="warn"``, or warning levels
    alone) or :data:`ERROR_EVENT` (any other failure: the class name only).

    An alert on a gate adds ``check``, ``breaches`` (``[{"metric", "observed", "limit"}]``),
    ``records``, ``report_schema``, ``outcome`` (``"fail"``, ``"skip"`` or ``"warn"``, the
    operator's ``on_breach``), ``report_location`` and ``report_url`` (the HTML report's
    location and URL, when it has them), ``warnings`` (the warning levels crossed, as
    ``breaches``); a risk check (and Datafly) ``quasi_identifiers``, ``k`` (smallest
    equivalence class), ``classes`` and ``advice`` (on a ``min_k`` breach: :func:`advice_of`,
    with its ``sentence``); a direct match ``columns_below_target``; ``identifier_scan`` only
    when the report holds a scan (``{"policy", "failing", "flagged"}``, names only). Keys that
    do not apply are left out; a value the source does not give is None. Counts are ints and
    so are the observed values and limits of the metrics that count (``k``, l-diversity,
    records or columns); shares are floats. Only these fields are copied, each checked for
    type: nothing else of the report or the exception's message is included.
    """
    exc = context.get("exception")
    payload: dict[str, Any] = {
        "schema": ALERT_SCHEMA,
        "event": ERROR_EVENT,
        **_task_ids(context),
        "exception_class": type(exc).__name__ if isinstance(exc, BaseException) else None,
    }
    payload.update(_gate_fields(exc, report))
    outcome = payload.get("outcome")
    if isinstance(outcome, str):
        payload["event"] = EVENT_OF_OUTCOME[outcome]
    payload["text"] = _summary(payload)
    return payload


def _number(metric: str, value: int | float | None) -> int | float | None:
    """A metric's observed value or limit as JSON should carry it: a whole number of a metric
    that counts as an int (``k`` 5, not 5.0), a share as a float; any other as read."""
    if value is None:
        return None
    threshold = threshold_of(metric)
    if metric in _COUNT_METRICS or (threshold is not None and threshold.whole):
        return int(value) if float(value).is_integer() else value
    if metric in _SHARE_METRICS or threshold is not None:
        return float(value)
    return value


def _crossings(items: Sequence[BreachView]) -> list[dict[str, Any]]:
    """``[{"metric", "observed", "limit"}]`` of the breaches (or warnings) read."""
    return [
        {
            "metric": b.metric,
            "observed": _number(b.metric, b.observed),
            "limit": _number(b.metric, b.limit),
        }
        for b in items
    ]


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


def _gate_fields(exc: Any, report: Any) -> dict[str, Any]:
    """The fields of a gate's alert, in the order the alert lists them, from the exception
    (or, without one, from the XCom report); none when it was no breach."""
    if isinstance(exc, ReidentificationBreach):
        source = VerdictView.from_dict(exc.report)
        given = VerdictView.from_dict(
            {"breaches": exc.breaches, "quasi_identifiers": exc.quasi_identifiers, "k": exc.k}
        )
        check = name_or_none(exc.check, MAX_NAME)
        breaches = given.breaches or source.breaches
        qis = given.quasi_identifiers or source.quasi_identifiers
        k = given.k if given.k is not None else source.k
    elif isinstance(exc, BaseException) or not isinstance(report, Mapping):
        return {}
    else:
        source = VerdictView.from_dict(report)
        if not source.breached:
            return {}
        check = _CHECK_OF_SCHEMA.get(source.schema or "")
        breaches, qis, k = source.breaches, source.quasi_identifiers, source.k
    direct_match = check == "direct_match" or source.schema == "reident.direct_match/v1"
    fields: dict[str, Any] = {"check": check, "breaches": _crossings(breaches)}
    if not direct_match:
        fields.update(quasi_identifiers=list(qis), k=k)
    fields["records"] = source.records
    if direct_match:
        fields["columns_below_target"] = list(source.below_target)
    else:
        fields["classes"] = source.classes
    fields.update(
        report_schema=source.schema,
        outcome=source.outcome if source.outcome in OUTCOMES else "fail",
        report_location=source.report_location,
        report_url=source.report_url,
        warnings=_crossings(source.warnings),
    )
    if not direct_match:
        fields["advice"] = advice_of(source.advice)
    if source.identifier_scan is not None:
        fields["identifier_scan"] = source.identifier_scan.to_dict()
    return fields


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
        payload.get("event") == WARNING_EVENT
        and not payload.get("breaches")
        and bool(payload.get("warnings"))
    )


def _summary(payload: Mapping[str, Any]) -> str:
    if not is_gate_alert(payload):
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
