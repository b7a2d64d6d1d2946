"""No value of the table in any output of the identifier scan (issue 27's acceptance).

Every output is built from ``tests/data/identifiers/planted.csv`` -- the HTML report, the
alert's webhook payload and e-mail, the OpenLineage input dataset, the GX validation results
on pandas and SQLite -- under both policies, and searched for each of the table's values of
four characters or more (identifiers, e-mail addresses and a card number in notes, phone
numbers, ZIP codes...). Column names may appear; values may not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from openlineage.client.serde import Serde

from reident_airflow.gx import ExpectTableToHoldNoDirectIdentifiers
from reident_airflow.notifiers import breach_email, breach_payload
from reident_airflow.operators import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentificationBreach
from reident_airflow.report import render_report
from tests.gx.conftest import sql_batch
from tests.gx.test_identifier_scan import PLANTED_KWARGS, read_table, sqlite_tables
from tests.notifiers.test_breach_notifier import context_of
from tests.report.scan_documents import PLANTED, assessment_with_scan, planted_values

__all__ = ["sqlite_tables"]


def _outputs(report: dict[str, Any]) -> dict[str, str]:
    """Each output of an assessment holding the scan, as text."""
    exc = ReidentificationBreach(
        "gate breached",
        breaches=report["breaches"],
        report=report,
        check="reidentification_risk",
        quasi_identifiers=report["quasi_identifiers"],
        k=report["k"],
    )
    payload = breach_payload(context_of(exc))
    op = ReidentificationRiskOperator(
        task_id="t", path=str(PLANTED), quasi_identifiers="sex,ethnicity", min_k=1
    )
    op.last_report = report
    lineage = op.get_openlineage_facets_on_complete(None)
    assert lineage is not None
    return {
        "report": render_report(report),
        "payload": json.dumps(payload),
        "email": "\n".join(breach_email(payload)),
        "lineage": Serde.to_json(lineage.inputs[0]),
    }


@pytest.mark.parametrize("policy", ["fail", "warn"])
def test_no_output_of_the_scan_holds_a_value(policy: str) -> None:
    values = planted_values()
    assert "MRN-417169" in values and "202.555.0144" in values  # the search is not empty
    for name, text in _outputs(assessment_with_scan(policy)).items():
        assert "mrn" in text, name  # the scan is in this output
        assert [v for v in values if v in text] == [], name


def test_no_gx_validation_result_holds_a_value(
    pandas_batch: Callable[..., Any], context: Any, sqlite_tables: str
) -> None:
    values = planted_values()
    for batch in (
        pandas_batch(read_table("planted.csv")),
        sql_batch(context, sqlite_tables, "planted"),
    ):
        result = batch.validate(ExpectTableToHoldNoDirectIdentifiers(**PLANTED_KWARGS))
        text = json.dumps(result.to_json_dict())
        assert "mrn" in text
        assert [v for v in values if v in text] == []
