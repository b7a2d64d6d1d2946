"""The identifier scan in OpenLineage (issue 27): one assertion on the input dataset for the
scan's count of failing (or, under "warn", flagged) columns against 0, one per flagged column
on that column; none without a scan; names, counts and verdicts only."""

from __future__ import annotations

from typing import Any

from reident_airflow.operators import ReidentificationRiskOperator
from reident_airflow.operators.lineage import report_assertions
from tests.report.documents import SMALL_BREACH
from tests.report.scan_documents import (
    FAILING,
    FLAGGED,
    PLANTED,
    assessment_with_scan,
)


def _scan_rows(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (a.assertion, a.column, a.expected, a.actual, a.success, a.severity)
        for a in report_assertions(report)
        if a.assertion.startswith("identifier_scan")
    ]


def test_no_scan_no_assertion() -> None:
    assert _scan_rows(SMALL_BREACH) == []


def test_a_failing_scan_is_asserted_on_the_table_and_each_flagged_column() -> None:
    rows = _scan_rows(assessment_with_scan("fail"))
    # make_tables.py: 4 failing columns, and note a possible identifier (severity warn)
    assert rows[0] == ("identifier_scan.failing_columns", None, "0", "4", False, None)
    assert [r[1] for r in rows[1:]] == FLAGGED
    verdicts = {r[1]: (r[3], r[5]) for r in rows[1:]}
    assert verdicts["mrn"] == ("identifier", None)
    assert verdicts["age"] == ("quasi-identifier not declared", None)
    assert verdicts["note"] == ("possible identifier", "warn")
    assert all(r[0] == "identifier_scan" and r[2] == "clear" and not r[4] for r in rows[1:])
    assert {r[1] for r in rows[1:] if r[5] is None} == set(FAILING)


def test_under_warn_every_scan_assertion_is_a_warning() -> None:
    rows = _scan_rows(assessment_with_scan("warn"))
    assert rows[0] == ("identifier_scan.flagged_columns", None, "0", "5", False, "warn")
    assert [r[1] for r in rows[1:]] == FLAGGED
    assert {r[5] for r in rows} == {"warn"}


def test_the_assertions_reach_the_input_dataset() -> None:
    op = ReidentificationRiskOperator(
        task_id="t", path=str(PLANTED), quasi_identifiers="sex,ethnicity", min_k=1
    )
    op.last_report = assessment_with_scan("fail")
    lineage = op.get_openlineage_facets_on_complete(None)
    assert lineage is not None
    (dataset,) = lineage.inputs
    facet = dataset.inputFacets["dataQualityAssertions"]
    scan = [a for a in facet.assertions if a.assertion.startswith("identifier_scan")]
    assert [a.column for a in scan] == [None, *FLAGGED]
    assert {a.severity for a in scan} == {"error", "warn"}  # on_breach="fail": errors
