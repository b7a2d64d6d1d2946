"""Scheduled release gate across runs: the difference from the last release (issue 28).

Every day, the release holds every patient admitted so far (made-up records: never real
data), with their sex, age band, ZIP3 and diagnosis, and replaces yesterday's. Each release
passes ``min_k=5`` on its own: three classes of 40 records. On 2 January one patient is
admitted, into the class (F, 40-49, 100): today's table holds 41 records there, still far
above 5. But anyone who kept yesterday's file can subtract it from today's: the new row is
the only one of its class that was not there before, and a neighbour who knows the patient
was admitted finds the diagnosis. ``assess`` compares today's release with the one it
replaces (``previous_release``: the published file): one arrival alone in its class breaches
``min_arrival_k=2``, the task fails without retries and ``publish`` does not run; the log,
the error and the alert say how many arrivals to hold back.

Shape::

    stage >> assess >> publish

- ``stage`` writes the patients admitted up to the run's logical date (``ds``) to
  ``staged_path`` (the admission date is not released);
- ``assess`` gates the staged file: ``min_k`` on the table, ``min_arrival_k`` on its
  difference from ``published_path``. On the first run nothing is published yet: there is
  nothing to compare (logged; ``since_last_release`` is ``null``), the table alone is gated;
- ``publish`` copies the staged file to ``published_path`` (renamed into place).

Run it twice: ``airflow dags test release_difference_gate 2026-01-01`` publishes the first
release, ``airflow dags test release_difference_gate 2026-01-02`` stops the second. Both files
live in a folder of their own under the system's temporary directory unless the run's
configuration names them (``staged_path``, ``published_path``); ``min_k`` and
``min_arrival_k`` are parameters too. If the connection ``reident_alerts`` (an HTTP
webhook) exists, the breach is posted to it.
"""

from __future__ import annotations

import datetime
import os
import shutil
import tempfile
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

_FOLDER = Path(tempfile.gettempdir()) / "reident_release_difference_gate"
#: The released columns (the admission date only decides which release a patient is in).
COLUMNS = ("sex", "age_band", "zip3", "diagnosis")
_CLASSES = (("F", "40-49", "100"), ("M", "50-59", "200"), ("F", "60-69", "300"))
_DIAGNOSES = ("asthma", "diabetes", "flu", "fracture", "migraine")


def patients() -> list[tuple[datetime.date, tuple[str, ...]]]:
    """The made-up patients, with their admission dates: 40 in each of three classes,
    admitted in December 2025, and one more (F, 40-49, 100) admitted on 2 January 2026."""
    out = []
    for c, key in enumerate(_CLASSES):
        for i in range(40):
            admitted = datetime.date(2025, 12, 1 + (i + c) % 28)
            out.append((admitted, (*key, _DIAGNOSES[(i + c) % len(_DIAGNOSES)])))
    out.append((datetime.date(2026, 1, 2), (*_CLASSES[0], "migraine")))
    return out


def _failure_callbacks() -> list[Any]:
    webhook = os.environ.get("REIDENT_ALERT_WEBHOOK_CONN", "reident_alerts")
    if not os.environ.get(f"AIRFLOW_CONN_{webhook.upper()}"):
        return []
    from reident_airflow.notifiers import ReidentBreachNotifier

    return [ReidentBreachNotifier(webhook_conn_id=webhook)]


with DAG(
    dag_id="release_difference_gate",
    description="A daily release that passes min_k alone but gives away one new patient",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # the release compared is the one the last run published
    tags=["reident", "release", "differencing"],
    default_args={"retries": 2},
    params={
        "staged_path": str(_FOLDER / "staged.csv"),
        "published_path": str(_FOLDER / "published.csv"),
        "min_k": 5,
        "min_arrival_k": 2,
    },
) as dag:

    @task
    def stage(ds: str | None = None, params: dict[str, Any] | None = None) -> int:
        """Write the patients admitted up to the logical date, without the admission date."""
        import pandas as pd

        p = params or {}
        day = datetime.date.fromisoformat(str(ds))
        rows = [row for admitted, row in patients() if admitted <= day]
        path = Path(p["staged_path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(path, index=False)
        return len(rows)

    assess = ReidentificationRiskOperator(
        task_id="assess",
        path="{{ params.staged_path }}",
        quasi_identifiers="sex,age_band,zip3",
        min_k="{{ params.min_k }}",
        min_arrival_k="{{ params.min_arrival_k }}",
        previous_release="{{ params.published_path }}",
        identifier_scan="off",
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
