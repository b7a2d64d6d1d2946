"""The release DAG's approval step (the provider's ``ReleaseSignOffOperator``), run with
``dag.test()`` and answered as Airflow's HITL REST API does (:mod:`tests.operators._hitl`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.operators._dags import load_dag, sqlite_conn, states
from tests.operators._hitl import run_answered
from tests.operators.test_release_gate import _cleanup, _conf, _table_names

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    # Airflow's REST routes declare a Field alias pydantic warns about on import
    pytest.mark.filterwarnings("ignore::pydantic.warnings.UnsupportedFieldAttributeWarning"),
]


@pytest.fixture
def sqlite_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    db = tmp_path / "staging.db"
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_STAGING", sqlite_conn(db))
    return f"sqlite:///{db}"


def _qi_values(url: str, table: str) -> set[str]:
    """The distinct values of the staged quasi-identifiers (sex, age, race)."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            staged = sa.Table(table, sa.MetaData(), autoload_with=conn)
            return {
                str(value)
                for column in ("sex", "age", "race")
                for value in conn.execute(sa.select(staged.c[column]).distinct()).scalars()
            }
    finally:
        engine.dispose()


def _run_answered(
    conf: dict[str, Any], option: str | None, user: str
) -> tuple[Any, dict[str, Any]]:
    """Run release_gate, answering its ``approve`` request (of the run staging this
    ``staged_table``) as the REST API does (tests/operators/_hitl.py)."""

    def match(dag_id: str, task_id: str, run_conf: dict[str, Any]) -> bool:
        mine = run_conf.get("staged_table") == conf["staged_table"]
        return dag_id == "release_gate" and task_id == "approve" and mine

    return run_answered(load_dag("release_gate"), match, option, user, conf=conf)


def test_approval_shows_the_verdict_and_link_and_signs_the_report(
    sqlite_staging: str, tmp_path: Path
) -> None:
    report = tmp_path / "reports" / "release.html"
    conf = _conf(require_approval=True, report_path=str(report))
    try:
        run, found = _run_answered(conf, "Approve", "a.jones")
        got = states(run)
        assert run.state == "success", got
        assert got["approve"][0] == "success" and got["publish"][0] == "success", got
        assert found["subject"] == f"Publish {conf['staged_table']} to {conf['published_table']}?"
        body = found["body"]
        # the verdict (the default gate passes: max_records_at_risk=0.01), the advice (none:
        # no min_k is set, so no k breach) and the report's location
        assert "Re-identification risk: PASSED" in body
        assert "Advice: none (no k breach to act on)." in body
        assert f"[the report]({report})" in body
        # aggregates only: no value of a quasi-identifier of the staged records
        values = _qi_values(sqlite_staging, conf["staged_table"])
        assert {"Male", "Female", "White", "20-29"} <= values
        leaked = {v for v in values if re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", body)}
        assert not leaked, leaked
        assert conf["published_table"] in _table_names(sqlite_staging)
        html = report.read_text(encoding="utf-8")
        block = html[html.index('id="sign-off"') : html.index('id="about"')]
        assert '<span class="line">a.jones</span>' in block
        assert "☒</span> approve <span" in block
        assert re.search(
            r'<span class="label">Date</span><span class="line">\d{4}-\d\d-\d\d<', block
        )
    finally:
        _cleanup(sqlite_staging, conf)


def test_a_rejection_publishes_nothing_and_is_in_the_report(
    sqlite_staging: str, tmp_path: Path
) -> None:
    report = tmp_path / "release.html"
    conf = _conf(require_approval=True, report_path=str(report))
    try:
        run, _ = _run_answered(conf, "Reject", "a.jones")
        got = states(run)
        assert got["approve"][0] == "success", got
        assert got["publish"][0] == "skipped", got
        assert conf["published_table"] not in _table_names(sqlite_staging)
        # the rejection is in the report's sign-off block, by whom
        html = report.read_text(encoding="utf-8")
        block = html[html.index('id="sign-off"') : html.index('id="about"')]
        assert '<span class="line">a.jones</span>' in block
        assert "☒</span> reject <span" in block
        assert "☒</span> approve <span" not in block
    finally:
        _cleanup(sqlite_staging, conf)


def test_no_answer_within_the_timeout_rejects_and_is_in_the_report(
    sqlite_staging: str, tmp_path: Path
) -> None:
    report = tmp_path / "release.html"
    conf = _conf(require_approval=True, report_path=str(report))
    try:
        run, _ = _run_answered(conf, None, "")
        got = states(run)
        assert got["approve"][0] == "success", got
        assert got["publish"][0] == "skipped", got
        assert conf["published_table"] not in _table_names(sqlite_staging)
        html = report.read_text(encoding="utf-8")
        block = html[html.index('id="sign-off"') : html.index('id="about"')]
        assert '<span class="line">nobody (no answer within the timeout)</span>' in block
        assert "☒</span> reject <span" in block
    finally:
        _cleanup(sqlite_staging, conf)


def test_the_request_times_out_to_reject() -> None:
    """A request nobody answers takes its default, "Reject", after the timeout: no publish."""
    import datetime

    task = load_dag("release_gate").get_task("approve")
    assert task.response_timeout == datetime.timedelta(hours=24)
    assert task.defaults == ["Reject"]
    assert task.downstream_task_ids == {"publish"}


def test_without_require_approval_the_run_is_unattended(sqlite_staging: str) -> None:
    conf = _conf()
    try:
        run = load_dag("release_gate").test(run_conf=conf)
        got = states(run)
        assert run.state == "success", got
        assert got["approve"][0] == "success", got
        assert conf["published_table"] in _table_names(sqlite_staging)
    finally:
        _cleanup(sqlite_staging, conf)
