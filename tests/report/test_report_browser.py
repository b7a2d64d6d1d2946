"""The report as a person sees it: headless Chromium loads it from a file, makes no request
to anything but that file, shows the verdict and every chart, and at 400 px shows every
threshold's limit and result inside the screen with chart text still legible; the
screenshots are kept in ``test-artifacts/``.

Chromium is Debian's ``chromium``; when ``/usr/bin/chromium`` is missing the fixture installs it
with ``apt-get`` (root). Only a non-root run outside CI without it is skipped; under
``CI=true`` a Chromium that cannot be had fails the test.
"""

from __future__ import annotations

import os
import struct
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from reident_airflow.report import SignOff, render_release_report, render_report
from reident_airflow.sources.fingerprint import fingerprint_file
from tests.conftest import IN_CI, oracle_data
from tests.report._chromium import PageRun, find_chromium, install_chromium, load_page
from tests.report.conftest import artifacts_dir


@pytest.fixture(scope="session")
def chromium() -> str:
    found = find_chromium()
    if found:
        return found
    if os.geteuid() != 0:
        message = "/usr/bin/chromium is missing and installing it needs root (apt-get)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    ok, log = install_chromium()
    found = find_chromium()
    if not ok or found is None:
        pytest.fail(f"apt-get install chromium failed:\n{log}")
    return found


_CHECKS = {
    "verdict": "document.querySelector('#verdict .word')?.textContent ?? null",
    "gate_rows": "document.querySelectorAll('#gate tbody tr').length",
    "charts": (
        "Array.from(document.querySelectorAll('figure.chart svg'))"
        ".filter(s => getComputedStyle(s).display !== 'none').map(s => {"
        " const r = s.getBoundingClientRect();"
        " return {section: s.closest('section').id, label: s.getAttribute('aria-label'),"
        " width: r.width, height: r.height, paths: s.querySelectorAll('path').length}; })"
    ),
    "sections": "Array.from(document.querySelectorAll('section[id]')).map(s => s.id)",
    "title": "document.title",
    "overflow": "document.documentElement.scrollWidth > window.innerWidth",
}


def _assert_self_contained(run: PageRun, url: str) -> None:
    assert run.loaded
    for requested in run.requests:
        scheme = urlsplit(requested).scheme
        assert scheme in {"file", "data"}, f"the page requested {requested}"
    assert run.requests[0] == url
    assert run.failed == []
    assert run.console_errors == []
    assert run.exceptions == []


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_adult_report_in_chromium(chromium: str, breaching_assessment: dict[str, Any]) -> None:
    html = render_report(breaching_assessment, extra={"source": "adult.csv", "region": "usa"})
    out = artifacts_dir()
    page = out / "report-adult.html"
    page.write_text(html, encoding="utf-8")
    url = page.resolve().as_uri()
    run = load_page(chromium, url, expressions=_CHECKS)
    (out / "report-adult.png").write_bytes(run.screenshot)

    _assert_self_contained(run, url)
    found = run.evaluated
    assert found["verdict"] == "BREACHED"
    assert found["gate_rows"] == 3
    assert found["title"] == "Re-identification risk report"
    assert not found["overflow"], "the page scrolls sideways at 1200 px"
    charts = {c["section"]: c for c in found["charts"]}
    assert set(charts) == {
        "assessment-distribution",
        "assessment-classes",
        "assessment-attributes",
    }
    for chart in charts.values():
        assert chart["width"] > 600 and chart["height"] > 200, chart
        assert chart["paths"] > 20, chart
    assert found["sections"][:4] == ["gate", "input", "assessment", "assessment-glance"]
    assert found["sections"][-2:] == ["sign-off", "about"]
    width, height = _png_size(run.screenshot)
    assert width == 1200 and height > 2500


def test_release_report_in_chromium(
    chromium: str,
    passing_assessment: dict[str, Any],
    direct_match_result: dict[str, Any],
    datafly_result: dict[str, Any],
) -> None:
    html = render_release_report(
        assessment=passing_assessment,
        direct_match=direct_match_result,
        datafly=datafly_result,
        context={"source": "adult.csv", "dag_id": "release_gate"},
    )
    out = artifacts_dir()
    page = out / "report-release.html"
    page.write_text(html, encoding="utf-8")
    url = page.resolve().as_uri()
    run = load_page(chromium, url, expressions=_CHECKS)
    (out / "report-release.png").write_bytes(run.screenshot)

    _assert_self_contained(run, url)
    assert run.evaluated["verdict"] == "BREACHED"
    assert run.evaluated["gate_rows"] == 5
    sections = {c["section"] for c in run.evaluated["charts"]}
    assert {"direct-match-columns", "datafly-steps"} <= sections
    assert len(run.evaluated["charts"]) == 5


def test_empty_report_in_chromium(chromium: str) -> None:
    out = artifacts_dir()
    page = out / "report-empty.html"
    page.write_text(render_report({"schema": "reident.assessment/v1"}), encoding="utf-8")
    url = page.resolve().as_uri()
    run = load_page(chromium, url, expressions=_CHECKS)
    (out / "report-empty.png").write_bytes(run.screenshot)
    _assert_self_contained(run, url)
    assert run.evaluated["verdict"] == "INCOMPLETE"
    assert run.evaluated["charts"] == []


def test_the_request_check_sees_a_request(chromium: str, tmp_path: Path) -> None:
    """The harness is not blind: a page that loads an image from elsewhere is caught (the
    address is this machine's discard port, so nothing leaves it)."""
    page = tmp_path / "leaky.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png"></body></html>',
        encoding="utf-8",
    )
    run = load_page(chromium, page.as_uri(), expressions={})
    assert "http://127.0.0.1:9/x.png" in run.requests
    assert [url for url, _ in run.failed] == ["http://127.0.0.1:9/x.png"]
    with pytest.raises(AssertionError, match="the page requested"):
        _assert_self_contained(run, page.as_uri())


# ------------------------------------------------------------------------------ at 400 px
NARROW = 400
#: The smallest text the charts draw is 8 pt (bar labels, ``charts.py``) in a drawing
#: ``viewBox`` 576 pt wide (8 in; 288 pt, 4 in, for narrow screens); on screen it is
#: 8 * rendered width / drawing width px.
SMALLEST_CHART_TEXT_PT = 8.0
_NARROW_CHECKS = {
    "viewport": "window.innerWidth",
    "page_width": "document.documentElement.scrollWidth",
    "gate": (
        "Array.from(document.querySelectorAll('#gate tbody tr')).map(tr =>"
        " Object.fromEntries(['check', 'observed', 'limit', 'result'].map(name => {"
        "  const td = name === 'check' ? tr.querySelector('td')"
        '   : tr.querySelector(`td[data-label="${name}"]`);'
        "  const r = td.getBoundingClientRect();"
        "  return [name, {left: r.left, right: r.right, width: r.width, height: r.height,"
        "   text: td.textContent.trim(), clipped: td.scrollWidth > td.clientWidth}]; })))"
    ),
    "charts": (
        "Array.from(document.querySelectorAll('figure.chart svg'))"
        ".filter(s => getComputedStyle(s).display !== 'none').map(s => {"
        " const r = s.getBoundingClientRect();"
        " const holder = s.closest('.chart-box');"
        " const box = holder.getBoundingClientRect();"
        " return {section: s.closest('section').id, width: r.width, left: r.left,"
        " right: r.right, drawing: s.viewBox.baseVal.width, box_left: box.left,"
        " box_right: box.right, box_scroll: holder.scrollWidth,"
        " box_client: holder.clientWidth}; })"
    ),
    "advice": (
        "Array.from(document.querySelectorAll("
        "'#assessment-advice .fig, #assessment-advice td, #assessment-advice p,"
        " #assessment-advice h3')).map(e => {"
        " const r = e.getBoundingClientRect();"
        " return {text: e.textContent.trim(), left: r.left, right: r.right, width: r.width,"
        " clipped: e.scrollWidth > e.clientWidth}; })"
    ),
    "sign_off": (
        "Array.from(document.querySelectorAll('#sign-off .field')).map(f => {"
        " const r = f.getBoundingClientRect(); return {left: r.left, right: r.right}; })"
    ),
}


def _narrow_report(
    assessment: dict[str, Any],
    direct_match: dict[str, Any],
    datafly: dict[str, Any],
    advice: dict[str, Any] | None = None,
) -> str:
    with_input = {
        **assessment,
        "input": fingerprint_file(oracle_data("adult.csv")).to_dict(),
        "advice": advice,
    }
    return render_release_report(
        assessment=with_input,
        direct_match=direct_match,
        datafly=datafly,
        context={"source": "adult.csv", "dag_id": "release_gate"},
        sign_off=SignOff(reviewer="A. Jones", decision="reject", date=date(2026, 12, 1)),
    )


def _cut_off(found: dict[str, Any]) -> list[str]:
    """Each gate cell (check, observed, limit, result) not wholly inside the viewport."""
    width = found["viewport"]
    bad = []
    for n, row in enumerate(found["gate"]):
        for name, cell in row.items():
            inside = cell["left"] >= 0 and cell["right"] <= width and cell["width"] > 0
            if not inside or cell["clipped"]:
                bad.append(f"row {n + 1} {name} {cell['text']!r}: {cell}")
    return bad


def _outside(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The elements not wholly inside the 400 px viewport, or cut off inside their box."""
    return [
        e
        for e in elements
        if e["left"] < 0 or e["right"] > NARROW or e["width"] <= 0 or e["clipped"]
    ]


def test_report_at_400_px(
    chromium: str,
    breaching_assessment: dict[str, Any],
    direct_match_result: dict[str, Any],
    datafly_result: dict[str, Any],
    adult_advice: dict[str, Any],
) -> None:
    html = _narrow_report(breaching_assessment, direct_match_result, datafly_result, adult_advice)
    out = artifacts_dir()
    page = out / "report-400px.html"
    page.write_text(html, encoding="utf-8")
    url = page.resolve().as_uri()
    run = load_page(chromium, url, expressions=_NARROW_CHECKS, width=NARROW)
    (out / "report-400px.png").write_bytes(run.screenshot)

    _assert_self_contained(run, url)
    found = run.evaluated
    assert found["viewport"] == NARROW
    assert found["page_width"] <= NARROW, "the page scrolls sideways at 400 px"
    assert len(found["gate"]) == 5  # 3 thresholds of the assessment, direct match, Datafly
    assert _cut_off(found) == []
    results = [row["result"]["text"] for row in found["gate"]]
    assert results == ["breached"] * 4 + ["met"]
    assert [row["limit"]["text"] for row in found["gate"]][:3] == ["50 % (0.5)", "1 % (0.01)", "5"]
    assert len(found["charts"]) == 5
    for chart in found["charts"]:
        smallest_px = SMALLEST_CHART_TEXT_PT * chart["width"] / chart["drawing"]
        assert smallest_px >= 9.0, chart  # the narrow drawing: legible, not shrunk
        assert chart["box_left"] >= 0 and chart["box_right"] <= NARROW, chart
        assert chart["box_scroll"] <= chart["box_client"], chart  # nothing cut
    assert found["sign_off"] and all(f["right"] <= NARROW for f in found["sign_off"])
    # the "What to do" block: Adult on sex, age, race has 191 of its 528 classes, holding 425
    # of its 30,162 records, below k = 5 (hand-counted in tests/engine/test_advice.py)
    advice = found["advice"]
    texts = [e["text"] for e in advice]
    assert "191 of 528classes smaller than k = 5" in texts
    assert "425 of 30,162records in them" in texts
    assert sum(1 for t in texts if t in {"sex", "age", "race"}) == 3  # the levels table
    assert _outside(advice) == []
    width, _ = _png_size(run.screenshot)
    assert width == NARROW


PHONE = 390


def test_no_chart_is_cut_at_390_px(
    chromium: str,
    breaching_assessment: dict[str, Any],
    direct_match_result: dict[str, Any],
    datafly_result: dict[str, Any],
) -> None:
    """Issue 42 item 6: at 390 px (a phone) every chart lay 680 px wide in a box of about 345
    px, its right half cut off behind a scroll. Each chart now fits inside its box and the
    screen, nothing to scroll, with its smallest text still legible (9 px or more)."""
    html = _narrow_report(breaching_assessment, direct_match_result, datafly_result)
    out = artifacts_dir()
    page = out / "report-390px.html"
    page.write_text(html, encoding="utf-8")
    run = load_page(chromium, page.resolve().as_uri(), expressions=_NARROW_CHECKS, width=PHONE)
    (out / "report-390px.png").write_bytes(run.screenshot)
    found = run.evaluated
    assert found["viewport"] == PHONE
    assert found["page_width"] <= PHONE, "the page scrolls sideways at 390 px"
    charts = found["charts"]
    assert len(charts) == 5  # one drawing shown per chart
    for chart in charts:
        assert chart["box_scroll"] <= chart["box_client"], f"cut inside its box: {chart}"
        assert chart["left"] >= chart["box_left"] and chart["right"] <= chart["box_right"], chart
        assert chart["box_left"] >= 0 and chart["box_right"] <= PHONE, chart
        smallest_px = SMALLEST_CHART_TEXT_PT * chart["width"] / chart["drawing"]
        assert smallest_px >= 9.0, chart


def test_the_400_px_check_sees_a_cut_off_column(
    chromium: str,
    breaching_assessment: dict[str, Any],
    direct_match_result: dict[str, Any],
    datafly_result: dict[str, Any],
    tmp_path: Path,
) -> None:
    """The geometry check is not blind: without the small-screen rules the table keeps its
    five columns and the limit and result cells fall outside the 400 px viewport."""
    html = _narrow_report(breaching_assessment, direct_match_result, datafly_result)
    assert html.count("@media screen and (max-width: 760px)") == 1
    page = tmp_path / "wide-only.html"
    page.write_text(
        html.replace("@media screen and (max-width: 760px)", "@media screen and (max-width: 1px)")
    )
    run = load_page(chromium, page.as_uri(), expressions=_NARROW_CHECKS, width=NARROW)
    cut = _cut_off(run.evaluated)
    assert any(" result " in c for c in cut) and any(" limit " in c for c in cut), cut


def test_report_in_print_layout(
    chromium: str,
    breaching_assessment: dict[str, Any],
    direct_match_result: dict[str, Any],
    datafly_result: dict[str, Any],
    tmp_path: Path,
) -> None:
    """Printed on A4 portrait (210 mm = 794 CSS px, less about 10 mm margins each side: about
    720 px): no sideways overflow, the threshold table keeps its columns, the charts fit the
    page (no scrolling on paper), the navigation is left out."""
    html = _narrow_report(breaching_assessment, direct_match_result, datafly_result)
    page = tmp_path / "print.html"
    page.write_text(html, encoding="utf-8")
    checks = {
        **_NARROW_CHECKS,
        "header_shown": "getComputedStyle(document.querySelector('#gate thead')).display",
        "toc": "getComputedStyle(document.querySelector('nav.toc')).display",
    }
    run = load_page(chromium, page.as_uri(), expressions=checks, width=720, media="print")
    (artifacts_dir() / "report-print.png").write_bytes(run.screenshot)
    found = run.evaluated
    assert found["page_width"] <= 720
    assert found["header_shown"] != "none" and found["toc"] == "none"
    assert _cut_off(found) == []
    for chart in found["charts"]:
        assert chart["box_right"] <= 720 and chart["width"] <= 720, chart
