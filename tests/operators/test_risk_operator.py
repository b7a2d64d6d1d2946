"""ReidentificationRiskOperator against real databases, hostile parameters, provider info."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests.cli._cli import RUN_KEYS
from tests.conftest import ensure_airflow_db, oracle_data, require_server
from tests.operators._adult_gate import OPERATOR_OPTIONS, QIS, cli_json
from tests.operators._fakes import PushedTI, make_operator


def _operator(engine: sa.Engine, **kwargs: Any) -> ReidentificationRiskOperator:
    return make_operator(ReidentificationRiskOperator, engine, conn_id="x", **kwargs)


@pytest.fixture(scope="module")
def adult_frame() -> pd.DataFrame:
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    frame["age"] = frame["age"].astype(int)  # typed, as a warehouse would hold it
    return frame


@pytest.fixture(scope="module", params=["postgresql", "mariadb"])
def adult_in(
    request: pytest.FixtureRequest, adult_frame: pd.DataFrame
) -> Iterator[tuple[sa.Engine, str]]:
    engine = sa.create_engine(require_server(request.param))
    name = f"adult_{uuid.uuid4().hex[:8]}"
    adult_frame.to_sql(name, engine, index=False, chunksize=5000)
    try:
        yield engine, name
    finally:
        with engine.begin() as conn:
            sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


def test_database_operator_equals_cli_on_csv(adult_in: tuple[sa.Engine, str]) -> None:
    """The operator on Adult in PostgreSQL / MariaDB gives the JSON `reident assess` gives."""
    engine, name = adult_in
    expected = cli_json()
    ti = PushedTI()
    op = _operator(
        engine,
        table=name,
        **OPERATOR_OPTIONS,
    )
    got = op.execute({"ti": ti})
    assert ti.pushed["return_value"] == got
    run = {key: got.pop(key) for key in RUN_KEYS}  # the CLI's input is the file, here the table
    # the operator also scans every column (identifier_scan="warn" by default): Adult's
    # columns are clear, so the scan adds its object and nothing else
    assert got.pop("identifier_scan")["flagged"] == []
    assert got == expected
    assert run["advice"] is None
    assert (run["input"]["kind"], run["input"]["rows"]) == ("database", 30162)


def test_breach_message_names_metric_values_qis_and_k(adult_in: tuple[sa.Engine, str]) -> None:
    engine, name = adult_in
    op = _operator(
        engine, table=name, quasi_identifiers="sex,age,race", max_highest_risk=0.2, min_k="3"
    )
    with pytest.raises(ReidentificationBreach) as info:
        op.execute({"ti": PushedTI()})
    msg = str(info.value)
    assert "prosecutor.highest_risk = 1 (limit: at most 0.2)" in msg
    assert "k = 1 (limit: at least 3)" in msg and "sex, age, race" in msg
    assert info.value.k == 1 and len(info.value.breaches) == 2


def test_sql_query_source(adult_in: tuple[sa.Engine, str]) -> None:
    engine, name = adult_in
    quoted = engine.dialect.identifier_preparer.quote(name)
    op = _operator(engine, sql=f"SELECT sex, race FROM {quoted}", quasi_identifiers=["sex", "race"])
    report = op.execute({"ti": PushedTI()})
    assert report["records"] == 30162 and report["classes"] == 10  # ARX C4: 10 classes


@pytest.fixture
def sqlite_with_victim(tmp_path: Path) -> sa.Engine:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}).to_sql("staged", engine, index=False)
    pd.DataFrame({"keep": [1]}).to_sql("x", engine, index=False)
    return engine


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"table": "t; DROP TABLE x", "quasi_identifiers": "a"}, "does not exist"),
        ({"table": 'staged"; DROP TABLE x; --', "quasi_identifiers": "a"}, "does not exist"),
        ({"table": "staged", "quasi_identifiers": "a; DROP TABLE x"}, "unknown quasi-identifier"),
        ({"table": "staged", "quasi_identifiers": "nope"}, "available columns: 'a', 'b'"),
        (
            {"table": "staged", "quasi_identifiers": "a", "max_highest_risk": "abc"},
            "max_highest_risk must be a number",
        ),
        ({"table": "staged", "quasi_identifiers": "a", "min_k": "2.5"}, "whole number"),
        ({"table": "staged", "quasi_identifiers": "a", "on_breach": "explode"}, "on_breach"),
        ({"table": "staged", "quasi_identifiers": "a", "record_threshold": "7"}, "(0, 1]"),
    ],
)
def test_hostile_values_fail_clearly_and_execute_nothing(
    sqlite_with_victim: sa.Engine, kwargs: dict[str, Any], message: str
) -> None:
    op = _operator(sqlite_with_victim, **kwargs)
    with pytest.raises(
        ReidentConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        op.execute({"ti": PushedTI()})
    tables = set(sa.inspect(sqlite_with_victim).get_table_names())
    assert {"x", "staged"} <= tables  # the other table still exists, the source too
    with sqlite_with_victim.connect() as conn:
        assert conn.exec_driver_sql('SELECT count(*) FROM "staged"').scalar() == 3


def test_file_source_and_object_storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_airflow_db()
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n1,x\n2,y\n", encoding="utf-8")
    ti = PushedTI()
    op = ReidentificationRiskOperator(task_id="f", path=str(csv), quasi_identifiers="a,b")
    assert op.execute({"ti": ti})["classes"] == 2
    # a URL goes through Airflow's ObjectStoragePath (file:// here; s3:// etc. with providers),
    # downloaded once for the assessment, the advice and the fingerprint
    import reident_airflow.operators.base as base

    downloads: list[str] = []
    real = base.local_file

    def counted(path: str) -> Any:
        downloads.append(path)
        return real(path)

    monkeypatch.setattr(base, "local_file", counted)
    op = ReidentificationRiskOperator(
        task_id="m", path=f"file://{csv}", quasi_identifiers="a,b", min_k=2
    )
    with pytest.raises(ReidentificationBreach):
        op.execute({"ti": ti})
    assert downloads == [f"file://{csv}"]
    report = ti.pushed["return_value"]
    # classes (1, x) x2 and (2, y) x1: one class of one record below k = 2
    assert (report["advice"]["classes_below_k"], report["advice"]["records_below_k"]) == (1, 1)
    fingerprint = report["input"]
    assert fingerprint["location"] == f"file://{csv}" and fingerprint["rows"] == 3
    assert fingerprint["sha256"] == hashlib.sha256(csv.read_bytes()).hexdigest()


def test_a_glob_of_parquet_files_has_no_fingerprint(tmp_path: Path) -> None:
    """A glob names no one file to hash: ``input`` is null, as on the command line (the
    operator used to fail, after assessing, saying the glob did not exist)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": ["1", "1", "2"]}), tmp_path / "p1.parquet")
    pq.write_table(pa.table({"a": ["2", "3", "3"]}), tmp_path / "p2.parquet")
    op = make_operator(
        ReidentificationRiskOperator, path=str(tmp_path / "*.parquet"), quasi_identifiers="a"
    )
    report = op.execute({"ti": PushedTI()})
    assert (report["records"], report["input"]) == (6, None)


def test_connection_errors_are_left_to_retries() -> None:
    # an unreachable server is an infrastructure error: not an AirflowFailException
    engine = sa.create_engine("postgresql+psycopg2://postgres@127.0.0.1:1/none")
    op = _operator(engine, table="t", quasi_identifiers="a")
    with pytest.raises(sa.exc.OperationalError):
        op.execute({"ti": PushedTI()})


def test_provider_is_registered() -> None:
    out = subprocess.run(
        [str(Path(sys.executable).with_name("airflow")), "providers", "list", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    text = out.stdout  # the JSON array, possibly preceded by log lines
    names = {p["package_name"] for p in json.loads(text[text.index("[{") : text.rindex("]") + 1])}
    assert "reident-airflow" in names


def test_provider_info_names_importable_classes() -> None:
    import importlib

    from reident_airflow.get_provider_info import get_provider_info

    info = get_provider_info()
    for group in info["operators"]:
        for module in group["python-modules"]:
            importlib.import_module(module)
    for path in info["notifications"]:
        module, name = path.rsplit(".", 1)
        assert hasattr(importlib.import_module(module), name)


def test_verdict_without_ranking_counts_only_the_histogram(
    adult_in: tuple[sa.Engine, str], tmp_path: Path
) -> None:
    # rank_attributes=False: the database (or DuckDB for a file) hands over the class-size
    # histogram only; the numbers must equal the class-table path's, and no ranking is made.
    engine, name = adult_in
    full = _operator(engine, table=name, quasi_identifiers=QIS).execute({"ti": PushedTI()})
    quick = _operator(engine, table=name, quasi_identifiers=QIS, rank_attributes=False).execute(
        {"ti": PushedTI()}
    )
    assert quick["attributes"] == []
    for key in ("records", "classes", "k", "class_size_histogram", "prosecutor", "marketer"):
        assert quick[key] == full[key], key
    path = tmp_path / "adult.csv"
    path.write_bytes(oracle_data("adult.csv").read_bytes())
    from_file = ReidentificationRiskOperator(
        task_id="file_verdict",
        path=str(path),
        sep=";",
        quasi_identifiers=QIS,
        rank_attributes=False,
        memory_limit="512MB",
    ).execute({"ti": PushedTI()})
    for key in ("records", "classes", "k", "class_size_histogram", "prosecutor"):
        assert from_file[key] == full[key], key


def test_a_previous_release_in_object_storage_is_found_beside(tmp_path: Path) -> None:
    """``previous_release`` as a URL: downloaded and compared when it exists, a first run
    (nothing compared) when it does not. Hand count: the candidate holds (1, x) twice and
    (2, y) once, the previous release (1, x) and (2, y): one arrival, no departure."""
    csv = tmp_path / "new.csv"
    csv.write_text("a,b\n1,x\n1,x\n2,y\n", encoding="utf-8")
    old = tmp_path / "old.csv"
    old.write_text("a,b\n1,x\n2,y\n", encoding="utf-8")
    for previous, expected in ((f"file://{old}", (1, 0)), (f"file://{tmp_path}/none.csv", None)):
        op = ReidentificationRiskOperator(
            task_id="p", path=str(csv), quasi_identifiers="a,b", previous_release=previous
        )
        report = op.execute({"ti": PushedTI()})
        since = report["since_last_release"]
        found = (
            None
            if since is None
            else (since["arrivals"]["records"], since["departures"]["records"])
        )
        assert found == expected
