"""The example DAGs, run with ``dag.test()`` on SQLite and on the real PostgreSQL."""

from __future__ import annotations

import http.server
import io
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.cli import main
from tests.conftest import require_server
from tests.operators._dags import load_dag, server_conn, sqlite_conn, states

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _table_names(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _expected_report(tmp_path: Path, generalize: bool) -> dict[str, Any]:
    """What `reident assess` says of the same staged data (computed from the bundled CSV)."""
    import pandas as pd

    from tests.conftest import oracle_data

    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    if generalize:
        age = frame["age"].astype(int) // 10 * 10
        frame["age"] = age.astype(str) + "-" + (age + 9).astype(str)
    csv = tmp_path / "staged.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "expected.json"
    main(
        [
            "assess",
            str(csv),
            "--qi",
            "sex,age,race",
            "--max-records-at-risk",
            "0.01",
            "--max-average-risk",
            "0.05",
            "--json",
            str(out),
        ],
        out=io.StringIO(),
        err=io.StringIO(),
    )
    result: dict[str, Any] = json.loads(out.read_text())
    result.pop("input")  # the CLI's input is the file, the operator's the staged table
    return result


@pytest.fixture
def alerts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """A local webhook receiving the DAG's alerts (``reident_alerts``): the JSON bodies."""
    received: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append(json.loads(body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    conn = {"conn_type": "http", "host": "127.0.0.1", "port": server.server_address[1]}
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_ALERTS", json.dumps(conn))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def sqlite_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    db = tmp_path / "staging.db"
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_STAGING", sqlite_conn(db))
    return f"sqlite:///{db}"


@pytest.fixture
def postgresql_staging(monkeypatch: pytest.MonkeyPatch) -> str:
    url = require_server("postgresql")
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_STAGING", server_conn(url))
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def staging(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue(f"{request.param}_staging")
    return url


def _conf(**extra: Any) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:8]
    return {
        "staged_table": f"staged_{suffix}",
        "published_table": f"published_{suffix}",
        "anonymized_table": f"anonymized_{suffix}",
        **extra,
    }


def _cleanup(url: str, conf: dict[str, Any]) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for name in (
            conf["staged_table"],
            conf["published_table"],
            conf["anonymized_table"],
            conf["anonymized_table"] + "__original",
        ):
            sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
    engine.dispose()


def _read(url: str, table: str) -> Any:
    import pandas as pd

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return pd.read_sql_table(table, conn)
    finally:
        engine.dispose()


def _xcom(run: Any, task_id: str) -> Any:
    ti = next(t for t in run.get_task_instances() if t.task_id == task_id)
    return ti.xcom_pull(task_ids=task_id)


def test_passing_table_is_published_with_report_in_xcom(staging: str, tmp_path: Path) -> None:
    dag = load_dag("release_gate")
    conf = _conf()
    try:
        run = dag.test(run_conf=conf)
        got = states(run)
        assert run.state == "success", got
        assert got["assess"] == ("success", 1) and got["publish"][0] == "success"
        ti = next(t for t in run.get_task_instances() if t.task_id == "assess")
        report = ti.xcom_pull(task_ids="assess")
        assert report.pop("input")["rows"] == 30162
        # the operator scans every column (identifier_scan="warn" by default); the DAG allows
        # its row key, and Adult's columns are clear
        scan = report.pop("identifier_scan")
        assert scan["flagged"] == [] and scan["options"]["allow_columns"] == ["record_id"]
        assert report == _expected_report(tmp_path, generalize=True)
        assert report["passed"] is True and report["records"] == 30162
        assert conf["published_table"] in _table_names(staging)
    finally:
        _cleanup(staging, conf)


def test_breach_fails_without_retry_and_blocks_publish(staging: str) -> None:
    dag = load_dag("release_gate")
    assert dag.get_task("assess").retries == 2
    conf = _conf(generalize_age=False)  # raw ages: 1.41% of records at risk > 1% limit
    try:
        run = dag.test(run_conf=conf)
        got = states(run)
        assert run.state == "failed"
        assert got["assess"] == ("failed", 1), got  # failed on the first try: no retries
        assert got["publish"][0] == "upstream_failed"
        assert conf["published_table"] not in _table_names(staging)
    finally:
        _cleanup(staging, conf)


def test_skip_skips_publish(sqlite_staging: str) -> None:
    dag = load_dag("release_gate")
    conf = _conf(generalize_age=False, on_breach="skip")
    run = dag.test(run_conf=conf)
    got = states(run)
    assert got["assess"][0] == "skipped" and got["publish"][0] == "skipped", got
    assert conf["published_table"] not in _table_names(sqlite_staging)


def test_warn_logs_and_publishes(sqlite_staging: str) -> None:
    dag = load_dag("release_gate")
    conf = _conf(generalize_age=False, on_breach="warn")
    run = dag.test(run_conf=conf)
    got = states(run)
    assert run.state == "success" and got["publish"][0] == "success", got
    ti = next(t for t in run.get_task_instances() if t.task_id == "assess")
    report = ti.xcom_pull(task_ids="assess")
    assert report["passed"] is False
    assert [b["metric"] for b in report["breaches"]] == ["prosecutor.records_at_risk"]
    assert conf["published_table"] in _table_names(sqlite_staging)


def test_a_warning_level_alerts_and_publishes(
    sqlite_staging: str, alerts: list[dict[str, Any]], tmp_path: Path
) -> None:
    """Issue 19: the staged table meets its gate (10-year age bands) but crosses the warning
    level warn_max_average_risk=0.001: assess succeeds, publish runs, one alert says "warn".
    The observed average risk is what `reident assess` measures on the same data."""
    dag = load_dag("release_gate")
    conf = _conf(warn_max_average_risk=0.001)
    run = dag.test(run_conf=conf)
    got = states(run)
    assert run.state == "success", got
    assert got["assess"] == ("success", 1) and got["publish"][0] == "success", got
    assert conf["published_table"] in _table_names(sqlite_staging)
    expected = _expected_report(tmp_path, generalize=True)
    average = expected["prosecutor"]["average_risk"]
    warning = {"metric": "prosecutor.average_risk", "observed": average, "limit": 0.001}
    report = _xcom(run, "assess")
    assert report["passed"] is True and report["warnings"] == [warning]
    [alert] = alerts
    assert (alert["outcome"], alert["task_id"], alert["breaches"]) == ("warn", "assess", [])
    assert alert["warnings"] == [warning]


def test_a_preset_failing_level_fails_and_alerts(
    sqlite_staging: str, alerts: list[dict[str, Any]]
) -> None:
    """Raw ages breach the preset k5 (k = 1) and cross the warning level of the average
    risk: assess fails on try 1, nothing is published, one alert says "fail" with the
    warning level and the advice."""
    dag = load_dag("release_gate")
    conf = _conf(
        generalize_age=False, preset="k5", max_records_at_risk=1, warn_max_average_risk=0.001
    )
    run = dag.test(run_conf=conf)
    got = states(run)
    assert run.state == "failed"
    assert got["assess"] == ("failed", 1), got
    assert got["publish"][0] == "upstream_failed"
    assert conf["published_table"] not in _table_names(sqlite_staging)
    [alert] = alerts
    assert alert["outcome"] == "fail" and alert["task_id"] == "assess"
    assert alert["breaches"] == [{"metric": "k", "observed": 1, "limit": 5}]
    report = _xcom(run, "assess")
    average = report["prosecutor"]["average_risk"]  # met at 0.05, crossed at 0.001
    assert alert["warnings"] == [
        {"metric": "prosecutor.average_risk", "observed": average, "limit": 0.001}
    ]
    assert report["preset"] == "k5" and report["thresholds"]["min_k"] == 5
    assert alert["advice"] == {**report["advice"], "sentence": alert["advice"]["sentence"]}
    assert alert["advice"]["records_below_k"] == report["advice"]["records_below_k"] > 0


def test_breach_is_anonymized_reassessed_and_published(staging: str) -> None:
    """anonymize_on_breach: assess breaches -> Datafly -> the re-assessment passes -> the
    direct-match check against the released originals passes -> publish."""
    dag = load_dag("release_gate")
    conf = _conf(generalize_age=False, anonymize_on_breach=True)
    try:
        run = dag.test(run_conf=conf)
        got = states(run)
        assert run.state == "success", got
        assert got["assess"] == ("success", 1) and got["publish"][0] == "skipped", got
        for task_id in (
            "choose",
            "anonymize",
            "reassess",
            "released_original",
            "direct_match",
            "publish_anonymized",
        ):
            assert got[task_id] == ("success", 1), got
        assert _xcom(run, "assess")["passed"] is False  # the breach was reported, not raised
        datafly = _xcom(run, "anonymize")
        assert datafly["schema"] == "reident.datafly/v1" and datafly["passed"] is True
        assert datafly["levels"] == {"sex": 0, "age": 1, "race": 0}  # ages in 5-year bands
        assert datafly["suppressed_records"] == 37 <= datafly["suppression_limit"] == 301
        assert datafly["output"]["table"] == conf["anonymized_table"]
        reassessed = _xcom(run, "reassess")
        assert reassessed["passed"] is True and reassessed["k"] >= 5
        assert reassessed["records"] == 30125
        matched = _xcom(run, "direct_match")
        assert matched["schema"] == "reident.direct_match/v1" and matched["passed"] is True
        assert matched["records"] == 30125  # aligned on record_id, suppressed records left out
        protection = {c["column"]: c["protection"] for c in matched["columns"]}
        assert protection["age"] == 100.0  # no age released as it was: all in 5-year bands
        assert "record_id" not in protection  # the key is not scored
        published = _read(staging, conf["published_table"])
        assert len(published) == 30125
        assert published.groupby(["sex", "age", "race"]).size().min() >= 5
        # the row key and the non-QI columns pass through Datafly untouched
        staged = _read(staging, conf["staged_table"]).set_index("record_id")
        kept = staged.loc[published["record_id"]]
        assert published["education"].tolist() == kept["education"].tolist()
    finally:
        _cleanup(staging, conf)


def test_still_failing_after_datafly_fails_the_dag(sqlite_staging: str) -> None:
    """No generalization of age and no suppression allowed: k=5 cannot be reached, the run
    fails at `anonymize` (no retries) and nothing is published."""
    dag = load_dag("release_gate")
    conf = _conf(
        generalize_age=False,
        anonymize_on_breach=True,
        suppression_limit=0,
        hierarchy_overrides={"age": {"type": "interval", "widths": [], "top": None}},
    )
    run = dag.test(run_conf=conf)
    got = states(run)
    assert run.state == "failed"
    assert got["anonymize"] == ("failed", 1), got  # a data-policy failure: not retried
    assert got["reassess"][0] == "upstream_failed"
    assert got["direct_match"][0] == "upstream_failed"
    assert got["publish_anonymized"][0] == "upstream_failed"
    assert got["publish"][0] == "skipped"
    assert conf["published_table"] not in _table_names(sqlite_staging)
    assert conf["anonymized_table"] not in _table_names(sqlite_staging)


def test_still_breaching_after_datafly_fails_at_reassess(sqlite_staging: str) -> None:
    """Datafly reaches k=5 but the gate asks for less than that gives: `reassess` fails."""
    dag = load_dag("release_gate")
    conf = _conf(generalize_age=False, anonymize_on_breach=True, max_average_risk=0.001)
    run = dag.test(run_conf=conf)
    got = states(run)
    assert run.state == "failed"
    assert got["anonymize"] == ("success", 1), got
    assert got["reassess"] == ("failed", 1), got
    assert got["publish_anonymized"][0] == "upstream_failed"
    assert conf["published_table"] not in _table_names(sqlite_staging)


def test_direct_match_breach_after_datafly_blocks_publish(sqlite_staging: str) -> None:
    """A target no released column can meet (sex is released as it was): `direct_match`
    fails without retries and nothing is published."""
    dag = load_dag("release_gate")
    conf = _conf(generalize_age=False, anonymize_on_breach=True, direct_match_target=99.999)
    run = dag.test(run_conf=conf)
    got = states(run)
    assert run.state == "failed"
    assert got["reassess"] == ("success", 1) and got["direct_match"] == ("failed", 1), got
    assert got["publish_anonymized"][0] == "upstream_failed"
    assert conf["published_table"] not in _table_names(sqlite_staging)


def test_existing_etl_dag_checks_the_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REIDENT_EXPORT_DIR", str(tmp_path))
    dag = load_dag("existing_etl")
    run = dag.test()
    got = states(run)
    assert got["reident_check"][0] == "success", got
    assert (tmp_path / "outbox" / "export.parquet").exists()
    report = next(t for t in run.get_task_instances() if t.task_id == "reident_check").xcom_pull(
        task_ids="reident_check"
    )
    assert report["k"] >= 5 and report["passed"] is True
