"""The report's "Identifier scan" section (issue 27): present only when the assessment holds
a scan, every flagged column with its verdict and evidence, the clear ones by name, names
escaped, no value of the table."""

from __future__ import annotations

from typing import Any

from reident_airflow.report import render_report
from reident_airflow.report.view import AssessmentView
from tests.report.documents import SMALL_BREACH
from tests.report.scan_documents import (
    FAILING,
    FLAGGED,
    assessment_with_scan,
    planted_scan,
)
from tests.report.test_report import check_page


def _section(html: str) -> str:
    start = html.index('id="assessment-identifier-scan"')
    return html[start : html.index("</section>", start)]


def _rows(section: str) -> dict[str, str]:
    """Each row of the flagged columns' table, by its column's name."""
    body = section[section.index("<tbody>") : section.index("</tbody>")]
    rows = [r for r in body.split("<tr")[1:]]
    out = {}
    for row in rows:
        name = row.split('data-label="column">', 1)[1].split("</td>", 1)[0]
        out[name] = row
    return out


def test_no_scan_no_section() -> None:
    html = render_report(SMALL_BREACH)
    assert "Identifier scan" not in html and "identifier-scan" not in html
    assert AssessmentView.from_dict(SMALL_BREACH).identifier_scan is None


def test_the_section_lists_every_flagged_column_with_its_verdict_and_evidence() -> None:
    html = render_report(assessment_with_scan("fail"))
    check_page(html)
    section = _section(html)
    assert '<a href="#assessment-identifier-scan">Identifier scan</a>' in html  # navigation
    assert "fail: an identifier or an undeclared quasi-identifier fails the release" in section
    # issue 42: what the scan looked at of the Safe Harbor categories follows the "yes"
    assert "<dt>HIPAA Safe Harbor checks</dt><dd>yes: " in section
    # make_tables.py: 8 columns, 5 flagged of which 4 fail; 3 clear, marked as the user said
    assert "5 of 8 columns flagged, 4 with a failing verdict" in section
    assert (
        "<dd>3: ref (allowed), sex (declared quasi-identifier), "
        "ethnicity (declared quasi-identifier)</dd>"
    ) in section
    rows = _rows(section)
    assert list(rows) == FLAGGED
    for name in FAILING:  # a failing verdict under "fail": a breach row
        assert rows[name].startswith(' class="breach"'), name
    assert rows["note"].startswith(' class="warned"')
    assert ">identifier<" in rows["mrn"] and "name: record number" in rows["mrn"]
    # mrn: 200 values, all distinct and unique
    assert '"values">200<' in rows["mrn"] and ">100 % unique<" in rows["mrn"]
    # phone: every one of the 200 values a verified phone number
    assert "phone numbers: 200 (100 %)" in rows["phone"]
    # note: 190 values, 4 e-mail addresses (2.11 %) and one card number (0.526 %)
    assert ">possible identifier<" in rows["note"]
    assert "e-mail addresses: 4 (2.11 %)" in rows["note"]
    assert "card numbers: 1 (0.526 %)" in rows["note"]
    assert ">quasi-identifier not declared<" in rows["age"]
    # the breach the contract adds is a row of the thresholds table
    gate = html[html.index('id="gate"') : html.index('id="input"')]
    assert "Identifier scan: failing columns" in gate and ">4<" in gate
    assert "1 of 2 thresholds breached" in html


def test_under_warn_the_scan_is_a_warning() -> None:
    html = render_report(assessment_with_scan("warn"))
    check_page(html)
    section = _section(html)
    assert "warn: flagged columns are reported" in section
    rows = _rows(section)
    assert all(row.startswith(' class="warned"') for row in rows.values())
    assert "WARNING" in html and "Identifier scan: flagged columns — warning level" in html
    assert "all 1 threshold met; 1 of 1 warning level crossed" in html


def test_a_clear_scan_says_so() -> None:
    scan = planted_scan("warn")
    for column in scan["columns"]:
        column.update(verdict="clear", reasons=[])
    scan.update(flagged=[], failing=[])
    section = _section(render_report(assessment_with_scan("warn", identifier_scan=scan)))
    # no table of flagged columns (issue 42: the Safe Harbor categories' table stays)
    assert "all 8 columns clear" in section and "<th>verdict</th>" not in section


def test_hostile_column_names_are_escaped() -> None:
    evil = '<script>alert("x")</script>'
    scan = planted_scan("fail")
    scan["columns"][1]["column"] = evil  # mrn, flagged
    scan["columns"][2]["column"] = "<b>sex</b>"  # clear
    scan["columns"][1]["reasons"] = ["<i>why</i>"]
    scan["options"]["allow_columns"] = ["<weird>"]
    html = render_report(assessment_with_scan("fail", identifier_scan=scan))
    check_page(html)
    assert "<script" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in _section(html)
    assert "&lt;weird&gt;" in _section(html)


def test_a_malformed_scan_reads_as_far_as_it_goes() -> None:
    scan: dict[str, Any] = {
        "options": "not an object",
        "columns": [{"column": 3}, "x", {"column": "a", "verdict": 7, "content": [5]}],
    }
    view = AssessmentView.from_dict(assessment_with_scan("warn", identifier_scan=scan))
    assert view.identifier_scan is not None
    assert [c.column for c in view.identifier_scan.columns] == ["a"]
    assert view.identifier_scan.columns[0].verdict is None
    check_page(render_report(assessment_with_scan("warn", identifier_scan=scan)))
