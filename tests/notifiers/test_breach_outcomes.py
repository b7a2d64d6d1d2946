"""Issue 16: every breach outcome that stops or weakens a release alerts (fail, skip, warn),
opt-out per outcome, and the alert and the XCom report carry the HTML report's location.

The gate is the real :class:`ReidentificationRiskOperator` on a small CSV (k = 1), with the
:class:`ReidentBreachNotifier` wired as today (``on_failure_callback``) and posting to a local
webhook. Before the fix (run on b3dda21), all of these failed except the passing-gate test:
``test_skip_and_warn_alert_once_...[warn]`` / ``[skip]`` (no request posted: a skip or a warn
never reaches a failure callback), ``test_fail_alerts_once_from_the_failure_callback`` (the
alert had no ``outcome`` and no ``report_location``), and the opt-out tests (``outcomes`` did
not exist).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reident_airflow._compat import AirflowSkipException
from reident_airflow.notifiers import ReidentBreachNotifier, breach_email
from reident_airflow.notifiers.breach import BREACH_EVENT
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import REPORT_PATH_XCOM_KEY, REPORT_XCOM_KEY, ReidentificationBreach
from tests.notifiers.conftest import WebhookReceiver
from tests.operators._fakes import RunTI

#: Record values of the staged table: no alert may carry them.
SECRETS = ("Alice Sensitive-Smith", "HIV-POSITIVE-7731", "99501-0042")
QIS = ["zip", "sex"]
#: The alert's ``event`` for each outcome (issue 29: before, all three were
#: ``reidentification_breach``, so a router could not tell a release that went ahead).
EVENTS = {
    "fail": "reidentification_breach",
    "skip": "reidentification_skipped",
    "warn": "reidentification_warning",
}


def staged_csv(tmp_path: Path) -> Path:
    path = tmp_path / "staged.csv"
    rows = [
        "name,zip,sex,diagnosis",
        f"{SECRETS[0]},{SECRETS[2]},F,{SECRETS[1]}",
        "Bob,10001,M,flu",
        "Carol,10001,M,flu",
        "Dan,10002,F,none",
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def gate(
    tmp_path: Path, on_breach: str, notifier: ReidentBreachNotifier
) -> ReidentificationRiskOperator:
    return ReidentificationRiskOperator(
        task_id="assess",
        path=str(staged_csv(tmp_path)),
        quasi_identifiers=QIS,
        min_k=2,
        on_breach=on_breach,
        report_path=str(tmp_path / "report.html"),
        on_failure_callback=notifier,
        # these tests are about the gate's outcomes: the identifier scan (which flags name
        # and zip here, a warning of its own) is tested in tests/operators/test_risk_scan.py
        identifier_scan="off",
    )


def run(op: ReidentificationRiskOperator) -> tuple[dict[str, Any], RunTI, BaseException | None]:
    ti = RunTI()
    context: dict[str, Any] = {"ti": ti, "task_instance": ti, "task": op, "run_id": ti.run_id}
    try:
        op.execute(context)  # type: ignore[arg-type]
    except (AirflowSkipException, ReidentificationBreach) as exc:
        return context, ti, exc
    return context, ti, None


def notifier(receiver: WebhookReceiver, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Any:
    conn = {"conn_type": "http", "host": receiver.host, "port": receiver.port}
    monkeypatch.setenv("AIRFLOW_CONN_OUTCOME_HOOK", json.dumps(conn))
    return ReidentBreachNotifier(webhook_conn_id="outcome_hook", timeout=5, **kw)


def assert_one_alert(receiver: WebhookReceiver, outcome: str, location: str) -> dict[str, Any]:
    [request] = receiver.requests
    payload = request.json()
    assert payload["event"] == EVENTS[outcome]
    assert payload["outcome"] == outcome
    assert payload["report_location"] == location
    assert payload["check"] == "reidentification_risk"
    assert payload["k"] == 1
    if payload["breaches"]:  # the engine holds k as 1.0 / 2.0; the alert sends integers
        assert b'{"metric": "k", "observed": 1, "limit": 2}' in request.body
    assert (payload["report_url"] or location) in payload["text"]  # the URL when it has one
    for secret in SECRETS:
        assert secret not in request.body.decode()
    return dict(payload)


@pytest.mark.parametrize("outcome", ["warn", "skip"])
def test_skip_and_warn_alert_once_with_the_outcome_and_the_report_location(
    outcome: str, tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    op = gate(tmp_path, outcome, notifier(webhook_server, monkeypatch))
    _, ti, exc = run(op)
    if outcome == "skip":
        assert isinstance(exc, AirflowSkipException)
    else:
        assert exc is None  # the task succeeds
    location = str(tmp_path / "report.html")
    assert Path(location).is_file()
    payload = assert_one_alert(webhook_server, outcome, location)
    # one XCom copy of the report (the operator's, as the CLI writes it) and the location
    # under its own key
    assert ti.pushed[REPORT_PATH_XCOM_KEY] == location == ti.pushed["report_location"]
    assert "report_location" not in ti.pushed[REPORT_XCOM_KEY]
    assert ti.pushed[REPORT_XCOM_KEY]["passed"] is False
    assert "reident_report" not in ti.pushed
    subject, text, html_body = breach_email(payload)
    assert subject.endswith(f", {outcome})")
    assert f"Report: {location}" in text and location in html_body
    assert "Outcome" in text and outcome in text


@pytest.mark.parametrize("outcome", ["warn", "skip"])
def test_opting_out_of_an_outcome_sends_nothing(
    outcome: str, tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = [o for o in ("fail", "skip", "warn") if o != outcome]
    op = gate(tmp_path, outcome, notifier(webhook_server, monkeypatch, outcomes=kept))
    run(op)
    assert webhook_server.requests == []


def test_fail_alerts_once_from_the_failure_callback(
    tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    op = gate(tmp_path, "fail", notifier(webhook_server, monkeypatch))
    context, ti, exc = run(op)
    assert isinstance(exc, ReidentificationBreach)
    assert webhook_server.requests == []  # the task itself sends nothing on a fail
    # what Airflow then does: the failure callbacks, with the exception in the context
    callbacks = op.on_failure_callback
    for callback in [callbacks] if callable(callbacks) else list(callbacks or ()):
        callback({**context, "exception": exc})
    location = str(tmp_path / "report.html")
    assert_one_alert(webhook_server, "fail", location)
    assert exc.report["report_location"] == location
    assert ti.pushed[REPORT_PATH_XCOM_KEY] == location
    assert ti.pushed[REPORT_XCOM_KEY]["passed"] is False


def test_opting_out_of_fail_and_bad_outcomes(
    tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = notifier(webhook_server, monkeypatch, outcomes=("skip", "warn"))
    op = gate(tmp_path, "fail", quiet)
    context, _, exc = run(op)
    quiet({**context, "exception": exc})
    assert webhook_server.requests == []
    with pytest.raises(ValueError, match="outcomes"):
        ReidentBreachNotifier(webhook_conn_id="h", outcomes=("fail", "retry"))
    with pytest.raises(ValueError, match="outcomes"):
        ReidentBreachNotifier(webhook_conn_id="h", outcomes="warn")


def test_a_passing_gate_and_a_gate_without_notifier_send_nothing(
    tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    op = gate(tmp_path, "warn", notifier(webhook_server, monkeypatch))
    op.min_k = 1
    _, _, exc = run(op)
    assert exc is None and webhook_server.requests == []
    bare = ReidentificationRiskOperator(
        task_id="assess", path=str(staged_csv(tmp_path)), quasi_identifiers=QIS, min_k=2,
        on_breach="warn",
    )  # fmt: skip
    _, ti, exc = run(bare)
    assert exc is None and "report_location" not in ti.pushed[REPORT_XCOM_KEY]


@pytest.mark.parametrize("outcome", ["fail", "warn"])
def test_a_notifier_wired_twice_alerts_once(
    outcome: str, tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listed twice, as when it sits in the DAG's default_args and on the task. Before the fix
    # (5c2dca3) each listing posted its own alert.
    once = notifier(webhook_server, monkeypatch)
    op = gate(tmp_path, outcome, once)
    op.on_failure_callback = [once, once]
    context, _, exc = run(op)
    if outcome == "fail":  # what Airflow does next: every failure callback, one exception
        for callback in op.on_failure_callback:
            callback({**context, "exception": exc})
    assert_one_alert(webhook_server, outcome, str(tmp_path / "report.html"))


def test_two_notifiers_to_different_destinations_both_alert(
    tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = notifier(webhook_server, monkeypatch)
    conn = {"conn_type": "http", "host": webhook_server.host, "port": webhook_server.port}
    monkeypatch.setenv("AIRFLOW_CONN_OTHER_HOOK", json.dumps(conn))
    second = ReidentBreachNotifier(webhook_conn_id="other_hook", timeout=5)
    op = gate(tmp_path, "warn", first)
    op.on_failure_callback = [first, second]
    run(op)
    assert len(webhook_server.requests) == 2


def test_every_alert_carries_the_report_url(
    tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fail with a served report: the alert has its URL (the e-mail links it); a DAG-level
    callback (no exception in its context) reads the report and its location from XCom."""
    op = gate(tmp_path, "fail", notifier(webhook_server, monkeypatch))
    op.report_base_url = "https://reports.example.org/gate/"
    context, ti, exc = run(op)
    url = "https://reports.example.org/gate/report.html"
    assert ti.pushed["report_url"] == url
    assert isinstance(exc, ReidentificationBreach)
    callbacks = op.on_failure_callback
    for callback in [callbacks] if callable(callbacks) else list(callbacks or ()):
        callback({**context, "exception": exc})
    payload = assert_one_alert(webhook_server, "fail", str(tmp_path / "report.html"))
    assert payload["report_url"] == url and url in payload["text"]
    _, text, html_body = breach_email(payload)
    assert f"Report: {url}" in text and f'<a href="{url}">Report</a>' in html_body

    dag_level = ReidentBreachNotifier(webhook_conn_id="outcome_hook", timeout=5)
    dag_level({k: v for k, v in context.items() if k != "exception"})
    second = webhook_server.requests[-1].json()
    assert second["event"] == BREACH_EVENT and second["k"] == 1
    assert second["report_location"] == str(tmp_path / "report.html")
    assert second["report_url"] == url


def test_a_warning_level_alone_alerts_warn_and_the_task_succeeds(
    tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """min_k = 1 passes; warn_min_k = 2 is crossed (k = 1: the 99501 record is alone)."""
    op = gate(tmp_path, "fail", notifier(webhook_server, monkeypatch))
    op.min_k, op.warn_min_k = 1, "2"
    _, ti, exc = run(op)
    assert exc is None and ti.pushed[REPORT_XCOM_KEY]["passed"] is True
    payload = assert_one_alert(webhook_server, "warn", str(tmp_path / "report.html"))
    assert payload["breaches"] == []
    assert payload["warnings"] == [{"metric": "k", "observed": 1, "limit": 2}]
    # k is a count: a JSON integer, not 1.0 / 2.0 as the assessment holds it
    assert b'"warnings": [{"metric": "k", "observed": 1, "limit": 2}]' in (
        webhook_server.requests[0].body
    )
    assert payload["advice"] is None  # min_k itself was met: no advice
    assert payload["text"].startswith("Re-identification warning in release_gate.assess")
    assert "crossed 1 warning level(s): k observed 1 (limit 2)" in payload["text"]
    subject, text, html_body = breach_email(payload)
    assert subject == (
        "[reident] Re-identification warning: release_gate.assess "
        "(reidentification_risk, 1 warning level(s), warn)"
    )
    assert "Warning levels crossed:\n  - k: observed 1, limit 2" in text
    assert "<h3>Warning levels crossed</h3>" in html_body


def test_the_advice_reaches_the_alert_the_message_and_xcom(
    tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By hand, on (zip, sex) of the staged CSV: classes (99501-0042, F) x1, (10001, M) x2,
    (10002, F) x1 -> 3 classes, 2 of them (2 records) below k = 2. Distinction: all QIs
    3 / 4 = 0.75; without zip (sex alone: F, M) 2 / 4 = 0.5; without sex (zip alone) 3 / 4:
    zip drives the risk. Datafly at k = 2 with its default limit of k = 2 records: the 2
    records below k may be suppressed, so nothing is generalized (levels 0) and 2 suppressed.
    """
    op = gate(tmp_path, "fail", notifier(webhook_server, monkeypatch))
    op.hierarchies = '{"zip": {"type": "masking"}, "sex": {"type": "masking"}}'
    context, ti, exc = run(op)
    assert isinstance(exc, ReidentificationBreach)
    expected = {
        "k": 2,
        "records": 4,
        "classes": 3,
        "classes_below_k": 2,
        "records_below_k": 2,
        "driver": {"column": "zip", "distinction": 0.75, "distinction_without": 0.5},
        "datafly": {
            "k": 2,
            "feasible": True,
            "levels": {"zip": 0, "sex": 0},
            "suppressed_records": 2,
            "below_k": 0,
            "suppression_limit": 2,
            # level 0 of any hierarchy keeps the values; Datafly takes no step, so the
            # trade-off is the one state before it: 2 records below k
            "level_labels": {"zip": "as is", "sex": "as is"},
            "tradeoff": [
                {
                    "levels": {"zip": 0, "sex": 0},
                    "suppressed": 2,
                    "labels": {"zip": "as is", "sex": "as is"},
                }
            ],
        },
    }
    assert ti.pushed[REPORT_XCOM_KEY]["advice"] == expected
    sentence = (
        "2 of 3 classes, holding 2 of 4 records, are smaller than k=2; 'zip' drives the "
        "risk: without it the distinction falls from 0.75 to 0.5; Datafly at k=2 would "
        "generalize zip → as is (level 0), sex → as is (level 0) and suppress 2 record(s)."
    )
    assert str(exc).endswith(f"What to do: {sentence}")
    callbacks = op.on_failure_callback
    for callback in [callbacks] if callable(callbacks) else list(callbacks or ()):
        callback({**context, "exception": exc})
    payload = assert_one_alert(webhook_server, "fail", str(tmp_path / "report.html"))
    assert payload["advice"] == {**expected, "sentence": sentence}
    assert payload["text"].endswith(f"what to do: {sentence}; report: {tmp_path}/report.html")
    _, text, html_body = breach_email(payload)
    assert f"What to do: {sentence}" in text and "<h3>What to do</h3>" in html_body
    for secret in SECRETS:  # nor in the log-bound message or the XCom report
        assert secret not in str(exc) and secret not in json.dumps(ti.pushed[REPORT_XCOM_KEY])


def test_advice_false_and_a_bad_sign_off(
    tmp_path: Path, webhook_server: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    op = gate(tmp_path, "warn", notifier(webhook_server, monkeypatch))
    op.advice = "False"
    _, ti, _ = run(op)
    assert ti.pushed[REPORT_XCOM_KEY]["advice"] is None
    assert webhook_server.requests[0].json()["advice"] is None
    from reident_airflow.outcomes import ReidentConfigurationError

    op.sign_off = {"decision": "maybe"}
    with pytest.raises(ReidentConfigurationError, match=r"sign_off: .*decision"):
        run(op)
