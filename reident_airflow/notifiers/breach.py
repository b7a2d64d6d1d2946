"""Alerting on a breached release gate: a notifier for ``on_failure_callback``.

:class:`ReidentBreachNotifier` sends one alert per failed task to a webhook (JSON ``POST`` to
the URL of an Airflow HTTP connection) and/or by e-mail (through an Airflow SMTP connection).
The content is built by two plain functions, :func:`breach_payload` and :func:`breach_email`.
A breach acted on with ``on_breach="skip"`` or ``"warn"`` fails nothing: the operator calls the
notifiers of its ``on_failure_callback`` itself, so every outcome alerts (``outcomes`` opts out).

What an alert carries (docs/contract.md §5, "Privacy of the outputs themselves"): the DAG, task and
run ids, the check, each breached metric with its observed value and limit, the QI column
names, ``k``, the number of records and a link to the task log. These fields are *copied one
by one* from the :class:`~reident_airflow.outcomes.ReidentificationBreach` (or the
report the operator pushed to XCom); the report is never forwarded wholesale, and the
exception's message is never sent, so an alert cannot carry a record's values even if a
report or a message one day does.

A failure that is not a breach (a database that is down, a bad parameter) gets a short
"task failed (not a re-identification breach): <exception class>" alert by default — an alert
on an infrastructure failure of a release gate is useful — with the class name only, never
the message, which may quote data (an SQL statement, a value). ``alert_on_other_failures=False``
turns these off.
"""

from __future__ import annotations

import base64
import html
import json
import math
import numbers
import re
import smtplib
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from jinja2 import TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment

from reident_airflow._compat import BaseHook, BaseNotifier, Context
from reident_airflow.outcomes import REPORT_XCOM_KEY, ReidentificationBreach

__all__ = [
    "ALERT_SCHEMA",
    "BREACH_EVENT",
    "FAILURE_EVENT",
    "OUTCOMES",
    "ReidentBreachNotifier",
    "breach_email",
    "breach_payload",
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
_OUTCOME_TEXT = {
    "fail": "the task failed: the data were not published",
    "skip": "the task was skipped (on_breach='skip'): downstream tasks did not run",
    "warn": "the task succeeded with a warning (on_breach='warn'): the release went ahead",
}
_MAX_ITEMS = 100
_DEFAULT_SMTP_CONN_ID = "smtp_default"
_TEMPLATES = SandboxedEnvironment(autoescape=False)


# --------------------------------------------------------------------------------------------
# Content: pure functions
# --------------------------------------------------------------------------------------------


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


def _fmt(value: int | float | None) -> str:
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
    (where the operator wrote its HTML report, when it did) and ``text`` (a one-line summary,
    the field Slack/Mattermost-style webhooks display). Values missing from the source are
    None (or ``[]``). Only these fields are copied, each checked for type: numbers stay numbers,
    names stay strings, and nothing else of the report or the exception's message is included.
    """
    ti = context.get("ti") or context.get("task_instance")
    exc = context.get("exception")
    dag_run = context.get("dag_run")
    map_index = _count(_attr(ti, "map_index"))
    payload: dict[str, Any] = {
        "schema": ALERT_SCHEMA,
        "event": FAILURE_EVENT,
        "dag_id": _text(_attr(ti, "dag_id") or _attr(context.get("dag"), "dag_id")),
        "task_id": _text(_attr(ti, "task_id") or _attr(context.get("task"), "task_id")),
        "run_id": _text(_attr(ti, "run_id") or context.get("run_id") or _attr(dag_run, "run_id")),
        "try_number": _count(_attr(ti, "try_number")),
        "map_index": map_index if map_index is not None and map_index >= 0 else None,
        "log_url": _text(_attr(ti, "log_url")),
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
    }
    source: Mapping[str, Any] | None = None
    if isinstance(exc, ReidentificationBreach):
        source = exc.report if isinstance(exc.report, Mapping) else {}
        breaches = _breaches(exc.breaches) or _breaches(source.get("breaches"))
        payload.update(
            event=BREACH_EVENT,
            check=_name(exc.check),
            breaches=breaches,
            quasi_identifiers=_names(exc.quasi_identifiers)
            or _names(source.get("quasi_identifiers")),
            k=_count(exc.k) if _count(exc.k) is not None else _count(source.get("k")),
        )
    elif (
        not isinstance(exc, BaseException)
        and isinstance(report, Mapping)
        and report.get("passed") is False
        and _breaches(report.get("breaches"))
    ):
        source = report
        payload.update(
            event=BREACH_EVENT,
            check=_CHECK_OF_SCHEMA.get(str(report.get("schema"))),
            breaches=_breaches(report.get("breaches")),
            quasi_identifiers=_names(report.get("quasi_identifiers")),
            k=_count(report.get("k")),
        )
    if source is not None:
        outcome = source.get("outcome")
        location = source.get("report_location")
        payload.update(
            outcome=outcome if outcome in OUTCOMES else "fail",
            report_location=location[:_MAX_LOCATION] if isinstance(location, str) else None,
            records=_count(source.get("records")),
            classes=_count(source.get("classes")),
            columns_below_target=_names(source.get("below_target")),
            report_schema=_name(source.get("schema")),
        )
    payload["text"] = _summary(payload)
    return payload


def _where(payload: Mapping[str, Any]) -> str:
    return f"{payload.get('dag_id')}.{payload.get('task_id')} (run {payload.get('run_id')})"


def _failure_cause(payload: Mapping[str, Any]) -> str:
    cls = payload.get("exception_class")
    if cls:
        return f"(not a re-identification breach): {cls}"
    return "(cause not available to this callback; see the task log)"


def _summary(payload: Mapping[str, Any]) -> str:
    if payload.get("event") != BREACH_EVENT:
        return f"Task {_where(payload)} failed {_failure_cause(payload)}"
    breaches = payload.get("breaches") or []
    parts = "; ".join(
        f"{b['metric']} observed {_fmt(b['observed'])} (limit {_fmt(b['limit'])})" for b in breaches
    )
    text = (
        f"Re-identification breach in {_where(payload)}: {payload.get('check') or 'check'} "
        f"breached {len(breaches)} threshold(s): {parts}"
    )
    if payload.get("outcome") in ("skip", "warn"):
        text += f"; {_OUTCOME_TEXT[payload['outcome']]}"
    if payload.get("report_location"):
        text += f"; report: {payload['report_location']}"
    return text


def _default_subject(payload: Mapping[str, Any]) -> str:
    where = f"{payload.get('dag_id')}.{payload.get('task_id')}"
    if payload.get("event") != BREACH_EVENT:
        cls = payload.get("exception_class")
        if cls:
            return f"[reident] Task failed (not a re-identification breach): {where}: {cls}"
        return f"[reident] Task failed: {where}"
    n = len(payload.get("breaches") or [])
    outcome = payload.get("outcome")
    tail = f", {outcome}" if outcome in ("skip", "warn") else ""
    return (
        f"[reident] Re-identification breach: {where} ({payload.get('check')}, {n} metric(s){tail})"
    )


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
        subject = _TEMPLATES.from_string(subject_template).render(**variables)
    subject = " ".join(subject.split())  # one header line, whatever the template did
    rows = _rows(payload)
    breaches = payload.get("breaches") or []
    log_url = payload.get("log_url")
    location = payload.get("report_location")

    if payload.get("event") == BREACH_EVENT:
        title = "Re-identification risk gate breached"
        intro = "The release gate failed: the data were not published."
        if payload.get("outcome") in ("skip", "warn"):
            intro = f"The release gate was breached: {_OUTCOME_TEXT[payload['outcome']]}."
    elif payload.get("exception_class"):
        title = "Task failed (not a re-identification breach)"
        intro = (
            "The release-gate task failed for a reason other than a breached threshold; "
            "see the task log."
        )
    else:
        title = "Task failed"
        intro = "The cause of the failure is not available to this callback; see the task log."

    text = [title, "", intro, ""]
    width = max(len(label) for label, _ in rows)
    text += [f"{label.ljust(width)} : {value}" for label, value in rows]
    if breaches:
        text += ["", "Breached thresholds:"]
        text += [
            f"  - {b['metric']}: observed {_fmt(b['observed'])}, limit {_fmt(b['limit'])}"
            for b in breaches
        ]
    if location:
        text += ["", f"Report: {location}"]
    if log_url:
        text += ["", f"Task log: {log_url}"]
    text += ["", "This alert carries aggregates only (no record values)."]
    text_body = "\n".join(text) + "\n"

    esc = html.escape
    parts = [
        "<html><body>",
        f"<h2>{esc(title)}</h2>",
        f"<p>{esc(intro)}</p>",
        "<table>",
        *(f"<tr><th align='left'>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows),
        "</table>",
    ]
    if breaches:
        parts += [
            "<h3>Breached thresholds</h3>",
            "<table border='1' cellpadding='4' cellspacing='0'>",
            "<tr><th>Metric</th><th>Observed</th><th>Limit</th></tr>",
            *(
                f"<tr><td>{esc(b['metric'])}</td><td>{esc(_fmt(b['observed']))}</td>"
                f"<td>{esc(_fmt(b['limit']))}</td></tr>"
                for b in breaches
            ),
            "</table>",
        ]
    if location:
        parts.append(f"<p>Report: {esc(location)}</p>")
    if log_url:
        parts.append(f'<p><a href="{esc(log_url)}">Task log</a></p>')
    parts += ["<p><small>This alert carries aggregates only (no record values).</small></p>"]
    parts.append("</body></html>")
    return subject, text_body, "\n".join(parts) + "\n"


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
    if payload.get("event") != BREACH_EVENT:
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


# --------------------------------------------------------------------------------------------
# Delivery
# --------------------------------------------------------------------------------------------


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def _extra(conn: Any) -> dict[str, Any]:
    extra = conn.extra_dejson
    return extra if isinstance(extra, dict) else {}


def webhook_url(conn: Any) -> str:
    """The URL an HTTP connection points at (the rules of Airflow's ``HttpHook``).

    ``host`` may be a full URL (``https://hooks.example.org/services``); otherwise the URL is
    ``<schema or conn_type or "http">://host[:port]``. ``extra["endpoint"]`` is appended as the
    path. A port is added to a full-URL host only if that URL names none.
    """
    host = (conn.host or "").strip()
    if not host:
        raise ValueError(f"connection {conn.conn_id!r} has no host")
    if "://" in host:
        parts = urllib.parse.urlsplit(host)
        if conn.port and parts.port is None:
            parts = parts._replace(netloc=f"{parts.netloc}:{conn.port}")
        base = urllib.parse.urlunsplit(parts)
    else:
        schema = (conn.schema or "").strip().lower()
        conn_type = (conn.conn_type or "").strip().lower()
        if schema in ("http", "https"):
            scheme = schema
        else:
            scheme = "https" if conn_type == "https" else "http"
        base = f"{scheme}://{host}:{conn.port}" if conn.port else f"{scheme}://{host}"
    endpoint = str(_extra(conn).get("endpoint") or "").strip()
    if endpoint:
        base = f"{base.rstrip('/')}/{endpoint.lstrip('/')}"
    return base


def _headers(conn: Any) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "User-Agent": "reident-airflow"}
    extra_headers = _extra(conn).get("headers") or {}
    if isinstance(extra_headers, str):
        extra_headers = json.loads(extra_headers)
    if not isinstance(extra_headers, Mapping):
        raise ValueError("extra['headers'] must be a JSON object")
    headers.update({str(k): str(v) for k, v in extra_headers.items()})
    if conn.login and not any(k.lower() == "authorization" for k in headers):
        token = base64.b64encode(f"{conn.login}:{conn.password or ''}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {token}"
    return headers


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirected POST would be re-sent as a body-less GET: report the 3xx instead."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _recipients(to: str | Sequence[str] | None) -> list[str]:
    if to is None:
        return []
    items = [to] if isinstance(to, str) else list(to)
    out: list[str] = []
    for item in items:
        out += [a for a in (p.strip() for p in re.split(r"[,;]", str(item))) if a]
    return out


def _ssl_context(extra: Mapping[str, Any]) -> ssl.SSLContext:
    """``extra["ssl_context"]``: ``"default"`` (verify, the default) or ``"none"``."""
    mode = extra.get("ssl_context") or "default"
    if mode not in ("default", "none"):
        raise ValueError(f"extra['ssl_context'] must be 'default' or 'none', not {mode!r}")
    context = ssl.create_default_context()
    if mode == "none":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


#: Where an exception remembers the destinations already alerted about it.
_ALERTED_ATTR = "_reident_alerted"


def _first_alert(exc: Any, destination: tuple[Any, ...]) -> bool:
    """Record that ``exc`` was alerted to ``destination``; False when it was already.

    Airflow hands the same exception to every failure callback of the task (its own and the
    DAG's ``default_args``), and the operator hands one breach to each notifier on a skip or
    a warn, so a notifier wired twice alerts once per destination.
    """
    if not isinstance(exc, BaseException):
        return True
    sent = getattr(exc, _ALERTED_ATTR, None)
    if not isinstance(sent, set):
        sent = set()
        try:
            setattr(exc, _ALERTED_ATTR, sent)
        except AttributeError:  # pragma: no cover - an exception without attributes
            return True
    if destination in sent:
        return False
    sent.add(destination)
    return True


class ReidentBreachNotifier(BaseNotifier):
    """Alert on a failed release gate, by webhook and/or e-mail; use as ``on_failure_callback``.

    .. code-block:: python

        ReidentificationRiskOperator(
            task_id="assess",
            ...,
            on_failure_callback=ReidentBreachNotifier(
                webhook_conn_id="privacy_webhook", to="privacy-office@example.org"
            ),
        )

    :param webhook_conn_id: HTTP connection (``conn_type`` ``http``/``https``) to ``POST`` the
        :func:`breach_payload` JSON to: ``host`` (or a full URL in ``host``), ``port``,
        ``schema`` (``http``/``https``), ``extra["endpoint"]`` (path), ``extra["headers"]``
        (object), ``login``/``password`` (HTTP basic auth). Redirects are not followed.
    :param smtp_conn_id: SMTP connection, read like the smtp provider does: ``host``,
        ``port``, optional ``login``/``password``, ``extra["disable_ssl"]`` (plain SMTP rather
        than SMTP over SSL), ``extra["disable_tls"]`` (no STARTTLS), ``extra["ssl_context"]``
        (``"default"``/``"none"``), ``extra["from_email"]``. Unlike the provider, STARTTLS is
        not attempted on an SSL connection. A plain local server needs both ``disable_*`` set.
        Defaults to ``"smtp_default"`` when ``to`` is given.
    :param to: recipients (list, or a string separated by ``,`` or ``;``; templated).
    :param from_email: sender; defaults to the connection's ``extra["from_email"]``.
    :param subject_template: Jinja template of the subject over the alert's fields (see
        :func:`breach_email`).
    :param timeout: seconds, for the webhook request and the SMTP session each.
    :param alert_on_other_failures: also alert (class name only) when the task failed for
        another reason than a breach (default ``True``).
    :param outcomes: the breach outcomes that alert (the operators' ``on_breach``): ``"fail"``,
        ``"skip"``, ``"warn"`` (default: all three). A skip or a warn does not fail the task,
        so no failure callback runs: the operator calls the notifiers of its
        ``on_failure_callback`` itself. Wire the notifier as ``on_failure_callback`` only.

    A delivery failure (unreachable host, non-2xx answer, SMTP error, missing connection) is
    logged as an error and never raised: the task has failed already, and one channel failing
    does not stop the other.
    """

    template_fields: Sequence[str] = ("webhook_conn_id", "smtp_conn_id", "to", "from_email")

    def __init__(
        self,
        *,
        webhook_conn_id: str | None = None,
        smtp_conn_id: str | None = None,
        to: str | list[str] | None = None,
        from_email: str | None = None,
        subject_template: str | None = None,
        timeout: float = 10,
        alert_on_other_failures: bool = True,
        outcomes: Sequence[str] = OUTCOMES,
    ) -> None:
        super().__init__()
        if smtp_conn_id and not to:
            raise ValueError("ReidentBreachNotifier: smtp_conn_id is given but no recipient (to)")
        if not webhook_conn_id and not to:
            raise ValueError("ReidentBreachNotifier needs webhook_conn_id and/or to (e-mail)")
        if isinstance(outcomes, str) or not set(outcomes) <= set(OUTCOMES):
            raise ValueError(
                f"ReidentBreachNotifier: outcomes must be a list of {', '.join(OUTCOMES)}, "
                f"not {outcomes!r}"
            )
        if not timeout or timeout <= 0:
            raise ValueError(f"ReidentBreachNotifier: timeout must be > 0, not {timeout!r}")
        if subject_template is not None:
            try:
                _TEMPLATES.parse(subject_template)
            except TemplateSyntaxError as exc:
                raise ValueError(f"ReidentBreachNotifier: bad subject_template: {exc}") from exc
        self.webhook_conn_id = webhook_conn_id
        self.smtp_conn_id = smtp_conn_id or (_DEFAULT_SMTP_CONN_ID if to else None)
        self.to = to
        self.from_email = from_email
        self.subject_template = subject_template
        self.timeout = float(timeout)
        self.alert_on_other_failures = alert_on_other_failures
        self.outcomes = tuple(outcomes)

    #: The templated fields are strings (conn ids, addresses): never render native objects.
    render_template_as_native_obj = False

    def render_template_fields(self, context: Context, jinja_env: Any = None) -> None:
        # ``dag.test()`` gives DAG-level callbacks the serialized DAG, which has no Jinja
        # environment (Airflow 3.3): fall back to Airflow's plain sandboxed one.
        if jinja_env is None and not hasattr(context.get("dag"), "get_template_env"):
            jinja_env = self.get_template_env()
        super().render_template_fields(context, jinja_env)

    # Seam for tests (like common-sql's get_db_hook): where connections come from.
    def get_connection(self, conn_id: str) -> Any:
        return BaseHook.get_connection(conn_id)

    def notify(self, context: Context) -> None:
        """Build the alert and send it; logs, never raises, on a delivery failure."""
        exc = context.get("exception")
        report = None if isinstance(exc, BaseException) else self._pull_report(context)
        payload = breach_payload(context, report=report)
        if payload["event"] != BREACH_EVENT and not self.alert_on_other_failures:
            self.log.info(
                "Task failed (not a re-identification breach: %s); no alert "
                "(alert_on_other_failures=False)",
                payload["exception_class"],
            )
            return
        if payload["event"] == BREACH_EVENT and payload["outcome"] not in self.outcomes:
            self.log.info(
                "Re-identification breach (outcome %r); no alert (outcomes=%r)",
                payload["outcome"],
                self.outcomes,
            )
            return
        destination = (self.webhook_conn_id, self.smtp_conn_id, tuple(_recipients(self.to)))
        if not _first_alert(context.get("exception"), destination):
            self.log.info(
                "Alert already sent to the same destination for this failure; not sent "
                "twice (is the notifier wired twice?)"
            )
            return
        if self.webhook_conn_id:
            self.send_webhook(payload)
        if self.smtp_conn_id:
            if _recipients(self.to):
                self.send_email(payload)
            else:
                self.log.error("Breach alert NOT e-mailed: `to` rendered to no recipient")

    def _pull_report(self, context: Context) -> Any:
        """The report the operator pushed to XCom (for callbacks without the exception)."""
        ti = context.get("ti")
        if ti is None:
            return None
        try:
            return ti.xcom_pull(task_ids=ti.task_id, key=REPORT_XCOM_KEY)
        except Exception as exc:
            self.log.warning("Could not read the %s XCom: %s", REPORT_XCOM_KEY, type(exc).__name__)
            return None

    def send_webhook(self, payload: Mapping[str, Any]) -> bool:
        """POST ``payload`` as JSON; True on a 2xx answer. Errors are logged, not raised.

        The log names the connection and host, never the full URL: webhook URLs often carry
        their secret in the path.
        """
        conn_id = self.webhook_conn_id
        host = "?"
        try:
            conn = self.get_connection(str(conn_id))
            url = webhook_url(conn)
            host = urllib.parse.urlsplit(url).netloc.rpartition("@")[2]
            body = json.dumps(payload, allow_nan=False).encode("utf-8")
            request = urllib.request.Request(url, data=body, headers=_headers(conn), method="POST")
            opener = urllib.request.build_opener(_NoRedirect)
            with opener.open(request, timeout=self.timeout) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.close()
        except Exception as exc:
            self.log.error(
                "Breach alert NOT delivered: webhook connection %r (%s) failed: %s: %s",
                conn_id,
                host,
                type(exc).__name__,
                getattr(exc, "reason", exc),
            )
            return False
        if not 200 <= status < 300:
            self.log.error(
                "Breach alert NOT delivered: webhook connection %r (%s) answered HTTP %s",
                conn_id,
                host,
                status,
            )
            return False
        self.log.info("Breach alert posted to webhook %r (%s): HTTP %s", conn_id, host, status)
        return True

    def send_email(self, payload: Mapping[str, Any]) -> bool:
        """Send the e-mail of ``payload``; True when the server accepted it. Logs errors."""
        conn_id = self.smtp_conn_id
        recipients = _recipients(self.to)
        try:
            conn = self.get_connection(str(conn_id))
            extra = _extra(conn)
            sender = self.from_email or extra.get("from_email")
            if not sender:
                raise ValueError("no sender: give from_email or extra['from_email']")
            if not conn.host:
                raise ValueError(f"connection {conn_id!r} has no host")
            subject, text_body, html_body = breach_email(
                payload, subject_template=self.subject_template
            )
            message = EmailMessage()
            message["Subject"] = subject
            message["From"] = sender
            message["To"] = ", ".join(recipients)
            message["Date"] = formatdate(localtime=True)
            message["Message-ID"] = make_msgid(domain=str(sender).rpartition("@")[2] or None)
            message.set_content(text_body)
            message.add_alternative(html_body, subtype="html")

            use_ssl = not _flag(extra.get("disable_ssl"))
            starttls = not use_ssl and not _flag(extra.get("disable_tls"))
            client: smtplib.SMTP
            if use_ssl:
                client = smtplib.SMTP_SSL(
                    conn.host, conn.port or 0, timeout=self.timeout, context=_ssl_context(extra)
                )
            else:
                client = smtplib.SMTP(conn.host, conn.port or 0, timeout=self.timeout)
            with client:
                if starttls:
                    client.starttls(context=_ssl_context(extra))
                    client.ehlo()
                if conn.login and conn.password:
                    client.login(conn.login, conn.password)
                client.send_message(message, from_addr=sender, to_addrs=recipients)
        except Exception as exc:
            self.log.error(
                "Breach alert NOT delivered: e-mail via SMTP connection %r failed: %s: %s",
                conn_id,
                type(exc).__name__,
                exc,
            )
            return False
        self.log.info("Breach alert e-mailed via %r to %d recipient(s)", conn_id, len(recipients))
        return True
