"""``ReidentificationRiskOperator``'s identifier scan (issue 27): ``identifier_scan`` warn /
fail / off on issue 27's test tables, as a file, in PostgreSQL and (once) on Spark.

The expected verdicts are those ``tests/data/identifiers/make_tables.py`` derives column by
column (``tests/engine/test_scan_columns.py`` pins them on the CSV): with ``sex`` and
``ethnicity`` declared and Safe Harbor, five columns fail (``ref``, ``mrn``, ``phone``:
identifiers; ``age``, ``zip``: undeclared quasi-identifiers) and ``note`` is a possible
identifier; every column of ``clean.csv`` is clear. Declared on ``sex`` and ``ethnicity``,
``planted.csv`` has four classes of 50 (k = 50), so ``min_k=5`` passes: the scan alone
decides.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from reident_airflow.notifiers.message import breach_email
from reident_airflow.notifiers.payload import breach_payload
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests._identifiers import DATA, assert_no_value
from tests._identifiers import PLANTED_FAILING as FAILING
from tests._identifiers import PLANTED_VERDICTS as PLANTED
from tests._identifiers import rows as _rows
from tests.conftest import require_server
from tests.operators._fakes import PushedTI, make_operator

GATE = {"quasi_identifiers": "sex,ethnicity", "min_k": 5, "fingerprint": False}


@pytest.fixture
def planted_pg() -> Iterator[tuple[sa.Engine, str]]:
    """``planted.csv`` in PostgreSQL (``age`` an integer, the rest text), dropped after."""
    engine = sa.create_engine(require_server("postgresql"))
    name = f"i27_gate_{uuid.uuid4().hex[:8]}"
    rows = _rows("planted")
    columns = [sa.Column(c, sa.Integer() if c == "age" else sa.String(255)) for c in rows[0]]
    table = sa.Table(name, sa.MetaData(), *columns)
    table.create(engine)
    typed = [{k: (int(v) if k == "age" and v else v) for k, v in r.items()} for r in rows]
    with engine.begin() as conn:
        conn.execute(table.insert(), typed)
    yield engine, name
    table.drop(engine)
    engine.dispose()


def _verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {c["column"]: c["verdict"] for c in report["identifier_scan"]["columns"]}


def _staged(where: str, planted_pg: Any = None) -> tuple[sa.Engine | None, dict[str, Any]]:
    if where == "file":
        return None, {"path": str(DATA / "planted.csv")}
    engine, name = planted_pg
    return engine, {"conn_id": "staging", "table": name}


@pytest.mark.parametrize("where", ["file", pytest.param("postgresql", marks=pytest.mark.db)])
def test_warn_logs_each_flagged_column_and_the_task_succeeds(
    where: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = request.getfixturevalue("planted_pg") if where == "postgresql" else None
    engine, staged = _staged(where, planted)
    ti = PushedTI()
    op = make_operator(
        ReidentificationRiskOperator, engine, **staged, **GATE, safe_harbor=True
    )  # identifier_scan unset, no preset: "warn"
    report = op.execute({"ti": ti})
    assert ti.pushed["return_value"] == report
    assert report["passed"] is True and report["breaches"] == []
    assert report["identifier_scan"]["options"]["policy"] == "warn"
    assert _verdicts(report) == PLANTED
    assert report["warnings"] == [
        {"metric": "identifier_scan.flagged_columns", "observed": 6.0, "limit": 0.0}
    ]
    logged = capsys.readouterr()
    assert "identifier scan: mrn: identifier (name: record number" in logged.out + logged.err
    assert "Identifier scan: ref (identifier), mrn (identifier)" in logged.out + logged.err
    assert_no_value(json.dumps(ti.pushed), logged.out, logged.err)


@pytest.mark.parametrize("where", ["file", pytest.param("postgresql", marks=pytest.mark.db)])
def test_fail_fails_the_task_like_a_breach(
    where: str,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    planted = request.getfixturevalue("planted_pg") if where == "postgresql" else None
    engine, staged = _staged(where, planted)
    ti = PushedTI()
    op = make_operator(
        ReidentificationRiskOperator,
        engine,
        **staged,
        **GATE,
        identifier_scan="fail",
        safe_harbor="true",
        scan_options={"phone_regions": "US,GB,FR", "sample_size": "500"},
        report_path=str(tmp_path / "report.html"),
    )
    with pytest.raises(ReidentificationBreach) as info:
        op.execute({"ti": ti})
    message = str(info.value)
    assert "identifier_scan.failing_columns = 5 (limit: at most 0)" in message
    assert "Identifier scan: ref (identifier), mrn (identifier), age (quasi-identifier" in message
    assert info.value.k == 50
    assert info.value.breaches == [
        {"metric": "identifier_scan.failing_columns", "observed": 5.0, "limit": 0.0}
    ]
    report = ti.pushed["return_value"]  # pushed before failing
    assert report["passed"] is False and report["identifier_scan"]["failing"] == FAILING
    assert report["identifier_scan"]["options"]["sample_size"] == 500
    # the alert a notifier would send (its JSON and its e-mail) and the HTML report
    payload = breach_payload({"ti": ti, "exception": info.value}, report=report)
    assert payload["breaches"] == info.value.breaches
    subject, text, html = breach_email(payload)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "identifier_scan.failing_columns" in page
    logged = capsys.readouterr()
    assert_no_value(
        json.dumps(ti.pushed),
        message,
        repr(info.value.breaches),
        logged.out,
        logged.err,
        json.dumps(payload),
        subject + text + html,
        page,
    )


def test_the_clean_table_passes_under_fail() -> None:
    op = make_operator(
        ReidentificationRiskOperator,
        path=str(DATA / "clean.csv"),
        quasi_identifiers="sex,age,zip",
        identifier_scan="fail",
        safe_harbor=True,
        fingerprint=False,
    )
    report = op.execute({"ti": PushedTI()})
    assert report["passed"] is True and report["warnings"] == []
    assert set(_verdicts(report).values()) == {"clear"}


def test_off_attaches_nothing_and_allowed_columns_are_clear() -> None:
    path = str(DATA / "planted.csv")
    off = make_operator(ReidentificationRiskOperator, path=path, identifier_scan="off", **GATE)
    report = off.execute({"ti": PushedTI()})
    assert "identifier_scan" not in report and report["warnings"] == []
    allowed = make_operator(
        ReidentificationRiskOperator,
        path=path,
        **GATE,
        identifier_scan="fail",
        scan_allow_columns="ref,mrn,phone,zip",
    )
    # without Safe Harbor age is clear; note (e-mails in free text) only warns
    report = allowed.execute({"ti": PushedTI()})
    assert report["passed"] is True
    assert report["identifier_scan"]["flagged"] == ["note"]
    assert _verdicts(report)["mrn"] == "clear"


def test_the_presets_policy_applies_when_none_is_given() -> None:
    path = str(DATA / "planted.csv")
    # el-emam-public: fail with Safe Harbor (docs/metrics.md §11); its highest-risk limit
    # 0.05 passes on classes of 50 (1/50 = 0.02)
    public = make_operator(ReidentificationRiskOperator, path=path, **GATE, preset="el-emam-public")
    with pytest.raises(ReidentificationBreach):
        public.execute({"ti": PushedTI()})
    given = make_operator(
        ReidentificationRiskOperator,
        path=path,
        **GATE,
        preset="el-emam-public",
        identifier_scan="warn",
    )
    report = given.execute({"ti": PushedTI()})
    assert report["passed"] is True
    assert report["identifier_scan"]["options"]["safe_harbor"] is True


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"identifier_scan": "maybe"}, "policy must be one of fail, warn, off"),
        ({"scan_allow_columns": "nope"}, "allow_columns names 'nope', which the table lacks"),
        ({"scan_options": {"approximate": True}}, "approximate applies only on a Spark"),
        ({"scan_options": {"policy": "fail"}}, "scan_options: unknown option 'policy'"),
        ({"scan_options": '{"sample_size": 0}'}, "sample_size must be >= 1"),
    ],
)
def test_bad_scan_parameters_fail_now(kwargs: dict[str, Any], message: str) -> None:
    op = make_operator(
        ReidentificationRiskOperator, path=str(DATA / "planted.csv"), **GATE, **kwargs
    )
    with pytest.raises(ReidentConfigurationError, match=message):
        op.execute({"ti": PushedTI()})


def test_the_scan_parameters_are_templated() -> None:
    for name in ("identifier_scan", "scan_allow_columns", "safe_harbor", "scan_options"):
        assert name in ReidentificationRiskOperator.template_fields


def test_spark_fails_on_the_planted_parquet(spark_conn: str, tmp_path: Path) -> None:
    import duckdb

    out = tmp_path / "planted.parquet"
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT * FROM read_csv($p, header = true, all_varchar = true)) "
        f"TO '{out}' (FORMAT parquet)",
        {"p": str(DATA / "planted.csv")},
    )
    con.close()
    ti = PushedTI()
    op = make_operator(
        ReidentificationRiskOperator,
        conn_id=spark_conn,
        path=str(out),
        **GATE,
        identifier_scan="fail",
        safe_harbor=True,
    )
    with pytest.raises(ReidentificationBreach) as info:
        op.execute({"ti": ti})
    report = ti.pushed["return_value"]
    assert _verdicts(report) == PLANTED
    assert_no_value(json.dumps(ti.pushed), str(info.value))


@pytest.mark.db
def test_a_column_the_scan_cannot_profile_warns_under_warn_and_fails_under_fail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # PostgreSQL's json has no equality (docs/reading.md): the profile refuses it
    engine = sa.create_engine(require_server("postgresql"))
    name = f"i27_gate_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.exec_driver_sql(f'CREATE TABLE "{name}" (sex text, doc json)')
        conn.exec_driver_sql(f"""INSERT INTO "{name}" VALUES ('F', '{{}}'), ('F', '[]')""")
    try:
        staged = {"conn_id": "staging", "table": name, "quasi_identifiers": "sex"}
        op = make_operator(ReidentificationRiskOperator, engine, **staged)
        report = op.execute({"ti": PushedTI()})
        assert report["passed"] is True and "identifier_scan" not in report
        assert "identifier scan: not run (column 'doc' is of type json" in capsys.readouterr().out
        strict = make_operator(
            ReidentificationRiskOperator, engine, **staged, identifier_scan="fail"
        )
        with pytest.raises(ReidentConfigurationError, match="'doc' is of type json"):
            strict.execute({"ti": PushedTI()})
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP TABLE "{name}"')
        engine.dispose()
