"""DAGs of the notifier's integration test (``test_breach_notifier.py``).

The test copies this file into the dags folder of a throw-away ``AIRFLOW_HOME`` and runs it as
a script: each DAG goes through ``dag.test()`` (Airflow 3 needs the DAG in a bundle, hence the
copy) and the run's states are printed as one ``RESULT {json}`` line. Connections come from
``AIRFLOW_CONN_*`` variables set by the test; the alerts go to its local HTTP / SMTP servers.

* ``reident_notifier_breach``: a gate assesses a table with the real engine, pushes the report
  to XCom and raises :class:`ReidentificationBreach` (``retries=2``: a breach must not retry).
  Its ``on_failure_callback`` sends webhook + e-mail; the DAG's own ``on_failure_callback``
  sends a webhook built from the XCom report (the DAG-level context has no exception).
* ``reident_notifier_infra``: the staging database is down (``ConnectionError``).

Record values (:data:`SECRETS`) are planted where a careless alert would pick them up: in the
data, in the exception's message, in a non-aggregate key of the report and of a breach.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pandas as pd
from airflow.sdk import DAG

from reident_airflow._compat import BaseOperator
from reident_airflow.engine.assessment import Thresholds, assess
from reident_airflow.notifiers import ReidentBreachNotifier
from reident_airflow.outcomes import REPORT_XCOM_KEY, ReidentificationBreach
from reident_airflow.sources.frames import class_table_from_frame

WEBHOOK_CONN_ID = "reident_test_webhook"
DAG_WEBHOOK_CONN_ID = "reident_test_webhook_dag"
SMTP_CONN_ID = "reident_test_smtp"
RECIPIENTS = ["privacy-office@example.org", "dpo@example.org"]
SENDER = "airflow@example.org"
QIS = ["zip", "birth_date", "sex"]
THRESHOLDS = {"max_highest_risk": 0.2, "max_average_risk": 0.1, "min_k": 2}

#: Record values and secrets that must never appear in an alert.
SECRETS = (
    "Alice Sensitive-Smith",
    "HIV-POSITIVE-7731",
    "99501-0042",
    "1961-02-03",
    "hunter2-staging-password",
)


def records() -> pd.DataFrame:
    rows = [
        (SECRETS[0], SECRETS[2], SECRETS[3], "F", SECRETS[1]),
        ("Bob Jones", "99502-0001", "1970-01-01", "M", "flu"),
        ("Carol King", "10001-0001", "1980-05-05", "F", "asthma"),
        ("Dan Brown", "10001-0001", "1980-05-05", "F", "flu"),
        ("Eve Adams", "60601-7777", "1990-09-09", "F", "none"),
        ("Fay Wu", "02139-0000", "2001-01-01", "F", "none"),
    ]
    return pd.DataFrame(rows, columns=["name", "zip", "birth_date", "sex", "diagnosis"])


class GateOperator(BaseOperator):
    """Stands in for the release-gate operators: assess, push the report, raise the breach."""

    def execute(self, context: Any) -> None:
        result = assess(class_table_from_frame(records(), QIS), thresholds=Thresholds(**THRESHOLDS))
        report = result.to_dict()
        # A careless producer's non-aggregate additions: the notifier must not forward them.
        report["debug_sample"] = records().head(2).to_dict(orient="records")
        report["riskiest_record"] = {"name": SECRETS[0], "diagnosis": SECRETS[1]}
        breaches = [dict(b, example_record=SECRETS[0]) for b in report["breaches"]]
        context["ti"].xcom_push(key=REPORT_XCOM_KEY, value=report)
        raise ReidentificationBreach(
            f"release gate breached; riskiest record {SECRETS[0]} ({SECRETS[1]})",
            breaches=breaches,
            report=report,
            check="reidentification_risk",
            quasi_identifiers=QIS,
            k=result.k,
        )


class BrokenStagingOperator(BaseOperator):
    """The staging database is unreachable: not a breach."""

    def execute(self, context: Any) -> None:
        raise ConnectionError(f"cannot reach staging (password={SECRETS[4]}, row {SECRETS[0]})")


def task_notifier() -> ReidentBreachNotifier:
    return ReidentBreachNotifier(
        webhook_conn_id=WEBHOOK_CONN_ID,
        smtp_conn_id=SMTP_CONN_ID,
        to=RECIPIENTS,
        from_email=SENDER,
        timeout=5,
    )


START = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)

with DAG(
    "reident_notifier_breach",
    schedule=None,
    start_date=START,
    catchup=False,
    on_failure_callback=ReidentBreachNotifier(webhook_conn_id=DAG_WEBHOOK_CONN_ID, timeout=5),
) as breach_dag:
    GateOperator(task_id="assess", retries=2, on_failure_callback=task_notifier())

with DAG("reident_notifier_infra", schedule=None, start_date=START, catchup=False) as infra_dag:
    BrokenStagingOperator(task_id="stage", retries=0, on_failure_callback=task_notifier())


def main() -> None:
    result: dict[str, Any] = {}
    for dag in (breach_dag, infra_dag):
        run = dag.test()
        result[dag.dag_id] = {
            "state": str(run.state),
            "tis": {ti.task_id: [str(ti.state), ti.try_number] for ti in run.get_task_instances()},
        }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
