"""The report's "Since the last release" section (issue 28): present only when the
assessment was compared with the previous release; counts, arrival and departure k, risks,
the histogram of each side, and the breach as a row of the gate.

The case of tests/cli/test_previous_release.py, by hand: the candidate holds classes of 41
and 4 (k = 4); one record arrived, alone in its class (a(c) = 1, risk 1); two departed from
one class (d(c) = 2, risk 0.5); 46 records before, 45 now.
"""

from __future__ import annotations

from typing import Any

from reident_airflow.engine.assessment import assess, with_release_difference
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.differencing import ReleaseChanges, differencing
from reident_airflow.engine.options import AssessmentOptions, Thresholds
from reident_airflow.report import render_report
from reident_airflow.report.view import AssessmentView
from tests.report.documents import SMALL_BREACH
from tests.report.test_report import check_page

QIS = ("sex", "zip")


def _document(*, first_run: bool = False) -> dict[str, Any]:
    options = AssessmentOptions(
        QIS,
        thresholds=Thresholds(min_k=4, min_arrival_k=2),
        rank_attributes=False,
        previous_release="last.csv",
    )
    result = assess(ClassSizes(QIS, [4, 41], [1, 1]), options)
    changes = ReleaseChanges(QIS, 46, 45, ClassSizes(QIS, [1], [1]), ClassSizes(QIS, [2], [1]))
    difference = None if first_run else differencing(changes)
    return with_release_difference(result, difference).to_dict()


def _section(html: str) -> str:
    start = html.index('id="assessment-since-last-release"')
    return html[start : html.index("</section>", start)]


def test_not_compared_no_section() -> None:
    html = render_report(SMALL_BREACH)
    assert "Since the last release" not in html
    view = AssessmentView.from_dict(SMALL_BREACH)
    assert view.since_last_release is None and not view.release_compared


def test_the_section_and_the_gate_row() -> None:
    html = render_report(_document())
    check_page(html)
    assert '<a href="#assessment-since-last-release">Since the last release</a>' in html
    section = _section(html)
    assert "<dt>records in the previous release</dt><dd>46</dd>" in section
    assert "<dt>records in this release</dt><dd>45</dd>" in section
    assert "<dt>arrivals</dt><dd>1</dd>" in section
    assert "<dt>departures</dt><dd>2</dd>" in section
    assert "<dt>arrival k (fewest arrivals in a class)</dt><dd>1</dd>" in section
    assert "<dt>departure k (fewest departures in a class)</dt><dd>2</dd>" in section
    assert "1 / a(c)" in section
    # the histogram: one class received 1 record, one class lost 2
    body = section[section.rindex("<tbody>") : section.rindex("</tbody>")]
    rows = body.split("<tr")[1:]
    assert len(rows) == 2
    cells = [
        [
            row.split(f'data-label="{label}">', 1)[1].split("<", 1)[0]
            for label in (
                "records moved in a class",
                "classes (arrivals)",
                "classes (departures)",
            )
        ]
        for row in rows
    ]
    assert cells == [["1", "1", "0"], ["2", "0", "1"]]
    gate = html[html.index('id="gate"') : html.index('id="input"')]
    assert "Smallest count of arrivals in a class (arrival k)" in gate
    assert "since_last_release.arrivals.k" in gate
    assert "1 of 2 thresholds breached" in html
    view = AssessmentView.from_dict(_document())
    assert view.observed("since_last_release.arrivals.k") == 1
    assert view.observed("since_last_release.departures.highest_risk") == 0.5


def test_a_first_run_says_there_was_nothing_to_compare() -> None:
    html = render_report(_document(first_run=True))
    check_page(html)
    section = _section(html)
    assert "No previous release to compare with: this is the first release." in section
