"""The DAG of ``test_lineage.py``, run by ``dag.test()`` in a subprocess whose Airflow home
has the OpenLineage file transport configured (see that test). Writes ``result.json`` into
``REIDENT_LINEAGE_OUT``: the task states and each task's report link as the run stored it
(a file, not stdout: the OpenLineage client's thread may log into a line printed there)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
from pathlib import Path
from typing import Any

from airflow.sdk import DAG

from reident_airflow.operators import DataflyOperator, ReidentificationRiskOperator

CSV = os.environ["REIDENT_LINEAGE_CSV"]
OUT = os.environ["REIDENT_LINEAGE_OUT"]

with DAG(
    "reident_lineage",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    params={"staged": "staged"},
) as dag:
    ReidentificationRiskOperator(
        task_id="passes",
        identifier_scan="off",  # the scan's assertions: test_lineage_scan.py
        path=CSV,
        sep=";",
        quasi_identifiers="age",
        min_k=1,
        max_average_risk=0.6,
        report_path=f"{OUT}/passes.html",
        report_base_url="https://reports.example.org/runs/",
    )
    ReidentificationRiskOperator(
        task_id="breaches",
        identifier_scan="off",  # the scan's assertions: test_lineage_scan.py
        conn_id="lineage_db",
        sql="release.sql",  # a template file next to this DAG
        quasi_identifiers="age,gender,zipcode",
        min_k=2,
        report_path=f"file://{OUT}/breaches.html",
    )
    ReidentificationRiskOperator(
        task_id="partition",
        identifier_scan="off",  # the scan's assertions: test_lineage_scan.py
        conn_id="lineage_db",
        table="staged",
        where="gender = 'male'",
        quasi_identifiers="age",
        min_k=1,
    )
    DataflyOperator(
        task_id="datafly",
        path=CSV,
        sep=";",
        quasi_identifiers="age",
        k=2,
        hierarchies={"age": {"type": "interval", "widths": [10], "top": "*"}},
        target_path=f"{OUT}/release.csv",
    )


def _xcoms(ti: Any) -> dict[str, Any]:
    """The XComs the task instance stored, by key (the report's ``passed`` only)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.execute(
            XComModel.get_many(
                run_id=ti.run_id, dag_ids=ti.dag_id, task_ids=ti.task_id
            ).with_only_columns(XComModel.key, XComModel.value)
        ).all()
    out: dict[str, Any] = {}
    for key, value in rows:
        if isinstance(value, str):
            with contextlib.suppress(ValueError):  # else stored as plain text
                value = json.loads(value)
        out[key] = value.get("passed") if isinstance(value, dict) else value
    return out


def main() -> None:
    from airflow.serialization.definitions.operatorlink import XComOperatorLink

    from reident_airflow.operators.report_link import ReidentReportLink

    run = dag.test()
    link = ReidentReportLink()
    # what the UI renders: the serialized operator's link reads the XCom the task stored
    shown = XComOperatorLink(name=link.name, xcom_key=link.xcom_key)
    result = {
        ti.task_id: {
            "state": str(ti.state),
            "link": shown.get_link(None, ti_key=ti.key),
            "xcom": _xcoms(ti),
        }
        for ti in run.get_task_instances()
    }
    Path(OUT, "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
