"""DataflyOperator: files and databases (SQLite, PostgreSQL, MariaDB), atomic publish, the
infeasible case failing without retries, hostile parameters, hierarchy builder specs."""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow._compat import AirflowFailException
from reident_airflow.engine.hierarchies import interval_hierarchy
from reident_airflow.operators.datafly import DataflyOperator, resolve_hierarchies
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from reident_airflow.sources import writers
from tests.conftest import oracle_data, require_server
from tests.operators._fakes import PushedTI, make_operator

QIS = ["sex", "age", "race"]
HIERARCHIES = {q: str(oracle_data(f"adult_hierarchy_{q}.csv")) for q in QIS}


def _operator(engine: sa.Engine | None = None, **kwargs: Any) -> DataflyOperator:
    options: dict[str, Any] = {
        "quasi_identifiers": QIS,
        "k": 5,
        "suppression_limit": 0.01,
        "hierarchies": HIERARCHIES,
    }
    options.update(kwargs)
    return make_operator(DataflyOperator, engine, **options)


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    frame["age"] = frame["age"].astype(int)  # typed, as a warehouse would hold it
    frame.insert(0, "record_id", range(1, len(frame) + 1))
    return frame


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "mariadb"])
def staged(
    request: pytest.FixtureRequest, adult: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[sa.Engine, str]]:
    """The staged table, loaded once per database; tests only read it."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('staging') / 'staging.db'}"
    else:
        url = require_server(request.param)
    engine = sa.create_engine(url)
    name = f"staged_{uuid.uuid4().hex[:8]}"
    adult.to_sql(name, engine, index=False, chunksize=5000)
    try:
        yield engine, name
    finally:
        with engine.begin() as conn:
            for table in sa.inspect(conn).get_table_names():
                if table.startswith(name):
                    sa.Table(table, sa.MetaData()).drop(conn)
        engine.dispose()


def _k_of(frame: pd.DataFrame) -> int:
    return int(frame.groupby(QIS).size().min())


def test_table_to_table(staged: tuple[sa.Engine, str], adult: pd.DataFrame) -> None:
    engine, name = staged
    ti = PushedTI()
    target = f"{name}_anon"
    report = _operator(engine, conn_id="staging", table=name, target_table=target).execute(
        {"ti": ti}
    )
    assert report["schema"] == "reident.datafly/v1" and report["passed"] is True
    assert report["levels"] == {"sex": 0, "age": 1, "race": 0}
    assert report["suppressed_records"] == 37 and report["suppression_limit"] == 301
    assert report["output"] == {
        "conn_id": "staging",
        "schema": None,
        "table": target,
        "records": 30125,
    }
    assert ti.pushed["return_value"] == report
    json.dumps(report)  # XCom-serializable, aggregates only
    released, _ = writers.read_sql_frame(engine, table=target)
    assert len(released) == 30125 and _k_of(released) >= 5
    # before/after: the staged 30,162 records, the 30,125 released (37 suppressed)
    assert (report["before"]["records"], report["after"]["records"]) == (30162, 30125)
    assert report["after"]["smallest_class"] == report["achieved_k"] == _k_of(released)
    assert report["after"]["suppressed_records"] == 37
    # the fingerprints: the staged table and the written one, counted by the database
    fp_in, fp_out = report["input"], report["output_fingerprint"]
    assert (fp_in["kind"], fp_in["table"], fp_in["rows"]) == ("database", name, 30162)
    assert (fp_out["kind"], fp_out["table"], fp_out["rows"]) == ("database", target, 30125)
    if engine.dialect.name == "postgresql":  # pg_current_snapshot(): xmin:xmax:xip
        assert fp_out["snapshot"] is not None and fp_out["snapshot"].count(":") == 2
    # non-QI columns untouched and typed as in the source: the id still aligns the rows
    columns = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns(target)}
    assert isinstance(columns["record_id"], sa.Integer)
    original = adult.set_index("record_id").loc[released["record_id"].astype(int)]
    assert released["education"].tolist() == original["education"].tolist()
    assert set(released["age"]) <= {f"{lo}-{lo + 4}" for lo in range(0, 100, 5)}
    # the source is never modified
    source, _ = writers.read_sql_frame(engine, table=name)
    source = source.sort_values("record_id")
    assert len(source) == 30162 and source["age"].astype(int).tolist() == adult["age"].tolist()


def test_failed_write_leaves_the_previous_release(
    staged: tuple[sa.Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kill the write midway (after 2 chunks): the target still holds the previous release."""
    engine, name = staged
    target = f"{name}_anon"
    _operator(engine, conn_id="staging", table=name, target_table=target, k=2).execute({})
    before, _ = writers.read_sql_frame(engine, table=target)

    def killed(what: str, rows: int) -> None:
        if what == "chunk" and rows >= 2000:
            raise OSError("the worker died")

    monkeypatch.setattr(
        writers,
        "write_table_atomic",
        functools.partial(writers.write_table_atomic, checkpoint=killed),
    )
    op = _operator(engine, conn_id="staging", table=name, target_table=target, chunk_rows=1000)
    with pytest.raises(OSError, match="died"):
        op.execute({})
    after, _ = writers.read_sql_frame(engine, table=target)
    pd.testing.assert_frame_equal(after, before)
    leftovers = [t for t in sa.inspect(engine).get_table_names() if t.startswith(target + "__")]
    assert leftovers == []


def test_sql_query_source(staged: tuple[sa.Engine, str], tmp_path: Path) -> None:
    engine, name = staged
    quoted = engine.dialect.identifier_preparer.quote(name)
    out = tmp_path / "anon.parquet"
    report = _operator(
        engine,
        conn_id="staging",
        sql=f"SELECT record_id, sex, age, race FROM {quoted} WHERE sex = 'Female'",
        target_path=str(out),
        suppression_limit=None,
    ).execute({})
    released = pd.read_parquet(out)
    assert list(released.columns) == ["record_id", "sex", "age", "race"]
    assert report["records"] == 9782 and len(released) == report["output"]["records"]
    assert _k_of(released) >= 5


def test_file_to_file_with_rendered_templates(tmp_path: Path) -> None:
    source = tmp_path / "staged.csv"
    source.write_bytes(oracle_data("adult.csv").read_bytes())
    op = _operator(
        path="{{ params.source }}",
        sep=";",
        quasi_identifiers="{{ params.qis }}",
        k="{{ params.k }}",
        suppression_limit="{{ params.limit }}",
        hierarchies="{{ params.hierarchies | tojson }}",
        target_path="{{ params.target }}",
        chunk_rows="{{ params.chunk }}",
    )
    params = {
        "source": str(source),
        "qis": "sex,age,race",
        "k": 10,
        "limit": "1%",
        "hierarchies": HIERARCHIES,
        "target": str(tmp_path / "anon.csv"),
        "chunk": 5000,
    }
    op.render_template_fields({"params": params})
    assert op.k == "10" and isinstance(op.hierarchies, str)  # rendered to text
    report = op.execute({})
    released = pd.read_csv(tmp_path / "anon.csv", sep=";", dtype=str, keep_default_na=False)
    assert report["k"] == 10 and _k_of(released) >= 10
    assert report["suppressed_records"] <= 301 == report["suppression_limit"]
    assert source.read_bytes() == oracle_data("adult.csv").read_bytes()


def test_infeasible_fails_without_retries_and_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "staged.csv"
    source.write_bytes(oracle_data("adult.csv").read_bytes())
    target = tmp_path / "anon.csv"
    target.write_text("previous release\n", encoding="utf-8")
    ti = PushedTI()
    op = _operator(
        path=str(source),
        sep=";",
        suppression_limit=0,
        hierarchies={**HIERARCHIES, "age": {"type": "interval", "widths": [], "top": None}},
        target_path=str(target),
    )
    with pytest.raises(ReidentificationBreach) as info:
        op.execute({"ti": ti})
    assert isinstance(info.value, AirflowFailException)  # Airflow does not retry it
    assert info.value.check == "datafly" and info.value.k == 5
    assert info.value.breaches == [{"metric": "datafly.records_below_k", "observed": 7, "limit": 0}]
    report = ti.pushed["return_value"]
    assert report["passed"] is False and report["best_attempt"]["levels"]["age"] == 0
    assert "cannot reach k=5" in str(info.value)
    assert target.read_text() == "previous release\n"


def test_hierarchy_builders(adult: pd.DataFrame, tmp_path: Path) -> None:
    frame = adult.assign(
        zip=[f"{10000 + (i * 7919) % 9000}" for i in range(len(adult))],
        day=pd.Timestamp("2020-01-01") + pd.to_timedelta(adult["record_id"] % 700, unit="D"),
    )
    specs = {
        "age": {"type": "interval", "widths": [5, 10, 20]},
        "zip": {"type": "masking", "steps": [1, 2, 3]},
        "day": {"type": "date"},
        "ignored": "/not/a/qi.csv",  # a column outside the QIs is ignored
    }
    got = resolve_hierarchies(specs, frame, ["age", "zip", "day"])
    assert set(got) == {"age", "zip", "day"}
    assert got["age"].generalize(39, 1) == "35-39" and got["age"].top == 4
    assert got["zip"].generalize(frame["zip"].iloc[0], 2) == frame["zip"].iloc[0][:3] + "**"
    assert got["day"].generalize(pd.Timestamp("2020-03-04"), 1) == "2020-03"
    prebuilt = interval_hierarchy(frame["age"].unique(), column="age")
    assert resolve_hierarchies({"age": prebuilt}, frame, ["age"])["age"] is prebuilt
    path = tmp_path / "anon.parquet"
    parquet = tmp_path / "staged.parquet"
    frame.to_parquet(parquet, index=False)
    report = _operator(
        path=str(parquet),
        quasi_identifiers="age,zip,day",
        hierarchies=json.dumps({k: v for k, v in specs.items() if k != "ignored"}),
        target_path=str(path),
    ).execute({})
    assert report["passed"] is True and set(report["levels"]) == {"age", "zip", "day"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target_table": "staged"}, "is the source table"),
        ({"target_table": "t", "target_path": "x.csv"}, "either target_table or target_path"),
        ({"target_table": "t", "k": None}, "k is required"),
        ({"target_table": "t", "k": "2.5"}, "whole number"),
        ({"target_table": "t", "suppression_limit": "lots"}, "suppression_limit must be"),
        ({"target_table": "t", "hierarchies": "not json"}, "hierarchies must be a mapping"),
        ({"target_table": "t", "hierarchies": {"age": {"type": "x"}}}, "has type 'x'"),
        ({"target_table": "t", "hierarchies": {"age": {"type": "date", "w": 1}}}, "take w"),
        ({"target_path": "s3://bucket/anon.csv"}, "must be a local file"),
        ({"target_path": "anon.xlsx"}, "*.csv or *.parquet"),
        ({"target_table": "t", "quasi_identifiers": "sex,zip"}, "unknown quasi-identifier"),
        ({"target_table": "t", "k": 0}, "k must be at least 1"),
        ({"target_table": "t", "sep": ";;"}, "single character"),
        ({"target_table": "t", "chunk_rows": "0"}, "chunk_rows must be 1 or more"),
        ({"target_table": "t", "chunk_rows": "many"}, "chunk_rows must be a number"),
    ],
)
def test_hostile_values_fail_clearly(kwargs: dict[str, Any], message: str, tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    pd.DataFrame({"sex": ["M", "F"] * 5, "age": ["39"] * 10, "race": ["White"] * 10}).to_sql(
        "staged", engine, index=False
    )
    options = {"conn_id": "staging", "table": "staged", **kwargs}
    op = _operator(engine, **options)
    with pytest.raises(ReidentConfigurationError, match=message.replace("*", r"\*")):
        op.execute({"ti": PushedTI()})
    assert sa.inspect(engine).get_table_names() == ["staged"]  # nothing written
    engine.dispose()


def test_uncovered_value_names_column_and_count_never_values(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    frame = pd.DataFrame({"sex": ["Male"] * 6, "age": ["39"] * 5 + ["Secret-Value"], "race": "x"})
    frame["race"] = "White"
    frame.to_sql("staged", engine, index=False)
    op = _operator(engine, conn_id="staging", table="staged", target_table="t")
    with pytest.raises(ReidentConfigurationError) as info:
        op.execute({})
    assert "column 'age' does not cover 1 distinct value (1 record)" in str(info.value)
    assert "Secret" not in str(info.value)
    engine.dispose()


def test_connection_errors_are_left_to_retries() -> None:
    engine = sa.create_engine("postgresql+psycopg2://postgres@127.0.0.1:1/none")
    op = _operator(engine, conn_id="staging", table="t", target_table="t2")
    with pytest.raises(sa.exc.OperationalError):
        op.execute({})


@pytest.mark.parametrize("deterministic", [True, False], ids=["data-error", "connection-error"])
def test_write_errors_fail_now_only_when_a_retry_fails_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deterministic: bool
) -> None:
    # A value too long or a constraint fails the same way on every try: no retries
    # (AirflowFailException). A lost connection may not: Airflow's retries apply.
    source = tmp_path / "adult.csv"
    source.write_bytes(oracle_data("adult.csv").read_bytes())

    def refuse(*args: Any, **kwargs: Any) -> int:
        raise writers.TableWriteError(
            "insert into 'release' failed", table="release", deterministic=deterministic
        )

    monkeypatch.setattr(writers, "write_table_atomic", refuse)
    op = _operator(
        sa.create_engine(f"sqlite:///{tmp_path / 'target.db'}"),
        path=str(source),
        sep=";",
        target_conn_id="target",
        target_table="release",
    )
    expected = ReidentConfigurationError if deterministic else writers.TableWriteError
    with pytest.raises(expected) as info:
        op.execute({"ti": PushedTI()})
    assert isinstance(info.value, AirflowFailException) is deterministic
