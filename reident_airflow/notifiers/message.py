"""The alert as an e-mail: subject, plain text and HTML, from a :func:`breach_payload` dict."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from jinja2.sandbox import SandboxedEnvironment

from reident_airflow.notifiers.payload import (
    OUTCOME_TEXT,
    SKIPPED_EVENT,
    WARNING_EVENT,
    WARNING_ONLY_TEXT,
    as_text,
    is_gate_alert,
    is_warning_only,
    scan_sentence,
)

__all__ = ["SUBJECT_TEMPLATES", "breach_email", "slack_text"]

#: Subjects are rendered sandboxed, over the alert's own fields only.
SUBJECT_TEMPLATES = SandboxedEnvironment(autoescape=False)

_AGGREGATES_ONLY = "This alert carries aggregates only (no record values)."


def _default_subject(payload: Mapping[str, Any]) -> str:
    where = f"{payload.get('dag_id')}.{payload.get('task_id')}"
    if not is_gate_alert(payload):
        cls = payload.get("exception_class")
        if cls:
            return f"[reident] Task failed (not a re-identification breach): {where}: {cls}"
        return f"[reident] Task failed: {where}"
    if is_warning_only(payload):
        n = len(payload.get("warnings") or [])
        return (
            f"[reident] Re-identification warning: {where} ({payload.get('check')}, "
            f"{n} warning level(s), warn)"
        )
    n = len(payload.get("breaches") or [])
    outcome = payload.get("outcome")
    tail = f", {outcome}" if outcome in ("skip", "warn") else ""
    head = _SUBJECT_HEADS.get(str(payload.get("event")), "Re-identification breach")
    return f"[reident] {head}: {where} ({payload.get('check')}, {n} metric(s){tail})"


#: The subject's head of a breach acted on with a skip or a warn (a fail: "breach").
_SUBJECT_HEADS = {
    SKIPPED_EVENT: "Re-identification breach, task skipped",
    WARNING_EVENT: "Re-identification warning, breach released",
}


def breach_email(
    payload: Mapping[str, Any], *, subject_template: str | None = None
) -> tuple[str, str, str]:
    """``(subject, text_body, html_body)`` of the e-mail for a :func:`breach_payload` dict.

    ``subject_template`` is a Jinja template rendered (sandboxed) with the payload's keys plus
    ``breach_count``, e.g. ``"{{ check }} breached on {{ dag_id }}.{{ task_id }}"`` — only the
    alert's own fields are available, not the Airflow context, so a subject cannot pull in a
    record value or an exception message. Every value in the HTML body is escaped.
    """
    if subject_template is None:
        subject = _default_subject(payload)
    else:
        variables = dict(payload, breach_count=len(payload.get("breaches") or []))
        subject = SUBJECT_TEMPLATES.from_string(subject_template).render(**variables)
    subject = " ".join(subject.split())  # one header line, whatever the template did
    title, intro = _headline(payload)
    return subject, _text_body(payload, title, intro), _html_body(payload, title, intro)


def slack_text(payload: Mapping[str, Any], *, subject_template: str | None = None) -> str:
    """The alert as a Slack message: the e-mail's subject in bold, then the payload itself
    (the JSON, ``reident.alert`` as posted to a webhook) in a code block, so that a reader
    or a bot gets every field. ``&``, ``<`` and ``>`` are escaped as Slack asks, so a
    column name never becomes a link or a mention (``<!channel>``)."""
    subject = breach_email(payload, subject_template=subject_template)[0]
    body = json.dumps(payload, allow_nan=False, indent=2)
    text = f"*{subject}*\n```\n{body}\n```"
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _headline(payload: Mapping[str, Any]) -> tuple[str, str]:
    """The e-mail's title and first sentence."""
    if is_warning_only(payload):
        return (
            "Re-identification risk warning level crossed",
            f"The table passed its release gate but crossed a warning level: {WARNING_ONLY_TEXT}.",
        )
    if is_gate_alert(payload):
        if payload.get("outcome") in ("skip", "warn"):
            intro = f"The release gate was breached: {OUTCOME_TEXT[payload['outcome']]}."
            return "Re-identification risk gate breached", intro
        return (
            "Re-identification risk gate breached",
            "The release gate failed: the data were not published.",
        )
    if payload.get("exception_class"):
        return (
            "Task failed (not a re-identification breach)",
            "The release-gate task failed for a reason other than a breached threshold; "
            "see the task log.",
        )
    return (
        "Task failed",
        "The cause of the failure is not available to this callback; see the task log.",
    )


def _text_body(payload: Mapping[str, Any], title: str, intro: str) -> str:
    rows = _rows(payload)
    text = [title, "", intro, ""]
    width = max(len(label) for label, _ in rows)
    text += [f"{label.ljust(width)} : {value}" for label, value in rows]
    for heading, key in (
        ("Breached thresholds", "breaches"),
        ("Warning levels crossed", "warnings"),
    ):
        items = payload.get(key) or []
        if items:
            text += ["", f"{heading}:"]
            text += [
                f"  - {b['metric']}: observed {as_text(b['observed'])}, limit {as_text(b['limit'])}"
                for b in items
            ]
    scan = scan_sentence(payload)
    if scan:
        text += ["", scan[0].upper() + scan[1:] + "."]
    sentence = _advice_sentence(payload)
    if sentence:
        text += ["", f"What to do: {sentence}"]
    if payload.get("report_url") or payload.get("report_location"):
        text += ["", f"Report: {payload.get('report_url') or payload['report_location']}"]
    if payload.get("log_url"):
        text += ["", f"Task log: {payload['log_url']}"]
    text += ["", _AGGREGATES_ONLY]
    return "\n".join(text) + "\n"


def _html_body(payload: Mapping[str, Any], title: str, intro: str) -> str:
    esc = html.escape
    parts = [
        "<html><body>",
        f"<h2>{esc(title)}</h2>",
        f"<p>{esc(intro)}</p>",
        "<table>",
        *(f"<tr><th align='left'>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in _rows(payload)),
        "</table>",
    ]
    for heading, key in (
        ("Breached thresholds", "breaches"),
        ("Warning levels crossed", "warnings"),
    ):
        items = payload.get(key) or []
        if items:
            parts += [
                f"<h3>{heading}</h3>",
                "<table border='1' cellpadding='4' cellspacing='0'>",
                "<tr><th>Metric</th><th>Observed</th><th>Limit</th></tr>",
                *(
                    f"<tr><td>{esc(b['metric'])}</td><td>{esc(as_text(b['observed']))}</td>"
                    f"<td>{esc(as_text(b['limit']))}</td></tr>"
                    for b in items
                ),
                "</table>",
            ]
    scan = scan_sentence(payload)
    if scan:
        parts += ["<h3>Identifier scan</h3>", f"<p>{esc(scan[0].upper() + scan[1:])}.</p>"]
    sentence = _advice_sentence(payload)
    if sentence:
        parts += ["<h3>What to do</h3>", f"<p>{esc(sentence)}</p>"]
    url = payload.get("report_url")
    if isinstance(url, str) and url.startswith(("https://", "http://")):
        parts.append(f'<p><a href="{esc(url)}">Report</a></p>')
    elif url or payload.get("report_location"):
        parts.append(f"<p>Report: {esc(url or payload['report_location'])}</p>")
    if payload.get("log_url"):
        parts.append(f'<p><a href="{esc(payload["log_url"])}">Task log</a></p>')
    parts += [f"<p><small>{_AGGREGATES_ONLY}</small></p>", "</body></html>"]
    return "\n".join(parts) + "\n"


def _advice_sentence(payload: Mapping[str, Any]) -> str | None:
    advice = payload.get("advice")
    sentence = advice.get("sentence") if isinstance(advice, Mapping) else None
    return sentence if isinstance(sentence, str) and sentence else None


def _rows(payload: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("DAG", str(payload.get("dag_id"))),
        ("Task", str(payload.get("task_id"))),
        ("Run", str(payload.get("run_id"))),
    ]
    if payload.get("map_index") is not None:
        rows.append(("Map index", str(payload["map_index"])))
    if payload.get("try_number") is not None:
        rows.append(("Try", str(payload["try_number"])))
    rows.append(("Event", str(payload.get("event"))))
    if not is_gate_alert(payload):
        rows.append(("Error", str(payload.get("exception_class") or "not available")))
        return rows
    rows.append(("Check", str(payload.get("check"))))
    if payload.get("outcome"):
        rows.append(("Outcome", str(payload["outcome"])))
    if payload.get("records") is not None:
        rows.append(("Records", f"{payload['records']:,}"))
    if payload.get("quasi_identifiers"):
        rows.append(("Quasi-identifiers", ", ".join(payload["quasi_identifiers"])))
    if payload.get("k") is not None:
        rows.append(("k (smallest class)", str(payload["k"])))
    if payload.get("columns_below_target"):
        rows.append(("Columns below target", ", ".join(payload["columns_below_target"])))
    return rows
