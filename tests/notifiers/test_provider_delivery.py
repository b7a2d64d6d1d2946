"""Issue 29, item 5: the alert delivered through Airflow's http and slack providers' notifiers
(``http_conn_id``, ``slack_webhook_conn_id``), with our ``reident.alert`` payload, to real
HTTP servers on 127.0.0.1; without the http provider, ``http_conn_id`` falls back to this
package's own client. No provider code is replaced: the connections come from
``AIRFLOW_CONN_*`` variables, as in production."""

from __future__ import annotations

import html
import http.server
import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from reident_airflow.notifiers import ReidentBreachNotifier, breach_payload
from reident_airflow.outcomes import ReidentificationBreach
from tests._schemas import schema_errors
from tests.notifiers.conftest import WebhookReceiver
from tests.notifiers.test_breach_notifier import (
    assert_no_secrets,
    breach_exception,
    context_of,
    http_conn,
)

pytest.importorskip("airflow.providers.http.notifications.http")
pytest.importorskip("airflow.providers.slack.notifications.slack_webhook")

#: Set to None in ``sys.modules``, its import fails as when the http provider is absent.
HTTP_PROVIDER_MODULE = "airflow.providers.http.notifications.http"


@pytest.fixture(params=["provider", "fallback"])
def http_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":
        monkeypatch.setitem(sys.modules, HTTP_PROVIDER_MODULE, None)
    return str(request.param)


HTTP_VIA = {
    "provider": "posted via the http provider's HttpNotifier to 'alerts_http'",
    "fallback": "posted to webhook 'alerts_http'",
}


def test_http_conn_id_posts_our_payload(
    http_path: str, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the provider reads extra fields as headers; the fallback reads extra["headers"]
    extra: dict[str, Any] = (
        {"X-Team": "privacy"} if http_path == "provider" else {"headers": {"X-Team": "privacy"}}
    )
    monkeypatch.setenv(
        "AIRFLOW_CONN_ALERTS_HTTP",
        http_conn(webhook_server, extra=extra, login="bot", password="s3cret-token"),
    )
    notifier = ReidentBreachNotifier(http_conn_id="alerts_http")
    with capture_logs() as logs:
        notifier(context_of(breach_exception()))

    [request] = webhook_server.requests  # its JSON checked against the schema by the fixture
    assert request.json() == breach_payload(context_of(breach_exception()))
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-team"] == "privacy"
    assert request.headers["authorization"] == "Basic Ym90OnMzY3JldC10b2tlbg=="  # bot:s3cret-token
    assert_no_secrets(request.body.decode())
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []
    [info] = [e["event"] for e in logs if e["event"].startswith("Breach alert")]
    assert info == (
        f"Breach alert {HTTP_VIA[http_path]} (127.0.0.1:{webhook_server.port}): HTTP 200"
    )
    assert "s3cret-token" not in repr(logs)


@pytest.mark.parametrize("status", [302, 404])
def test_http_conn_id_reports_a_redirect_or_an_error_as_not_delivered(
    http_path: str, status: int, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    webhook_server.status = status
    webhook_server.location = "http://127.0.0.1:9/elsewhere"
    monkeypatch.setenv("AIRFLOW_CONN_ALERTS_HTTP", http_conn(webhook_server))
    with capture_logs() as logs:
        ReidentBreachNotifier(http_conn_id="alerts_http")(context_of(breach_exception()))
    assert len(webhook_server.requests) == 1  # the redirect was not followed
    [error] = [e["event"] for e in logs if e["log_level"] == "error" and "NOT" in e["event"]]
    assert error.startswith("Breach alert NOT delivered")
    assert str(status) in error


# ------------------------------------------------------------------------------------ Slack
class SlackReceiver:
    """An incoming-webhook endpoint on 127.0.0.1: records each POST body, answers ``ok``."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                receiver.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]


@pytest.fixture
def slack_server() -> Iterator[SlackReceiver]:
    receiver = SlackReceiver()
    thread = threading.Thread(target=receiver.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
        thread.join(timeout=5)


def _payload_of(text: str) -> Any:
    """The JSON in the message's code block, Slack's escapes undone."""
    block = text.split("```\n", 1)[1].rsplit("\n```", 1)[0]
    return json.loads(html.unescape(block))


def test_slack_webhook_conn_id_posts_our_payload_in_the_message(
    slack_server: SlackReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{slack_server.port}/services/T000/B000/s3cret-token"
    monkeypatch.setenv(
        "AIRFLOW_CONN_ALERTS_SLACK", json.dumps({"conn_type": "slackwebhook", "password": url})
    )
    # a column name that Slack would read as a mention if it were not escaped
    exc = ReidentificationBreach(
        "gate breached",
        breaches=[{"metric": "k", "observed": 1, "limit": 5}],
        check="reidentification_risk",
        report=None,
        quasi_identifiers=["<!channel>", "sex"],
        k=1,
    )
    with capture_logs() as logs:
        ReidentBreachNotifier(slack_webhook_conn_id="alerts_slack")(context_of(exc))

    [body] = slack_server.bodies
    assert slack_server.paths == ["/services/T000/B000/s3cret-token"]
    text = body["text"]
    assert text.startswith("*[reident] Re-identification breach: ")
    assert "<" not in text and "&lt;!channel&gt;" in text
    payload = _payload_of(text)
    assert payload == breach_payload(context_of(exc))
    assert schema_errors(payload) == []
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []
    assert [e["event"] for e in logs if e["event"].startswith("Breach alert")] == [
        "Breach alert posted via the slack provider's SlackWebhookNotifier to 'alerts_slack'"
    ]
    assert "s3cret-token" not in repr(logs)


def test_an_unreachable_slack_is_logged_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://127.0.0.1:9/services/T000/B000/s3cret-token"  # port 9: nothing listens
    monkeypatch.setenv(
        "AIRFLOW_CONN_ALERTS_SLACK", json.dumps({"conn_type": "slackwebhook", "password": url})
    )
    with capture_logs() as logs:
        ReidentBreachNotifier(slack_webhook_conn_id="alerts_slack", timeout=2)(
            context_of(breach_exception())
        )
    ours = [e for e in logs if e["event"].startswith("Breach alert")]
    assert [e["log_level"] for e in ours] == ["error"]
    assert ours[0]["event"].startswith(
        "Breach alert NOT delivered: Slack webhook connection 'alerts_slack' failed: "
    )
    assert "s3cret-token" not in ours[0]["event"]
