"""The release checkpoint of ``expectations/``: it gates, and its action alerts on failure."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest
from great_expectations.compatibility import pydantic

from reident_airflow.engine.errors import InvalidInputError, ThresholdBreached
from reident_airflow.gx import ReidentAlertAction, run_release_checkpoint
from tests._schemas import assert_valid
from tests.conftest import ROOT, require_server
from tests.gx.conftest import PASSWORD, QIS, postgres_conn

SUITE = ROOT / "expectations" / "adult_release.suite.json"
CHECKPOINT = ROOT / "expectations" / "adult_release.checkpoint.json"

RECEIVED: list[dict[str, Any]] = []


def collect(document: dict[str, Any]) -> None:
    """A ``callback`` target (``tests.gx.test_checkpoint:collect``)."""
    RECEIVED.append(document)


def released(adult: pd.DataFrame) -> pd.DataFrame:
    """Adult with every record of a class smaller than 5 suppressed (removed)."""
    return adult[adult.groupby(QIS)["sex"].transform("size") >= 5]


def read_alerts(path: Path) -> list[dict[str, Any]]:
    alerts = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for alert in alerts:  # by the package's JSON Schema of reident.gx_alert/v1 (issue 29)
        assert_valid(alert)
    return alerts


def test_failing_release_raises_and_the_alert_fires(adult: pd.DataFrame, tmp_path: Path) -> None:
    alerts = tmp_path / "alerts.jsonl"
    with pytest.raises(ThresholdBreached) as caught:
        run_release_checkpoint(
            suite=SUITE, checkpoint=CHECKPOINT, dataframe=adult, alert_file=alerts
        )
    error = caught.value
    assert "release checkpoint 'adult_release_gate' failed" in str(error)
    assert "k = 1 (required: at least 5)" in str(error)
    [alert] = read_alerts(alerts)
    assert alert == error.report
    assert alert["schema"] == "reident.gx_alert/v1"
    assert alert["event"] == "reidentification_breach"  # issue 29: the event names the outcome
    assert alert["checkpoint"] == "adult_release_gate"
    assert alert["success"] is False
    [validation] = alert["validations"]
    assert validation["suite"] == "adult_release"
    assert validation["evaluated"] == 5  # the guard and the four gates
    failed = {f["measure"]: f for f in validation["failed"]}
    assert {"k", "prosecutor.records_at_risk"} <= set(failed)
    assert failed["k"]["value"] == 1 and failed["k"]["limit"] == 5
    assert error.breaches == validation["failed"]
    # aggregates only: no QI value of any record in the alert
    text = json.dumps(alert)
    assert "White" not in text and "Male" not in text


def test_passing_release_returns_and_no_alert_fires(adult: pd.DataFrame, tmp_path: Path) -> None:
    alerts = tmp_path / "alerts.jsonl"
    outcome = run_release_checkpoint(
        suite=SUITE, checkpoint=CHECKPOINT, dataframe=released(adult), alert_file=alerts
    )
    assert outcome.success is True
    assert outcome.failed_expectations() == []
    assert outcome.to_dict()["validations"][0]["evaluated"] == 5
    assert not alerts.exists()


def test_database_table_and_callback(sqlite_url: str, tmp_path: Path) -> None:
    RECEIVED.clear()
    outcome = run_release_checkpoint(
        suite=SUITE,
        checkpoint=CHECKPOINT,
        url=sqlite_url,
        table="adult",
        alert_file=tmp_path / "alerts.jsonl",
        callback="tests.gx.test_checkpoint:collect",
        raise_on_failure=False,
    )
    assert outcome.success is False
    assert RECEIVED == [outcome.to_dict()] == read_alerts(tmp_path / "alerts.jsonl")


class _Hook(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        _Hook.bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[str]:
    _Hook.bodies = []
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/alerts"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_webhook_receives_the_alert(adult: pd.DataFrame, webhook: str) -> None:
    checkpoint = {
        "name": "notify_all",
        "actions": [{"type": "reident_alert", "notify_on": "all", "webhook_url": webhook}],
    }
    outcome = run_release_checkpoint(suite=SUITE, checkpoint=checkpoint, dataframe=released(adult))
    assert outcome.success
    assert _Hook.bodies == [outcome.to_dict()]


def test_an_alert_that_cannot_be_delivered_is_reported_not_raised(
    adult: pd.DataFrame, tmp_path: Path
) -> None:
    outcome = run_release_checkpoint(suite=SUITE, dataframe=adult.head(50), raise_on_failure=False)
    action = ReidentAlertAction(
        webhook_url="http://127.0.0.1:9/unreachable",
        alert_file=str(tmp_path / "a.jsonl"),
        timeout=2.0,
    )
    report = action.run(outcome.checkpoint_result)
    assert report["alerted"] is True and report["delivered"] == ["alert_file"]
    assert report["errors"][0].startswith("webhook_url: ")


def test_alert_action_needs_a_target() -> None:
    with pytest.raises(pydantic.ValidationError, match="at least one of alert_file"):
        ReidentAlertAction()


def test_bad_suite_names_the_expectation_and_the_parameter(adult: pd.DataFrame) -> None:
    suite = json.loads(SUITE.read_text(encoding="utf-8"))
    suite["expectations"][1]["kwargs"]["k"] = 0  # the first is the guard
    with pytest.raises(InvalidInputError) as caught:
        run_release_checkpoint(suite=suite, dataframe=adult)
    assert str(caught.value) == (
        "suite 'adult_release', expectation 2 (expect_table_to_be_k_anonymous): "
        "k: k must be >= 1, got 0"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give exactly one of dataframe, csv, url"),
        ({"url": "sqlite://"}, "a database url needs table=NAME"),
        ({"csv": "missing.csv"}, "missing.csv: no such file"),
    ],
)
def test_bad_inputs(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        run_release_checkpoint(suite=SUITE, **kwargs)


def test_a_suite_parameter_resolved_to_a_bad_value_is_an_input_error(
    adult: pd.DataFrame,
) -> None:
    suite = json.loads(SUITE.read_text(encoding="utf-8"))
    suite["expectations"][1]["kwargs"]["k"] = {"$PARAMETER": "k"}
    with pytest.raises(InvalidInputError, match=r"^suite 'adult_release': .*k must be >= 1"):
        run_release_checkpoint(suite=suite, dataframe=adult, expectation_parameters={"k": 0})


def test_conn_id_reads_an_airflow_connection(
    adult: pd.DataFrame,
    postgres_adult: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Issue 29: ``conn_id`` beside ``url``; same verdict as the URL; no password anywhere."""
    import logging

    url, table = postgres_adult
    monkeypatch.setenv(
        "AIRFLOW_CONN_REIDENT_GX_PG", postgres_conn(url, application_name="reident-gx")
    )
    import sqlalchemy as sa

    from reident_airflow.gx import connection_url

    built = sa.make_url(connection_url("reident_gx_pg"))
    assert (built.password, built.username, built.database) == (PASSWORD, "postgres", "test")
    assert dict(built.query) == {"application_name": "reident-gx"}  # a libpq extra, carried
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ThresholdBreached) as caught:
        run_release_checkpoint(suite=SUITE, conn_id="reident_gx_pg", table=table)
    by_url = run_release_checkpoint(suite=SUITE, url=url, table=table, raise_on_failure=False)
    same = ("outcome", "validations")
    assert {k: caught.value.report[k] for k in same} == {k: by_url.to_dict()[k] for k in same}
    assert by_url.outcome == "fail"  # raw Adult: k = 1
    passed = run_release_checkpoint(suite=SUITE, dataframe=released(adult), raise_on_failure=False)
    assert passed.success
    out, err = capfd.readouterr()
    seen = [caplog.text, out, err, str(caught.value), json.dumps(caught.value.report)]
    assert not any("SECRET" in text for text in seen)


def test_conn_id_errors_name_no_password(
    postgres_adult: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from reident_airflow.outcomes import ReidentConfigurationError

    url, table = postgres_adult
    mariadb = json.loads(postgres_conn(require_server("mariadb"), connect_timeout=5))
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_GX_MY", json.dumps({**mariadb, "conn_type": "mysql"}))
    with pytest.raises(ReidentConfigurationError) as refused:
        run_release_checkpoint(suite=SUITE, conn_id="reident_gx_my", table=table)
    assert "extra connect_timeout cannot be carried" in str(refused.value)
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_GX_PG", postgres_conn(url.replace("5432", "9")))
    with pytest.raises(Exception) as unreachable:
        run_release_checkpoint(suite=SUITE, conn_id="reident_gx_pg", table=table)
    assert "SECRET" not in str(unreachable.value) and "SECRET" not in repr(unreachable.value)
    with pytest.raises(InvalidInputError, match="give url or conn_id, not both"):
        run_release_checkpoint(suite=SUITE, conn_id="reident_gx_pg", url=url, table=table)
