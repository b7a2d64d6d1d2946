"""Answering a human-in-the-loop request under ``dag.test()`` as Airflow's REST API does.

``dag.test()`` parks a HITL task in ``awaiting_input`` until a response is recorded from
outside, as the Required Actions page or the HITL REST API of an api-server sharing the
metadata database would. :func:`run_answered` starts a thread that waits for the request,
then calls that REST endpoint's own function (Airflow's code, with its user); for a timeout
it moves the request's deadline to the past and runs the scheduler's own sweep of expired
requests. Whatever goes wrong in the thread fails the waiting task, so a run never hangs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

#: How long the responder waits for the request to appear (a staging step and an
#: assessment may come first).
WAIT = 240.0

#: Which waiting task instance to answer: (dag_id, task_id, the run's conf) -> bool.
Match = Callable[[str, str, dict[str, Any]], bool]


def _waiting(session: Any, match: Match) -> list[Any]:
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import select

    rows = session.execute(
        select(TaskInstance.id, TaskInstance.run_id, TaskInstance.dag_id, TaskInstance.task_id)
        .add_columns(DagRun.conf)
        .join(
            DagRun,
            (TaskInstance.run_id == DagRun.run_id) & (TaskInstance.dag_id == DagRun.dag_id),
        )
        .where(TaskInstance.state == "awaiting_input")
    ).all()
    return [row for row in rows if match(row.dag_id, row.task_id, row.conf or {})]


def _answer(
    match: Match,
    option: str | None,
    user: str,
    found: dict[str, Any],
    on_request: Callable[[], None] | None,
) -> None:
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.datamodels.hitl import UpdateHITLDetailPayload
    from airflow.api_fastapi.core_api.routes.public.hitl import update_hitl_detail
    from airflow.models.hitl import HITLDetail
    from airflow.utils.session import create_session
    from sqlalchemy import select

    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        with create_session() as session:
            mine = _waiting(session, match)
            if mine:
                detail = session.scalars(
                    select(HITLDetail).where(HITLDetail.ti_id == mine[0].id)
                ).one()
                found["subject"] = detail.subject
                found["body"] = detail.body
                if on_request is not None:
                    on_request()
                if option is None:
                    _time_out(session, mine[0].id)
                    found["answered"] = True
                    return
                update_hitl_detail(
                    dag_id=mine[0].dag_id,
                    dag_run_id=mine[0].run_id,
                    task_id=mine[0].task_id,
                    update_hitl_detail_payload=UpdateHITLDetailPayload(chosen_options=[option]),
                    user=SimpleAuthManagerUser(username=user, role="admin"),
                    session=session,
                )
                found["answered"] = True
                return
        time.sleep(0.5)


def _time_out(session: Any, ti_id: Any) -> None:
    """Let the request's time pass (its deadline moved to the past) and run the scheduler's
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


def _fail_waiting(match: Match) -> None:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import update

    with create_session() as session:
        ids = [row.id for row in _waiting(session, match)]
        if ids:
            session.execute(
                update(TaskInstance).where(TaskInstance.id.in_(ids)).values(state="failed")
            )


def _respond(
    match: Match,
    option: str | None,
    user: str,
    found: dict[str, Any],
    on_request: Callable[[], None] | None,
) -> None:
    try:
        _answer(match, option, user, found, on_request)
    except Exception as exc:  # reported by the test through found["error"]
        found["error"] = repr(exc)
    if "answered" not in found:
        found.setdefault("error", f"no request to answer within {WAIT}s")
        _fail_waiting(match)


def run_answered(
    dag: Any,
    match: Match,
    option: str | None,
    user: str,
    *,
    conf: dict[str, Any] | None = None,
    on_request: Callable[[], None] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """``dag.test(run_conf=conf)``, the first request ``match`` accepts answered with
    ``option`` as ``user`` (``None``: left to time out). ``on_request`` runs once the request
    waits, before the answer. Returns the run and what the request showed (``subject``,
    ``body``)."""
    import airflow.api_fastapi.core_api.routes.public.hitl  # noqa: F401  (warns on import)

    found: dict[str, Any] = {}
    responder = threading.Thread(
        target=_respond, args=(match, option, user, found, on_request), daemon=True
    )
    responder.start()
    run = dag.test(run_conf=conf)
    responder.join(timeout=5)
    assert "error" not in found, found["error"]
    return run, found
