"""Issue 29: our OpenLineage next to Airflow's common.sql for the same PostgreSQL table, and
the assertions' ``column``, ``params`` and ``failures``.

common.sql's ``SQLExecuteQueryOperator`` names its datasets and builds their ``schema`` facet
through the OpenLineage provider's ``SQLParser`` and ``information_schema.columns``; it needs
the database's hook for three facts only (the postgres provider is not installed here):
scheme ``postgres``, authority ``host:port`` (5432 by default) and the database of the
connection, dialect ``postgres``, default schema ``CURRENT_SCHEMA``. ``_PostgresLineageHook``
below gives those three as the postgres provider's ``PostgresHook`` does; everything else
(naming, the information-schema query, the facet) is common.sql's and the provider's code.

Types as the database names them (issue 42): common.sql reports PostgreSQL's ``udt_name``
(``int8``) from ``information_schema.columns``, and so do we.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.operators import ReidentificationRiskOperator
from reident_airflow.operators.lineage import report_assertions
from tests.conftest import oracle_data, require_server
from tests.report.documents import SMALL_BREACH

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CONN_ID = "i29_lineage_pg"


@pytest.fixture
def pg_table(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """test.csv (age;gender;zipcode) as a PostgreSQL table of a unique name, and an Airflow
    connection to its database."""
    url = require_server("postgresql")
    table = f"i29_lineage_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(url)
    pd.read_csv(oracle_data("test.csv"), sep=";").to_sql(table, engine, index=False)
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}",
        json.dumps(
            {
                "conn_type": "postgres",
                "host": "127.0.0.1",
                "port": 5432,
                "login": "postgres",
                "schema": "test",
            }
        ),
    )
    try:
        yield table
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP TABLE IF EXISTS "{table}"')
        engine.dispose()


def _common_sql_lineage(table: str) -> Any:
    from airflow.providers.common.sql.hooks.sql import DbApiHook
    from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
    from airflow.providers.openlineage.sqlparser import DatabaseInfo

    class _PostgresLineageHook(DbApiHook):  # the module docstring: three facts, as PostgresHook
        conn_name_attr = "postgres_conn_id"
        default_conn_name = CONN_ID

        def get_conn(self) -> Any:
            import psycopg2

            conn = self.get_connection(CONN_ID)
            return psycopg2.connect(
                host=conn.host, port=conn.port, user=conn.login, dbname=conn.schema
            )

        def get_uri(self) -> str:
            conn = self.get_connection(CONN_ID)
            return f"postgresql://{conn.login}@{conn.host}:{conn.port}/{conn.schema}"

        def get_openlineage_database_info(self, connection: Any) -> DatabaseInfo:
            return DatabaseInfo(
                scheme="postgres",
                authority=DbApiHook.get_openlineage_authority_part(connection, default_port=5432),
                database=connection.schema,
            )

        def get_openlineage_database_dialect(self, connection: Any) -> str:
            return "postgres"

        def get_openlineage_default_schema(self) -> str | None:
            return str(self.get_first("SELECT CURRENT_SCHEMA;")[0])

    class _Operator(SQLExecuteQueryOperator):
        def get_db_hook(self) -> DbApiHook:
            return _PostgresLineageHook(postgres_conn_id=CONN_ID)

    op = _Operator(task_id="common_sql", conn_id=CONN_ID, sql=f"SELECT * FROM {table}")
    return op.get_openlineage_facets_on_start()


def test_our_datasets_match_common_sqls_for_the_same_table(pg_table: str) -> None:
    theirs = _common_sql_lineage(pg_table)
    [their_input] = theirs.inputs
    op = ReidentificationRiskOperator(
        task_id="ours", conn_id=CONN_ID, table=pg_table, quasi_identifiers="age", min_k=1
    )
    ours = op.get_openlineage_facets_on_start()
    [our_input] = ours.inputs
    assert ours.outputs == []
    # the same dataset: postgres://127.0.0.1:5432, test.public.<table>
    assert (our_input.namespace, our_input.name) == (their_input.namespace, their_input.name)
    assert our_input.namespace == "postgres://127.0.0.1:5432"
    assert our_input.name == f"test.public.{pg_table}"
    # the same columns, in the same order, the same types (the docstring)
    ours_fields = [(f.name, f.type) for f in our_input.facets["schema"].fields]
    their_fields = [(f.name, f.type) for f in their_input.facets["schema"].fields]
    assert (
        [n for n, _ in ours_fields]
        == [n for n, _ in their_fields]
        == [
            "age",
            "gender",
            "zipcode",
        ]
    )
    # pandas wrote int64 as BIGINT and object as TEXT: udt_name int8 / text
    assert their_fields == [("age", "int8"), ("gender", "text"), ("zipcode", "int8")]
    assert ours_fields == their_fields
    # a finished run keeps the dataset and its schema, and adds the assertions
    op.last_report = {
        "schema": "reident.assessment/v1",
        "records": 7,
        "k": 1,
        "class_size_histogram": [[1, 1], [2, 3]],  # 34, 45, 70 twice; 66 once (test.csv)
        "thresholds": {"min_k": 1},
    }
    [done] = op.get_openlineage_facets_on_complete(None).inputs
    assert (done.namespace, done.name) == (their_input.namespace, their_input.name)
    assert done.facets["schema"] == our_input.facets["schema"]
    [k_check] = done.inputFacets["dataQualityAssertions"].assertions
    assert (k_check.name, k_check.params) == ("k >= 1", {"geq_to": 1, "failures": 0})
    # on the dataset's facets too, where common.sql 2.4 attaches its checks, with a
    # description as its checks have
    assert done.facets["dataQualityAssertions"].assertions == [k_check]
    assert k_check.description == "Smallest class size k at least 1"


def test_k_failures_are_the_records_below_k() -> None:
    """SMALL_BREACH (tests/report/documents.py): classes of sizes 1, 1, 2, 5 (histogram
    [[1, 2], [2, 1], [5, 1]]), min_k 3: the records in classes below 3 are 1 + 1 + 2 = 4;
    the warning level on the average risk has no per-record count."""
    rows = [(a.name, a.column, a.params) for a in report_assertions(SMALL_BREACH)]
    assert rows == [
        ("k >= 3", None, {"geq_to": 3, "failures": 4}),
        ("prosecutor.average_risk <= 0.5", None, {"leq_to": 0.5}),
        ("prosecutor.average_risk <= 0.4 (warning level)", None, {"leq_to": 0.4}),
    ]


def test_l_diversity_is_asserted_per_sensitive_column() -> None:
    """Two sensitive columns, hand-made: diagnosis with 2 distinct values in its worst
    class, ward with 3; min_l 3 fails on diagnosis only, each on its own column."""
    report = {
        "schema": "reident.assessment/v1",
        "thresholds": {"min_l": 3},
        "l_diversity": {"diagnosis": {"distinct": 2}, "ward": {"distinct": 3}},
    }
    rows = [(a.name, a.column, a.actual, a.success, a.params) for a in report_assertions(report)]
    assert rows == [
        ("l_diversity.distinct >= 3", "diagnosis", "2", False, {"geq_to": 3}),
        ("l_diversity.distinct >= 3", "ward", "3", True, {"geq_to": 3}),
    ]
