"""Two levels through GX's own ``severity``: warn at 0.05, fail at 0.09, on one measure.

The suite holds the average prosecutor risk twice: at ``warning`` severity with limit 0.05
and at ``critical`` severity (GX's default) with limit 0.09. The average prosecutor risk of
a table is its number of classes over its number of records (``docs/metrics.md`` §2), so a
table of one QI column with two values holds two classes and the risk is 2 / records:

- 10 + 20 records: 2 / 30 = 0.0667, above 0.05, at most 0.09: outcome "warn", no error;
- 5 + 10 records: 2 / 15 = 0.133, above 0.09: outcome "fail", ThresholdBreached;
- 20 + 30 records: 2 / 50 = 0.04: outcome "pass".
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from reident_airflow.engine.errors import ThresholdBreached
from reident_airflow.gx import ReidentAlertAction, run_release_checkpoint
from tests._schemas import assert_valid

AVERAGE = "prosecutor.average_risk"


def average_risk(limit: float, severity: str | None, qis: list[str] | None = None) -> dict:
    item: dict[str, Any] = {
        "type": "expect_table_reidentification_risk_to_be_below",
        "kwargs": {"quasi_identifiers": qis or ["group"], "measure": AVERAGE, "max_value": limit},
    }
    if severity is not None:
        item["severity"] = severity
    return item


SUITE = {
    "name": "two_levels",
    "expectations": [average_risk(0.05, "warning"), average_risk(0.09, None)],
}
CHECKPOINT = {
    "name": "two_levels_gate",
    "actions": [{"type": "reident_alert", "alert_file": "placeholder.jsonl"}],
}


def table(a: int, b: int) -> pd.DataFrame:
    return pd.DataFrame({"group": ["a"] * a + ["b"] * b})


def alerts(path: Path) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for alert in found:  # by the package's JSON Schema of reident.gx_alert/v1 (issue 29)
        assert_valid(alert)
    return found


def run(frame: pd.DataFrame, alert_file: Path, suite: dict = SUITE, **kwargs: Any) -> Any:
    return run_release_checkpoint(
        suite=suite, checkpoint=CHECKPOINT, dataframe=frame, alert_file=alert_file, **kwargs
    )


def test_a_warning_failure_alerts_warn_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    alert_file = tmp_path / "alerts.jsonl"
    with caplog.at_level(logging.WARNING, logger="reident_airflow.gx.checkpoint"):
        result = run(table(10, 20), alert_file)
    assert (result.outcome, result.success) == ("warn", True)
    assert result.checkpoint_result.success is False  # GX's verdict: one expectation failed
    assert result.failed_expectations() == []
    [warned] = result.warned_expectations()
    assert (warned["severity"], warned["limit"]) == ("warning", 0.05)
    assert warned["value"] == pytest.approx(2 / 30, rel=1e-12)
    [alert] = alerts(alert_file)
    assert alert["outcome"] == "warn" and alert == result.to_dict()
    assert alert["event"] == "reidentification_warning"  # the release went ahead
    assert "two_levels_gate' warns: 1 expectation(s)" in caplog.text


def test_a_critical_failure_fails_the_run_and_alerts_fail(tmp_path: Path) -> None:
    alert_file = tmp_path / "alerts.jsonl"
    with pytest.raises(ThresholdBreached) as caught:
        run(table(5, 10), alert_file)
    [alert] = alerts(alert_file)
    assert alert["outcome"] == "fail"
    assert alert["event"] == "reidentification_breach"
    failed = alert["validations"][0]["failed"]
    assert sorted(f["severity"] for f in failed) == ["critical", "warning"]
    # the error names the critical failure only: 2 / 15 = 0.133333 > 0.09
    [breach] = caught.value.breaches
    assert (breach["severity"], breach["limit"]) == ("critical", 0.09)
    assert "1 expectation(s) not met" in str(caught.value)
    assert "limit: at most 0.09" in str(caught.value)


def test_no_failure_is_a_pass_and_no_alert(tmp_path: Path) -> None:
    alert_file = tmp_path / "alerts.jsonl"
    result = run(table(20, 30), alert_file)
    assert (result.outcome, result.success) == ("pass", True)
    assert not alert_file.exists()


def test_a_warning_expectation_that_cannot_be_evaluated_fails_closed(tmp_path: Path) -> None:
    suite = {"name": "broken", "expectations": [average_risk(0.05, "warning", ["grup"])]}
    with pytest.raises(ThresholdBreached) as caught:
        run(table(20, 30), tmp_path / "alerts.jsonl", suite=suite)
    [breach] = caught.value.breaches
    assert breach["severity"] == "warning" and "grup" in breach["error"]
    # stopped because nothing could be measured: an error, not a breach of a limit
    [alert] = alerts(tmp_path / "alerts.jsonl")
    assert (alert["outcome"], alert["event"]) == ("fail", "reidentification_error")


def test_a_pass_alerted_with_notify_on_all_is_named_passed(tmp_path: Path) -> None:
    every = tmp_path / "every.jsonl"
    action = ReidentAlertAction(name="every_run", notify_on="all", alert_file=str(every))
    run(table(20, 30), tmp_path / "alerts.jsonl", actions=[action])
    [alert] = alerts(every)
    assert (alert["outcome"], alert["event"]) == ("pass", "reidentification_passed")


def test_notify_on_critical_keeps_warnings_quiet(tmp_path: Path) -> None:
    quiet, loud = tmp_path / "quiet.jsonl", tmp_path / "loud.jsonl"
    action = ReidentAlertAction(name="critical_only", notify_on="critical", alert_file=str(quiet))
    result = run(table(10, 20), loud, actions=[action])
    assert result.outcome == "warn"
    assert not quiet.exists() and len(alerts(loud)) == 1
    with pytest.raises(ThresholdBreached):
        run(table(5, 10), loud, actions=[action])
    assert [a["outcome"] for a in alerts(quiet)] == ["fail"]
