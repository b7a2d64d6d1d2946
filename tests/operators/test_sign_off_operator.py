"""Issue 42, item 3: a user's own DAG signs its report off with the packaged
``ReleaseSignOffOperator`` -- asked and answered through Airflow's human-in-the-loop API
under ``dag.test()``, answered as its REST API does (:mod:`tests.operators._hitl`).

The DAG is the smallest a user would write: assess a file (tests/data/test.csv, seven
rows; ``age`` as the quasi-identifier: ages 34, 45 and 70 twice, 66 once, so k = 1 and the
gate ``min_k=1`` passes), ask, then release.
"""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, ensure_airflow_db, oracle_data
from tests.operators._dags import states
from tests.operators._hitl import run_answered

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.UnsupportedFieldAttributeWarning"),
]

_SIGN_OFF = re.compile(r'<section class="card sign-off" id="sign-off">.*?</section>\n', re.S)


#: A user's own DAG file: assess >> sign >> release. Its id, file and report come from the
#: environment of the test that writes it.
_USER_DAG = """
import datetime
import json
import os

from airflow.sdk import DAG, task

from reident_airflow.operators import ReidentificationRiskOperator, ReleaseSignOffOperator

with DAG(
    dag_id=os.environ["OWN_DAG_ID"],
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    catchup=False,
) as dag:
    check = ReidentificationRiskOperator(
        task_id="check",
        path=os.environ["OWN_DAG_CSV"],
        sep=";",
        quasi_identifiers="age",
        min_k=1,
        report_path=os.environ["OWN_DAG_REPORT"],
    )
    sign_off = json.loads(os.environ["OWN_DAG_SIGN_OFF"])
    if "response_timeout" in sign_off:
        sign_off["response_timeout"] = datetime.timedelta(seconds=sign_off["response_timeout"])
    sign = ReleaseSignOffOperator(task_id="sign", report_task_id="check", **sign_off)

    @task
    def release() -> int:
        return 1

    check >> sign >> release()
"""


def _own_dag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: Path, **sign_off: Any) -> Any:
    """The user's DAG, in a DAG bundle of its own next to the examples' (``dag.test()``
    runs a DAG its bundles hold)."""
    import importlib.util
    import json

    ensure_airflow_db()
    folder = tmp_path / "user_dags"
    folder.mkdir()
    (folder / "own_dag.py").write_text(_USER_DAG, encoding="utf-8")
    local = "airflow.dag_processing.bundles.local.LocalDagBundle"
    bundles = [
        {"name": "dags-folder", "classpath": local, "kwargs": {}},
        {"name": "user-dags", "classpath": local, "kwargs": {"path": str(folder)}},
    ]
    monkeypatch.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps(bundles))
    monkeypatch.setenv("OWN_DAG_ID", f"own_sign_off_{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("OWN_DAG_CSV", str(oracle_data("test.csv")))
    monkeypatch.setenv("OWN_DAG_REPORT", str(report))
    monkeypatch.setenv("OWN_DAG_SIGN_OFF", json.dumps(sign_off))
    spec = importlib.util.spec_from_file_location("own_sign_off_dag", folder / "own_dag.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def _run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    report: Path,
    option: str | None,
    user: str = "a.jones",
    **sign_off: Any,
) -> tuple[Any, dict[str, Any]]:
    dag = _own_dag(tmp_path, monkeypatch, report, **sign_off)
    found: dict[str, Any] = {}

    def match(dag_id: str, task_id: str, conf: dict[str, Any]) -> bool:
        return dag_id == dag.dag_id and task_id == "sign"

    def keep_report() -> None:  # the report as the reviewer saw it
        found["report_before"] = report.read_text(encoding="utf-8")

    run, shown = run_answered(dag, match, option, user, on_request=keep_report)
    return run, {**shown, **found}


def _block(html: str) -> str:
    [block] = _SIGN_OFF.findall(html)
    return block


def _unsigned_part(html: str) -> str:
    return _SIGN_OFF.sub("", html)


def test_a_users_own_dag_gets_a_signed_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "reports" / "check.html"
    before = datetime.datetime.now(datetime.UTC).date()
    run, found = _run(tmp_path, monkeypatch, report, "Approve")
    got = states(run)
    assert run.state == "success", got
    assert got["sign"][0] == "success" and got["release"][0] == "success", got
    # the request: the default subject, the verdict, the advice and the report's link
    assert found["subject"] == "Sign off the release checked by check?"
    body = found["body"]
    assert "Re-identification risk: PASSED" in body
    assert "Advice: none (no k breach to act on)." in body
    assert f"[the report]({report})" in body
    # no value of the file in the request: ages and zip codes of test.csv
    assert not re.search(r"\b(34|45|66|70|8\d{4})\b", body), body
    html = report.read_text(encoding="utf-8")
    block = _block(html)
    assert '<span class="line">a.jones</span>' in block
    assert '<span class="line">approver in Airflow</span>' in block
    assert "☒</span> approve <span" in block
    day = re.search(r'<span class="label">Date</span><span class="line">([\d-]+)<', block)
    assert day is not None
    assert before <= datetime.date.fromisoformat(day.group(1))
    assert re.search(
        r"Answered in Airflow by a\.jones at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", block
    )
    assert f"task sign of run {run.run_id}" in block
    # the reviewer saw a blank block; everything else is left as it was
    assert '<span class="line">a.jones</span>' not in _block(found["report_before"])
    assert _unsigned_part(html) == _unsigned_part(found["report_before"])


def test_a_rejection_skips_the_release_and_is_in_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "check.html"
    run, _ = _run(tmp_path, monkeypatch, report, "Reject", role="privacy officer")
    got = states(run)
    assert got["sign"][0] == "success", got
    assert got["release"][0] == "skipped", got
    block = _block(report.read_text(encoding="utf-8"))
    assert '<span class="line">a.jones</span>' in block
    assert '<span class="line">privacy officer</span>' in block
    assert "☒</span> reject <span" in block
    assert "☒</span> approve <span" not in block


def test_no_answer_within_the_timeout_rejects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "check.html"
    run, _ = _run(tmp_path, monkeypatch, report, None, "", response_timeout=1800)
    got = states(run)
    assert got["sign"][0] == "success", got
    assert got["release"][0] == "skipped", got
    block = _block(report.read_text(encoding="utf-8"))
    assert '<span class="line">nobody (no answer within the timeout)</span>' in block
    assert "☒</span> reject <span" in block
    assert "No answer within 0:30:00: rejected at" in block


def test_the_operator_is_registered_and_exported() -> None:
    from reident_airflow import operators
    from reident_airflow.get_provider_info import get_provider_info
    from reident_airflow.operators.sign_off import ReleaseSignOffOperator

    assert operators.ReleaseSignOffOperator is ReleaseSignOffOperator
    assert "ReleaseSignOffOperator" in operators.__all__
    [listed] = get_provider_info()["operators"]
    assert "reident_airflow.operators.sign_off" in listed["python-modules"]


def test_the_answer_cannot_default_to_approve() -> None:
    from reident_airflow.operators import ReleaseSignOffOperator
    from reident_airflow.outcomes import ReidentConfigurationError

    op = ReleaseSignOffOperator(task_id="sign", report_task_id="check")
    assert op.defaults == ["Reject"]
    assert op.response_timeout == datetime.timedelta(hours=24)
    with pytest.raises(ReidentConfigurationError, match="defaults is fixed"):
        ReleaseSignOffOperator(task_id="s2", report_task_id="check", defaults="Approve")
    with pytest.raises(ReidentConfigurationError, match="positive timedelta"):
        ReleaseSignOffOperator(
            task_id="s3", report_task_id="check", response_timeout=datetime.timedelta(0)
        )


def test_without_the_hitl_api_it_says_what_it_needs() -> None:
    """Airflow < 3.1 (or a standard provider without human-in-the-loop): the module imports,
    building the operator says what is needed. Simulated by hiding the HITL module."""
    code = (
        "import sys\n"
        "sys.modules['airflow.providers.standard.operators.hitl'] = None\n"
        "from reident_airflow.operators.sign_off import ReleaseSignOffOperator\n"
        "try:\n"
        "    ReleaseSignOffOperator(task_id='sign', report_task_id='check')\n"
        "except Exception as exc:\n"
        "    print('RAISED', type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    [raised] = [line for line in done.stdout.splitlines() if line.startswith("RAISED ")]
    assert raised.startswith("RAISED ReidentConfigurationError "), done.stdout + done.stderr
    assert "needs Apache Airflow 3.1 or later" in raised
    assert "apache-airflow-providers-standard" in raised


def test_sign_report_changes_the_sign_off_block_only() -> None:
    from reident_airflow.engine.errors import InvalidInputError
    from reident_airflow.report import SignOff, render_report, sign_report
    from tests.report.documents import SMALL_BREACH

    html = render_report(SMALL_BREACH)
    signed = sign_report(
        html, SignOff(reviewer="B. Smith", decision="reject"), lead="Answered by B. Smith."
    )
    assert "B. Smith" in _block(signed) and "B. Smith" not in html
    assert "Answered by B. Smith." in _block(signed)
    assert _unsigned_part(signed) == _unsigned_part(html)
    with pytest.raises(InvalidInputError, match="not a reident report"):
        sign_report("<html></html>", SignOff(decision="approve"))


def test_the_request_shows_the_advice_of_a_k_breach() -> None:
    """SMALL_BREACH (tests/report/documents.py): min_k 3 breached (k = 1), with advice:
    3 of its 4 classes (4 of its 9 records) below k, driven by column a."""
    from reident_airflow.operators.sign_off import request_body
    from tests.report.documents import SMALL_BREACH

    body = request_body(SMALL_BREACH, "https://reports.example.org/r.html", "Release X.")
    lines = body.splitlines()
    assert lines[:3] == [
        "Release X.",
        "",
        "Report: [the report](https://reports.example.org/r.html)",
    ]
    assert "Re-identification risk: BREACHED" in body
    assert "What to do:" in body and "Advice: none" not in body
    # the advice's figures (SMALL_BREACH): 3 of 4 classes, 4 of 9 records, driven by 'a'
    assert "3 of 4 classes, holding 4 of 9 records" in body
    assert "'a' drives" in body
    assert request_body(SMALL_BREACH, None).startswith("Report: none (no report_path)")
