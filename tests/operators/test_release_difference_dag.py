"""The example DAG ``release_difference_gate`` run with ``dag.test()`` on two days (issue 28).

By hand, from ``patients()``: on 2026-01-01 the release holds 120 patients in three classes
of 40 (k = 40, passes ``min_k=5``); nothing was published before, so there is nothing to
compare. On 2026-01-02 one patient is admitted into (F, 40-49, 100): 121 records, classes of
41, 40 and 40 (k = 40: the table alone still passes ``min_k=5``), but against the published
release the new row is one arrival alone in its class: arrival k = 1 < 2, a breach;
``publish`` does not run and the published file stays the first release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pendulum
import pytest

from tests.operators._dags import load_dag, states


def _xcom(run: Any, task_id: str) -> Any:
    ti = next(t for t in run.get_task_instances() if t.task_id == task_id)
    return ti.xcom_pull(task_ids=task_id)


def test_the_second_run_breaches_arrival_k(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dag = load_dag("release_difference_gate")
    conf = {
        "staged_path": str(tmp_path / "staged.csv"),
        "published_path": str(tmp_path / "out" / "published.csv"),
    }
    first = dag.test(logical_date=pendulum.datetime(2026, 1, 1, tz="UTC"), run_conf=conf)
    assert first.state == "success", states(first)
    report = _xcom(first, "assess")
    assert report["records"] == 120 and report["k"] == 40
    assert report["since_last_release"] is None and report["passed"] is True
    published = Path(conf["published_path"]).read_bytes()

    second = dag.test(logical_date=pendulum.datetime(2026, 1, 2, tz="UTC"), run_conf=conf)
    got = states(second)
    assert second.run_id != first.run_id
    assert second.state == "failed", got
    assert got["assess"] == ("failed", 1), got  # a breach: no retries
    assert got["publish"][0] == "upstream_failed"
    assert Path(conf["published_path"]).read_bytes() == published
    report = _xcom(second, "assess")
    assert report["records"] == 121 and report["k"] == 40  # alone, it passes min_k = 5
    assert report["breaches"] == [
        {"metric": "since_last_release.arrivals.k", "observed": 1.0, "limit": 2.0}
    ]
    arrivals = report["since_last_release"]["arrivals"]
    assert (arrivals["records"], arrivals["k"], arrivals["highest_risk"]) == (1, 1, 1.0)
    assert report["since_last_release"]["departures"]["records"] == 0
    logged = capsys.readouterr()
    text = logged.out + logged.err
    assert "since_last_release.arrivals.k = 1 (limit: at least 2)" in text
    assert "hold back 1 of the 1 arrivals (1 of 1 classes)" in text
