"""Release gate: stage -> assess re-identification risk -> publish, failing on a breach.

The embedded default runs on SQLite: the connection ``reident_staging`` points at a SQLite
file (``scripts/demo.sh`` sets ``AIRFLOW_CONN_REIDENT_STAGING``), and the ``stage`` task seeds
the staged table from the bundled sample (UCI Adult). In a real deployment ``stage`` is your
own load step and ``reident_staging`` your warehouse (PostgreSQL, MariaDB, ...): the risk is
computed there with a ``GROUP BY``, rows never leave the database.

Parameters (``airflow dags test release_gate -c '{"generalize_age": false}'``):
- ``staged_table`` / ``published_table``: where the release is staged and published;
- ``quasi_identifiers``: comma-separated QI columns;
- ``generalize_age``: the staging step's own anonymization (ages in 10-year bands);
- ``max_records_at_risk`` / ``max_average_risk``: the gate; ``on_breach``: fail / skip / warn.

A breach fails ``assess`` without retries (``retries=2`` applies to infrastructure errors only)
and ``publish`` does not run. If the connection ``reident_alerts`` (an HTTP webhook) exists,
the breach is posted to it; ``REIDENT_ALERT_EMAIL`` adds an e-mail through ``smtp_default``.
"""

from __future__ import annotations

import datetime
import os
from importlib.resources import files

import pendulum

from reident_airflow._compat import AIRFLOW_V3
from reident_airflow.operators._common import sqlalchemy_engine
from reident_airflow.operators.risk import ReidentificationRiskOperator

if AIRFLOW_V3:
    from airflow.sdk import DAG, task
else:  # pragma: no cover
    from airflow import DAG
    from airflow.decorators import task

STAGING_CONN = "reident_staging"


def _failure_callbacks() -> list:
    callbacks = []
    try:
        from reident_airflow.notifiers import ReidentBreachNotifier
    except ImportError:  # pragma: no cover - notifier not installed
        return callbacks
    webhook = os.environ.get("REIDENT_ALERT_WEBHOOK_CONN", "reident_alerts")
    email = os.environ.get("REIDENT_ALERT_EMAIL")
    if os.environ.get(f"AIRFLOW_CONN_{webhook.upper()}") or email:
        callbacks.append(
            ReidentBreachNotifier(
                webhook_conn_id=webhook
                if os.environ.get(f"AIRFLOW_CONN_{webhook.upper()}")
                else None,
                to=email or None,
            )
        )
    return callbacks


with DAG(
    dag_id="release_gate",
    description="Stage a table, gate it on re-identification risk, publish it",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["reident", "release"],
    default_args={"retries": 2, "retry_delay": datetime.timedelta(seconds=5)},
    params={
        "staged_table": "staged_release",
        "published_table": "published_release",
        "quasi_identifiers": "sex,age,race",
        "generalize_age": True,
        "max_records_at_risk": 0.01,
        "max_average_risk": 0.05,
        "on_breach": "fail",
    },
) as dag:

    @task
    def stage(params: dict | None = None) -> int:
        """Seed the staged table from the bundled sample (the embedded default's load step)."""
        import pandas as pd

        p = params or {}
        sample = files("reident_airflow").joinpath("data/adult.csv")
        with sample.open("r", encoding="utf-8") as fh:
            frame = pd.read_csv(fh, sep=";", dtype=str, keep_default_na=False)
        if p.get("generalize_age", True):
            age = frame["age"].astype(int) // 10 * 10
            frame["age"] = age.astype(str) + "-" + (age + 9).astype(str)
        engine = sqlalchemy_engine(STAGING_CONN)
        try:
            frame.to_sql(
                p.get("staged_table", "staged_release"),
                engine,
                if_exists="replace",
                index=False,
                chunksize=5000,
            )
        finally:
            engine.dispose()
        return len(frame)

    assess = ReidentificationRiskOperator(
        task_id="assess",
        conn_id=STAGING_CONN,
        table="{{ params.staged_table }}",
        quasi_identifiers="{{ params.quasi_identifiers }}",
        max_records_at_risk="{{ params.max_records_at_risk }}",
        max_average_risk="{{ params.max_average_risk }}",
        on_breach="{{ params.on_breach }}",
        on_failure_callback=_failure_callbacks(),
    )

    @task
    def publish(params: dict | None = None) -> int:
        """Publish the staged table atomically (readers never see a half-written table)."""
        from reident_airflow.sources.sql import copy_table_atomic

        p = params or {}
        engine = sqlalchemy_engine(STAGING_CONN)
        try:
            return copy_table_atomic(engine, p["staged_table"], p["published_table"])
        finally:
            engine.dispose()

    stage() >> assess >> publish()
