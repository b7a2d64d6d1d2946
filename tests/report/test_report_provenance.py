"""What a reviewer signs off from: lowest / average / highest risk, the fingerprint of the
input the assessment read, and the sign-off block.

Reference values: ARX 3.9.2's risks for Adult on ``sex, age, race`` (``tests/data/arx/
arx_C1.json``); the fingerprint's hashes are hand-checked with ``sha256sum`` in comments.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reident_airflow.report import render_report
from reident_airflow.report.view import AssessmentView
from tests.conftest import load_reference, reference_files
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
