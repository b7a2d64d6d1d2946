"""``report_base_url`` is an absolute http(s) URL, and the report link never carries a URL a
browser would run (``javascript:``) or show from itself (``data:``)."""

from __future__ import annotations

import html
import io
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import pytest

from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.operators.direct_match import DirectMatchProtectionOperator
from reident_airflow.operators.report_link import (
    ReidentReportLink,
    linkable,
    report_url,
    served_root,
)
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError
from tests.conftest import ensure_airflow_db
from tests.operators._fakes import PushedTI, RunTI

BAD_BASES = [
    "javascript:alert(document.cookie)//",
    "JavaScript://%0aalert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "vbscript:msgbox(1)",
    "https:///no-host/",
    "//intranet.example.org/r/",  # no scheme: relative to the UI's own address
    "intranet.example.org/r/",
    "ftp://intranet.example.org/r/",
]


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "staged.csv"
    path.write_text("a,b\n1,x\n1,x\n2,y\n2,y\n", encoding="utf-8")
    return path


def _operators(csv: Path, tmp_path: Path, base: str) -> list[Any]:
    common = {"report_path": str(tmp_path / "r.html"), "report_base_url": base}
    return [
        ReidentificationRiskOperator(
            task_id=f"r_{uuid.uuid4().hex[:6]}", path=str(csv), quasi_identifiers="a", **common
        ),
        DataflyOperator(
            task_id=f"d_{uuid.uuid4().hex[:6]}",
            path=str(csv),
            quasi_identifiers="a",
            k=2,
            hierarchies={"a": {"type": "masking", "steps": [1]}},
            target_path=str(tmp_path / "release.csv"),
            **common,
        ),
        DirectMatchProtectionOperator(
            task_id=f"m_{uuid.uuid4().hex[:6]}",
            original_path=str(csv),
            avatar_path=str(csv),
            **common,
        ),
    ]


@pytest.mark.parametrize("base", BAD_BASES)
def test_a_base_url_that_is_not_http_is_refused_before_anything_runs(
    csv: Path, tmp_path: Path, base: str
) -> None:
    ensure_airflow_db()
    for op in _operators(csv, tmp_path, base):
        ti = PushedTI()
        with pytest.raises(ReidentConfigurationError, match="report_base_url must be") as info:
            op.execute({"ti": ti})
        message = str(info.value)
        assert "\n" not in message and base not in message
        assert ti.pushed == {}  # nothing assessed, nothing pushed
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "release.csv").exists()


def test_a_templated_base_url_is_checked_once_rendered(csv: Path, tmp_path: Path) -> None:
    ensure_airflow_db()
    op = ReidentificationRiskOperator(
        task_id="t",
        path=str(csv),
        quasi_identifiers="a",
        report_path=str(tmp_path / "r.html"),
        report_base_url="{{ params.base }}",
    )
    op.render_template_fields({"params": {"base": "javascript:alert(1)"}})
    with pytest.raises(ReidentConfigurationError, match="report_base_url must be"):
        op.execute({"ti": PushedTI()})


def test_the_configured_base_url_is_checked_too(
    csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ensure_airflow_db()
    monkeypatch.setenv("AIRFLOW__REIDENT__REPORT_BASE_URL", "data:text/html,<b>x</b>")
    op = ReidentificationRiskOperator(
        task_id="t", path=str(csv), quasi_identifiers="a", report_path=str(tmp_path / "r.html")
    )
    with pytest.raises(ReidentConfigurationError, match=r"\[reident\] report_base_url must be"):
        op.execute({"ti": PushedTI()})
    with pytest.raises(ValueError, match=r"\[reident\] report_base_url must be"):
        report_url("/tmp/r.html")


def test_an_http_base_url_makes_the_link(csv: Path, tmp_path: Path) -> None:
    ensure_airflow_db()
    ti = PushedTI()
    ReidentificationRiskOperator(
        task_id="t",
        path=str(csv),
        quasi_identifiers="a",
        report_path=str(tmp_path / "r.html"),
        report_base_url="https://reports.example.org/runs/",
    ).execute({"ti": ti})
    assert ti.pushed["report_url"] == "https://reports.example.org/runs/r.html"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("https://reports.example.org/runs/r.html", True),
        ("http://10.0.0.5:8080/r.html", True),
        ("s3://bucket/runs/r.html", True),
        ("file:///data/reports/r.html", True),
        ("javascript:alert(1)", False),
        ("JavaScript://%0aalert(1)", False),
        (" javascript:alert(1)", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("https://", False),
        ("https://reports.example.org/r.html\njavascript:alert(1)", False),
        ("", False),
    ],
)
def test_which_urls_may_be_a_link(value: str, shown: bool) -> None:
    assert linkable(value) is shown


def test_a_stored_bad_url_is_never_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of an older version stored a ``javascript:`` URL: the link is empty."""
    from airflow.sdk.execution_time.xcom import XCom

    stored = {"value": "javascript:alert(document.cookie)"}
    monkeypatch.setattr(XCom, "get_value", classmethod(lambda cls, **kw: stored["value"]))
    op = ReidentificationRiskOperator(
        task_id="t", path="x.csv", quasi_identifiers="a", report_path="/r/r.html"
    )
    assert ReidentReportLink().get_link(op, ti_key=None) == ""
    stored["value"] = "https://reports.example.org/runs/r.html"
    assert ReidentReportLink().get_link(op, ti_key=None) == stored["value"]


def test_no_report_path_asks_for_no_link(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.execution_time.xcom import XCom

    def looked_up(cls: Any, **kw: Any) -> Any:
        raise AssertionError("an XCom was looked up")

    monkeypatch.setattr(XCom, "get_value", classmethod(looked_up))
    op = ReidentificationRiskOperator(task_id="t", path="x.csv", quasi_identifiers="a")
    assert ReidentReportLink().get_link(op, ti_key=None) == ""


# -- issue 29, item 2: one link per run, and the report links back to the run ---------------

BASE = "https://reports.example.org/runs/"


def _two_runs(
    csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report_path: str
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The same task run twice (as Airflow does: the task as written, rendered per run), each
    run's XComs kept under its own key; ``XCom.get_value`` answers from them."""
    import copy

    from airflow.sdk.execution_time.xcom import XCom

    task = ReidentificationRiskOperator(
        task_id="gate",
        path=str(csv),
        quasi_identifiers="a",
        report_path=report_path,
        report_base_url=BASE,
    )
    pushed: dict[str, dict[str, Any]] = {}
    for run_id in ("manual__2026-12-01T22:11:40.321579+00:00", "scheduled__2026-12-02"):
        ti = RunTI(dag_id="release", task_id="gate", run_id=run_id, log_url=f"http://af/{run_id}")
        run = copy.deepcopy(task)
        run.render_template_fields({"run_id": run_id, "ti": ti, "params": {}})
        run.execute({"ti": ti, "run_id": run_id})
        pushed[run_id] = ti.pushed
    monkeypatch.setattr(
        XCom, "get_value", classmethod(lambda cls, *, ti_key, key: pushed[ti_key][key])
    )
    return task, pushed


def test_each_run_links_to_its_own_report(
    csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guide's per-run folder stays in the URL: two runs, two links, each to its report."""
    ensure_airflow_db()
    root = tmp_path / "reports"
    task, pushed = _two_runs(csv, tmp_path, monkeypatch, f"{root}/{{{{ run_id }}}}/risk.html")
    links = {run_id: ReidentReportLink().get_link(task, ti_key=run_id) for run_id in pushed}
    assert len(set(links.values())) == 2
    for run_id, link in links.items():
        # the URL below the base is the path below the folder before the first template
        assert link == BASE + urllib.parse.quote(f"{run_id}/risk.html")
        served = root / urllib.parse.unquote(link.removeprefix(BASE))
        assert str(served) == pushed[run_id]["report_location"]
        assert f"http://af/{run_id}" in served.read_text(encoding="utf-8")


def test_a_path_without_a_template_keeps_its_file_name_url(csv: Path, tmp_path: Path) -> None:
    ensure_airflow_db()
    ti = PushedTI()
    ReidentificationRiskOperator(
        task_id="t",
        path=str(csv),
        quasi_identifiers="a",
        report_path=str(tmp_path / "deep" / "r.html"),
        report_base_url=BASE,
    ).execute({"ti": ti})
    assert ti.pushed["report_url"] == BASE + "r.html"


@pytest.mark.parametrize(
    ("template", "root"),
    [
        ("/data/reports/{{ dag.dag_id }}/{{ run_id }}/risk.html", "/data/reports/"),
        ("/data/reports/run_{{ run_id }}.html", "/data/reports/"),
        ("reports/{% if true %}x{% endif %}/r.html", "reports/"),
        ("C:\\reports\\{{ run_id }}\\r.html", "C:/reports/"),
        ("{{ params.report_path }}", None),
        ("/data/reports/risk.html", None),
        ("s3://bucket/{{ run_id }}/risk.html", None),
        (None, None),
    ],
)
def test_the_served_root_is_the_folder_before_the_first_template(
    template: str | None, root: str | None
) -> None:
    assert served_root(template) == root


@pytest.mark.parametrize(
    ("location", "root", "url"),
    [
        ("/data/reports/etl/run 1/risk.html", "/data/reports/", BASE + "etl/run%201/risk.html"),
        ("/data/reports/risk.html", None, BASE + "risk.html"),
        # rendered outside its root (a template holding ../): the file name only
        ("/data/other/risk.html", "/data/reports/", BASE + "risk.html"),
        ("/data/reports/../x/risk.html", "/data/reports/", BASE + "risk.html"),
    ],
)
def test_the_url_keeps_the_path_below_the_root(location: str, root: str | None, url: str) -> None:
    assert report_url(location, BASE, root) == url


def test_the_report_links_back_to_the_airflow_run_and_the_cli_report_does_not(
    csv: Path, tmp_path: Path
) -> None:
    from reident_airflow.cli import main

    ensure_airflow_db()
    log_url = "http://airflow.example.org:8080/dags/release/runs/manual__1/tasks/gate?try_number=1"
    ReidentificationRiskOperator(
        task_id="gate", path=str(csv), quasi_identifiers="a", report_path=str(tmp_path / "a.html")
    ).execute({"ti": RunTI(log_url=log_url)})
    in_airflow = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert f'<a href="{html.escape(log_url)}">Open this run in Airflow</a>' in in_airflow
    cli = tmp_path / "cli.html"
    argv = ["assess", str(csv), "--qi", "a", "--report", str(cli)]
    assert main(argv, out=io.StringIO(), err=io.StringIO()) == 0
    assert "Open this run in Airflow" not in cli.read_text(encoding="utf-8")
    assert '<a href="http' not in cli.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "log_url", ["javascript:alert(1)", "data:text/html,x", "/relative/log", "http:///nohost"]
)
def test_a_log_url_that_is_no_web_url_is_never_a_link(
    csv: Path, tmp_path: Path, log_url: str
) -> None:
    ensure_airflow_db()
    ReidentificationRiskOperator(
        task_id="gate", path=str(csv), quasi_identifiers="a", report_path=str(tmp_path / "a.html")
    ).execute({"ti": RunTI(log_url=log_url)})
    assert "Open this run in Airflow" not in (tmp_path / "a.html").read_text(encoding="utf-8")
