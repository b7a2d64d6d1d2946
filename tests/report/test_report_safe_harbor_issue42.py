"""Issue 42 item 2: under Safe Harbor the scan says, for each of the 18 identifier categories
of 45 CFR 164.514(b)(2)(i)(A)-(R), whether it checked it, partly checked it or did not check
it -- in its JSON, in the report's scan section and in the text summary -- and never calls a
category "passed" that it did not look at.

The reference is the regulation's list (paragraphs A to R) and what the scan cannot see by its
construction: it reads column names and values as text, so full-face photographs (Q) and
biometric identifiers (P) are not checked; medical record numbers (H) have no common form, so
only names and uniqueness can show them (partly checked); e-mail addresses (F) are matched and
verified in the values (checked)."""

from __future__ import annotations

import copy
from pathlib import Path

from reident_airflow.report import render_report
from tests._schemas import assert_valid, schema_errors
from tests.cli._cli import run
from tests.report.scan_documents import PLANTED, assessment_with_scan, planted_scan
from tests.report.test_report import check_page

PARAGRAPHS = list("ABCDEFGHIJKLMNOPQR")  # 45 CFR 164.514(b)(2)(i)(A)-(R): 18 categories


def _section(html: str) -> str:
    start = html.index('id="assessment-identifier-scan"')
    return html[start : html.index("</section>", start)]


def _category_rows(section: str) -> dict[str, str]:
    """The rows of the categories' table (the section's last table), by paragraph."""
    table = section[section.rindex("<table>") :]
    rows = table.split("<tr")[2:]  # the header row first
    return {row.split('data-label="§">(', 1)[1][0]: row for row in rows}


def test_the_scan_json_lists_every_category_with_its_status() -> None:
    scan = planted_scan("fail")
    categories = scan["safe_harbor_categories"]
    assert [c["paragraph"] for c in categories] == PARAGRAPHS
    status = {c["paragraph"]: c["status"] for c in categories}
    assert status["P"] == status["Q"] == "not checked"
    assert status["H"] == "partly checked"
    assert status["F"] == "checked"
    assert {c["status"] for c in categories} <= {"checked", "partly checked", "not checked"}
    for c in categories:  # what checked it is said, and nothing for an unchecked one
        assert bool(c["checked_by"]) is (c["status"] != "not checked"), c


def test_the_schema_holds_the_categories_and_refuses_passed(tmp_path: Path) -> None:
    from tests.schemas.test_json_schemas import ASSESSMENTS, written

    document = written(tmp_path, "assess", *ASSESSMENTS["region_and_preset"](tmp_path))
    document["identifier_scan"] = planted_scan("warn")
    assert_valid(document)
    document["identifier_scan"]["safe_harbor_categories"][16]["status"] = "passed"
    assert any("passed" in e for e in schema_errors(document))


def test_without_safe_harbor_no_categories() -> None:
    from reident_airflow.engine.identifiers import ScanOptions, scan_columns
    from reident_airflow.sources.files import FileSource

    with FileSource(str(PLANTED)) as source:
        scan = scan_columns(source, ScanOptions(policy="warn")).to_dict()
    assert scan["safe_harbor_categories"] is None


def test_the_report_says_what_was_checked_and_never_passed() -> None:
    html = render_report(assessment_with_scan("warn"))
    check_page(html)
    section = _section(html)
    assert "<dt>HIPAA Safe Harbor checks</dt><dd>yes: " in section
    rows = _category_rows(section)
    assert list(rows) == PARAGRAPHS
    assert "not checked" in rows["Q"] and "photographs" in rows["Q"]
    assert "not checked" in rows["P"] and "biometric" in rows["P"]
    assert "partly checked" in rows["H"] and "name rules" in rows["H"]
    assert "passed" not in section.lower()


def test_a_scan_without_the_categories_renders_as_before() -> None:
    # an older result (no safe_harbor_categories): the report claims nothing about them
    document = copy.deepcopy(assessment_with_scan("warn"))
    del document["identifier_scan"]["safe_harbor_categories"]
    section = _section(render_report(document))
    assert "<dt>HIPAA Safe Harbor checks</dt><dd>yes</dd>" in section
    assert "45 CFR 164.514" not in section


def test_the_text_summary_names_the_categories_not_fully_checked() -> None:
    code, out, _ = run("scan", str(PLANTED), "--qi", "sex,ethnicity", "--safe-harbor", "--quiet")
    assert code == 0
    assert "Safe Harbor identifier categories:" in out
    assert "  not checked: (Q) full-face photographs" in out
    assert "  not checked: (P) biometric identifiers" in out
    assert "  partly checked: (H) medical record numbers" in out
    code, out, _ = run("scan", str(PLANTED), "--qi", "sex,ethnicity", "--quiet")
    assert "Safe Harbor" not in out


def test_assess_says_it_too() -> None:
    argv = ("assess", str(PLANTED), "--qi", "sex,ethnicity", "--scan", "warn", "--no-ranking")
    code, _, err = run(*argv, "--safe-harbor", "--quiet")
    assert code == 0
    assert "reident: scan: Safe Harbor identifier categories:" in err
    assert "reident: scan:   not checked: (Q) full-face photographs" in err
    _, _, err = run(*argv, "--quiet")
    assert "Safe Harbor" not in err
