"""The alert's content: a JSON-safe dict built field by field from a breach (or the report
the operator pushed to XCom), never the report or the exception's message wholesale."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from reident_airflow.outcomes import ReidentificationBreach

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
_MAX_NAME = 200
_MAX_LOCATION = 2000
#: The outcomes of a breach (the operators' ``on_breach``): each alerts unless opted out.
OUTCOMES = ("fail", "skip", "warn")
OUTCOME_TEXT = {
    "fail": "the task failed: the data were not published",
    "skip": "the task was skipped (on_breach='skip'): downstream tasks did not run",
    "warn": "the task succeeded with a warning (on_breach='warn'): the release went ahead",
}
_MAX_ITEMS = 100
#: What happened when only warning levels were crossed.
WARNING_ONLY_TEXT = "the task succeeded: the release went ahead"


def _number(value: Any) -> int | float | None:
    """A finite number as a plain ``int``/``float``; anything else (text, bool, NaN) is None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    return number if math.isfinite(number) else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return int(number) if isinstance(number, int) else None


def _name(value: Any) -> str | None:
    """A column, metric or check name (a string, cut to a sane length); else None."""
    if not isinstance(value, str) or not value:
        return None
    return value[:_MAX_NAME]


def _names(values: Any) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        return []
    names = (_name(v) for v in list(values)[:_MAX_ITEMS])
    return [n for n in names if n is not None]


def _breaches(values: Any) -> list[dict[str, Any]]:
    """``[{"metric", "observed", "limit"}]`` rebuilt field by field (nothing else is kept)."""
    if isinstance(values, str) or not isinstance(values, Sequence):
        return []
    out: list[dict[str, Any]] = []
    for item in list(values)[:_MAX_ITEMS]:
        if not isinstance(item, Mapping):
            continue
        out.append(
            {
                "metric": _name(item.get("metric")) or "unknown",
                "observed": _number(item.get("observed")),
                "limit": _number(item.get("limit")),
            }
        )
    return out


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
    (on a ``min_k`` breach: :func:`advice_of`, with its ``sentence``) and ``text`` (a one-line
    summary, the field Slack/Mattermost-style webhooks display). Values missing from the source are
    None (or ``[]``). Only these fields are copied, each checked for type: numbers stay numbers,
    names stay strings, and nothing else of the report or the exception's message is included.
    """
    exc = context.get("exception")
    payload = _empty_payload(context, exc)
    source = _breach_fields(payload, exc, report)
    if source is not None:
        outcome = source.get("outcome")
        location = source.get("report_location")
        url = source.get("report_url")
        payload.update(  # the payload's keys keep the order of _empty_payload
            report_schema=_name(source.get("schema")),
            records=_count(source.get("records")),
            classes=_count(source.get("classes")),
            columns_below_target=_names(source.get("below_target")),
            outcome=outcome if outcome in OUTCOMES else "fail",
            warnings=_breaches(source.get("warnings")),
            advice=advice_of(source.get("advice")),
            report_location=location[:_MAX_LOCATION] if isinstance(location, str) else None,
            report_url=url[:_MAX_LOCATION] if isinstance(url, str) else None,
        )
    payload["text"] = _summary(payload)
    return payload


def _task_ids(context: Mapping[str, Any]) -> dict[str, Any]:
    """Which task try failed: from the task instance, else the DAG, task and run."""
    ti = context.get("ti") or context.get("task_instance")
    dag_run = context.get("dag_run")
    map_index = _count(_attr(ti, "map_index"))
    return {
        "dag_id": _text(_attr(ti, "dag_id") or _attr(context.get("dag"), "dag_id")),
        "task_id": _text(_attr(ti, "task_id") or _attr(context.get("task"), "task_id")),
        "run_id": _text(_attr(ti, "run_id") or context.get("run_id") or _attr(dag_run, "run_id")),
        "try_number": _count(_attr(ti, "try_number")),
        "map_index": map_index if map_index is not None and map_index >= 0 else None,
        "log_url": _text(_attr(ti, "log_url")),
    }


def _breach_fields(payload: dict[str, Any], exc: Any, report: Any) -> Mapping[str, Any] | None:
    """Fill the breach's fields of ``payload`` from the exception (or, without one, from the
    XCom report); returns the report they came from, or None when it was no breach."""
    if isinstance(exc, ReidentificationBreach):
        source: Mapping[str, Any] = exc.report if isinstance(exc.report, Mapping) else {}
        payload.update(
            event=BREACH_EVENT,
            check=_name(exc.check),
            breaches=_breaches(exc.breaches) or _breaches(source.get("breaches")),
            quasi_identifiers=_names(exc.quasi_identifiers)
            or _names(source.get("quasi_identifiers")),
            k=_count(exc.k) if _count(exc.k) is not None else _count(source.get("k")),
        )
        return source
    if (
        isinstance(exc, BaseException)
        or not isinstance(report, Mapping)
        or report.get("passed") is not False
        or not _breaches(report.get("breaches"))
    ):
        return None
    payload.update(
        event=BREACH_EVENT,
        check=_CHECK_OF_SCHEMA.get(str(report.get("schema"))),
        breaches=_breaches(report.get("breaches")),
        quasi_identifiers=_names(report.get("quasi_identifiers")),
        k=_count(report.get("k")),
    )
    return report


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
    advice = payload.get("advice")
    if isinstance(advice, Mapping) and advice.get("sentence"):
        text += f"; what to do: {advice['sentence']}"
    if payload.get("report_url") or payload.get("report_location"):
        text += f"; report: {payload.get('report_url') or payload['report_location']}"
    return text


def _levels(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    items = list(value.items())[:_MAX_ITEMS]
    return {n: c for n, c in ((_name(k), _count(v)) for k, v in items) if n and c is not None}


def advice_of(value: Any) -> dict[str, Any] | None:
    """The advice on a ``min_k`` breach (the report's ``advice``), rebuilt field by field --
    counts, the driving column's name and its distinctions, Datafly's levels per QI -- with
    its ``sentence`` written from those fields alone; None when the report holds none."""
    from reident_airflow.engine.advice import BreachAdvice, DataflyOutlook, RiskDriver

    if not isinstance(value, Mapping):
        return None
    counts = {
        key: _count(value.get(key))
        for key in ("k", "records", "classes", "classes_below_k", "records_below_k")
    }
    if any(v is None for v in counts.values()):
        return None
    driver = value.get("driver")
    column = _name(driver.get("column")) if isinstance(driver, Mapping) else None
    found_driver = None
    if isinstance(driver, Mapping) and column is not None:
        full, without = (
            _number(driver.get("distinction")),
            _number(driver.get("distinction_without")),
        )
        if full is not None and without is not None:
            found_driver = RiskDriver(
                column=column, distinction=float(full), distinction_without=float(without)
            )
    outlook = value.get("datafly")
    found_outlook = None
    if isinstance(outlook, Mapping) and _count(outlook.get("k")) is not None:
        found_outlook = DataflyOutlook(
            k=int(outlook["k"]),
            feasible=outlook.get("feasible") is True,
            levels=_levels(outlook.get("levels")),
            suppressed_records=_count(outlook.get("suppressed_records")),
            below_k=_count(outlook.get("below_k")),
            suppression_limit=_count(outlook.get("suppression_limit")),
        )
    advice = BreachAdvice(**counts, driver=found_driver, datafly=found_outlook)  # type: ignore[arg-type]
    return {**advice.to_dict(), "sentence": advice.describe()}
