"""``reident assess NEW --previous OLD`` and the risk operator's ``previous_release=``: the
differencing gate end to end (docs/metrics.md §12, issue 28).

The releases, by hand: the previous one holds 40 records of class (F, 100) (diagnoses d0..d6
in turn) and 6 of (M, 200) (y0..y5). The candidate drops (M, 200, y4) and (M, 200, y5) and
admits one patient, (F, 100, d3), a row the previous release already holds 6 times: a 7th
copy (multisets). So, on the QIs sex and zip:

- the candidate alone: classes of 41 and 4, k = 4: it passes ``min_k = 4``;
- arrivals: 1 record in (F, 100): a(c) = 1, arrival k 1, highest risk 1/1 = 1;
- departures: 2 records in (M, 200): d(c) = 2, departure k 2, highest risk 1/2.

Read from CSV, Parquet, SQLite, PostgreSQL and MariaDB, the same numbers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentificationBreach
from tests.cli._cli import assess_json, one_line_error, run
from tests.conftest import require_server
from tests.operators._fakes import PushedTI

PREVIOUS = pd.DataFrame(
    {
        "sex": ["F"] * 40 + ["M"] * 6,
        "zip": ["100"] * 40 + ["200"] * 6,
        "diagnosis": [f"d{i % 7}" for i in range(40)] + [f"y{i}" for i in range(6)],
    }
)
CANDIDATE = pd.concat(
    [
        PREVIOUS.iloc[:44],
        pd.DataFrame({"sex": ["F"], "zip": ["100"], "diagnosis": ["d3"]}),
    ],
    ignore_index=True,
)
GATE = ("--qi", "sex,zip", "--min-k", "4", "--min-arrival-k", "2")
ARRIVAL_BREACH = {"metric": "since_last_release.arrivals.k", "observed": 1.0, "limit": 2.0}
ADVICE = (
    "reident: advice: hold back 1 of the 1 arrivals (1 of 1 classes) until their class has "
    "2 arrivals, or release arrivals in batches"
)


def _check(doc: dict[str, Any]) -> None:
    assert doc["k"] == 4 and doc["records"] == 45
    assert doc["breaches"] == [ARRIVAL_BREACH]
    since = doc["since_last_release"]
    assert since["schema"] == "reident.differencing/v1"
    assert (since["previous_records"], since["records"]) == (46, 45)
    a, d = since["arrivals"], since["departures"]
    assert (a["records"], a["classes"], a["k"], a["highest_risk"]) == (1, 1, 1, 1.0)
    assert a["histogram"] == [[1, 1]]
    assert (d["records"], d["classes"], d["k"], d["highest_risk"]) == (2, 1, 2, 0.5)
    assert d["histogram"] == [[2, 1]]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    PREVIOUS.to_csv(tmp_path / "old.csv", index=False)
    CANDIDATE.to_csv(tmp_path / "new.csv", index=False)
    PREVIOUS.to_parquet(tmp_path / "old.parquet", index=False)
    CANDIDATE.to_parquet(tmp_path / "new.parquet", index=False)
    return tmp_path


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_files(files: Path, kind: str) -> None:
    new, old = str(files / f"new.{kind}"), str(files / f"old.{kind}")
    code, doc = assess_json(new, *GATE, "--previous", old, "--no-ranking")
    assert code == 1
    _check(doc)
    alone, plain = assess_json(new, "--qi", "sex,zip", "--min-k", "4", "--no-ranking")
    assert alone == 0 and "since_last_release" not in plain  # the table alone passes


def test_the_advice_line(files: Path) -> None:
    code, _, err = run(
        "assess", str(files / "new.csv"), *GATE, "--previous", str(files / "old.csv")
    )
    assert code == 1
    assert ADVICE in err.splitlines()


def test_warning_level_and_departures(files: Path) -> None:
    code, doc = assess_json(
        str(files / "new.csv"),
        "--qi",
        "sex,zip",
        "--previous",
        str(files / "old.csv"),
        "--max-departure-risk",
        "0.5",
        "--warn-min-departure-k",
        "3",
    )
    # risk 1/2 is at most 0.5: passes; d(c) = 2 < 3: a warning
    assert code == 0 and doc["breaches"] == []
    assert doc["warnings"] == [
        {"metric": "since_last_release.departures.k", "observed": 2.0, "limit": 3.0}
    ]


def test_a_limit_without_a_previous_release_is_a_usage_error(files: Path) -> None:
    code, _, err = run("assess", str(files / "new.csv"), *GATE)
    assert one_line_error(code, err).endswith(
        "--min-arrival-k gates the difference from the previous release: give --previous"
    )


def test_a_missing_previous_file_is_an_input_error(files: Path) -> None:
    code, _, err = run("assess", str(files / "new.csv"), *GATE, "--previous", "nowhere.csv")
    assert "nowhere.csv" in one_line_error(code, err)


def _tables(url: str, prefix: str) -> tuple[str, str]:
    engine = sa.create_engine(url)
    new, old = f"{prefix}_new", f"{prefix}_old"
    CANDIDATE.to_sql(new, engine, index=False)
    PREVIOUS.to_sql(old, engine, index=False)
    engine.dispose()
    return new, old


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    yield (url, *_tables(url, "rel"))


def _server_db(kind: str) -> Iterator[tuple[str, str, str]]:
    url = require_server(kind)
    prefix = f"i28gate_{uuid.uuid4().hex[:8]}"
    new, old = _tables(url, prefix)
    yield url, new, old
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for name in (new, old):
            sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
    engine.dispose()


@pytest.fixture
def postgres_db() -> Iterator[tuple[str, str, str]]:
    yield from _server_db("postgresql")


@pytest.fixture
def mariadb_db() -> Iterator[tuple[str, str, str]]:
    yield from _server_db("mariadb")


@pytest.mark.parametrize("database", ["sqlite_db", "postgres_db", "mariadb_db"])
def test_tables_of_one_database(database: str, request: pytest.FixtureRequest) -> None:
    url, new, old = request.getfixturevalue(database)
    code, doc = assess_json(url, "--table", new, *GATE, "--previous-table", old)
    assert code == 1
    _check(doc)


# ---------------------------------------------------------------------- the risk operator
def _operator(**kwargs: Any) -> ReidentificationRiskOperator:
    return ReidentificationRiskOperator(
        task_id=f"t_{uuid.uuid4().hex[:6]}",
        quasi_identifiers="sex,zip",
        min_k=4,
        min_arrival_k="2",
        rank_attributes=False,
        fingerprint=False,
        **kwargs,
    )


def test_operator_on_files(files: Path) -> None:
    op = _operator(path=str(files / "new.parquet"), previous_release=str(files / "old.parquet"))
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach) as caught:
        op.execute({"ti": ti})  # type: ignore[arg-type]
    _check(ti.pushed["return_value"])
    assert "hold back 1 of the 1 arrivals" in str(caught.value)


def test_operator_first_run_has_nothing_to_compare(files: Path) -> None:
    op = _operator(path=str(files / "new.csv"), previous_release=str(files / "none.csv"))
    report = op.execute({"ti": PushedTI()})  # type: ignore[arg-type]
    assert report["passed"] is True and report["since_last_release"] is None


@pytest.mark.parametrize("database", ["sqlite_db", "postgres_db", "mariadb_db"])
def test_operator_on_tables(database: str, request: pytest.FixtureRequest) -> None:
    url, new, old = request.getfixturevalue(database)
    engine = sa.create_engine(url)
    op = _operator(conn_id="x", table=new, previous_release=old)
    op.get_engine = lambda conn_id: engine  # type: ignore[method-assign]  # the test seam
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach):
        op.execute({"ti": ti})  # type: ignore[arg-type]
    _check(ti.pushed["return_value"])
    first = _operator(conn_id="x", table=new, previous_release=f"{old}_missing")
    first.get_engine = lambda conn_id: engine  # type: ignore[method-assign]
    assert first.execute({"ti": PushedTI()})["since_last_release"] is None  # type: ignore[arg-type]


# ----------------------------------------------------------------------- release ledger
@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_previous_names_a_ledger_file(files: Path, kind: str) -> None:
    from reident_airflow.sources.writers import ledger_of_file

    old = files / f"old.{kind}"
    ledger = ledger_of_file(old, ["sex", "zip"])
    old.unlink()  # the release is gone: its ledger gives the same report
    code, doc = assess_json(
        str(files / f"new.{kind}"), *GATE, "--previous", str(ledger), "--no-ranking"
    )
    assert code == 1
    _check(doc)


@pytest.mark.parametrize("database", ["sqlite_db", "postgres_db", "mariadb_db"])
def test_previous_table_names_a_ledger(database: str, request: pytest.FixtureRequest) -> None:
    from reident_airflow.sources.writers import ledger_of_table

    url, new, old = request.getfixturevalue(database)
    engine = sa.create_engine(url)
    ledger = ledger_of_table(engine, old, ["sex", "zip"])
    try:
        code, doc = assess_json(url, "--table", new, *GATE, "--previous-table", ledger)
        assert code == 1
        _check(doc)
    finally:
        with engine.begin() as conn:
            sa.Table(ledger, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


def test_operator_with_a_ledger_as_previous_release(files: Path) -> None:
    from reident_airflow.sources.writers import ledger_of_file

    ledger = ledger_of_file(files / "old.parquet", ["sex", "zip"])
    op = _operator(path=str(files / "new.parquet"), previous_release=str(ledger))
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach):
        op.execute({"ti": ti})  # type: ignore[arg-type]
    _check(ti.pushed["return_value"])


def test_datafly_keeps_a_ledger_for_the_next_assess(files: Path) -> None:
    # Datafly at k = 2 generalizes nothing here (classes of 40 and 6): the release is the
    # previous table, so the next assess against its ledger reports what _check expects
    for qi, values in (("sex", "FM"), ("zip", ("100", "200"))):
        (files / f"{qi}.csv").write_text("".join(f"{v};*\n" for v in values))
    output = files / "published.csv"
    code, _, _ = run(
        "datafly",
        str(files / "old.csv"),
        "--qi",
        "sex,zip",
        "--k",
        "2",
        "--suppression-limit",
        "0",
        "--hierarchy",
        f"sex={files / 'sex.csv'}",
        "--hierarchy",
        f"zip={files / 'zip.csv'}",
        "--output",
        str(output),
        "--release-ledger",
    )
    assert code == 0
    ledger = files / "published.csv.ledger.parquet"
    assert ledger.is_file()
    output.unlink()
    code, doc = assess_json(str(files / "new.csv"), *GATE, "--previous", str(ledger))
    assert code == 1
    _check(doc)
