"""ReidentBreachNotifier: the alert's content (``breach_payload`` / ``breach_email``), its
delivery to a local webhook and a local SMTP server, and a real ``dag.test()`` run whose
failure callbacks send the alerts.

Privacy (contract.md, "Privacy of the outputs themselves"): record values are planted in the
exception's message, in non-aggregate keys of the report and of a breach, and in the data;
no alert may carry them.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs

import reident_airflow.notifiers as notifiers
from reident_airflow.notifiers import ReidentBreachNotifier, breach_email, breach_payload
from reident_airflow.notifiers.breach import ALERT_SCHEMA, BREACH_EVENT, ERROR_EVENT, webhook_url
from reident_airflow.outcomes import (
    REPORT_PATH_XCOM_KEY,
    REPORT_URL_XCOM_KEY,
    REPORT_XCOM_KEY,
    ReidentificationBreach,
)
from tests.notifiers.breach_alert_dag import (
    DAG_WEBHOOK_CONN_ID,
    RECIPIENTS,
    SECRETS,
    SENDER,
    SMTP_CONN_ID,
    WEBHOOK_CONN_ID,
)
from tests.notifiers.conftest import (
    DAG_FILE,
    SmtpReceiver,
    WebhookReceiver,
    subprocess_env,
)
from tests.operators._fakes import RunTI

LOG_URL = "http://airflow.test:8080/dags/release_gate/runs/manual__2024-06-01/tasks/assess"
QIS = ["zip", "birth_date", "sex"]
BREACHES = [
    {"metric": "prosecutor.highest_risk", "observed": 1.0, "limit": 0.2},
    {"metric": "prosecutor.records_at_risk", "observed": 0.8333333333, "limit": 0.05},
    {"metric": "k", "observed": 1, "limit": 5},
]


def assessment_report() -> dict[str, Any]:
    """A ``reident.assessment/v1`` report, plus non-aggregate keys a careless producer added."""
    return {
        "schema": "reident.assessment/v1",
        "quasi_identifiers": QIS,
        "records": 1200,
        "classes": 1100,
        "k": 1,
        "class_size_histogram": [[1, 1000], [2, 100]],
        "prosecutor": {"highest_risk": 1.0, "average_risk": 0.9, "records_at_risk": 0.83},
        "thresholds": {"max_highest_risk": 0.2, "max_records_at_risk": 0.05, "min_k": 5},
        "breaches": BREACHES,
        "passed": False,
        "debug_sample": [{"name": SECRETS[0], "diagnosis": SECRETS[1], "zip": SECRETS[2]}],
        "riskiest_record": f"{SECRETS[0]} born {SECRETS[3]}",
    }


def breach_exception(report: dict[str, Any] | None = None) -> ReidentificationBreach:
    report = assessment_report() if report is None else report
    return ReidentificationBreach(
        f"gate breached; riskiest record {SECRETS[0]} ({SECRETS[1]})",
        breaches=[dict(b, example_record=SECRETS[0]) for b in BREACHES],
        report=report,
        check="reidentification_risk",
        quasi_identifiers=QIS,
        k=1,
    )


def run_ti(**kwargs: Any) -> RunTI:
    """The task instance of this module's run (its ``run_id`` and ``log_url``)."""
    return RunTI(**{"run_id": "manual__2024-06-01", "log_url": LOG_URL, **kwargs})


def context_of(exception: Any, ti: RunTI | None = None) -> dict[str, Any]:
    ti = ti or run_ti()
    return {"ti": ti, "task_instance": ti, "exception": exception, "run_id": ti.run_id}


def assert_no_secrets(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def mail_texts(mail: Any) -> tuple[str, str, str]:
    """(subject, decoded plain body, decoded HTML body) of a received mail; the plain body is
    ``""`` when the mail has none (the smtp provider's ``SmtpNotifier`` sends HTML only)."""
    msg = mail.message()
    plain = msg.get_body(preferencelist=("plain",))
    rich = msg.get_body(preferencelist=("html",))
    assert rich is not None
    unix = str.maketrans({"\r": None})  # SMTP carries CRLF line ends
    text = "" if plain is None else plain.get_content().translate(unix)
    return str(msg["Subject"]), text, rich.get_content().translate(unix)


#: The module of the smtp provider's notifier: set to None in ``sys.modules``, its import
#: fails as when the provider is not installed (the notifier's fallback, ``smtplib``).
SMTP_PROVIDER_MODULE = "airflow.providers.smtp.notifications.smtp"


@pytest.fixture(params=["provider", "fallback"])
def smtp_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each e-mail test runs through the smtp provider's SmtpNotifier and through the
    fallback used when that provider is absent."""
    if request.param == "fallback":
        monkeypatch.setitem(sys.modules, SMTP_PROVIDER_MODULE, None)
    return str(request.param)


#: How each path is named in the log.
SMTP_VIA = {
    "provider": "(the smtp provider's SmtpNotifier)",
    "fallback": "(the built-in SMTP client)",
}


def http_conn(receiver: WebhookReceiver, **extra: Any) -> str:
    conn: dict[str, Any] = {"conn_type": "http", "host": receiver.host, "port": receiver.port}
    conn.update(extra)
    return json.dumps(conn)


def smtp_conn(receiver: SmtpReceiver, **fields: Any) -> str:
    conn = {
        "conn_type": "smtp",
        "host": receiver.host,
        "port": receiver.port,
        "extra": {"disable_ssl": True, "disable_tls": True},
    }
    conn.update(fields)
    return json.dumps(conn)


# --------------------------------------------------------------------------------------------
# Content
# --------------------------------------------------------------------------------------------


#: The keys of every alert that say which task try it is about.
IDS_KEYS = ["dag_id", "task_id", "run_id", "try_number", "map_index", "log_url"]


def test_payload_of_a_breach_carries_the_aggregates() -> None:
    payload = breach_payload(context_of(breach_exception()))
    assert payload["schema"] == ALERT_SCHEMA == "reident.alert/v2"
    assert payload["event"] == BREACH_EVENT == "reidentification_breach"
    assert "columns_below_target" not in payload  # a direct match's key (alert v2)
    assert (payload["dag_id"], payload["task_id"], payload["run_id"]) == (
        "release_gate",
        "assess",
        "manual__2024-06-01",
    )
    assert payload["try_number"] == 1 and payload["map_index"] is None  # -1: not mapped
    assert payload["log_url"] == LOG_URL
    assert payload["exception_class"] == "ReidentificationBreach"
    assert payload["check"] == "reidentification_risk"
    assert payload["breaches"] == BREACHES  # the planted "example_record" key is dropped
    assert payload["quasi_identifiers"] == QIS
    assert (payload["k"], payload["records"], payload["classes"]) == (1, 1200, 1100)
    assert payload["report_schema"] == "reident.assessment/v1"
    assert "prosecutor.highest_risk observed 1 (limit 0.2)" in payload["text"]
    assert "k observed 1 (limit 5)" in payload["text"]
    assert_no_secrets(json.dumps(payload))


def test_payload_of_another_failure_names_the_class_only() -> None:
    exc = ConnectionError(f"cannot reach staging: password={SECRETS[4]} row {SECRETS[0]}")
    payload = breach_payload(context_of(exc))
    assert payload["event"] == ERROR_EVENT == "reidentification_error"
    assert payload["exception_class"] == "ConnectionError"
    # the keys of a gate's verdict do not apply: left out, not empty (alert v2)
    assert sorted(payload) == sorted([*IDS_KEYS, "schema", "event", "exception_class", "text"])
    assert payload["text"].endswith("failed (not a re-identification breach): ConnectionError")
    assert_no_secrets(json.dumps(payload))


def test_payload_from_the_xcom_report_when_the_context_has_no_exception() -> None:
    payload = breach_payload(context_of(None), report=assessment_report())
    assert payload["event"] == BREACH_EVENT
    assert payload["exception_class"] is None
    assert payload["check"] == "reidentification_risk"  # from the report's schema
    assert payload["breaches"] == BREACHES and payload["k"] == 1 and payload["records"] == 1200
    assert_no_secrets(json.dumps(payload))

    passed = dict(assessment_report(), passed=True, breaches=[])
    other = breach_payload(context_of(None), report=passed)
    assert other["event"] == ERROR_EVENT
    assert "cause not available" in other["text"]
    # an exception object wins over a report: a ConnectionError is not made a breach
    assert breach_payload(context_of(OSError()), report=assessment_report())["event"] == (
        ERROR_EVENT
    )


def test_payload_keeps_only_numbers_and_names() -> None:
    report = {"records": np.int64(40), "classes": "many", "k": True, "schema": 3}
    exc = ReidentificationBreach(
        "x",
        breaches=[
            {"metric": "prosecutor.highest_risk", "observed": np.float64(0.5), "limit": 0.2},
            {"metric": 42, "observed": SECRETS[0], "limit": math.nan},
            "not a mapping",
        ],
        report=report,
        check="reidentification_risk",
        quasi_identifiers=["age", 7, ""],
        k=None,
    )
    payload = breach_payload(context_of(exc))
    assert payload["breaches"] == [
        {"metric": "prosecutor.highest_risk", "observed": 0.5, "limit": 0.2},
        {"metric": "unknown", "observed": None, "limit": None},
    ]
    assert type(payload["breaches"][0]["observed"]) is float
    assert payload["records"] == 40 and type(payload["records"]) is int
    assert payload["classes"] is None and payload["k"] is None
    assert payload["report_schema"] is None
    assert payload["quasi_identifiers"] == ["age"]
    json.dumps(payload, allow_nan=False)
    assert_no_secrets(json.dumps(payload))


def test_payload_of_a_direct_match_breach() -> None:
    report = {
        "schema": "reident.direct_match/v1",
        "records": 500,
        "protection": 0.4,
        "target": 0.9,
        "columns": [{"column": "zip", "protection": 0.4, "matches": 300}],
        "below_target": ["zip", "birth_date"],
        "passed": False,
    }
    exc = ReidentificationBreach(
        "direct match",
        breaches=[{"metric": "direct_match.protection", "observed": 0.4, "limit": 0.9}],
        report=report,
        check="direct_match",
    )
    payload = breach_payload(context_of(exc))
    assert payload["check"] == "direct_match"
    assert payload["records"] == 500
    assert payload["columns_below_target"] == ["zip", "birth_date"]
    for key in ("quasi_identifiers", "k", "classes", "advice"):  # a risk check's keys
        assert key not in payload
    _, text, _ = breach_email(payload)
    assert "Columns below target : zip, birth_date" in text
    assert "direct_match.protection: observed 0.4, limit 0.9" in text


def test_payload_from_a_context_without_ti() -> None:
    dag = type("Dag", (), {"dag_id": "release_gate"})()
    payload = breach_payload({"dag": dag, "run_id": "scheduled__x", "exception": None})
    assert (payload["dag_id"], payload["task_id"], payload["run_id"]) == (
        "release_gate",
        None,
        "scheduled__x",
    )
    assert payload["log_url"] is None and payload["event"] == ERROR_EVENT


def test_email_lists_each_metric_with_observed_and_limit() -> None:
    payload = breach_payload(context_of(breach_exception()))
    subject, text, html_body = breach_email(payload)
    assert subject == (
        "[reident] Re-identification breach: release_gate.assess "
        "(reidentification_risk, 3 metric(s))"
    )
    for line in (
        "Re-identification risk gate breached",
        "DAG                : release_gate",
        "Run                : manual__2024-06-01",
        "Records            : 1,200",
        "Quasi-identifiers  : zip, birth_date, sex",
        "k (smallest class) : 1",
        "  - prosecutor.highest_risk: observed 1, limit 0.2",
        "  - prosecutor.records_at_risk: observed 0.833333, limit 0.05",
        "  - k: observed 1, limit 5",
        f"Task log: {LOG_URL}",
    ):
        assert line in text
    assert "<tr><td>prosecutor.highest_risk</td><td>1</td><td>0.2</td></tr>" in html_body
    assert f'<a href="{LOG_URL}">Task log</a>' in html_body
    assert_no_secrets(subject, text, html_body)


def test_email_escapes_names_in_html() -> None:
    exc = ReidentificationBreach(
        "x",
        breaches=[{"metric": "l_diversity.<b>dx</b>", "observed": 1, "limit": 2}],
        report={},
        check="reidentification_risk",
        quasi_identifiers=["<script>alert(1)</script>"],
    )
    _, _, html_body = breach_email(breach_payload(context_of(exc)))
    assert "<script>" not in html_body and "<b>dx</b>" not in html_body
    assert "&lt;script&gt;" in html_body and "l_diversity.&lt;b&gt;dx&lt;/b&gt;" in html_body


def test_email_of_another_failure() -> None:
    subject, text, _ = breach_email(breach_payload(context_of(TimeoutError(SECRETS[4]))))
    assert subject == (
        "[reident] Task failed (not a re-identification breach): release_gate.assess: TimeoutError"
    )
    assert re.search(r"^Error +: TimeoutError$", text, re.MULTILINE)
    assert "Breached thresholds" not in text
    assert_no_secrets(subject, text)


def test_subject_template_sees_the_alert_fields_only() -> None:
    payload = breach_payload(context_of(breach_exception()))
    template = "{{ check }}: {{ breach_count }} breach(es) in {{ dag_id }}.{{ task_id }}\n!"
    subject, _, _ = breach_email(payload, subject_template=template)
    assert subject == "reidentification_risk: 3 breach(es) in release_gate.assess !"
    # the Airflow context (exception, ti, ...) is not reachable from the template
    subject, _, _ = breach_email(payload, subject_template="[{{ exception }}{{ ti }}]")
    assert subject == "[]"
    with pytest.raises(ValueError, match="subject_template"):
        ReidentBreachNotifier(webhook_conn_id="w", subject_template="{{ oops")


# --------------------------------------------------------------------------------------------
# Construction and connections
# --------------------------------------------------------------------------------------------


def test_constructor_validates_cheaply() -> None:
    with pytest.raises(ValueError, match="webhook_conn_id and/or to"):
        ReidentBreachNotifier()
    with pytest.raises(ValueError, match="no recipient"):
        ReidentBreachNotifier(smtp_conn_id="smtp")
    with pytest.raises(ValueError, match="timeout"):
        ReidentBreachNotifier(webhook_conn_id="w", timeout=0)
    assert ReidentBreachNotifier(to="a@example.org").smtp_conn_id == "smtp_default"
    assert ReidentBreachNotifier(webhook_conn_id="w").smtp_conn_id is None
    n = ReidentBreachNotifier(webhook_conn_id="w", to="a@x.org", smtp_conn_id="mail")
    assert (n.webhook_conn_id, n.smtp_conn_id, n.to, n.timeout) == ("w", "mail", "a@x.org", 10.0)


@dataclass
class Conn:
    host: str | None
    port: int | None = None
    schema: str | None = None
    conn_type: str | None = "http"
    extra_dejson: dict[str, Any] = field(default_factory=dict)
    conn_id: str = "hook"


@pytest.mark.parametrize(
    ("conn", "url"),
    [
        (Conn("127.0.0.1", 8123), "http://127.0.0.1:8123"),
        (Conn("hooks.example.org", None, "https"), "https://hooks.example.org"),
        (Conn("hooks.example.org", conn_type="https"), "https://hooks.example.org"),
        (
            Conn("hooks.example.org", 8443, "https", extra_dejson={"endpoint": "/a/b"}),
            "https://hooks.example.org:8443/a/b",
        ),
        (
            Conn("https://hooks.example.org/services/", extra_dejson={"endpoint": "T0/B1"}),
            "https://hooks.example.org/services/T0/B1",
        ),
        (Conn("http://127.0.0.1/x", 9000), "http://127.0.0.1:9000/x"),
        (Conn("http://127.0.0.1:9001/x", 9000), "http://127.0.0.1:9001/x"),
    ],
)
def test_webhook_url(conn: Conn, url: str) -> None:
    assert webhook_url(conn) == url


def test_webhook_url_needs_a_host() -> None:
    with pytest.raises(ValueError, match="no host"):
        webhook_url(Conn(None))


# --------------------------------------------------------------------------------------------
# Delivery (connections from AIRFLOW_CONN_* variables, as in production)
# --------------------------------------------------------------------------------------------


def test_notifier_posts_the_webhook_and_sends_the_mail(
    smtp_path: str,
    webhook_server: WebhookReceiver,
    smtp_server: SmtpReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extra = {"endpoint": "/hooks/reident", "headers": {"X-Team": "privacy"}}
    monkeypatch.setenv(
        "AIRFLOW_CONN_ALERTS_HOOK",
        http_conn(webhook_server, extra=extra, login="bot", password="s3cret-token"),
    )
    monkeypatch.setenv("AIRFLOW_CONN_ALERTS_SMTP", smtp_conn(smtp_server))
    notifier = ReidentBreachNotifier(
        webhook_conn_id="alerts_hook",
        smtp_conn_id="alerts_smtp",
        to="privacy@example.org; dpo@example.org",
        from_email="airflow@example.org",
    )
    with capture_logs() as logs:
        notifier(context_of(breach_exception()))

    [request] = webhook_server.requests
    assert request.path == "/hooks/reident"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-team"] == "privacy"
    assert request.headers["authorization"] == "Basic Ym90OnMzY3JldC10b2tlbg=="  # bot:s3cret-token
    assert request.json() == breach_payload(context_of(breach_exception()))

    [mail] = smtp_server.mails
    assert mail.mail_from == "airflow@example.org"
    assert mail.rcpt_to == ["privacy@example.org", "dpo@example.org"]
    subject, text, html_body = mail_texts(mail)
    expected_subject, expected_text, expected_html = breach_email(request.json())
    assert subject == expected_subject
    assert subject.startswith("[reident] Re-identification breach: release_gate.assess")
    assert html_body == expected_html  # our message, whichever path sent it
    assert "<td>prosecutor.records_at_risk</td><td>0.833333</td><td>0.05</td>" in html_body
    if smtp_path == "fallback":  # smtplib sends the plain-text part too
        assert text == expected_text
        assert "prosecutor.records_at_risk: observed 0.833333, limit 0.05" in text
    else:  # the provider's SmtpNotifier sends the HTML part only
        assert text == ""
    assert_no_secrets(request.body.decode(), mail.data.decode(), subject, text, html_body)
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []
    infos = [e["event"] for e in logs if e["event"].startswith("Breach alert")]
    assert infos == [
        f"Breach alert posted to webhook 'alerts_hook' (127.0.0.1:{webhook_server.port}): HTTP 200",
        f"Breach alert e-mailed via SMTP connection 'alerts_smtp' {SMTP_VIA[smtp_path]} "
        "to 2 recipient(s)",
    ]
    assert "s3cret-token" not in repr(logs)


def test_smtp_login_when_the_connection_has_credentials(
    smtp_path: str, smtp_server: SmtpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    smtp_server.credentials = ("mailer", "pa55word")
    extra = {"disable_ssl": True, "disable_tls": True, "from_email": "gate@example.org"}
    conn = smtp_conn(smtp_server, login="mailer", password="pa55word", extra=extra)
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_DEFAULT", conn)
    ReidentBreachNotifier(to=["a@example.org"])(context_of(breach_exception()))
    [mail] = smtp_server.mails
    assert mail.auth == "mailer"
    assert mail.mail_from == "gate@example.org"  # the connection's extra["from_email"]


@pytest.mark.parametrize("status", [500, 404, 302])
def test_webhook_non_2xx_is_logged_not_raised(
    status: int, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    webhook_server.status = status
    webhook_server.location = "/elsewhere" if status == 302 else None
    secret_path = "/services/T000/B000/XXXXSECRETXXXX"
    monkeypatch.setenv(
        "AIRFLOW_CONN_HOOK", http_conn(webhook_server, extra={"endpoint": secret_path})
    )
    notifier = ReidentBreachNotifier(webhook_conn_id="hook")
    with capture_logs() as logs:
        notifier(context_of(breach_exception()))  # does not raise
        assert notifier.send_webhook(breach_payload(context_of(breach_exception()))) is False
    assert [r.path for r in webhook_server.requests] == [secret_path] * 2  # no redirect followed
    errors = [e["event"] for e in logs if e["log_level"] == "error"]
    assert len(errors) == 2
    assert f"answered HTTP {status}" in errors[0] and "'hook'" in errors[0]
    assert "XXXXSECRETXXXX" not in repr(logs)  # webhook URLs carry secrets in their path


def test_unreachable_webhook_does_not_stop_the_mail(
    smtp_server: SmtpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(
        "AIRFLOW_CONN_DEAD", json.dumps({"conn_type": "http", "host": "127.0.0.1", "port": port})
    )
    monkeypatch.setenv("AIRFLOW_CONN_MAIL", smtp_conn(smtp_server))
    notifier = ReidentBreachNotifier(
        webhook_conn_id="dead", smtp_conn_id="mail", to="a@example.org", from_email="f@example.org"
    )
    with capture_logs() as logs:
        notifier(context_of(breach_exception()))
    assert len(smtp_server.mails) == 1
    [error] = [e["event"] for e in logs if e["log_level"] == "error"]
    assert "NOT delivered" in error and "'dead'" in error and "URLError" in error


def test_missing_connections_are_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_NOMAIL", raising=False)
    notifier = ReidentBreachNotifier(webhook_conn_id="nowhere", smtp_conn_id="nomail", to="a@x.org")
    with capture_logs() as logs:
        notifier(context_of(breach_exception()))
    errors = [e["event"] for e in logs if e["log_level"] == "error"]
    assert len(errors) == 2
    assert "AirflowNotFoundException" in errors[0] and "AirflowNotFoundException" in errors[1]


def test_smtp_with_tls_against_a_plain_server_is_logged(
    smtp_path: str, smtp_server: SmtpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the provider's defaults (SSL, STARTTLS) against a server offering neither: logged
    conn = json.dumps(
        {
            "conn_type": "smtp",
            "host": "127.0.0.1",
            "port": smtp_server.port,
            "extra": {"timeout": 3, "retry_limit": 0},  # the provider's own settings
        }
    )
    monkeypatch.setenv("AIRFLOW_CONN_TLS_MAIL", conn)
    notifier = ReidentBreachNotifier(
        smtp_conn_id="tls_mail", to="a@x.org", from_email="f@x.org", timeout=3
    )
    with capture_logs() as logs:
        notifier(context_of(breach_exception()))
    assert smtp_server.mails == []
    [error] = [e["event"] for e in logs if e["log_level"] == "error"]
    assert f"e-mail via SMTP connection 'tls_mail' {SMTP_VIA[smtp_path]} failed" in error


def test_other_failures_alert_by_default_and_can_be_turned_off(
    webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_HOOK", http_conn(webhook_server))
    failure = context_of(ConnectionError(f"password={SECRETS[4]}"))
    ReidentBreachNotifier(webhook_conn_id="hook")(failure)
    [request] = webhook_server.requests
    assert request.json()["event"] == ERROR_EVENT
    assert request.json()["exception_class"] == "ConnectionError"
    assert_no_secrets(request.body.decode())

    quiet = ReidentBreachNotifier(webhook_conn_id="hook", alert_on_other_failures=False)
    quiet(context_of(ConnectionError()))
    assert len(webhook_server.requests) == 1
    quiet(context_of(breach_exception()))  # a breach is still sent
    assert len(webhook_server.requests) == 2


def test_xcom_fallback_without_exception(
    webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_HOOK", http_conn(webhook_server))
    notifier = ReidentBreachNotifier(webhook_conn_id="hook")
    ti = run_ti(xcom=assessment_report())
    notifier({"ti": ti, "reason": "task_failure"})  # what a DAG-level callback gets
    # the report (return_value), then where the HTML report went
    assert ti.pulls == [
        {"task_ids": "assess", "key": key}
        for key in (REPORT_XCOM_KEY, REPORT_PATH_XCOM_KEY, REPORT_URL_XCOM_KEY)
    ]
    broken = run_ti(xcom_error=ImportError("no task runtime"))
    with capture_logs() as logs:
        notifier({"ti": broken, "reason": "task_failure"})
    events = [r.json()["event"] for r in webhook_server.requests]
    assert events == [BREACH_EVENT, ERROR_EVENT]
    assert [e["log_level"] for e in logs].count("warning") == 1
    # with the exception at hand, XCom is not read
    ti_with_exc = run_ti(xcom=assessment_report())
    notifier(context_of(breach_exception(), ti_with_exc))
    assert ti_with_exc.pulls == []


def test_templated_recipients_and_a_mapped_task(
    smtp_path: str, smtp_server: SmtpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_MAIL", smtp_conn(smtp_server))
    notifier = ReidentBreachNotifier(
        smtp_conn_id="mail", to="{{ params.team }}@example.org", from_email="f@example.org"
    )
    context = context_of(breach_exception(), run_ti(map_index=3))
    context["params"] = {"team": "privacy"}
    notifier(context)
    [mail] = smtp_server.mails
    assert mail.rcpt_to == ["privacy@example.org"]
    _, text, html_body = mail_texts(mail)
    assert "<tr><th align='left'>Map index</th><td>3</td></tr>" in html_body
    if smtp_path == "fallback":
        assert re.search(r"^Map index +: 3$", text, re.MULTILINE)


def test_the_smtp_provider_renders_no_name_of_the_alert_as_a_template(
    smtp_server: SmtpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider's SmtpNotifier renders its subject and body as Jinja over the task's
    context unless they are given; the notifier gives them, so a column named like a template
    reaches the e-mail as written (never ``49``, never an XCom)."""
    monkeypatch.setenv("AIRFLOW_CONN_MAIL", smtp_conn(smtp_server))
    exc = ReidentificationBreach(
        "x",
        breaches=[{"metric": "k", "observed": 1, "limit": 5}],
        report={"schema": "reident.assessment/v1"},
        check="reidentification_risk",
        quasi_identifiers=["{{ 7 * 7 }}", "{{ ti.xcom_pull(key='secret') }}"],
        k=1,
    )
    notifier = ReidentBreachNotifier(
        smtp_conn_id="mail",
        to="a@example.org",
        from_email="f@example.org",
        subject_template="{{ quasi_identifiers[0] }}",
    )
    notifier(context_of(exc))
    [mail] = smtp_server.mails
    subject, text, html_body = mail_texts(mail)
    assert text == ""  # the provider's path (the HTML part only)
    assert subject == "{{ 7 * 7 }}"  # our sandboxed subject: the field's value, as text
    assert "{{ 7 * 7 }}, {{ ti.xcom_pull(key=&#x27;secret&#x27;) }}" in html_body
    assert "49" not in html_body


def test_exports() -> None:
    assert sorted(notifiers.__all__) == ["ReidentBreachNotifier", "breach_email", "breach_payload"]
    for name in notifiers.__all__:
        assert getattr(notifiers, name) is not None


# --------------------------------------------------------------------------------------------
# A real run: dag.test() in a subprocess, the callbacks send to this process's servers
# --------------------------------------------------------------------------------------------


def test_dag_test_run_sends_breach_and_failure_alerts(
    dag_run_home: Path, webhook_server: WebhookReceiver, smtp_server: SmtpReceiver
) -> None:
    conns = {
        f"AIRFLOW_CONN_{WEBHOOK_CONN_ID.upper()}": http_conn(
            webhook_server, extra={"endpoint": "/alerts/task"}
        ),
        f"AIRFLOW_CONN_{DAG_WEBHOOK_CONN_ID.upper()}": http_conn(
            webhook_server, extra={"endpoint": "/alerts/dag"}
        ),
        f"AIRFLOW_CONN_{SMTP_CONN_ID.upper()}": smtp_conn(smtp_server),
    }
    env = subprocess_env(dag_run_home, AIRFLOW__API__BASE_URL="http://airflow.test:8080", **conns)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(dag_run_home / "dags" / DAG_FILE.name)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    elapsed = time.monotonic() - started
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    [line] = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    # a breach fails at once although retries=2; the infrastructure failure has retries=0
    assert result["reident_notifier_breach"]["tis"] == {"assess": ["failed", 1]}
    assert result["reident_notifier_infra"]["tis"] == {"stage": ["failed", 1]}
    # the planted values really were in the exception (Airflow logs its message)...
    assert SECRETS[0] in output

    alerts = [(r.path, r.json()) for r in webhook_server.requests]
    by_task = {(a["dag_id"], a["task_id"], path): a for path, a in alerts}
    assert len(alerts) == len(by_task) == 3, alerts

    breach = by_task[("reident_notifier_breach", "assess", "/alerts/task")]
    assert breach["event"] == BREACH_EVENT
    assert breach["exception_class"] == "ReidentificationBreach"
    assert breach["check"] == "reidentification_risk"
    assert breach["run_id"].startswith("manual__") and breach["try_number"] == 1
    assert breach["log_url"].startswith(
        "http://airflow.test:8080/dags/reident_notifier_breach/runs/manual__"
    )
    assert breach["log_url"].endswith("/tasks/assess?try_number=1")
    assert breach["quasi_identifiers"] == ["zip", "birth_date", "sex"]
    assert (breach["records"], breach["classes"], breach["k"]) == (6, 5, 1)
    # 6 records in 5 classes, one pair: highest risk 1, average 5/6, smallest class 1
    observed = {b["metric"]: (b["observed"], b["limit"]) for b in breach["breaches"]}
    assert observed["prosecutor.highest_risk"] == (1.0, 0.2)
    assert observed["prosecutor.average_risk"][0] == pytest.approx(5 / 6)
    assert observed["prosecutor.average_risk"][1] == 0.1
    assert observed["k"] == (1, 2)
    assert [type(n) for n in observed["k"]] == [int, int]  # not 1.0 / 2.0

    infra = by_task[("reident_notifier_infra", "stage", "/alerts/task")]
    assert infra["event"] == ERROR_EVENT and infra["exception_class"] == "ConnectionError"

    # DAG-level callback: dag.test() gives it no exception and (outside a task runtime) no
    # XCom access, so it can only say that the task failed
    dag_level = by_task[("reident_notifier_breach", "assess", "/alerts/dag")]
    assert dag_level["event"] == ERROR_EVENT and dag_level["exception_class"] is None

    mails = {mail_texts(m)[0]: m for m in smtp_server.mails}
    assert len(mails) == 2
    [breach_mail] = [m for s, m in mails.items() if "Re-identification breach" in s]
    [infra_mail] = [m for s, m in mails.items() if "not a re-identification breach" in s]
    assert breach_mail.mail_from == SENDER and breach_mail.rcpt_to == RECIPIENTS
    subject, text, html_body = mail_texts(breach_mail)
    assert subject == (
        "[reident] Re-identification breach: reident_notifier_breach.assess "
        "(reidentification_risk, 3 metric(s))"
    )
    # the smtp provider (installed with Airflow) sent it: the HTML part, our message
    assert text == "" and html_body == breach_email(breach)[2]
    assert f"<th align='left'>Run</th><td>{breach['run_id']}</td>" in html_body
    assert "<td>prosecutor.highest_risk</td><td>1</td><td>0.2</td>" in html_body
    assert "<td>prosecutor.average_risk</td><td>0.833333</td><td>0.1</td>" in html_body
    assert "<td>k</td><td>1</td><td>2</td>" in html_body
    assert "<th align='left'>Records</th><td>6</td>" in html_body
    assert breach["log_url"] in html_body
    assert "ConnectionError" in mail_texts(infra_mail)[0]

    # ...and no alert carries any of them
    assert_no_secrets(
        *(r.body.decode() for r in webhook_server.requests),
        *(m.data.decode() for m in smtp_server.mails),
        *(t for m in smtp_server.mails for t in mail_texts(m)),
    )
    # the callbacks logged their deliveries in the task log
    # (the DAG-level alert is an error alert: no exception reached that callback)
    provider = r"via SMTP connection '\w+' \(the smtp provider's SmtpNotifier\)"
    assert len(re.findall(r"Breach alert posted to webhook", output)) == 1
    assert len(re.findall(r"Error alert posted to webhook", output)) == 2
    assert len(re.findall(rf"Breach alert e-mailed {provider}", output)) == 1
    assert len(re.findall(rf"Error alert e-mailed {provider}", output)) == 1
    assert "NOT delivered" not in output
    print(f"dag.test() subprocess: {elapsed:.1f} s")
