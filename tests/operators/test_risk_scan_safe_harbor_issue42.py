"""Issue 42 item 2 in the gate: with ``safe_harbor=True`` and ``identifier_scan="fail"`` a
staged ``admit_month`` (``2025-05``) fails the task as an exact date does (Safe Harbor removes
every element of a date but its year); without Safe Harbor the task succeeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentificationBreach
from tests.operators._fakes import PushedTI, make_operator


def _staged(tmp_path: Path) -> str:
    path = tmp_path / "staged.csv"
    rows = ["sex,admit_month"] + [f"{'FM'[i % 2]},2025-{1 + i % 12:02d}" for i in range(60)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def test_admit_month_fails_the_gate_under_safe_harbor(tmp_path: Path) -> None:
    op = make_operator(
        ReidentificationRiskOperator,
        path=_staged(tmp_path),
        quasi_identifiers="sex",
        min_k=2,
        fingerprint=False,
        identifier_scan="fail",
        safe_harbor=True,
    )
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach):
        op.execute({"ti": ti})
    report = ti.pushed["return_value"]
    assert report["identifier_scan"]["failing"] == ["admit_month"]


def test_admit_month_passes_the_gate_without_safe_harbor(tmp_path: Path) -> None:
    op = make_operator(
        ReidentificationRiskOperator,
        path=_staged(tmp_path),
        quasi_identifiers="sex",
        min_k=2,
        fingerprint=False,
        identifier_scan="fail",
        safe_harbor=False,
    )
    report = op.execute({"ti": PushedTI()})
    assert report["passed"] is True and report["identifier_scan"]["failing"] == []
