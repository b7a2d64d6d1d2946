"""Journalist and marketer against a population register, end to end (hand-computed case).

The case of ``tests/engine/test_register.py``: sample A x2, B x1; register A x4, B x2, C x4.
By hand: F_A = 4, F_B = 2; journalist highest 1/2, lowest 1/4, average (1/4 + 1/4 + 1/2)/3 =
1/3, success rate max(u / sum F = 2/6, 1/3) = 1/3; marketer (2/4 + 1/2)/3 = 1/3; N = 10.
The register is read as a file, as a second table of the same database (a second
``GROUP BY``), and by the operator.
"""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.cli import main
from reident_airflow.operators.risk import ReidentificationRiskOperator
from tests.operators._fakes import PushedTI

SAMPLE = pd.DataFrame({"q": ["A", "A", "B"], "w": [2.0, 2.0, 2.0]})
REGISTER = pd.DataFrame({"q": ["A"] * 4 + ["B"] * 2 + ["C"] * 4})


def _check(doc: dict[str, Any]) -> None:
    j = doc["journalist"]
    assert j["basis"] == "population_table"
    assert j["highest_risk"] == 0.5 and j["lowest_risk"] == 0.25
    assert j["average_risk"] == pytest.approx(1 / 3)
    assert j["records_at_risk"] == pytest.approx(1 / 3)  # threshold 0.3: B only
    assert j["success_rate"] == pytest.approx(1 / 3)
    assert doc["marketer"]["risk"] == pytest.approx(1 / 3)
    assert doc["uniqueness"]["population"]["population_size"] == 10
    assert doc["prosecutor"]["highest_risk"] == 1.0


def _cli(*argv: str) -> dict[str, Any]:
    out = io.StringIO()
    code = main(["assess", *argv, "--record-threshold", "0.3", "--json", "-"], out=out)
    assert code == 0
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def test_register_as_a_file(tmp_path: Path) -> None:
    SAMPLE.to_csv(tmp_path / "sample.csv", index=False)
    REGISTER.to_csv(tmp_path / "register.csv", index=False)
    doc = _cli(
        str(tmp_path / "sample.csv"),
        "--qi",
        "q",
        "--population-table",
        str(tmp_path / "register.csv"),
    )
    _check(doc)
    # with sampling weights too: the register stays the journalist's basis, the individual
    # risk is reported beside it (F = 4 and 2 from the weights: the same populations here)
    both = _cli(
        str(tmp_path / "sample.csv"),
        "--qi",
        "q",
        "--population-table",
        str(tmp_path / "register.csv"),
        "--weight",
        "w",
    )
    _check(both)
    assert both["individual_risk"]["estimated_population"] == 6.0


@pytest.fixture
def database(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    engine = sa.create_engine(url)
    SAMPLE.to_sql("sample", engine, index=False)
    REGISTER.to_sql("register", engine, index=False)
    engine.dispose()
    return url


def test_register_as_a_table_of_the_same_database(database: str) -> None:
    _check(_cli(database, "--table", "sample", "--qi", "q", "--population-table", "register"))


def test_operator_with_a_register(database: str) -> None:
    op = ReidentificationRiskOperator(
        task_id=f"t_{uuid.uuid4().hex[:6]}",
        conn_id="x",
        table="sample",
        quasi_identifiers="q",
        population_table="register",
        record_threshold="0.3",
    )
    engine = sa.create_engine(database)
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam

    context: Any = {"ti": PushedTI()}  # the only key the operator reads
    _check(op.execute(context))
