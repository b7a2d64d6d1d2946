"""The Great Expectations example DAG: a failing validation fails the task and alerts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.operators._dags import load_dag, sqlite_conn, states

QIS = ["sex", "age", "race"]


def k_anonymous(severity: str | None = None, **kwargs: object) -> dict:
    """A suite entry of the k-anonymity expectation on ``QIS`` (``k=`` or ``preset=``)."""
    item: dict = {
        "type": "expect_table_to_be_k_anonymous",
        "kwargs": {"quasi_identifiers": QIS, **kwargs},
    }
    if severity:
        item["severity"] = severity
    return item


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


@pytest.mark.parametrize("outcome", ["warn", "fail"])
def test_a_warning_level_alerts_and_publishes_a_critical_one_fails(
    staging: Path, outcome: str
) -> None:
    """Two levels on k by GX severity: warning at k = 1000, critical at k = 5 (a preset).

    Staged with 10-year age bands and classes below 5 suppressed, every class holds at least
    5 records (the critical level passes) and fewer than 1000 (Adult holds 286
    Amer-Indian-Eskimo records in all, so their classes are smaller): it warns and publishes.
    Raw and unsuppressed (k = 1) the critical level fails too: the task fails, nothing is
    published, and the one alert says "fail".
    """
    suite = staging / "two_levels.suite.json"
    levels = [k_anonymous("warning", k=1000), k_anonymous(preset="k5")]
    two_levels = {"name": "two_levels", "expectations": levels}
    suite.write_text(json.dumps(two_levels), encoding="utf-8")
    alerts = staging / "alerts.jsonl"
    conf = {"alert_file": str(alerts), "suite": str(suite)}
    if outcome == "fail":
        conf.update({"age_band": 0, "suppress_below_k": 0})
    run = load_dag("gx_release_check").test(run_conf=conf)
    got = states(run)
    [alert] = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert alert["outcome"] == outcome
    failed = alert["validations"][0]["failed"]
    if outcome == "warn":
        assert run.state == "success", got
        assert got["publish"][0] == "success"
        assert [(f["severity"], f["limit"]) for f in failed] == [("warning", 1000)]
        assert 5 <= failed[0]["value"] < 1000
    else:
        assert run.state == "failed"
        assert got["validate"] == ("failed", 1), got
        assert got["publish"][0] == "upstream_failed"
        assert sorted((f["severity"], f["limit"]) for f in failed) == [
            ("critical", 5),
            ("warning", 1000),
        ]
