"""The HTML report: content, escaping, partial results, writing, CLI and operator."""

from __future__ import annotations

import copy
import io
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from reident_airflow import __version__
from reident_airflow.cli import main
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.outcomes import REPORT_PATH_XCOM_KEY
from reident_airflow.report import (
    infer_kind,
    render_release_report,
    render_report,
    write_report,
)
from reident_airflow.report.runs import source_text
from tests.conftest import ensure_airflow_db, oracle_data
from tests.operators._fakes import RunTI

# ------------------------------------------------------------------------------ helpers
_BLOCKS = {"p", "div", "li", "td", "th", "tr", "dt", "dd", "h1", "h2", "h3", "br", "section"}
_VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "area", "base", "source"}


class _Balance(HTMLParser):
    """Checks that every element is closed in order (the page is not broken)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self.text.append(" ")
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass  # <path .../> in the inline SVG

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCKS:
            self.text.append(" ")
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not self.stack or self.stack[-1] not in {"style", "title"}:
            self.text.append(data)


def check_page(html: str, run_url: str | None = None) -> str:
    """Assert ``html`` is a whole, balanced, self-contained page; return its visible text.
    ``run_url``: the page of the Airflow task run the report links back to (issue 29), the
    one link out of the page, followed only when clicked."""
    assert html.startswith("<!DOCTYPE html>")
    parser = _Balance()
    parser.feed(html)
    parser.close()
    assert parser.errors == []
    assert parser.stack == []
    # nothing that could make a request: no src/href to anything but an in-page anchor
    assert not re.search(r"""\b(?:src|action|poster)\s*=""", html)
    hrefs = re.findall(r"""href="([^"]*)\"""", html)
    if run_url is not None:
        assert hrefs.count(run_url) == 1, hrefs
        hrefs.remove(run_url)
    assert all(h.startswith("#") for h in hrefs), hrefs
    assert "url(http" not in html and "@import" not in html and "<script" not in html
    # the only http(s) strings are XML namespace names of the inline SVG
    for url in re.findall(r"https?://[^\s\"'<>)]+", html):
        assert url in {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink", run_url}, url
    # ids are unique across the inlined charts
    ids = re.findall(r"""\bid="([^"]+)\"""", html)
    assert len(ids) == len(set(ids))
    return " ".join("".join(parser.text).split())


# ---------------------------------------------------------------------------------- kinds
def test_kind_from_schema(
    breaching_assessment: dict[str, Any],
    direct_match_result: dict[str, Any],
    datafly_result: dict[str, Any],
) -> None:
    assert infer_kind(breaching_assessment) == "assessment"
    assert infer_kind(direct_match_result) == "direct_match"
    assert infer_kind(datafly_result) == "datafly"
    assert infer_kind({"schema": "reident.assessment/v2"}) == "assessment"
    assert infer_kind({}) == "assessment"
    with pytest.raises(InvalidInputError, match="schema 'other/v1'"):
        render_report({"schema": "other/v1"})
    with pytest.raises(InvalidInputError, match="kind must be one of"):
        render_report({}, kind="bogus")
    with pytest.raises(InvalidInputError, match="got list"):
        render_report([])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="top_attributes"):
        render_report({}, top_attributes=0)


# ----------------------------------------------------------------------------- assessment
def test_breaching_adult_report_shows_verdict_thresholds_and_every_part(
    breaching_assessment: dict[str, Any],
) -> None:
    html = render_report(breaching_assessment, extra={"source": "adult.csv", "region": "usa"})
    text = check_page(html)
    # the verdict and every threshold against its observed value come first
    assert text.index("BREACHED") < text.index("At a glance")
    assert "3 of 3 thresholds breached" in text
    gate = html[html.index('id="gate"') : html.index('id="assessment"')]
    assert gate.count('class="badge bad">breached') == 3
    assert "100 % (1) </td>" not in gate  # cells are trimmed
    assert ">100 % (1)<" in gate and ">50 % (0.5)<" in gate  # highest risk vs its limit
    assert ">1.41 % (0.01409)<" in gate and ">1 % (0.01)<" in gate  # records at risk
    assert ">1<" in gate and ">5<" in gate  # k vs min_k
    # the three charts, drawn as inline SVG
    for section, label in (
        ("assessment-distribution", "Share of records per risk band"),
        ("assessment-classes", "Number of classes per class size"),
        ("assessment-attributes", "Distinction and separation per column set"),
    ):
        start = html.index(f'id="{section}"')
        chunk = html[start : html.index("</section>", start)]
        # drawn twice: for this page and for a phone (the CSS shows one)
        for variant in ("wide", "narrow"):
            assert f'<svg xmlns:xlink="http://www.w3.org/1999/xlink" class="chart {variant}" ' in (
                chunk
            )
        assert f'aria-label="{label}"' in chunk
        assert "<path" in chunk
    # population models, with the one Dankar's rule chose
    assert '<tr class="chosen"><td data-label="model">Pitman</td>' in html
    assert "chosen by Dankar's rule" in text and "N = 317,238,626" in text
    # QI ranking, inputs and version
    assert "sex, age, race" in text and "distinction" in text
    assert "max_highest_risk = 0.5" in text and "usa" in text and "adult.csv" in text
    assert f"reident-airflow {__version__}" in text
    assert "could not be drawn" not in text and 'class="na"' not in html


def test_report_holds_no_record_values(
    breaching_assessment: dict[str, Any], adult_frame: pd.DataFrame
) -> None:
    html = render_report(breaching_assessment)
    for column in ("sex", "race"):
        for value in adult_frame[column].unique():
            assert value not in html, f"{column} value {value!r} in the report"


def test_passing_and_ungated_reports(passing_assessment: dict[str, Any]) -> None:
    text = check_page(render_report(passing_assessment))
    assert "PASSED" in text and "all 3 thresholds met" in text
    assert "BREACHED" not in text
    ungated = copy.deepcopy(passing_assessment)
    ungated["thresholds"] = {}
    text = check_page(render_report(ungated))
    assert "NOT GATED" in text and "No thresholds were given" in text


def test_optional_measures_render(breaching_assessment: dict[str, Any]) -> None:
    a = copy.deepcopy(breaching_assessment)
    a["individual_risk"] = {
        "weight": "w",
        "global_risk": 12.5,
        "global_risk_share": 0.001,
        "highest": 0.4,
        "records_above_threshold": 0.02,
    }
    a["l_diversity"] = {"salary-class": {"distinct": 1, "entropy": 1.0, "recursive": 1, "c": 2}}
    a["suda"] = {"records_with_msu": 40, "max_score": 3.5, "attribute_contributions": {"age": 60}}
    text = check_page(render_report(a))
    assert "Individual risk (sampling weights)" in text and "12.5" in text
    assert "salary-class" in text and "Special uniques (SUDA)" in text


def test_weight_and_l_diversity_gates(breaching_assessment: dict[str, Any]) -> None:
    a = copy.deepcopy(breaching_assessment)
    a["thresholds"] = {"max_global_risk": 0.01, "min_l": 2}
    a["individual_risk"] = {"weight": "w", "global_risk": 3.0, "global_risk_share": 0.001,
                            "highest": 0.2, "records_above_threshold": 0.0}  # fmt: skip
    a["l_diversity"] = {
        "salary-class": {"distinct": 1, "entropy": 1.0, "recursive": 1, "c": 2,
                         "homogeneous_records": 0.125},
        "education": {"distinct": 3, "entropy": 2.5, "recursive": 2, "c": 2,
                      "homogeneous_records": 0},
    }  # fmt: skip
    a["breaches"] = [{"metric": "l_diversity.salary-class.distinct", "observed": 1.0, "limit": 2}]
    a["passed"] = False
    html = render_report(a)
    text = check_page(html)
    gate = html[html.index('id="gate"') : html.index('id="assessment"')]
    assert gate.count('class="badge bad">breached') == 1
    assert gate.count('class="badge ok">met') == 2
    assert "Distinct l-diversity of salary-class" in text
    assert "Distinct l-diversity of education" in text
    assert "0.1 % (0.001)" in text and "1 of 3 thresholds breached" in text
    assert "records in classes of one value" in text and "12.5 %" in text


# --------------------------------------------------------------------- partial and hostile
def _stripped(a: dict[str, Any], *drop: str) -> dict[str, Any]:
    return {k: v for k, v in a.items() if k not in drop}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("empty", "does not say how many records"),
        ("schema only", "does not say how many records"),
        ("nulls", "does not say how many records"),
        ("no population", "population uniqueness was not estimated"),
        ("no attributes", "no quasi-identifier ranking"),
        ("no histogram", "no class-size histogram"),
        ("no distribution", "no risk distribution"),
        ("garbage shapes", "not in the result"),
        ("no verdict", "INCOMPLETE"),
    ],
)
def test_partial_assessment_renders_a_clear_message(
    breaching_assessment: dict[str, Any], case: str, expected: str
) -> None:
    a = breaching_assessment
    payload: dict[str, Any] = {
        "empty": {},
        "schema only": {"schema": "reident.assessment/v1"},
        "nulls": {key: None for key in a},
        "no population": {
            **a,
            "uniqueness": {"sample_uniques": 0.002, "population": None},
        },
        "no attributes": {**a, "attributes": []},
        "no histogram": _stripped(a, "class_size_histogram"),
        "no distribution": {**a, "risk_distribution": None},
        "garbage shapes": {**a, "prosecutor": ["x"], "marketer": 3, "uniqueness": "?"},
        "no verdict": _stripped(a, "passed", "breaches"),
    }[case]
    text = check_page(render_report(payload, kind="assessment"))
    assert expected in text
    if case in {"empty", "schema only", "nulls", "no verdict"}:
        assert "INCOMPLETE" in text and "do not sign off a release" in text
    if case == "garbage shapes":
        assert "could not be drawn" not in text  # every section copes with the odd types


def test_a_section_that_fails_leaves_a_message_and_the_rest(
    breaching_assessment: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from reident_airflow.report import charts

    def broken(*args: Any) -> str:
        raise ValueError("drawing failed")

    monkeypatch.setattr(charts, "attribute_chart", broken)
    html = render_report(breaching_assessment)
    text = check_page(html)
    assert "This section could not be drawn" in text and "(ValueError)" in text
    assert "drawing failed" not in text  # the exception's text is not shown
    assert html.count("<svg ") == 2 * 2  # the other charts are there, each wide and narrow


def test_no_result_at_all() -> None:
    text = check_page(render_release_report())
    assert "No result to report" in text and "INCOMPLETE" in text


def test_hostile_names_are_escaped(breaching_assessment: dict[str, Any]) -> None:
    evil = '<script>alert("x")</script>'
    names = [evil, "a&b", "$x$ \"q\" 'r'", "区域 <b>"]
    a = copy.deepcopy(breaching_assessment)
    a["quasi_identifiers"] = names[:3]
    a["attributes"] = [
        {"columns": names[: i + 1], "distinction": 0.1 * (i + 1), "separation": 0.5}
        for i in range(4)
    ]
    a["thresholds"] = {**a["thresholds"], "<weird>": "<1>"}
    html = render_report(a, extra={"source": evil, "<k>": "<v>"}, kind="assessment")
    text = check_page(html)
    assert "<script" not in html and "<b>" not in html and "<weird>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert evil in text and "区域 <b>" in text and "a&b" in text and "<v>" in text


def test_charts_are_deterministic(breaching_assessment: dict[str, Any]) -> None:
    def charts_of(html: str) -> list[str]:
        return re.findall(r"<svg .*?</svg>", html, flags=re.DOTALL)

    first = charts_of(render_report(breaching_assessment))
    assert len(first) == 3 * 2  # each wide and narrow
    assert first == charts_of(render_report(breaching_assessment))


# ------------------------------------------------------------------ direct match and Datafly
def test_direct_match_report(direct_match_result: dict[str, Any]) -> None:
    dm = direct_match_result
    assert dm["below_target"] == ["record_no", "postcode"]
    text = check_page(render_report(dm, extra={"source": "adult.csv vs release.csv"}))
    assert "BREACHED" in text and "(2 columns)" in text
    html = render_report(dm)
    assert 'aria-label="Direct match protection per column"' in html
    assert html.count('<tr class="breach"><td data-label=') == 2 + 1  # 2 columns + the gate row
    assert "record_no" in text and "by position" in text
    dm_ok = {**dm, "target": 0.0, "below_target": [], "passed": True}
    assert "PASSED" in check_page(render_report(dm_ok))


def test_datafly_reports(datafly_result: dict[str, Any]) -> None:
    text = check_page(render_report(datafly_result))
    assert "PASSED" in text and "k = 10 reached (smallest class 11)" in text
    assert "age → 3" not in text  # chart labels are drawn as paths, tables hold the text
    assert "marital-status" in text and "Levels reached" in text
    assert 'aria-label="Records below k after each Datafly step"' in render_report(datafly_result)
    infeasible = {
        "schema": "reident.datafly/v1",
        "records": 100,
        "k": 50,
        "achieved_k": None,
        "suppression_limit": 0,
        "suppressed_records": None,
        "levels": {"sex": 1, "age": 4},
        "steps": [{"generalized": "age", "level": 4, "below_k": 30}],
        "information_loss": None,
        "passed": False,
        "message": "cannot reach k = 50 within the suppression limit",
    }
    text = check_page(render_report(infeasible))
    assert "BREACHED" in text and "cannot be reached" in text
    assert "Levels of the best attempt" in text and "cannot reach k = 50" in text
    empty_steps = {**datafly_result, "steps": []}
    assert "No generalization was needed" in check_page(render_report(empty_steps))


def test_release_report_combines_parts(
    passing_assessment: dict[str, Any],
    direct_match_result: dict[str, Any],
    datafly_result: dict[str, Any],
) -> None:
    html = render_release_report(
        assessment=passing_assessment,
        direct_match=direct_match_result,
        datafly=datafly_result,
        context={"dag_id": "release_gate", "run_id": "manual__1"},
    )
    text = check_page(html)
    assert text.startswith("Release risk report")
    assert "BREACHED" in text  # the direct-match part breached
    assert "Re-identification risk: passed" in text
    assert "Column direct match protection: breached" in text
    assert "Datafly k-anonymization: passed" in text
    assert html.count("<svg ") == 5 * 2  # each wide and narrow
    assert "release_gate" in text and "manual__1" in text


# ------------------------------------------------------------------------------- layering
def test_matplotlib_is_imported_only_to_draw() -> None:
    code = (
        "import sys\n"
        "import reident_airflow.engine.assessment, reident_airflow.cli, reident_airflow.report\n"
        "assert 'matplotlib' not in sys.modules, 'imported early'\n"
        "from reident_airflow.report import render_report\n"
        "render_report({})\n"
        "assert 'matplotlib' not in sys.modules, 'no chart, no matplotlib'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -------------------------------------------------------------------------------- writing
def test_write_report_local_is_atomic_and_creates_directories(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "2026-01-01" / "risk.html"
    assert write_report(target, "<!DOCTYPE html>one") == str(target)
    assert write_report(str(target), "<!DOCTYPE html>two") == str(target)
    assert target.read_text(encoding="utf-8") == "<!DOCTYPE html>two"
    assert [p.name for p in target.parent.iterdir()] == ["risk.html"]  # no temporary left
    assert oct(target.stat().st_mode & 0o777) == "0o644"
    with pytest.raises(InvalidInputError, match="is a directory"):
        write_report(tmp_path, "x")
    with pytest.raises(InvalidInputError, match="HTML text"):
        write_report(tmp_path / "x.html", b"x")  # type: ignore[arg-type]


def test_write_report_to_object_storage(tmp_path: Path) -> None:
    ensure_airflow_db()
    url = f"file://{tmp_path}/risk.html"
    assert write_report(url, "<!DOCTYPE html>é") == url
    assert (tmp_path / "risk.html").read_text(encoding="utf-8") == "<!DOCTYPE html>é"


def test_source_text_hides_passwords() -> None:
    assert source_text("data/adult.csv") == "data/adult.csv"
    assert "s3cret" not in str(source_text("postgresql://u:s3cret@db/x"))
    assert "s3cret" not in str(source_text("s3://key:s3cret@bucket/x.csv"))
    assert source_text(None) is None


# ------------------------------------------------------------------------------------ CLI
def test_cli_assess_writes_the_report(tmp_path: Path) -> None:
    report = tmp_path / "out" / "adult.html"
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "assess",
        str(oracle_data("adult.csv")),
        "--sep",
        ";",
        "--qi",
        "sex,age,race",
        "--region",
        "usa",
        "--max-highest-risk",
        "0.5",
        "--min-k",
        "5",
        "--json",
        str(tmp_path / "a.json"),
        "--report",
        str(report),
    ]
    assert main(argv, out=out, err=err) == 1, err.getvalue()
    text = check_page(report.read_text(encoding="utf-8"))
    payload = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert "BREACHED" in text and f"{payload['classes']:,}" in text
    assert "adult.csv" in text and "usa" in text
    # the report may not overwrite the JSON (both named .html: the report's own suffix)
    same = str(tmp_path / "a.html")
    bad = [*argv[:-3], same, "--report", same]
    assert main(bad, out=io.StringIO(), err=(err := io.StringIO())) == 2
    assert "--report and --json name the same file" in err.getvalue()


def test_cli_report_with_weights_l_diversity_and_suda(tmp_path: Path) -> None:
    from tests._sdcmicro import sdcmicro_data

    report = tmp_path / "sdc.html"
    argv = [
        "assess",
        str(sdcmicro_data("testdata_data.csv")),
        "--qi",
        "urbrur,roof,walls,water,electcon,relat,sex",
        "--weight",
        "sampling_weight",
        "--sensitive",
        "hhcivil",
        "--suda",
        "--min-l",
        "2",
        "--max-global-risk",
        "0.05",
        "--report",
        str(report),
    ]
    assert main(argv, out=io.StringIO(), err=io.StringIO()) == 1
    html = report.read_text(encoding="utf-8")
    text = check_page(html)
    assert "could not be drawn" not in text
    assert "1 of 2 thresholds breached" in text
    assert "Distinct l-diversity of hhcivil" in text
    assert "the sampling weights (individual risk)" in text
    assert "Special uniques (SUDA)" in text and "minimal sample uniques by size" in text


# ------------------------------------------------------------------------------- operator
def test_operator_writes_the_report_and_pushes_its_location(tmp_path: Path) -> None:
    ensure_airflow_db()
    from reident_airflow.operators.risk import ReidentificationRiskOperator
    from reident_airflow.outcomes import ReidentificationBreach

    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n1,x\n2,y\n", encoding="utf-8")
    ti = RunTI(run_id="manual__x")
    target = tmp_path / "reports" / "t.html"
    op = ReidentificationRiskOperator(
        task_id="r", path=str(csv), quasi_identifiers="a,b", report_path=str(target)
    )
    assert "report_path" in op.template_fields
    result = op.execute({"ti": ti})
    assert "report_path" not in result  # the returned assessment JSON is unchanged
    assert ti.pushed[REPORT_PATH_XCOM_KEY] == str(target)
    text = check_page(target.read_text(encoding="utf-8"), run_url=ti.log_url)
    assert "NOT GATED" in text and "release_gate" in text and "manual__x" in text
    # on a breach the report is written before the task fails, to object storage here
    ti = RunTI(run_id="manual__x")
    url = f"file://{tmp_path}/breach.html"
    op = ReidentificationRiskOperator(
        task_id="b", path=str(csv), quasi_identifiers="a,b", min_k=2, report_path=url
    )
    with pytest.raises(ReidentificationBreach):
        op.execute({"ti": ti})
    assert ti.pushed[REPORT_PATH_XCOM_KEY] == url
    assert "BREACHED" in check_page(
        (tmp_path / "breach.html").read_text(encoding="utf-8"), run_url=ti.log_url
    )


# ---------------------------------------------------------------------------- Datafly runs
def _datafly_argv(tmp_path: Path, k: int, limit: str, *, flat_age: bool = False) -> list[str]:
    qis = ["sex", "age", "race"]
    hierarchies = {q: oracle_data(f"adult_hierarchy_{q}.csv") for q in qis}
    if flat_age:  # age without generalization: rare ages stay unique
        hierarchies["age"] = tmp_path / "age.csv"
        ages = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str)["age"].unique()
        hierarchies["age"].write_text("".join(f"{a}\n" for a in ages), encoding="utf-8")
    argv = [
        "datafly",
        str(oracle_data("adult.csv")),
        "--sep",
        ";",
        "--qi",
        ",".join(qis),
        "--k",
        str(k),
        "--suppression-limit",
        limit,
        "--output",
        str(tmp_path / "anon.csv"),
        "--quiet",
        "--report",
        str(tmp_path / "datafly.html"),
    ]
    for q in qis:
        argv += ["--hierarchy", f"{q}={hierarchies[q]}"]
    return argv


def test_cli_datafly_writes_the_report(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(_datafly_argv(tmp_path, 5, "0.01"), out=io.StringIO(), err=err) == 0
    text = check_page((tmp_path / "datafly.html").read_text(encoding="utf-8"))
    assert "PASSED" in text and "k = 5 reached" in text and "anon.csv" in text
    # k out of reach: nothing written but the report, which says so
    (tmp_path / "datafly.html").unlink()
    assert main(_datafly_argv(tmp_path, 5, "0", flat_age=True), out=io.StringIO(), err=err) == 1
    text = check_page((tmp_path / "datafly.html").read_text(encoding="utf-8"))
    assert "BREACHED" in text and "cannot be reached" in text


def test_datafly_operator_writes_the_report(tmp_path: Path) -> None:
    ensure_airflow_db()
    from reident_airflow.operators.datafly import DataflyOperator

    qis = ["sex", "age", "race"]
    ti = RunTI(run_id="manual__x")
    op = DataflyOperator(
        task_id="anonymize",
        path=str(oracle_data("adult.csv")),
        sep=";",
        quasi_identifiers=qis,
        k=5,
        suppression_limit=0.01,
        hierarchies={q: str(oracle_data(f"adult_hierarchy_{q}.csv")) for q in qis},
        target_path=str(tmp_path / "anon.csv"),
        report_path=str(tmp_path / "reports" / "datafly.html"),
    )
    assert "report_path" in op.template_fields
    result = op.execute({"ti": ti})
    assert "report_path" not in result
    assert ti.pushed[REPORT_PATH_XCOM_KEY] == str(tmp_path / "reports" / "datafly.html")
    text = check_page(
        (tmp_path / "reports" / "datafly.html").read_text(encoding="utf-8"), run_url=ti.log_url
    )
    assert "PASSED" in text and "Levels reached" in text and "release_gate" in text


def test_every_chart_has_a_drawing_that_fits_a_phone(breaching_assessment: dict[str, Any]) -> None:
    # issue 42 item 6, without a browser (tests/report/test_report_browser.py measures it):
    # each chart comes wide (8 in = 576 pt) and narrow (4 in = 288 pt), both sized by their
    # viewBox alone (no fixed width or height), and the page's CSS shows the narrow one,
    # at 100 % of its box and no minimum width, on a screen up to 760 px wide
    html = render_report(breaching_assessment)
    svgs = re.findall(r"<svg [^>]*>", html)
    assert len(svgs) == 3 * 2
    widths = {"wide": "576", "narrow": "288"}
    for tag, variant in zip(svgs, ["wide", "narrow"] * 3, strict=True):
        assert f'class="chart {variant}"' in tag, tag
        assert re.search(rf'viewBox="0 0 {widths[variant]}(\.0+)? [0-9.]+"', tag), tag
        assert not re.search(r'\s(width|height)="', tag), tag
    css = html[html.index("<style>") : html.index("</style>")]
    assert "figure.chart svg.chart { width: 100%; max-width: 100%;" in css
    narrow = css[css.index("@media screen and (max-width: 760px)") :]
    narrow = narrow[: narrow.index("\n}\n")]
    assert "figure.chart svg.chart.wide { display: none; }" in narrow
    assert "figure.chart svg.chart.narrow { display: block;" in narrow
    assert "min-width" not in narrow.split("svg.chart.narrow", 1)[1].split("}", 1)[0]
