"""The example DAG ``identifier_scan_gate`` run with ``dag.test()`` (issue 27): a release
whose declared QIs pass the gate but which still holds a forgotten ``mrn`` column.

The staged release is Adult with ages in 10-year bands, which passes
``max_records_at_risk=0.01`` on ``sex, age, race`` (``test_release_gate.py`` runs the same
data through the same gate), plus ``mrn``: an identifier by its name and unique in all 30,162
records. Adult's own columns come out clear (``tests/operators/test_risk_operator.py``), so
``mrn`` is the one column flagged and failing.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tests.operators._dags import load_dag, states


def _conf(tmp_path: Path, policy: str) -> dict[str, Any]:
    return {
        "staged_path": str(tmp_path / "staged.csv"),
        "published_path": str(tmp_path / "out" / "published.csv"),
        "identifier_scan": policy,
    }


def _xcom(run: Any, task_id: str) -> Any:
    ti = next(t for t in run.get_task_instances() if t.task_id == task_id)
    return ti.xcom_pull(task_ids=task_id)


def _mrns(path: Path) -> list[str]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [row["mrn"] for row in csv.DictReader(fh)]


def _assert_no_mrn(mrns: list[str], *outputs: str) -> None:
    assert len(set(mrns)) == 30162  # one per record
    for text in outputs:
        assert not [m for m in mrns if m in text]


def test_a_forgotten_mrn_fails_the_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dag = load_dag("identifier_scan_gate")
    conf = _conf(tmp_path, "fail")
    run = dag.test(run_conf=conf)
    got = states(run)
    assert run.state == "failed", got
    assert got["stage"][0] == "success"
    assert got["assess"] == ("failed", 1), got  # a breach: no retries
    assert got["publish"][0] == "upstream_failed"
    assert not Path(conf["published_path"]).exists()
    report = _xcom(run, "assess")
    assert report["identifier_scan"]["failing"] == ["mrn"]
    assert report["breaches"] == [
        {"metric": "identifier_scan.failing_columns", "observed": 1.0, "limit": 0.0}
    ]
    column = next(c for c in report["identifier_scan"]["columns"] if c["column"] == "mrn")
    assert column["verdict"] == "identifier" and column["singletons"] == 30162
    logged = capsys.readouterr()
    text = logged.out + logged.err
    assert "identifier_scan.failing_columns = 1 (limit: at most 0)" in text
    assert "Identifier scan: mrn (identifier)" in text
    _assert_no_mrn(_mrns(Path(conf["staged_path"])), json.dumps(report), text)


def test_under_warn_the_release_goes_ahead_with_the_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dag = load_dag("identifier_scan_gate")
    conf = _conf(tmp_path, "warn")
    run = dag.test(run_conf=conf)
    got = states(run)
    assert run.state == "success", got
    assert got["assess"] == ("success", 1) and got["publish"][0] == "success"
    assert Path(conf["published_path"]).exists()
    report = _xcom(run, "assess")
    assert report["passed"] is True and report["identifier_scan"]["flagged"] == ["mrn"]
    assert report["warnings"] == [
        {"metric": "identifier_scan.flagged_columns", "observed": 1.0, "limit": 0.0}
    ]
    logged = capsys.readouterr()
    text = logged.out + logged.err
    assert "identifier scan: mrn: identifier (name: record number; unique: 30162" in text
    _assert_no_mrn(_mrns(Path(conf["staged_path"])), json.dumps(report), text)
