"""Release check with a Great Expectations suite: stage -> validate (checkpoint) -> publish.

For teams that gate data with Great Expectations: the suite in
``expectations/adult_release.suite.json`` ("sex, age, race are 5-anonymous", "at most 5% of
records at risk", "average risk <= 5%", "population uniques <= 1e-7 of the US population")
runs through the checkpoint in ``expectations/adult_release.checkpoint.json``, whose
``reident_alert`` action records an alert when validation fails. A failing validation fails
the ``validate`` task without retries, so ``publish`` does not run.

Parameters: ``staged_table``, ``age_band`` (years per band, 0 = raw ages),
``suppress_below_k`` (the staging step drops records in classes smaller than this) and
``suite`` (the suite file, under ``REIDENT_EXPECTATIONS_DIR`` unless absolute). Expectations of
GX severity ``warning`` only warn: when they alone fail, the alert says ``"outcome": "warn"``
and ``publish`` runs (see ``expectations/README.md``, "Warn at 0.05, fail at 0.09").
The connection ``reident_staging`` is the staging database (see release_gate).
``REIDENT_EXPECTATIONS_DIR`` points at the suite and checkpoint (default: the repository's).
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pendulum

from reident_airflow._compat import AIRFLOW_V3, AirflowFailException

if AIRFLOW_V3:
    from airflow.sdk import DAG, task
else:  # pragma: no cover
    from airflow import DAG
    from airflow.decorators import task

STAGING_CONN = "reident_staging"
EXPECTATIONS = Path(
    os.environ.get(
        "REIDENT_EXPECTATIONS_DIR", Path(__file__).resolve().parent.parent / "expectations"
    )
)

with DAG(
    dag_id="gx_release_check",
    description="Stage a table, validate it with a Great Expectations risk suite, publish it",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one run publishes the target at a time
    tags=["reident", "great-expectations"],
    default_args={"retries": 2, "retry_delay": datetime.timedelta(seconds=5)},
    params={
        "staged_table": "gx_staged",
        "age_band": 10,
        "suppress_below_k": 5,
        "alert_file": "reident-alerts.jsonl",
        "suite": "adult_release.suite.json",
    },
) as dag:

    @task
    def stage(params: dict | None = None) -> int:
        from reident_airflow.examples import stage_sample

        p = params or {}
        return stage_sample(
            STAGING_CONN,
            p["staged_table"],
            age_band=int(p["age_band"]) or None,
            suppress_below_k=int(p["suppress_below_k"]),
        )

    @task
    def validate(params: dict | None = None) -> dict:
        """Run the checkpoint on the staged table (grouped in the database).

        ``run_release_checkpoint`` imports ``reident_airflow.gx`` (the suite's guard passes)
        and refuses a result that did not evaluate every expectation of the suite file
        (``SuiteIncompleteError``): the task fails, without retries, instead of publishing.
        """
        from reident_airflow.connections import sqlalchemy_engine
        from reident_airflow.engine.errors import ThresholdBreached
        from reident_airflow.gx import SuiteIncompleteError, run_release_checkpoint

        p = params or {}
        engine = sqlalchemy_engine(STAGING_CONN)
        url = engine.url.render_as_string(hide_password=False)
        engine.dispose()
        try:
            result = run_release_checkpoint(
                suite=EXPECTATIONS / p.get("suite", "adult_release.suite.json"),
                checkpoint=EXPECTATIONS / "adult_release.checkpoint.json",
                url=url,
                table=p["staged_table"],
                alert_file=p["alert_file"],
            )
        except ThresholdBreached as exc:  # a data-policy failure: no retries
            raise AirflowFailException(f"Great Expectations release suite failed: {exc}") from None
        except SuiteIncompleteError as exc:  # expectations not evaluated: never a success
            raise AirflowFailException(f"Great Expectations suite incomplete: {exc}") from None
        return result.to_dict()

    @task
    def publish(params: dict | None = None) -> int:
        from reident_airflow.connections import sqlalchemy_engine
        from reident_airflow.sources.sql import copy_table_atomic

        p = params or {}
        engine = sqlalchemy_engine(STAGING_CONN)
        try:
            return copy_table_atomic(engine, p["staged_table"], f"{p['staged_table']}_published")
        finally:
            engine.dispose()

    stage() >> validate() >> publish()
