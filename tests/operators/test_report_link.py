"""``report_base_url`` is an absolute http(s) URL, and the report link never carries a URL a
browser would run (``javascript:``) or show from itself (``data:``)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.operators.direct_match import DirectMatchProtectionOperator
from reident_airflow.operators.report_link import ReidentReportLink, linkable, report_url
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError
from tests.conftest import ensure_airflow_db
from tests.operators._fakes import PushedTI

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
