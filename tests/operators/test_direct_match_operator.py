"""DirectMatchProtectionOperator: the CLI's JSON from tables and files, the database pushdown,
on_breach, bad input and hostile parameters (clear task failures, nothing executed), and a run
under ``dag.test()`` with templated parameters and a real connection."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow._compat import AirflowFailException, AirflowSkipException
from reident_airflow.cli import main
from reident_airflow.engine.direct_match import DEFAULT_TARGET
from reident_airflow.operators.direct_match import DirectMatchProtectionOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests.cli.test_direct_match_cli import BAD, adult_pair, to_database
from tests.conftest import require_server
from tests.operators._dags import server_conn
from tests.operators._fakes import PushedTI, context, make_operator


def _operator(engine: sa.Engine | None = None, **kwargs: Any) -> DirectMatchProtectionOperator:
    return make_operator(DirectMatchProtectionOperator, engine, **kwargs)


def _cli_json(*argv: str) -> dict[str, Any]:
    out = io.StringIO()
    code = main(["direct-match", *argv, "--json", "-"], out=out, err=io.StringIO())
    assert code in (0, 1)
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


@pytest.fixture(scope="module")
def adult_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("adult")
    original, avatar = adult_pair()
    original.to_csv(folder / "original.csv", sep=";", index=False)
    avatar.to_csv(folder / "avatar.csv", sep=";", index=False)
    return str(folder / "original.csv"), str(folder / "avatar.csv")


@pytest.fixture(scope="module")
def adult_pg() -> Iterator[tuple[sa.Engine, str, str]]:
    engine = sa.create_engine(require_server("postgresql"))
    names = (f"dmo_o_{uuid.uuid4().hex[:8]}", f"dmo_a_{uuid.uuid4().hex[:8]}")
    for name, frame in zip(names, adult_pair(), strict=True):
        to_database(frame, name, engine)
    try:
        yield engine, *names
    finally:
        with engine.begin() as conn:
            for name in names:
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


# --- the same JSON as the CLI -----------------------------------------------------------------


def test_pushdown_equals_cli_on_csv_and_breach_carries_the_report(
    adult_pg: tuple[sa.Engine, str, str], adult_files: tuple[str, str]
) -> None:
    engine, original, avatar = adult_pg
    expected = _cli_json(*adult_files, "--sep", ";", "--key", "id")
    ti = PushedTI()
    op = _operator(
        engine, conn_id="staging", original_table=original, avatar_table=avatar, key="id"
    )
    with pytest.raises(ReidentificationBreach) as info:
        op.execute(context(ti))
    exc = info.value
    assert exc.check == "direct_match"
    assert exc.report == expected == ti.pushed["return_value"]
    assert exc.breaches == [{"metric": "direct_match.protection", "observed": 0.0, "limit": 50.0}]
    assert op.engines_asked == ["staging"]  # type: ignore[attr-defined]  # one connection
    message = str(exc)
    assert "protection = 0 (limit: at least 50)" in message
    assert "columns below target: code" in message and "30162 records" in message
    # aggregates only: no value of a record in the message
    assert "R000001" not in message and "Male" not in message


def test_two_connections_read_into_pandas_with_the_same_json(
    adult_pg: tuple[sa.Engine, str, str], adult_files: tuple[str, str]
) -> None:
    engine, original, avatar = adult_pg
    expected = _cli_json(*adult_files, "--sep", ";", "--key", "id")
    op = _operator(
        engine,
        conn_id="warehouse",
        avatar_conn_id="release",
        original_table=original,
        avatar_table=avatar,
        key="id",
        on_breach="warn",
    )
    assert op.execute(context()) == expected
    assert op.engines_asked == ["warehouse", "release"]  # type: ignore[attr-defined]
    # a table against a file
    op = _operator(
        engine, conn_id="w", original_table=original, avatar_path=adult_files[1], sep=";",
        key="id", on_breach="warn",
    )  # fmt: skip
    assert op.execute(context()) == expected


def test_files_and_object_storage(adult_files: tuple[str, str]) -> None:
    expected = _cli_json(*adult_files, "--sep", ";", "--key", "id", "--target", "0")
    op = _operator(
        original_path=adult_files[0], avatar_path=f"file://{adult_files[1]}", sep=";",
        key="id", target="0",
    )  # fmt: skip
    ti = PushedTI()
    assert op.execute(context(ti)) == expected == ti.pushed["return_value"]
    assert expected["passed"] is True and expected["breaches"] == []


def test_on_breach_skip_and_warn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    o, a = tmp_path / "o.csv", tmp_path / "a.csv"
    o.write_text("v,w\n1,k\n2,k\n3,k\n4,k\n", encoding="utf-8")
    a.write_text("v,w\n1,k\n2,k\n3,k\n9,k\n", encoding="utf-8")
    # v: m = 3, u = 4 -> 100 * (1 - 12/16) = 25; w: m = 4, u = 1 -> 75
    paths: dict[str, Any] = {"original_path": str(o), "avatar_path": str(a)}
    with pytest.raises(AirflowSkipException, match="protection = 25"):
        _operator(on_breach="skip", **paths).execute(context())
    report = _operator(on_breach="warn", **paths).execute(context())
    assert report["protection"] == 25.0 and report["below_target"] == ["v"]
    logged = capsys.readouterr()
    assert "on_breach='warn': the task succeeds" in logged.out + logged.err
    assert _operator(target="25", **paths).execute(context())["passed"] is True
    report = _operator(columns="w", **paths).execute(context())
    assert [c["column"] for c in report["columns"]] == ["w"] and report["passed"] is True


def test_default_target_is_the_engines() -> None:
    op = DirectMatchProtectionOperator(task_id="d", original_path="a", avatar_path="b")
    assert op.target == DEFAULT_TARGET == 50.0
    assert "target" in op.template_fields and "original_table" in op.template_fields
    assert "50" in (DirectMatchProtectionOperator.__doc__ or "")


# --- bad input: a clear task failure, the engine's message -----------------------------------


@pytest.fixture(params=["files", "postgresql"])
def stage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """``put(original, avatar) -> operator kwargs`` on one backend."""
    if request.param == "files":

        def put_files(tables: tuple[pd.DataFrame, pd.DataFrame]) -> dict[str, Any]:
            paths = [tmp_path / "o.csv", tmp_path / "a.csv"]
            for path, frame in zip(paths, tables, strict=True):
                frame.to_csv(path, index=False)
            return {"original_path": str(paths[0]), "avatar_path": str(paths[1])}

        yield "files", put_files
        return
    engine = sa.create_engine(require_server("postgresql"))
    created: list[str] = []

    def put_tables(tables: tuple[pd.DataFrame, pd.DataFrame]) -> dict[str, Any]:
        names = [f"bad_o_{uuid.uuid4().hex[:8]}", f"bad_a_{uuid.uuid4().hex[:8]}"]
        for name, frame in zip(names, tables, strict=True):
            frame.to_sql(name, engine, index=False)
            created.append(name)
        return {"engine": engine, "conn_id": "c", "original_table": names[0],
                "avatar_table": names[1]}  # fmt: skip

    try:
        yield "postgresql", put_tables
    finally:
        with engine.begin() as conn:
            for name in created:
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_fails_the_task_with_the_engines_message(
    stage: tuple[str, Any], case: str
) -> None:
    _, put = stage
    tables, message = BAD[case]
    kwargs = put(tables)
    op = _operator(kwargs.pop("engine", None), key="id", **kwargs)
    ti = PushedTI()
    with pytest.raises(ReidentConfigurationError) as info:
        op.execute(context(ti))
    assert str(info.value) == message
    assert ti.pushed == {}  # nothing to report


@pytest.fixture
def sqlite_with_victim(tmp_path: Path) -> sa.Engine:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    pd.DataFrame({"id": [1, 2, 3], "a": ["x", "y", "z"]}).to_sql("staged", engine, index=False)
    pd.DataFrame({"keep": [1]}).to_sql("x", engine, index=False)
    return engine


_TABLES = {"conn_id": "c", "original_table": "staged", "avatar_table": "staged", "key": "id"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"original_table": "t; DROP TABLE x"}, "table 't; DROP TABLE x' does not exist"),
        ({"avatar_table": 'staged"; DROP TABLE x; --'}, "does not exist"),
        ({"key": "id; DROP TABLE x"}, "key column 'id; DROP TABLE x' is missing"),
        ({"columns": "a; DROP TABLE x"}, "columns missing from the original table"),
        ({"schema": "main; DROP TABLE x"}, "schema 'main; DROP TABLE x' does not exist"),
        ({"key": None}, "a database table has no row order"),
        ({"key": "  "}, "a database table has no row order"),
        ({"target": "abc"}, "target must be a number"),
        ({"target": "150"}, "target must be between 0 and 100"),
        ({"target": "nan"}, "target must be between 0 and 100"),
        ({"on_breach": "explode"}, "on_breach must be one of"),
        ({"sep": ";;"}, "sep must be a single character"),
        ({"columns": "a,,b"}, "columns needs one or more column names"),
        ({"original_path": "o.csv"}, "give either original_table (with a connection)"),
        ({"avatar_table": None}, "give either avatar_table (with a connection) or avatar_path"),
        ({"conn_id": None}, "original_table needs conn_id"),
    ],
)
def test_hostile_and_bad_parameters_fail_clearly_and_execute_nothing(
    sqlite_with_victim: sa.Engine, kwargs: dict[str, Any], message: str
) -> None:
    op = _operator(sqlite_with_victim, **{**_TABLES, **kwargs})
    with pytest.raises(ReidentConfigurationError) as info:
        op.execute(context())
    assert message in str(info.value)
    assert {"x", "staged"} <= set(sa.inspect(sqlite_with_victim).get_table_names())
    with sqlite_with_victim.connect() as conn:
        assert conn.exec_driver_sql('SELECT count(*) FROM "x"').scalar() == 1


def test_self_comparison_on_sqlite(sqlite_with_victim: sa.Engine) -> None:
    # a table against itself: every value matches; a: m = u = 3 -> 0
    op = _operator(sqlite_with_victim, **_TABLES, on_breach="warn")
    report = op.execute(context())
    assert report["columns"] == [
        {"column": "a", "protection": 0.0, "matches": 3, "distinct_avatar_values": 3}
    ]


def test_connection_errors_are_left_to_retries() -> None:
    engine = sa.create_engine("postgresql+psycopg2://postgres@127.0.0.1:1/none")
    op = _operator(engine, **_TABLES)
    with pytest.raises(sa.exc.OperationalError):
        op.execute(context())


# --- templated parameters: rendered, then validated; a real Airflow connection ---------------


def test_templates_render_then_run_on_an_airflow_connection(
    adult_pg: tuple[sa.Engine, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk import DAG

    engine, original, avatar = adult_pg
    monkeypatch.setenv(
        "AIRFLOW_CONN_REIDENT_DM", server_conn(engine.url.render_as_string(hide_password=False))
    )
    params = {"original": original, "avatar": avatar, "target": "50", "cols": ""}
    with DAG(f"direct_match_{uuid.uuid4().hex[:6]}", schedule=None, params=params):
        op = DirectMatchProtectionOperator(
            task_id="direct_match",
            conn_id="{{ 'reident_dm' }}",
            original_table="{{ params.original }}",
            avatar_table="{{ params.avatar }}",
            key="id",
            columns="{{ params.cols }}",
            target="{{ params.target }}",
            retries=2,
        )
    op.render_template_fields({"params": params})
    assert (op.original_table, op.target, op.conn_id) == (original, "50", "reident_dm")
    with pytest.raises(ReidentificationBreach) as info:
        op.execute(context())
    assert isinstance(info.value, AirflowFailException)  # no retries for a breach
    assert info.value.report["below_target"] == ["code"]

    with DAG(f"direct_match_{uuid.uuid4().hex[:6]}", schedule=None):
        op = DirectMatchProtectionOperator(
            task_id="direct_match",
            conn_id="reident_dm",
            original_table=original,
            avatar_table=avatar,
            key="{{ params.key }}",
            columns="{{ params.cols }}",
            target="{{ params.target }}",
        )
    op.render_template_fields({"params": {"key": "id", "cols": "sex,age,race", "target": "0"}})
    report = op.execute(context())
    assert [c["column"] for c in report["columns"]] == ["race", "sex", "age"]  # ranked
    assert report["passed"] is True and report["target"] == 0.0


def test_report_path_writes_the_html_report_and_pushes_its_location(tmp_path: Path) -> None:
    o, a = tmp_path / "o.csv", tmp_path / "a.csv"
    o.write_text("v,w\n1,k\n2,k\n3,k\n4,k\n", encoding="utf-8")
    a.write_text("v,w\n1,k\n2,k\n3,k\n9,k\n", encoding="utf-8")
    target = tmp_path / "reports" / "dm.html"
    ti = PushedTI()
    report = _operator(
        original_path=str(o), avatar_path=str(a), on_breach="warn", report_path=str(target)
    ).execute(context(ti))
    assert report["protection"] == 25.0  # hand-computed in test_on_breach_skip_and_warn
    assert ti.pushed["report_location"] == str(target)
    assert "BREACHED" in target.read_text(encoding="utf-8")
