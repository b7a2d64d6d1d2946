"""The same expectation on pandas, SQLite and PostgreSQL gives the same result, equal to what
``reident assess`` prints for the same options (the CLI is the reference): the document under
``details.assessment`` and, as ``observed_value``, the number it holds for the measure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow import cli
from reident_airflow.gx import (
    MEASURES,
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
)
from tests.conftest import oracle_data
from tests.gx.conftest import QIS, sql_batch

# (expectation, the CLI flags that print the same document)
CASES: list[tuple[Any, list[str]]] = [
    (ExpectTableToBeKAnonymous(quasi_identifiers=QIS, k=5), ["--min-k", "5"]),
    (
        ExpectTableReidentificationRiskToBeBelow(
            quasi_identifiers=QIS, measure="prosecutor.highest_risk", max_value=0.05
        ),
        ["--max-highest-risk", "0.05"],
    ),
    (
        ExpectTableReidentificationRiskToBeBelow(
            quasi_identifiers=QIS,
            measure="prosecutor.records_at_risk",
            max_value=0.05,
            record_threshold=0.05,
        ),
        ["--max-records-at-risk", "0.05", "--record-threshold", "0.05"],
    ),
    (
        ExpectTableReidentificationRiskToBeBelow(
            quasi_identifiers=QIS,
            measure="uniqueness.population.dankar.fraction",
            max_value=1e-7,
            region="usa",
        ),
        ["--region", "usa"],
    ),
]


def cli_document(flags: list[str], tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "assess.json"
    args = ["assess", str(oracle_data("adult.csv")), "--sep", ";", "--qi", ",".join(QIS)]
    code = cli.main([*args, *flags, "--json", str(out)])
    assert code in (0, 1)
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    # about the command line's run, not the assessment: the file read ("input", its
    # fingerprint) and the advice on a breach, computed by reading the file again
    for key in ("input", "advice"):
        document.pop(key, None)
    return document


def measured(expectation: Any, document: dict[str, Any]) -> Any:
    """The number of the CLI's document that the expectation checks (k, or the measure's)."""
    if isinstance(expectation, ExpectTableToBeKAnonymous):
        return document["k"]
    node: Any = document
    for part in MEASURES[expectation.measure].path:
        node = node[part]
    return node


@pytest.fixture(params=range(len(CASES)), ids=["k", "highest", "records_at_risk", "dankar"])
def case(request: pytest.FixtureRequest) -> tuple[Any, list[str]]:
    return CASES[request.param]


def test_pandas_and_sqlite_equal_the_cli(
    case: tuple[Any, list[str]],
    adult: pd.DataFrame,
    pandas_batch: Any,
    context: Any,
    sqlite_url: str,
    tmp_path: Path,
) -> None:
    expectation, flags = case
    on_frame = pandas_batch(adult).validate(expectation)
    on_sqlite = sql_batch(context, sqlite_url, "adult").validate(expectation)
    expected = cli_document(flags, tmp_path)
    for result in (on_frame, on_sqlite):
        assert result.result["details"]["assessment"] == expected
        assert result.result["observed_value"] == measured(expectation, expected)
    assert on_frame.result == on_sqlite.result
    assert on_frame.success is False and on_sqlite.success is False  # raw Adult fails each gate
    if expected["thresholds"]:  # gated like the CLI: the document says the same
        assert expected["passed"] is False


def test_postgresql_equals_pandas_and_the_cli(
    postgres_adult: tuple[str, str],
    adult: pd.DataFrame,
    pandas_batch: Any,
    context: Any,
    tmp_path: Path,
) -> None:
    url, table = postgres_adult
    batch = sql_batch(context, url, table)
    frame_batch = pandas_batch(adult)
    for expectation, flags in CASES:
        on_postgres = batch.validate(expectation)
        expected = cli_document(flags, tmp_path)
        assert on_postgres.result["details"]["assessment"] == expected
        assert on_postgres.result["observed_value"] == measured(expectation, expected)
        assert on_postgres.result == frame_batch.validate(expectation).result
        assert on_postgres.success is False  # the raw Adult table fails each of these gates


def test_the_database_groups_and_returns_one_row_per_class(
    context: Any, sqlite_url: str, adult: pd.DataFrame
) -> None:
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", record)
    try:
        result = sql_batch(context, sqlite_url, "adult").validate(
            ExpectTableToBeKAnonymous(quasi_identifiers=["sex", "marital-status"], k=2)
        )
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", record)
    assert result.success, result.exception_info
    grouped = [s for s in statements if "GROUP BY" in s]
    assert len(grouped) == 1
    assert "count(*)" in grouped[0]
    assert '"marital-status"' in grouped[0]  # identifiers quoted by SQLAlchemy
    # no statement fetches the rows themselves (GE only probes the table with SELECT 1 ... LIMIT)
    reads = [s for s in statements if "FROM adult" in s and "GROUP BY" not in s]
    assert all(s.startswith("SELECT 1") and "LIMIT" in s for s in reads), reads
    expected = adult.groupby(["sex", "marital-status"]).size()
    assert result.result["details"]["assessment"]["classes"] == len(expected)
    assert result.result["observed_value"] == int(expected.min())
