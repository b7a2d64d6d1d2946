"""Identifier scan gate: a release that still holds a forgotten ``mrn`` column (issue 27).

The staged release passes the risk gate on its declared quasi-identifiers (``sex, age,
race``, ages in 10-year bands: 0.01 of records at risk at most), yet it still carries a
medical record number nobody declared. The operator scans every column of the release
(``identifier_scan``): ``mrn`` is an ``identifier`` (its name, and unique in every record),
so under ``"fail"`` (this DAG's default) ``assess`` fails without retries and ``publish``
does not run; under ``"warn"`` the finding is logged, alerted as a warning and kept in the
assessment (XCom), and the release goes ahead.

Shape::

    stage >> assess >> publish

``stage`` writes the bundled sample (UCI Adult) as a CSV file with an ``mrn`` column made up
from the row number (``MRN-`` and six digits, deterministic: never real data) to
``staged_path``; ``publish`` copies it to ``published_path``. Both live in a folder of their
own under the system's temporary directory unless the run's configuration names them.

Parameters (``airflow dags test identifier_scan_gate -c '{"identifier_scan": "warn"}'``):
``identifier_scan`` (fail / warn / off), ``staged_path``, ``published_path``,
``quasi_identifiers``. If the connection ``reident_alerts`` (an HTTP webhook) exists, a
failing or warning scan is posted to it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib.resources import files
from pathlib import Path
from typing import Any

import pendulum

from reident_airflow._compat import AIRFLOW_V3
from reident_airflow.operators.risk import ReidentificationRiskOperator

if AIRFLOW_V3:
    from airflow.sdk import DAG, chain, task
else:  # pragma: no cover
    from airflow import DAG
    from airflow.decorators import task  # type: ignore[attr-defined,no-redef]
    from airflow.models.baseoperator import chain  # type: ignore[no-redef]

_FOLDER = Path(tempfile.gettempdir()) / "reident_identifier_scan_gate"


def mrn(row: int) -> str:
    """The made-up medical record number of row ``row`` (1, 2, ...): ``MRN-`` and six digits,
    one per row (an affine map of the row number modulo 10**6, a bijection there)."""
    return f"MRN-{(row * 7919 + 104729) % 1_000_000:06d}"


def _failure_callbacks() -> list[Any]:
    webhook = os.environ.get("REIDENT_ALERT_WEBHOOK_CONN", "reident_alerts")
    if not os.environ.get(f"AIRFLOW_CONN_{webhook.upper()}"):
        return []
    from reident_airflow.notifiers import ReidentBreachNotifier

    return [ReidentBreachNotifier(webhook_conn_id=webhook)]


with DAG(
    dag_id="identifier_scan_gate",
    description="Stage a release with a forgotten mrn column; the identifier scan stops it",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["reident", "release", "identifier-scan"],
    default_args={"retries": 2},
    params={
        "staged_path": str(_FOLDER / "staged.csv"),
        "published_path": str(_FOLDER / "published.csv"),
        "quasi_identifiers": "sex,age,race",
        "identifier_scan": "fail",
    },
) as dag:

    @task
    def stage(params: dict[str, Any] | None = None) -> int:
        """Write the bundled sample, ages in 10-year bands, with its forgotten ``mrn``."""
        import pandas as pd

        p = params or {}
        sample = files("reident_airflow").joinpath("data/adult.csv")
        with sample.open("r", encoding="utf-8") as fh:
            frame = pd.read_csv(fh, sep=";", dtype=str, keep_default_na=False)
        age = frame["age"].astype(int) // 10 * 10
        frame["age"] = age.astype(str) + "-" + (age + 9).astype(str)
        frame.insert(0, "mrn", [mrn(i) for i in range(1, len(frame) + 1)])
        path = Path(p["staged_path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False)
        return len(frame)

    assess = ReidentificationRiskOperator(
        task_id="assess",
        path="{{ params.staged_path }}",
        quasi_identifiers="{{ params.quasi_identifiers }}",
        max_records_at_risk=0.01,
        identifier_scan="{{ params.identifier_scan }}",
        on_failure_callback=_failure_callbacks(),
    )

    @task
    def publish(params: dict[str, Any] | None = None) -> str:
        """Publish the staged file (a copy renamed into place)."""
        p = params or {}
        target = Path(p["published_path"])
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        shutil.copyfile(p["staged_path"], partial)
        partial.replace(target)
        return str(target)

    chain(stage(), assess, publish())
