"""Spark release gate: stage a Parquet release candidate -> assess it on Spark -> publish.

The gate runs inside ``@task.pyspark`` (Airflow's apache-spark provider): the task gets a
Spark session from the connection ``spark_default`` -- a classic session whose master is the
connection's host (``local[2]``, ``yarn``, ``spark://HOST:7077``; its extras are Spark
configuration) or, with a ``spark_connect`` connection, a Spark Connect client (Databricks,
EMR, a cluster's Connect server). Spark groups the candidate's records; only aggregates reach
the worker (:func:`~reident_airflow.sources.spark.assess_spark_frame`), so the assessment is
the one ``reident assess`` computes from the same records.

Shape::

    stage >> gate

- ``stage`` is the embedded default's stand-in for your own load step: it writes the bundled
  sample (UCI Adult, :mod:`reident_airflow.examples`) as a Parquet file at
  ``candidate_path``, with ages in ``age_band``-year bands (0: raw ages) and the records of
  classes smaller than ``suppress_below_k`` dropped (0: none).
- ``gate`` assesses the candidate on ``quasi_identifiers`` with the limits ``min_k`` and
  ``max_records_at_risk``, pushes the assessment (aggregates only) to XCom as the operators
  do (``return_value``), and then:

  - on a breach, fails without retries (:class:`~reident_airflow.outcomes.
    ReidentificationBreach`, an ``AirflowFailException``; its message carries counts and
    limits, never a value): nothing is published;
  - on a pass, publishes the candidate at ``published_path`` atomically: Spark writes it to
    a sibling folder, which is then renamed into place through Hadoop's file system (the old
    release renamed aside first and deleted last), so readers see the old release or the new
    one, never a half-written one. The rename needs a classic session; over Spark Connect,
    publish a table instead (``write_release_table`` in
    :mod:`reident_airflow.sources.spark_release_datafly` shows the swap).

Parameters (``airflow dags test spark_release_gate -c '{"age_band": 0}'``): ``candidate_path``,
``published_path``, ``quasi_identifiers``, ``age_band`` (default 10), ``suppress_below_k``
(default 5), ``min_k`` (default 5), ``max_records_at_risk`` (default 0.05). The defaults pass;
``{"age_band": 0, "suppress_below_k": 0}`` breaches k.

On the worker: ``pip install 'reident-airflow[spark]'`` (pyspark, pyspark-client, the
apache-spark provider) and Java 17 for a classic session; a Spark Connect connection needs no
Java.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from typing import Any

import pendulum

from reident_airflow._compat import AIRFLOW_V3

if AIRFLOW_V3:
    from airflow.sdk import DAG, task
else:  # pragma: no cover
    from airflow import DAG
    from airflow.decorators import task  # type: ignore[attr-defined,no-redef]

SPARK_CONN = "spark_default"
_WORK = os.path.join(tempfile.gettempdir(), "reident-spark-release-gate")


def _breach_message(result: Any, where: str) -> str:
    """Counts and limits only: the QIs, k, the records and each breach."""
    parts = "; ".join(b.describe() for b in result.breaches)
    return (
        f"re-identification risk gate breached for {where!r} (quasi-identifiers: "
        f"{', '.join(result.quasi_identifiers)}; k = {result.k}; {result.records} records): "
        f"{parts}"
    )


with DAG(
    dag_id="spark_release_gate",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one run publishes the target at a time
    tags=["reident", "example", "spark"],
    default_args={"retries": 2, "retry_delay": datetime.timedelta(seconds=30)},
    params={
        "candidate_path": os.path.join(_WORK, "candidate.parquet"),
        "published_path": os.path.join(_WORK, "published.parquet"),
        "quasi_identifiers": "sex,age,race",
        "age_band": 10,
        "suppress_below_k": 5,
        "min_k": 5,
        "max_records_at_risk": 0.05,
    },
) as dag:

    @task
    def stage(params: dict[str, Any] | None = None) -> int:
        """Write the (coarsened) sample as the Parquet release candidate; return its rows."""
        from reident_airflow.examples import drop_small_classes, load_sample

        p = params or {}
        frame = load_sample(age_band=int(p["age_band"]) or None)
        if int(p["suppress_below_k"]):
            qis = str(p["quasi_identifiers"]).split(",")
            frame = drop_small_classes(frame, qis, int(p["suppress_below_k"]))
        path = str(p["candidate_path"])
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        frame.to_parquet(path, index=False)
        return len(frame)

    @task.pyspark(conn_id=SPARK_CONN)
    def gate(
        spark: Any = None, params: dict[str, Any] | None = None, ti: Any = None
    ) -> dict[str, Any]:
        """Assess the candidate on Spark; fail on a breach, else publish it atomically."""
        from reident_airflow.engine.options import AssessmentOptions
        from reident_airflow.operators.base import act_on_breach
        from reident_airflow.outcomes import REPORT_XCOM_KEY
        from reident_airflow.sources.spark import assess_spark_frame
        from reident_airflow.sources.spark_release_datafly import write_frame_path

        p = params or {}
        candidate = str(p["candidate_path"])
        options = AssessmentOptions.from_mapping(
            {
                "quasi_identifiers": p["quasi_identifiers"],
                "min_k": p["min_k"],
                "max_records_at_risk": p["max_records_at_risk"],
            }
        )
        frame = spark.read.parquet(candidate)
        result = assess_spark_frame(frame, options)
        report = result.to_dict()
        if ti is not None:  # the report in XCom whatever the outcome, as the operators do
            ti.xcom_push(key=REPORT_XCOM_KEY, value=report)
        if not result.passed:
            act_on_breach(
                on_breach="fail",
                check="reidentification_risk",
                message=_breach_message(result, candidate),
                breaches=report["breaches"],
                report=report,
                quasi_identifiers=result.quasi_identifiers,
                k=result.k,
            )
        # written beside the target, then renamed into place (classic session)
        write_frame_path(frame, str(p["published_path"]))
        return report

    stage() >> gate()
