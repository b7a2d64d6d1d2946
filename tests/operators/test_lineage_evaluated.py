"""Issue 42, item 5: lineage asserts only what the gate evaluated, and shows the queries it
ran (without values), as Airflow's common.sql 2.4 does.

The staged table is tests/data/test.csv (7 records; ages 34, 45, 66, 70, 34, 70, 45) with
``age`` as the quasi-identifier; the gate ``min_arrival_k=2`` compares it with a previous
release:

- none yet (the first release): nothing compared, so no arrival assertion;
- the same 7 rows: no arrival, no arrival k, so no arrival assertion;
- its first 4 rows (34, 45, 66, 70): the arrivals are 34, 70 and 45, one in each class, so
  the arrival k is 1 < 2: the assertion is there and fails (hand-computed; ``reident
  assess --previous`` gives the same: 3 arrivals, k 1).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.operators import ReidentificationRiskOperator
from tests.conftest import oracle_data, require_server
from tests.operators._fakes import context, make_operator

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ARRIVAL = "since_last_release.arrivals.k"


@pytest.fixture(params=["sqlite", "postgresql"])
def tables(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[tuple[sa.Engine, str]]:
    """The staged table, the same rows, and its first four rows (``<new>``, ``<new>_same``,
    ``<new>_prev``), in SQLite or the real PostgreSQL (whose class rows come by COPY)."""
    if request.param == "sqlite":
        engine = sa.create_engine(f"sqlite:///{tmp_path / 'staging.db'}")
    else:
        engine = sa.create_engine(require_server("postgresql"))
    new = f"i42_lineage_{uuid.uuid4().hex[:8]}"
    frame = pd.read_csv(oracle_data("test.csv"), sep=";")
    frame.to_sql(new, engine, index=False)
    frame.to_sql(f"{new}_same", engine, index=False)
    frame.head(4).to_sql(f"{new}_prev", engine, index=False)
    try:
        yield engine, new
    finally:
        with engine.begin() as conn:
            for name in (new, f"{new}_same", f"{new}_prev"):
                conn.exec_driver_sql(f'DROP TABLE IF EXISTS "{name}"')
        engine.dispose()


def _gate(engine: sa.Engine, table: str, previous: str, **kwargs: Any) -> Any:
    op = make_operator(
        ReidentificationRiskOperator,
        engine,
        conn_id="staging",
        table=table,
        quasi_identifiers="age",
        min_arrival_k=2,
        previous_release=previous,
        on_breach="warn",
        identifier_scan="off",
        **kwargs,
    )
    op.execute(context())
    return op


def test_a_first_release_asserts_no_arrivals(
    tables: tuple[sa.Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, new = tables
    monkeypatch.setattr("reident_airflow.operators.lineage.dataset_of", _named)
    op = _gate(engine, new, f"{new}_none")
    assert op.last_report["since_last_release"] is None
    got = _facets(op)
    assert [a.assertion for a in got["assertions"]] == []


def test_a_release_without_arrivals_asserts_none(
    tables: tuple[sa.Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, new = tables
    monkeypatch.setattr("reident_airflow.operators.lineage.dataset_of", _named)
    op = _gate(engine, new, f"{new}_same")
    assert op.last_report["since_last_release"]["arrivals"]["records"] == 0
    assert [a.assertion for a in _facets(op)["assertions"]] == []


def test_arrivals_that_were_compared_are_asserted(
    tables: tuple[sa.Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, new = tables
    monkeypatch.setattr("reident_airflow.operators.lineage.dataset_of", _named)
    op = _gate(engine, new, f"{new}_prev")
    [arrival] = _facets(op)["assertions"]
    assert (arrival.assertion, arrival.actual, arrival.success) == (ARRIVAL, "1", False)
    assert arrival.name == f"{ARRIVAL} >= 2"
    assert arrival.column is None  # the whole dataset
    assert arrival.description == "Smallest count of arrivals in a class (arrival k) at least 2"
    assert arrival.params == {"geq_to": 2}


def test_the_sql_job_facet_holds_the_queries_without_values(
    tables: tuple[sa.Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``where`` with a literal of the data (gender 'male', age 40): the queries the gate
    ran are in the ``sql`` job facet with each literal as ``?``; the grouping, the previous
    release's comparison and the fingerprint are among them; no session setting."""
    engine, new = tables
    monkeypatch.setattr("reident_airflow.operators.lineage.dataset_of", _named)
    op = _gate(engine, new, f"{new}_prev", where="gender = 'male' AND age > 40")
    query = _facets(op)["job"]["sql"].query
    statements = query.split(";\n")
    assert len(statements) == len(set(statements)) >= 3
    assert all(s.split()[0].upper() in ("SELECT", "WITH", "COPY") for s in statements), query
    assert "GROUP BY" in query.upper()
    assert f"{new}_prev" in query  # the comparison with the previous release
    assert "gender = ? AND age > ?" in query
    assert "male" not in query and "40" not in query
    # on start nothing has run yet
    assert "sql" not in (op.get_openlineage_facets_on_start().job_facets or {})


def test_a_file_has_no_sql_job_facet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("reident_airflow.operators.lineage.dataset_of", _named)
    op = make_operator(
        ReidentificationRiskOperator,
        path=str(oracle_data("test.csv")),
        sep=";",
        quasi_identifiers="age",
        min_k=1,
        identifier_scan="off",
    )
    op.execute(context())
    got = _facets(op)
    assert "sql" not in got["job"]
    [k] = got["assertions"]
    assert (k.name, k.success, k.description) == (
        "k >= 1",
        True,
        "Smallest class size k at least 1",
    )


def _named(*args: Any, **kwargs: Any) -> tuple[str, str]:
    """Every dataset named alike (the tests' connection is an engine, not an Airflow one)."""
    return ("test://staging", "staged")


def _facets(op: Any) -> dict[str, Any]:
    """The input's assertions, wherever they are (its input facets, where the spec declares
    the facet, and its dataset facets, where common.sql 2.4 attaches its checks: the same
    in both), and the job's facets."""
    done = op.get_openlineage_facets_on_complete(None)
    [dataset] = done.inputs
    on_input = (dataset.inputFacets or {}).get("dataQualityAssertions")
    on_dataset = (dataset.facets or {}).get("dataQualityAssertions")
    listed = [[] if f is None else f.assertions for f in (on_input, on_dataset)]
    assert listed[0] == listed[1]
    return {"assertions": listed[0], "job": done.job_facets or {}}


@pytest.mark.parametrize(
    ("kind", "types"),
    [
        # pandas writes int64 as BIGINT and text as TEXT; each database then names them:
        # PostgreSQL's udt_name (common.sql reports the same: test_lineage_common_sql.py),
        # MySQL / MariaDB's information_schema data_type, SQLite the type as declared
        ("postgresql", ["int8", "text", "int8"]),
        ("mariadb", ["bigint", "text", "bigint"]),
        ("sqlite", ["BIGINT", "TEXT", "BIGINT"]),
    ],
)
def test_column_types_are_the_databases_names(kind: str, types: list[str], tmp_path: Any) -> None:
    from reident_airflow.sources.sql import SqlSource

    url = f"sqlite:///{tmp_path / 'types.db'}" if kind == "sqlite" else require_server(kind)
    engine = sa.create_engine(url)
    table = f"i42_types_{uuid.uuid4().hex[:8]}"
    pd.read_csv(oracle_data("test.csv"), sep=";").to_sql(table, engine, index=False)
    try:
        with SqlSource(engine, table=table) as source:
            got = source.column_types()
        assert got == list(zip(["age", "gender", "zipcode"], types, strict=True))
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
        engine.dispose()
