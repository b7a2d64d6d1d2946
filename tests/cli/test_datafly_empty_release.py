"""Datafly never publishes an empty release: when the suppression limit would let every
record go, the CLI exits 1 and the operator fails, both saying what to change, and nothing is
written (the previous release stays).

The table, by hand: 4 records whose zip codes 10, 11, 12, 13 are all distinct; the zip
hierarchy has one level only (no generalization), so with k = 2 every class (size 1) is below
k: 4 records below k, and a suppression limit of 4 would remove them all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reident_airflow.operators.datafly import DataflyOperator
from reident_airflow.outcomes import ReidentificationBreach
from tests.cli._cli import run
from tests.conftest import ensure_airflow_db
from tests.operators._fakes import PushedTI

PREVIOUS = "previous release\n"


@pytest.fixture
def staged(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "staged.csv"
    source.write_text("id,zip\n1,10\n2,11\n3,12\n4,13\n", encoding="utf-8")
    flat = tmp_path / "zip.csv"  # an ARX hierarchy of one level: each value is its own
    flat.write_text("10\n11\n12\n13\n", encoding="utf-8")
    return source, flat


def test_cli_refuses_to_write_an_empty_release(staged: tuple[Path, Path], tmp_path: Path) -> None:
    source, flat = staged
    output = tmp_path / "release.csv"
    output.write_text(PREVIOUS, encoding="utf-8")
    report = tmp_path / "report.json"
    code, _, err = run(
        "datafly", str(source), "--qi", "zip", "--hierarchy", f"zip={flat}", "--k", "2",
        "--suppression-limit", "4", "--output", str(output), "--json", str(report), "--quiet",
    )  # fmt: skip
    assert code == 1, err
    assert "every record (4) would be suppressed" in err and "nothing was written" in err
    assert "a larger limit cannot help" in err
    assert len(err.strip().splitlines()) == 1
    assert output.read_text(encoding="utf-8") == PREVIOUS
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert doc["passed"] is False and doc["below_k"] == 4


def test_operator_refuses_to_publish_an_empty_release(
    staged: tuple[Path, Path], tmp_path: Path
) -> None:
    ensure_airflow_db()
    source, flat = staged
    target = tmp_path / "release.csv"
    target.write_text(PREVIOUS, encoding="utf-8")
    ti = PushedTI()
    op = DataflyOperator(
        task_id="anonymize",
        path=str(source),
        quasi_identifiers="zip",
        k=2,
        suppression_limit=4,
        hierarchies={"zip": str(flat)},
        target_path=str(target),
    )
    with pytest.raises(ReidentificationBreach) as info:
        op.execute({"ti": ti})
    message = str(info.value)
    assert "every record (4) would be suppressed" in message and "\n" not in message
    # no zip code quoted; the staged path is removed first (pytest's tmp dir may hold "10")
    assert "10" not in message.replace(str(source), "").replace("(4)", "")
    assert target.read_text(encoding="utf-8") == PREVIOUS
    assert ti.pushed["return_value"]["passed"] is False
