"""Issue 16: an operator's outputs (``report_path``, ``target_path``) never name one of its
inputs (the staged file, the avatar/original files, hierarchy files) nor each other, and are
checked writable before anything is read or written; a Datafly breach carries the report's
location to the XCom and the alert.

Before the fix (run on 5c2dca3) every test here failed except the one for ``target_path`` over
the source file: ``report_path`` over an input replaced the data file with HTML (the risk
and direct-match operators) or the hierarchy file (Datafly), ``target_path`` over a
hierarchy file replaced it with the release, and Datafly's breach report had no
``report_location``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.operators.direct_match import DirectMatchProtectionOperator
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests.operators._fakes import PushedTI

ROWS = "zip,sex,age\n10001,F,30\n10001,F,30\n10002,M,41\n10002,M,41\n10003,F,52\n"
SEX_HIERARCHY = "F;*\nM;*\n"


def _files(tmp_path: Path) -> dict[str, Path]:
    files = {"data": tmp_path / "staged.csv", "sex": tmp_path / "sex.csv"}
    files["data"].write_text(ROWS)
    files["sex"].write_text(SEX_HIERARCHY)
    return files


def _unchanged(files: dict[str, Path]) -> None:
    assert files["data"].read_text() == ROWS
    assert files["sex"].read_text() == SEX_HIERARCHY


def _risk(files: dict[str, Path], report_path: Path) -> ReidentificationRiskOperator:
    return ReidentificationRiskOperator(
        task_id="assess",
        path=str(files["data"]),
        quasi_identifiers=["zip", "sex"],
        report_path=str(report_path),
    )


def _datafly(files: dict[str, Path], **kwargs: Any) -> DataflyOperator:
    options: dict[str, Any] = {
        "path": str(files["data"]),
        "quasi_identifiers": ["sex"],
        "k": 2,
        "hierarchies": {"sex": str(files["sex"])},
        "target_path": str(files["data"].with_name("released.csv")),
    }
    options.update(kwargs)
    return DataflyOperator(task_id="datafly", **options)


def test_risk_report_path_over_the_staged_file_is_refused(tmp_path: Path) -> None:
    files = _files(tmp_path)
    with pytest.raises(ReidentConfigurationError, match=r"report_path .* is the source file"):
        _risk(files, files["data"]).execute({"ti": PushedTI()})
    _unchanged(files)


def test_risk_report_path_through_a_link_is_refused(tmp_path: Path) -> None:
    files = _files(tmp_path)
    link = tmp_path / "report.html"
    os.link(files["data"], link)  # a hard link: another name for the data file
    with pytest.raises(ReidentConfigurationError, match="is the source file"):
        _risk(files, link).execute({"ti": PushedTI()})
    _unchanged(files)


def test_risk_report_path_that_cannot_be_written_fails_before_any_work(tmp_path: Path) -> None:
    files = _files(tmp_path)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the report's directory should be\n")
    ti = PushedTI()
    with pytest.raises(ReidentConfigurationError, match="report_path"):
        _risk(files, blocker / "report.html").execute({"ti": ti})
    assert ti.pushed == {}  # nothing was computed, nothing pushed
    _unchanged(files)


def test_direct_match_report_path_over_an_input_is_refused(tmp_path: Path) -> None:
    files = _files(tmp_path)
    avatar = tmp_path / "avatar.csv"
    avatar.write_text(ROWS)
    for over in (files["data"], avatar):
        op = DirectMatchProtectionOperator(
            task_id="dm",
            original_path=str(files["data"]),
            avatar_path=str(avatar),
            report_path=str(over),
        )
        with pytest.raises(ReidentConfigurationError, match="report_path"):
            op.execute({"ti": PushedTI()})
    _unchanged(files)
    assert avatar.read_text() == ROWS


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ({"report_path": "sex"}, r"report_path .* is the hierarchy file of sex"),
        ({"target_path": "sex"}, r"target_path .* is the hierarchy file of sex"),
        ({"report_path": "data"}, r"report_path .* is the source file"),
        ({"target_path": "data"}, r"target_path .* is the source file"),
    ],
)
def test_datafly_outputs_over_inputs_are_refused(
    outputs: dict[str, str], message: str, tmp_path: Path
) -> None:
    files = _files(tmp_path)
    op = _datafly(files, **{flag: str(files[name]) for flag, name in outputs.items()})
    with pytest.raises(ReidentConfigurationError, match=message):
        op.execute({"ti": PushedTI()})
    _unchanged(files)


def test_datafly_hierarchy_given_as_a_spec_is_an_input_too(tmp_path: Path) -> None:
    files = _files(tmp_path)
    op = _datafly(
        files,
        hierarchies={"sex": {"type": "arx", "path": str(files["sex"])}},
        report_path=str(files["sex"]),
    )
    with pytest.raises(ReidentConfigurationError, match="hierarchy file of sex"):
        op.execute({"ti": PushedTI()})
    _unchanged(files)


def test_datafly_report_and_target_on_the_same_file_are_refused(tmp_path: Path) -> None:
    files = _files(tmp_path)
    same = str(tmp_path / "out.csv")
    with pytest.raises(ReidentConfigurationError, match="name the same file"):
        _datafly(files, target_path=same, report_path=same).execute({"ti": PushedTI()})
    assert not Path(same).exists()
    _unchanged(files)


def test_datafly_breach_carries_the_report_location(tmp_path: Path) -> None:
    files = _files(tmp_path)
    report = tmp_path / "reports" / "datafly.html"
    ti = PushedTI()
    # age without generalisation: the one record aged 52 stays alone, and none may be
    # suppressed, so k = 2 cannot be reached
    op = _datafly(
        files,
        quasi_identifiers=["age"],
        hierarchies={"age": {"type": "interval", "widths": [], "top": None}},
        suppression_limit=0,
        report_path=str(report),
    )
    with pytest.raises(ReidentificationBreach) as info:
        op.execute({"ti": ti})
    assert report.is_file()
    assert info.value.report["report_location"] == str(report)
    assert ti.pushed["return_value"]["passed"] is False  # the one copy of the report
    assert ti.pushed["report_location"] == str(report)
    assert ti.pushed["report_url"] is None  # a local file and no base URL: no link
    _unchanged(files)
