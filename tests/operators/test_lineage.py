"""Issue 19: OpenLineage events of the operators and the report link, from a real
``dag.test()`` run with the OpenLineage provider and its file transport.

The DAG (``lineage_dags/lineage_dag.py``) runs in a subprocess, so that the provider's
listener is registered with the transport configured before Airflow loads its plugins. The
listener fires under ``dag.test()``: the events below are the ones it emitted.

Expected values, by hand from ``tests/data/test.csv`` (7 records; ages 34, 45, 66, 70, 34,
70, 45; genders m, f, m, f, f, m, m; zip codes all distinct but the four 81931):

- ``passes`` (QI age): classes 34x2, 45x2, 66x1, 70x2, so k = 1 and the average risk is
  classes / records = 4 / 7 = 0.571429 <= 0.6.
- ``breaches`` (QI age, gender, zipcode): the 7 records are 7 distinct triples: k = 1 < 2.
- ``partition`` (``where gender = 'male'``): rows 1, 3, 6, 7: 4 records.
- ``datafly`` (k = 2 on age): only 66 is alone; the default suppression limit is k = 2
  records, so no generalization and 1 record suppressed: 6 written, achieved k = 2.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.operators import ReidentificationRiskOperator
from tests.conftest import ROOT, ensure_airflow_db, oracle_data

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DAGS = Path(__file__).parent / "lineage_dags"


def _env(home: Path, dags: Path, events: Path, out: Path, db: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    transport = {"type": "file", "log_file_path": str(events), "append": True}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(dags),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(transport),
        AIRFLOW__OPENLINEAGE__NAMESPACE="reident_test",
        AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD="true",
        AIRFLOW_CONN_LINEAGE_DB=json.dumps({"conn_type": "sqlite", "host": str(db)}),
        REIDENT_LINEAGE_CSV=str(oracle_data("test.csv")),
        REIDENT_LINEAGE_OUT=str(out),
        PYTHONPATH=str(ROOT),
    )
    return env


@pytest.fixture(scope="module")
def lineage_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("lineage")
    dags, out = tmp / "dags", tmp / "out"
    dags.mkdir()
    out.mkdir()
    for item in DAGS.iterdir():
        if item.is_file():
            shutil.copy(item, dags / item.name)
    db = tmp / "staging.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    pd.read_csv(oracle_data("test.csv"), sep=";").to_sql("staged", engine, index=False)
    engine.dispose()
    events = tmp / "events.jsonl"
    done = subprocess.run(
        [sys.executable, str(dags / "lineage_dag.py")],
        env=_env(ensure_airflow_db(), dags, events, out, db),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    by_task: dict[str, dict[str, Any]] = {}
    for text in events.read_text().splitlines():
        event = json.loads(text)
        task = event["job"]["name"].removeprefix("reident_lineage.")
        by_task.setdefault(task, {})[event["eventType"]] = event
    return {
        "result": json.loads((out / "result.json").read_text()),
        "events": by_task,
        "out": out,
        "log": done.stdout + done.stderr,
    }


def _assertions(dataset: dict[str, Any]) -> list[tuple[str, str, str | None, bool]]:
    facet = dataset["inputFacets"]["dataQualityAssertions"]
    return [(a["name"], a["expected"], a.get("actual"), a["success"]) for a in facet["assertions"]]


def test_passing_and_breaching_runs_report_inputs_and_assertions(
    lineage_run: dict[str, Any],
) -> None:
    states = {task: r["state"] for task, r in lineage_run["result"].items()}
    assert states == {
        "passes": "success",
        "breaches": "failed",
        "partition": "success",
        "datafly": "success",
    }
    events = lineage_run["events"]
    host = f"file://{socket.gethostname()}"

    [passed] = events["passes"]["COMPLETE"]["inputs"]
    assert (passed["namespace"], passed["name"]) == (host, str(oracle_data("test.csv")))
    assert _assertions(passed) == [
        ("prosecutor.average_risk <= 0.6", "0.6", "0.571429", True),
        ("k >= 1", "1", "1", True),
    ]
    assert passed["inputFacets"]["dataQualityMetrics"]["rowCount"] == 7
    assert events["passes"]["COMPLETE"]["outputs"] == []

    # the breach fails the task: the FAIL event carries the input (named from release.sql,
    # the template file) and the failed assertion
    failed = events["breaches"]["FAIL"]
    [source] = failed["inputs"]
    assert source["namespace"].startswith("sqlite://") and source["name"] == "staged"
    assert _assertions(source) == [("k >= 2", "2", "1", False)]
    [k_check] = source["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert k_check["severity"] == "error"
    # 7 classes of one record each: all 7 records are below k = 2
    assert k_check["params"] == {"geq_to": 2, "failures": 7}
    assert source["inputFacets"]["dataQualityMetrics"]["rowCount"] == 7
    assert "COMPLETE" not in events["breaches"]

    [partition] = events["partition"]["COMPLETE"]["inputs"]
    assert partition["name"] == "staged"
    assert partition["inputFacets"]["dataQualityMetrics"]["rowCount"] == 4


def test_datafly_reports_its_published_output(lineage_run: dict[str, Any]) -> None:
    """Issue 29: the release's assertions (k >= 2, suppression) describe the OUTPUT and are
    on it (a dataset facet, where common.sql attaches its checks), not on the input; k is
    reached, so no record fails it (``failures`` 0)."""
    complete = lineage_run["events"]["datafly"]["COMPLETE"]
    [source] = complete["inputs"]
    assert "dataQualityAssertions" not in source["inputFacets"]
    assert source["inputFacets"]["dataQualityMetrics"]["rowCount"] == 7
    [output] = complete["outputs"]
    assert output["name"] == str(lineage_run["out"] / "release.csv")
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == 6
    facet = output["facets"]["dataQualityAssertions"]
    got = [
        (a["name"], a["expected"], a["actual"], a["success"], a["params"])
        for a in facet["assertions"]
    ]
    assert got == [
        ("k >= 2", "2", "2", True, {"geq_to": 2, "failures": 0}),
        ("suppressed_records <= 2", "2", "1", True, {"leq_to": 2}),
    ]


def test_start_events_name_the_datasets_with_their_schema(lineage_run: dict[str, Any]) -> None:
    """Issue 29: START carries the inputs (and Datafly's output) with a ``schema`` facet:
    names and types only. test.csv's header is ``age;gender;zipcode``, numbers in age and
    zipcode (DuckDB's sniffer reads whole numbers as BIGINT, text as VARCHAR); ``staged`` was
    written by pandas' ``to_sql`` (int64 as BIGINT, object as TEXT on SQLite)."""
    events = lineage_run["events"]

    def fields(dataset: dict[str, Any]) -> list[tuple[str, str]]:
        return [(f["name"], f["type"]) for f in dataset["facets"]["schema"]["fields"]]

    [csv_in] = events["passes"]["START"]["inputs"]
    assert csv_in["name"] == str(oracle_data("test.csv"))
    assert fields(csv_in) == [("age", "BIGINT"), ("gender", "VARCHAR"), ("zipcode", "BIGINT")]
    assert "inputFacets" not in csv_in or not csv_in["inputFacets"]  # no result before the run
    [table] = events["breaches"]["START"]["inputs"]
    assert table["name"] == "staged"
    assert fields(table) == [("age", "BIGINT"), ("gender", "TEXT"), ("zipcode", "BIGINT")]
    datafly = events["datafly"]["START"]
    assert [d["name"] for d in datafly["inputs"]] == [str(oracle_data("test.csv"))]
    assert [d["name"] for d in datafly["outputs"]] == [str(lineage_run["out"] / "release.csv")]
    # the schema facet is on the finished events too, and carries no values
    [source] = events["breaches"]["FAIL"]["inputs"]
    assert fields(source) == fields(table)
    assert "81667" not in json.dumps(events)  # a zip code of test.csv's first record


def test_report_link_of_each_task_instance(lineage_run: dict[str, Any]) -> None:
    links = {task: r["link"] for task, r in lineage_run["result"].items()}
    out = lineage_run["out"]
    assert links == {
        # a local report served under report_base_url, by its file name
        "passes": "https://reports.example.org/runs/passes.html",
        # a report written through ObjectStoragePath: its URL as it is
        "breaches": f"file://{out}/breaches.html",
        # no report: the link is empty
        "partition": "",
        "datafly": "",
    }
    assert (out / "passes.html").is_file() and (out / "breaches.html").is_file()


def test_a_run_without_a_report_logs_no_report_link_error(lineage_run: dict[str, Any]) -> None:
    """``partition`` and ``datafly`` write no report: finishing them looks up no report URL,
    so no "XCom not found" error (nor any error about the link) is in the run's log."""
    lines = lineage_run["log"].splitlines()
    about_link = [ln for ln in lines if "report_url" in ln or "operator extra link" in ln.lower()]
    assert not [ln for ln in about_link if "[error" in ln or "[warning" in ln], about_link[:3]
    assert not [ln for ln in lines if "XCom not found" in ln]


def test_one_xcom_copy_of_the_report_and_its_location(lineage_run: dict[str, Any]) -> None:
    """The report once, as ``return_value`` (``passed`` shown here), also from the failed
    task; the location and URL under their own keys; no ``reident_report`` any more."""
    xcoms = {task: r["xcom"] for task, r in lineage_run["result"].items()}
    out = lineage_run["out"]
    link = "_link_ReidentReportLink"
    breach_url = f"file://{out}/breaches.html"
    assert xcoms["breaches"] == {
        "return_value": False,
        "report_location": breach_url,
        "report_url": breach_url,
        link: breach_url,
    }
    assert xcoms["passes"] == {
        "return_value": True,
        "report_location": str(out / "passes.html"),
        "report_url": "https://reports.example.org/runs/passes.html",
        link: "https://reports.example.org/runs/passes.html",
    }
    assert xcoms["partition"] == {"return_value": True, link: ""}


def test_without_the_provider_there_is_no_lineage(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_openlineage(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith(("airflow.providers.openlineage", "openlineage")):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    op = ReidentificationRiskOperator(
        task_id="t", path=str(oracle_data("test.csv")), quasi_identifiers="age", min_k=1
    )
    op.last_report = {"schema": "reident.assessment/v1", "records": 7, "k": 1}
    assert op.get_openlineage_facets_on_complete(None) is not None  # the provider is here
    monkeypatch.setattr(builtins, "__import__", no_openlineage)
    assert op.get_openlineage_facets_on_complete(None) is None
    assert op.get_openlineage_facets_on_failure(None) is None


def test_warning_levels_are_assertions_with_severity_warn() -> None:
    """QI age of tests/data/test.csv: k = 1 and average risk 4 / 7 = 0.571429 (see the
    module's docstring). The failing level 0.6 is met; the warning levels 0.5 and k >= 2
    are crossed: success false, severity "warn", the task succeeds."""
    from reident_airflow.operators.lineage import report_assertions

    op = ReidentificationRiskOperator(
        task_id="t",
        path=str(oracle_data("test.csv")),
        sep=";",
        quasi_identifiers="age",
        max_average_risk=0.6,
        warn_max_average_risk="0.5",
        warn_min_k="2",
        fingerprint=False,
        identifier_scan="off",  # the scan's assertions: test_lineage_scan.py
    )
    report = op.execute({})
    assert report["passed"] is True
    got = [(a.name, a.actual, a.success, a.severity) for a in report_assertions(report)]
    assert got == [
        ("prosecutor.average_risk <= 0.6", "0.571429", True, None),
        ("prosecutor.average_risk <= 0.5 (warning level)", "0.571429", False, "warn"),
        ("k >= 2 (warning level)", "1", False, "warn"),
    ]
