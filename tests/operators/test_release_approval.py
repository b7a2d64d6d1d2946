"""The release DAG's approval step (Airflow's human-in-the-loop), run with ``dag.test()``.

``dag.test()`` parks the ``approve`` task in ``awaiting_input`` until a response is recorded
from outside, as the Required Actions page or the HITL REST API of an api-server sharing the
metadata database would. The responder here is a thread calling that REST endpoint's own
function (Airflow's code, with its user) once the request is waiting; for the timeout, it
moves the request's deadline to the past and runs the scheduler's own sweep of expired
requests. Whatever goes wrong in the thread fails the waiting task, so a run never hangs.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.operators._dags import load_dag, sqlite_conn, states
from tests.operators.test_release_gate import _cleanup, _conf, _table_names

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    # Airflow's REST routes declare a Field alias pydantic warns about on import
    pytest.mark.filterwarnings("ignore::pydantic.warnings.UnsupportedFieldAttributeWarning"),
]

#: How long the responder waits for the request to appear (the staging and the assessment of
#: 30,162 rows come first).
_WAIT = 240.0


@pytest.fixture
def sqlite_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    db = tmp_path / "staging.db"
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_STAGING", sqlite_conn(db))
    return f"sqlite:///{db}"


def _respond(staged_table: str, option: str | None, user: str, found: dict[str, Any]) -> None:
    """Answer the ``approve`` request of the run staging ``staged_table``, as ``user``; on any
    failure, fail the waiting task so that ``dag.test()`` ends instead of waiting forever."""
    try:
        _answer(staged_table, option, user, found)
    except Exception as exc:  # reported by the test through found["error"]
        found["error"] = repr(exc)
    if "answered" not in found:
        found.setdefault("error", f"no approval request of {staged_table} within {_WAIT}s")
        _fail_waiting(staged_table)


def _waiting(session: Any, staged_table: str) -> list[Any]:
    """The ``approve`` task instances of release_gate runs of ``staged_table`` awaiting input."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import select

    rows = session.execute(
        select(TaskInstance.id, TaskInstance.run_id, DagRun.conf)
        .join(DagRun, TaskInstance.run_id == DagRun.run_id)
        .where(
            TaskInstance.dag_id == "release_gate",
            DagRun.dag_id == "release_gate",
            TaskInstance.task_id == "approve",
            TaskInstance.state == "awaiting_input",
        )
    ).all()
    return [row for row in rows if (row.conf or {}).get("staged_table") == staged_table]


def _answer(staged_table: str, option: str | None, user: str, found: dict[str, Any]) -> None:
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.datamodels.hitl import UpdateHITLDetailPayload
    from airflow.api_fastapi.core_api.routes.public.hitl import update_hitl_detail
    from airflow.models.hitl import HITLDetail
    from airflow.utils.session import create_session
    from sqlalchemy import select

    deadline = time.monotonic() + _WAIT
    while time.monotonic() < deadline:
        with create_session() as session:
            mine = _waiting(session, staged_table)
            if mine:
                detail = session.scalars(
                    select(HITLDetail).where(HITLDetail.ti_id == mine[0].id)
                ).one()
                found["subject"] = detail.subject
                found["body"] = detail.body
                if option is None:
                    _time_out(session, mine[0].id)
                    found["answered"] = True
                    return
                update_hitl_detail(
                    dag_id="release_gate",
                    dag_run_id=mine[0].run_id,
                    task_id="approve",
                    update_hitl_detail_payload=UpdateHITLDetailPayload(chosen_options=[option]),
                    user=SimpleAuthManagerUser(username=user, role="admin"),
                    session=session,
                )
                found["answered"] = True
                return
        time.sleep(0.5)


def _time_out(session: Any, ti_id: Any) -> None:
    """Let the request's 24 hours pass (its deadline moved to the past) and run the scheduler's
    sweep of expired requests, which answers with the request's defaults."""
    import datetime

    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import update

    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    session.execute(
        update(TaskInstance).where(TaskInstance.id == ti_id).values(trigger_timeout=past)
    )
    session.commit()
    SchedulerJobRunner(job=Job(), executors=[]).check_awaiting_input_timeouts(session=session)


def _fail_waiting(staged_table: str) -> None:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import update

    with create_session() as session:
        ids = [row.id for row in _waiting(session, staged_table)]
        if ids:
            session.execute(
                update(TaskInstance).where(TaskInstance.id.in_(ids)).values(state="failed")
            )


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
    import airflow.api_fastapi.core_api.routes.public.hitl  # noqa: F401  (warns on import)

    dag = load_dag("release_gate")
    found: dict[str, Any] = {}
    responder = threading.Thread(
        target=_respond, args=(conf["staged_table"], option, user, found), daemon=True
    )
    responder.start()
    run = dag.test(run_conf=conf)
    responder.join(timeout=5)
    assert "error" not in found, found["error"]
    return run, found


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
        assert got["sign_off"][0] == "skipped" and got["publish"][0] == "skipped", got
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
        assert got["sign_off"][0] == "skipped" and got["publish"][0] == "skipped", got
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
    assert task.downstream_task_ids == {"sign_off"}


def test_without_require_approval_the_run_is_unattended(sqlite_staging: str) -> None:
    conf = _conf()
    try:
        run = load_dag("release_gate").test(run_conf=conf)
        got = states(run)
        assert run.state == "success", got
        assert got["approve"][0] == "success" and got["sign_off"][0] == "success", got
        assert conf["published_table"] in _table_names(sqlite_staging)
    finally:
        _cleanup(sqlite_staging, conf)
