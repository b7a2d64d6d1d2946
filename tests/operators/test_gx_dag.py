"""The Great Expectations example DAG: a failing validation fails the task and alerts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.operators._dags import load_dag, sqlite_conn, states


@pytest.fixture
def staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_STAGING", sqlite_conn(tmp_path / "staging.db"))
    return tmp_path


def test_passing_suite_publishes(staging: Path) -> None:
    dag = load_dag("gx_release_check")
    alerts = staging / "alerts.jsonl"
    run = dag.test(run_conf={"alert_file": str(alerts)})
    got = states(run)
    assert run.state == "success", got
    assert got["publish"][0] == "success"
    assert not alerts.exists() or alerts.read_text() == ""  # no alert on success


def test_failing_suite_fails_without_retry_and_alerts(staging: Path) -> None:
    dag = load_dag("gx_release_check")
    alerts = staging / "alerts.jsonl"
    # raw ages and no suppression: k = 1, the suite fails
    run = dag.test(run_conf={"alert_file": str(alerts), "age_band": 0, "suppress_below_k": 0})
    got = states(run)
    assert run.state == "failed"
    assert got["validate"] == ("failed", 1), got  # a data-policy failure: not retried
    assert got["publish"][0] == "upstream_failed"
    lines = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert len(lines) == 1
    text = json.dumps(lines[0])
    for value in ("Married-civ-spouse", "Amer-Indian-Eskimo", "Self-emp-inc"):
        assert value not in text
