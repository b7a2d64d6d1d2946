"""The identifier scan in the alert (issue 27): the webhook payload's ``identifier_scan``
field and a sentence in the summary and the e-mail, only when the report holds a scan; the
column names, never the evidence nor a value."""

from __future__ import annotations

from typing import Any

from reident_airflow.notifiers import breach_email, breach_payload
from reident_airflow.outcomes import ReidentificationBreach
from tests.notifiers.test_breach_notifier import assessment_report, context_of
from tests.report.scan_documents import (
    FAILING,
    FLAGGED,
    assessment_with_scan,
    planted_scan,
)


def _breach(report: dict[str, Any]) -> ReidentificationBreach:
    return ReidentificationBreach(
        "gate breached",
        breaches=report["breaches"],
        report=report,
        check="reidentification_risk",
        quasi_identifiers=report["quasi_identifiers"],
        k=report["k"],
    )


def test_a_report_without_a_scan_gives_no_scan_field() -> None:
    payload = breach_payload(context_of(None), report=assessment_report())
    assert "identifier_scan" not in payload
    assert "identifier scan" not in payload["text"]
    _, text, html = breach_email(payload)
    assert "dentifier scan" not in text and "dentifier scan" not in html


def test_a_failing_scan_is_named_in_the_payload_and_the_email() -> None:
    report = assessment_with_scan("fail")
    for payload in (
        breach_payload(context_of(None), report=report),
        breach_payload(context_of(_breach(report))),
    ):
        assert payload["identifier_scan"] == {
            "policy": "fail",
            "failing": FAILING,
            "flagged": FLAGGED,
        }
        assert payload["breaches"] == [
            {"metric": "identifier_scan.failing_columns", "observed": 4, "limit": 0}
        ]
        # the key comes after the others, before the summary
        assert list(payload)[-2:] == ["identifier_scan", "text"]
        sentence = (
            "identifier scan (policy fail): 5 column(s) flagged (mrn, age, zip, phone, note), "
            "4 failing (mrn, age, zip, phone)"
        )
        assert sentence in payload["text"]
        _, text, html = breach_email(payload)
        assert "Identifier scan (policy fail): 5 column(s) flagged" in text
        assert "<h3>Identifier scan</h3>" in html
        assert "4 failing (mrn, age, zip, phone)." in html


def test_column_names_are_bounded_and_escaped() -> None:
    scan = planted_scan("fail")
    scan["failing"] = ["<b>mrn</b>", 7, "x" * 500]
    scan["flagged"] = "not a list"
    payload = breach_payload(
        context_of(None), report=assessment_with_scan("fail", identifier_scan=scan)
    )
    assert payload["identifier_scan"] == {
        "policy": "fail",
        "failing": ["<b>mrn</b>", "x" * 200],
        "flagged": [],
    }
    _, _, html = breach_email(payload)
    assert "<b>mrn</b>" not in html and "&lt;b&gt;mrn&lt;/b&gt;" in html
