"""An existing nightly export, with the re-identification check added as one task.

extract -> transform -> **reident_check** -> load. The export writes a Parquet file; the check
reads it (files and object-storage paths work the same way) and fails the DAG before ``load``
ships a file whose records are too easy to single out. Only ``reident_check`` is new: the rest
stands for the pipeline a team already has.
"""

from __future__ import annotations

import datetime
import os
import shutil
from importlib.resources import files
from pathlib import Path

import pendulum

from reident_airflow._compat import AIRFLOW_V3
from reident_airflow.operators.risk import ReidentificationRiskOperator

if AIRFLOW_V3:
    from airflow.sdk import DAG, task
else:  # pragma: no cover
    from airflow import DAG
    from airflow.decorators import task

WORK_DIR = Path(os.environ.get("REIDENT_EXPORT_DIR", "/tmp/reident-export"))

with DAG(
    dag_id="existing_etl",
    description="Nightly export with a re-identification risk check before load",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one run publishes the target at a time
    tags=["reident", "etl"],
    default_args={"retries": 2, "retry_delay": datetime.timedelta(seconds=5)},
    params={"min_k": 5, "quasi_identifiers": "sex,age,race"},
) as dag:

    @task
    def extract() -> str:
        import pandas as pd

        WORK_DIR.mkdir(parents=True, exist_ok=True)
        sample = files("reident_airflow").joinpath("data/adult.csv")
        with sample.open("r", encoding="utf-8") as fh:
            frame = pd.read_csv(fh, sep=";", dtype=str, keep_default_na=False)
        out = WORK_DIR / "extract.parquet"
        frame.to_parquet(out, index=False)
        return str(out)

    @task
    def transform(path: str) -> str:
        import pandas as pd

        frame = pd.read_parquet(path)
        # the export's own coarsening: four age bands, the oldest top-coded
        bands = pd.cut(
            frame["age"].astype(int), [0, 29, 44, 59, 200], labels=["<30", "30-44", "45-59", "60+"]
        )
        frame["age"] = bands.astype(str)
        out = WORK_DIR / "export.parquet"
        frame.to_parquet(out, index=False)
        return str(out)

    exported = transform(extract())

    reident_check = ReidentificationRiskOperator(
        task_id="reident_check",
        path="{{ ti.xcom_pull(task_ids='transform') }}",
        quasi_identifiers="{{ params.quasi_identifiers }}",
        min_k="{{ params.min_k }}",
    )

    @task
    def load(path: str) -> str:
        target = WORK_DIR / "outbox" / "export.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".parquet.tmp")
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
        return str(target)

    exported >> reident_check >> load(exported)
