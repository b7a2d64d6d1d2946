"""Issue 19: the operators follow Airflow's conventions: every parameter templated, ``.sql``
files read as templates (run in ``test_lineage.py``), renderers, ``database`` and
``hook_params`` handed to the connection, a ``where=`` filter, the report's URL."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.connections import sqlalchemy_engine
from reident_airflow.get_provider_info import get_provider_info
from reident_airflow.operators import (
    DataflyOperator,
    DirectMatchProtectionOperator,
    ReidentificationRiskOperator,
)
from reident_airflow.operators.base import ReidentOperator, StagedTableOperator
from reident_airflow.operators.report_link import ReidentReportLink, report_url
from reident_airflow.outcomes import ReidentConfigurationError
from tests.conftest import require_server
from tests.operators._fakes import PushedTI, make_operator

OPERATORS = [ReidentificationRiskOperator, DataflyOperator, DirectMatchProtectionOperator]

#: Parameters that cannot be templated (none today).
NOT_TEMPLATED: set[str] = set()


@pytest.mark.parametrize("cls", OPERATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_templated(cls: type[ReidentOperator]) -> None:
    params: set[str] = set()
    for klass in cls.__mro__:
        if klass in (cls, StagedTableOperator, ReidentOperator):
            params |= {
                name
                for name, p in inspect.signature(klass.__init__).parameters.items()
                if p.kind is p.KEYWORD_ONLY
            }
    assert params - set(cls.template_fields) == NOT_TEMPLATED
    assert set(cls.template_fields) <= params  # no stale name
    assert cls.template_ext == (".sql",)
    renderers = cls.template_fields_renderers
    assert {f: renderers[f] for f in cls.template_fields if f in renderers} == {
        f: kind
        for f, kind in {
            "sql": "sql",
            "where": "sql",
            "hook_params": "json",
            "hierarchies": "json",
            "sign_off": "json",
        }.items()
        if f in cls.template_fields
    }
    assert any(isinstance(link, ReidentReportLink) for link in cls.operator_extra_links)


@pytest.mark.parametrize(
    "cls", [*OPERATORS, StagedTableOperator, ReidentOperator], ids=lambda c: c.__name__
)
def test_kept_parameters_are_declared_as_given(cls: type[ReidentOperator]) -> None:
    """``__init__`` stores a parameter as given: the attribute the class declares for it
    has the parameter's type, and each parameter stored is one the class or a base declares."""
    declared = {
        k: v
        for klass in reversed(cls.__mro__)
        for k, v in vars(klass).get("__annotations__", {}).items()
    }
    own = {
        name: p.annotation
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if p.kind is p.KEYWORD_ONLY
    }
    assert {name: declared[name] for name in own if name in declared} == {
        name: kind for name, kind in own.items() if name in declared
    }
    if cls is not ReidentificationRiskOperator:  # its options are read through _options
        assert set(own) <= set(declared)


def test_the_link_is_registered_with_the_provider() -> None:
    [path] = get_provider_info()["extra-links"]
    module, _, name = path.rpartition(".")
    assert getattr(__import__(module, fromlist=[name]), name) is ReidentReportLink


@pytest.fixture
def partitioned(tmp_path: Path) -> sa.Engine:
    """A table whose name needs quoting, three days of rows: 2 + 3 + 1 records."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'w.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text('CREATE TABLE "release-2026" (day TEXT, age INTEGER, sex TEXT)'))
        rows = [
            ("2026-01-01", 30, "m"),
            ("2026-01-01", 30, "m"),
            ("2026-01-02", 40, "f"),
            ("2026-01-02", 40, "f"),
            ("2026-01-02", 41, "m"),
            ("2026-01-03", 50, "f"),
        ]
        conn.execute(
            sa.text('INSERT INTO "release-2026" VALUES (:d, :a, :s)'),
            [{"d": d, "a": a, "s": s} for d, a, s in rows],
        )
    return engine


def _risk(engine: sa.Engine, **kwargs: Any) -> ReidentificationRiskOperator:
    return make_operator(ReidentificationRiskOperator, engine, **{"conn_id": "x", **kwargs})


def test_where_gates_one_partition(partitioned: sa.Engine) -> None:
    op = _risk(
        partitioned,
        table="release-2026",
        where="day = '2026-01-02'",
        quasi_identifiers="age,sex",
        min_k=1,
    )
    report = op.execute({"ti": PushedTI()})
    # 2026-01-02: (40, f) x2 and (41, m) x1: 3 records, 2 classes, k = 1
    assert (report["records"], report["classes"], report["k"]) == (3, 2, 1)
    whole = _risk(partitioned, table="release-2026", quasi_identifiers="age,sex", min_k=1)
    assert whole.execute({"ti": PushedTI()})["records"] == 6


@pytest.mark.parametrize(
    "where_with", [{"sql": "SELECT * FROM t"}, {"path": "staged.csv", "conn_id": None}]
)
def test_where_needs_a_table(partitioned: sa.Engine, where_with: dict[str, Any]) -> None:
    op = _risk(partitioned, where="day = '2026-01-02'", quasi_identifiers="age", **where_with)
    with pytest.raises(ReidentConfigurationError, match="where filters a table"):
        op.execute({"ti": PushedTI()})


def test_database_overrides_the_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    url = sa.make_url(require_server("postgresql"))
    conn = {
        "conn_type": "postgres",
        "host": url.host,
        "port": url.port,
        "login": url.username,
        "schema": "no_such_database",
    }
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_DB_OVERRIDE", json.dumps(conn))
    engine = sqlalchemy_engine("reident_db_override", database=url.database)
    try:
        with engine.connect() as connection:
            name = connection.execute(sa.text("SELECT current_database()")).scalar()
        assert name == url.database
    finally:
        engine.dispose()


def test_hook_params_without_a_provider_hook_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_REIDENT_NO_HOOK", json.dumps({"conn_type": "sqlite", "host": "/tmp/x.db"})
    )
    with pytest.raises(ReidentConfigurationError, match=r"hook_params .*options"):
        sqlalchemy_engine("reident_no_hook", hook_params={"options": "-c x=1"})
    op = ReidentificationRiskOperator(
        task_id="t", conn_id="reident_no_hook", table="t", quasi_identifiers="a", hook_params="[1]"
    )
    with pytest.raises(ReidentConfigurationError, match="hook_params must be a JSON object"):
        op.get_engine("reident_no_hook")


def test_report_url() -> None:
    assert report_url(None, "https://r.example.org") is None
    assert report_url("/data/reports/risk.html") is None  # no base URL configured
    assert report_url("s3://bucket/runs/risk.html") == "s3://bucket/runs/risk.html"
    assert (
        report_url("/data/reports/risk 1.html", "https://r.example.org/runs/")
        == "https://r.example.org/runs/risk%201.html"
    )


def test_report_url_from_airflow_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__REIDENT__REPORT_BASE_URL", "https://conf.example.org/r")
    assert report_url("/tmp/risk.html") == "https://conf.example.org/r/risk.html"
    assert report_url("/tmp/risk.html", "https://own.example.org") == (
        "https://own.example.org/risk.html"
    )


def test_report_location_and_url_in_xcom(tmp_path: Path, partitioned: sa.Engine) -> None:
    ti = PushedTI()
    op = _risk(
        partitioned,
        table="release-2026",
        quasi_identifiers="age,sex",
        min_k=1,
        report_path=str(tmp_path / "r.html"),
        report_base_url="https://r.example.org/",
    )
    report = op.execute({"ti": ti})
    assert ti.pushed["return_value"] == report
    assert ti.pushed["report_location"] == str(tmp_path / "r.html")
    assert ti.pushed["report_url"] == "https://r.example.org/r.html"
    assert set(ti.pushed) == {"return_value", "report_location", "report_url"}
