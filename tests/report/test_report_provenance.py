"""What a reviewer signs off from: lowest / average / highest risk, the fingerprint of the
input the assessment read, and the sign-off block.

Reference values: ARX 3.9.2's risks for Adult on ``sex, age, race`` (``tests/data/arx/
arx_C1.json``); the fingerprint's hashes are hand-checked with ``sha256sum`` in comments.
"""

from __future__ import annotations

import copy
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.engine.assessment import assess
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions, Thresholds
from reident_airflow.report import SignOff, render_release_report, render_report
from reident_airflow.report.view import AssessmentView
from reident_airflow.sources.files import class_table_from_file
from reident_airflow.sources.fingerprint import fingerprint_file
from reident_airflow.sources.sql import fingerprint_sql
from tests.conftest import load_reference, oracle_data, reference_files, require_server
from tests.report.test_report import check_page

# ------------------------------------------------------------------------------ lowest risk
ARX_C1 = load_reference(next(p for p in reference_files() if p.name == "arx_C1.json"))


def test_lowest_risk_is_arx_s(breaching_assessment: dict[str, Any]) -> None:
    """ARX C1 (Adult on sex, age, race): the largest class holds 554 records, so the lowest
    risk is 1 / 554 = 0.0018050541516245488 (ARX's value)."""
    assert ARX_C1["quasi_identifiers"] == ["sex", "age", "race"]
    view = AssessmentView.from_dict(breaching_assessment)
    assert view.prosecutor is not None
    assert view.prosecutor.lowest_risk == pytest.approx(ARX_C1["lowest_risk"], rel=1e-12)
    assert view.lowest_risk == pytest.approx(1 / 554, rel=1e-12)


def test_lowest_risk_of_an_older_result_comes_from_the_histogram(
    breaching_assessment: dict[str, Any],
) -> None:
    older = copy.deepcopy(breaching_assessment)
    del older["prosecutor"]["lowest_risk"]
    view = AssessmentView.from_dict(older)
    assert view.prosecutor is not None and view.prosecutor.lowest_risk is None
    assert view.lowest_risk == pytest.approx(ARX_C1["lowest_risk"], rel=1e-12)
    older["class_size_histogram"] = []
    assert AssessmentView.from_dict(older).lowest_risk is None


def test_report_shows_lowest_average_and_highest_risk(
    breaching_assessment: dict[str, Any],
) -> None:
    html = render_report(breaching_assessment)
    text = check_page(html)
    glance = html[html.index('id="assessment-glance"') : html.index('id="assessment-models"')]
    # 1 / 554 = 0.18050... % -> three significant digits; ARX's average 0.0175054... -> 1.75 %
    assert '<div class="v">0.181 %</div><div class="k">lowest risk</div>' in glance
    assert '<div class="v">1.75 %</div><div class="k">average risk</div>' in glance
    assert '<div class="v">100 %</div><div class="k">highest risk</div>' in glance
    models = html[html.index('id="assessment-models"') : html.index('id="assessment-distribution"')]
    assert '<td class="num" data-label="lowest risk">0.181 %</td>' in models
    assert "lowest risk" in text


# ------------------------------------------------------------------------------- sign-off
def _section(html: str, anchor: str) -> str:
    start = html.index(f'id="{anchor}"')
    return html[start : html.index("</section>", start)]


def test_a_blank_sign_off_block_to_fill_by_hand(passing_assessment: dict[str, Any]) -> None:
    html = render_report(passing_assessment)
    check_page(html)
    block = _section(html, "sign-off")
    assert "To be filled in by hand" in block
    assert block.count("☐") == 3 and "☒" not in block
    for label in ("Reviewer", "Role", "Decision", "Conditions", "Date", "Signature"):
        assert f'<span class="label">{label}</span>' in block
    assert block.count('<span class="line"></span>') == 5  # every line blank
    assert html.index('id="sign-off"') < html.index('id="about"')
    assert '<a href="#sign-off">Sign-off</a>' in html


def test_a_pre_filled_sign_off(passing_assessment: dict[str, Any]) -> None:
    sign = SignOff(
        reviewer="A. <b>Jones</b>",
        role="privacy officer",
        decision="approve with conditions",
        conditions="research enclave only",
        date=date(2026, 12, 1),
    )
    html = render_report(passing_assessment, sign_off=sign)
    block = _section(html, "sign-off")
    assert "A. &lt;b&gt;Jones&lt;/b&gt;" in block and "<b>" not in block
    assert block.count("☐") == 2 and block.count("☒") == 1
    assert "☒</span> approve with conditions" in block
    assert ">research enclave only<" in block and ">2026-12-01<" in block
    assert block.count('<span class="line"></span>') == 1  # the signature, always by hand


def test_sign_off_values_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="decision must be one of"):
        SignOff(decision="approved")
    with pytest.raises(InvalidInputError, match="conditions go with"):
        SignOff(decision="reject", conditions="none")
    with pytest.raises(InvalidInputError, match="date must be a date"):
        SignOff(date="2026-12-01")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="reviewer must be text"):
        SignOff(reviewer=7)  # type: ignore[arg-type]
    read = SignOff.from_dict({"reviewer": "A. Jones", "decision": "reject", "date": "2026-12-01"})
    assert read == SignOff(reviewer="A. Jones", decision="reject", date=date(2026, 12, 1))
    with pytest.raises(InvalidInputError, match="unknown sign-off keys: signature"):
        SignOff.from_dict({"signature": "x"})
    with pytest.raises(InvalidInputError, match="not an ISO date"):
        SignOff.from_dict({"date": "1/12/2026"})
    with pytest.raises(InvalidInputError, match="sign_off must be a SignOff"):
        render_release_report(sign_off={"reviewer": "x"})  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- fingerprint
#: ``sha256sum tests/data/adult.csv`` and ``stat -c %s``: the bundled Adult as ARX ships it.
ADULT_SHA256 = "c700df9304fbf3c4d4db5938bffc510561bd4a2dfad285a3feef9a20619391c5"
ADULT_BYTES = 2_516_935


def test_the_report_shows_a_file_fingerprint(
    breaching_assessment: dict[str, Any], adult_csv: Path
) -> None:
    result = copy.deepcopy(breaching_assessment)
    result["input"] = fingerprint_file(adult_csv, rows=30162).to_dict()
    view = AssessmentView.from_dict(result)
    assert view.fingerprint is not None and view.fingerprint.identified
    assert view.fingerprint.sha256 == ADULT_SHA256 and view.fingerprint.rows == 30162
    html = render_report(result)
    text = check_page(html)
    block = _section(html, "input")
    assert f"<code>{ADULT_SHA256}</code>" in block
    assert ">30,162<" in block and ">2,516,935 bytes<" in block
    assert f"<code>{adult_csv}</code>" in block
    assert "proves it holds the bytes assessed here" in text
    assert html.index('id="gate"') < html.index('id="input"') < html.index('id="assessment"')


def test_the_report_shows_a_database_fingerprint_without_a_password(
    passing_assessment: dict[str, Any], tmp_path: Path
) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'clinic.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE "patients 2026" (age INTEGER)')
        conn.exec_driver_sql('INSERT INTO "patients 2026" VALUES (30), (41), (52)')  # 3 rows
    found = fingerprint_sql(engine, "patients 2026")
    engine.dispose()
    result = {**passing_assessment, "input": found.to_dict()}
    block = _section(render_report(result), "input")
    assert f"<code>sqlite:///{tmp_path / 'clinic.db'} (sqlite)</code>" in block
    assert "<code>patients 2026</code>" in block and ">3<" in block
    assert "database snapshot" not in block  # SQLite has no snapshot identifier
    assert "identify the read only loosely" in block


@pytest.mark.db
def test_a_postgresql_snapshot_in_the_report(passing_assessment: dict[str, Any]) -> None:
    url = sa.make_url(require_server("postgresql")).set(password="s3cret")
    found = fingerprint_sql(url.render_as_string(hide_password=False), sql="SELECT 1 AS one")
    assert found.snapshot is not None
    html = render_report({**passing_assessment, "input": found.to_dict()})
    block = _section(html, "input")
    assert f"<code>{found.snapshot}</code>" in block and "s3cret" not in html
    assert "which committed data the database showed" in block


def test_a_result_without_fingerprint_says_so(
    breaching_assessment: dict[str, Any], datafly_result: dict[str, Any], adult_csv: Path
) -> None:
    html = render_report(breaching_assessment)
    assert "does not identify its input" in _section(html, "input")
    with_one = {**breaching_assessment, "input": fingerprint_file(adult_csv).to_dict()}
    both = render_release_report(assessment=with_one, datafly=datafly_result)
    block = _section(both, "input")
    assert "<h3>Re-identification risk</h3>" in block and "rows read" in block
    assert "not recorded" in block  # a CSV's rows are the reader's to give
    assert "No fingerprint of the input of: Datafly k-anonymization." in block
    # a malformed object reads as None fields, never a broken page
    odd = {**breaching_assessment, "input": {"kind": "file", "rows": "many", "sha256": 5}}
    view = AssessmentView.from_dict(odd)
    assert view.fingerprint is not None
    assert view.fingerprint.rows is None and view.fingerprint.sha256 is None
    check_page(render_report(odd))


def test_a_row_count_that_differs_from_the_assessment_is_flagged(
    breaching_assessment: dict[str, Any], adult_csv: Path
) -> None:
    """Adult: 30,162 records measured, none excluded (ARX C1); a fingerprint of 30,162 rows
    agrees, one of 30,000 does not."""
    assert breaching_assessment["records"] == ARX_C1["records"] == 30162
    assert breaching_assessment["excluded_records"] == 0
    same = {**breaching_assessment, "input": fingerprint_file(adult_csv, rows=30162).to_dict()}
    assert "may not describe the same data" not in render_report(same)
    other = {**breaching_assessment, "input": fingerprint_file(adult_csv, rows=30000).to_dict()}
    html = render_report(other)
    verdict = html[html.index('id="verdict"') : html.index('id="gate"')]
    assert "counted 30,000 rows but the assessment measured 30,162" in verdict


# ------------------------------------------------------------------- presets and warnings
ARX_C4 = load_reference(next(p for p in reference_files() if p.name == "arx_C4.json"))


def _warned_assessment(warn_average: float) -> dict[str, Any]:
    table = class_table_from_file(oracle_data("adult.csv"), ["sex", "race"], sep=";")
    options = AssessmentOptions(
        quasi_identifiers=("sex", "race"),
        preset="health-canada",  # max_average_risk = 0.09
        warn_thresholds=Thresholds(max_average_risk=warn_average),
        rank_attributes=False,
    )
    return assess(table, options).to_dict()


def test_a_crossed_warning_level_is_a_warning_not_a_breach() -> None:
    """Adult on sex, race (ARX C4): 10 classes of 30,162 records, average risk 10 / 30,162 =
    0.000331543; within Health Canada's 0.09, above a warning level of 0.0003."""
    assert ARX_C4["quasi_identifiers"] == ["sex", "race"]
    result = _warned_assessment(0.0003)
    assert result["preset"] == "health-canada"
    assert result["prosecutor"]["average_risk"] == pytest.approx(ARX_C4["average_risk"])
    view = AssessmentView.from_dict(result)
    assert view.preset == "health-canada" and [w.metric for w in view.warnings] == [
        "prosecutor.average_risk"
    ]
    html = render_report(result)
    text = check_page(html)
    assert '<div class="verdict warned" id="verdict"><div class="word">WARNING</div>' in html
    assert "all 1 threshold met; 1 of 1 warning level crossed" in text
    assert (
        "The thresholds are those of the preset 'health-canada' "
        "(public release of clinical information)." in text
    )
    gate = _section(html, "gate")
    assert gate.count('<tr class="warned">') == 1 and 'class="badge ok">met' in gate
    assert "Average re-identification risk (prosecutor) — warning level" in gate
    assert ">0.0332 % (0.0003315)<" in gate and ">0.03 % (0.0003)<" in gate
    assert ">9 % (0.09)<" in gate
    inputs = _section(html, "assessment-inputs")
    assert "<dd>health-canada</dd>" in inputs and "max_average_risk = 0.0003" in inputs


def test_a_warning_level_not_crossed_passes() -> None:
    """The same average risk 0.000331543 under a warning level of 0.001: nothing crossed."""
    html = render_report(_warned_assessment(0.001))
    assert '<div class="verdict passed" id="verdict">' in html
    gate = _section(html, "gate")
    assert gate.count('class="badge ok">met') == 2 and "warned" not in gate
