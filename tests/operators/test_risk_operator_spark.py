"""ReidentificationRiskOperator on a Spark connection (issue 18): Adult as Parquet read by a
classic ``local[2]`` session of a ``spark`` connection, or by a ``spark_connect`` connection
to a Connect server, gives the JSON ``reident assess`` gives on tests/data/adult.csv; a breach
fails; what Spark cannot do is refused up front.

The session is the process's: the operator gets or creates it and never stops it
(``spark_conn`` of :mod:`tests.operators._spark` stops it at the end when it made it).
"""

from __future__ import annotations

import csv
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests.cli._cli import RUN_KEYS, run
from tests.conftest import oracle_data
from tests.operators._adult_gate import OPERATOR_OPTIONS, cli_json
from tests.operators._fakes import PushedTI, make_operator
from tests.operators._spark import CONN_ID


def _operator(conn_id: str = CONN_ID, **kwargs: Any) -> ReidentificationRiskOperator:
    return make_operator(ReidentificationRiskOperator, conn_id=conn_id, **kwargs)


@pytest.mark.parametrize("connection", ["spark_conn", "connect_conn"])
def test_spark_path_equals_cli_on_csv(
    request: pytest.FixtureRequest, connection: str, adult_parquet: Path
) -> None:
    conn_id = request.getfixturevalue(connection)
    expected = cli_json()
    ti = PushedTI()
    op = _operator(
        conn_id,
        path=str(adult_parquet),
        **OPERATOR_OPTIONS,
    )
    got = op.execute({"ti": ti})
    assert ti.pushed["return_value"] == got
    run = {key: got.pop(key) for key in RUN_KEYS}
    # the operator also scans every column (identifier_scan="warn" by default): Adult's
    # columns are clear, so the scan adds its object and nothing else
    assert got.pop("identifier_scan")["flagged"] == []
    assert got == expected
    assert run["advice"] is None
    assert (run["input"]["kind"], run["input"]["rows"]) == ("file", 30162)
    assert run["input"]["location"] == str(adult_parquet)


def test_spark_breach_gives_the_cli_advice(spark_conn: str, adult_parquet: Path) -> None:
    """Issue 39: the operator on a Spark connection advises as ``reident assess --engine
    spark`` does (both through workflows.advice: Spark's histograms and Datafly on Spark,
    the bundled Adult hierarchies); it used to log "not computed on a Spark connection"."""
    ti = PushedTI()
    op = _operator(path=str(adult_parquet), quasi_identifiers="sex,age,race", min_k="5")
    with pytest.raises(ReidentificationBreach) as info:
        op.execute({"ti": ti})
    assert info.value.k == 1  # Adult holds unique (sex, age, race) records
    assert "k = 1 (limit: at least 5)" in str(info.value)
    advice = ti.pushed["return_value"]["advice"]
    # the CLI in this process: the same classic local[2] session, got, never stopped
    code, out, err = run(
        "assess",
        str(adult_parquet),
        "--engine",
        "spark",
        "--spark-master",
        "local[2]",
        "--qi",
        "sex,age,race",
        "--min-k",
        "5",
        "--json",
        "-",
    )
    assert code == 1, err
    cli_advice = json.loads(out)["advice"]
    assert cli_advice is not None and cli_advice["datafly"] is not None
    assert advice == cli_advice
    line = next(x for x in err.splitlines() if x.startswith("reident: advice: "))
    assert f"What to do: {line.removeprefix('reident: advice: ')}" in str(info.value)


def test_spark_table_where_is_a_filter(spark_conn: str, adult_parquet: Path) -> None:
    from pyspark.sql import SparkSession

    # the session the operator gets: the connection's (created by the previous tests)
    session = SparkSession.builder.master("local[2]").getOrCreate()
    view = f"adult_{uuid.uuid4().hex[:8]}"
    session.read.parquet(str(adult_parquet)).createOrReplaceTempView(view)
    with oracle_data("adult.csv").open(newline="") as f:
        males = sum(row["sex"] == "Male" for row in csv.DictReader(f, delimiter=";"))
    op = _operator(table=view, where="sex = 'Male'", quasi_identifiers="sex,race")
    got = op.execute({"ti": PushedTI()})
    assert got["records"] == males and got["input"] is None
    session.catalog.dropTempView(view)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"sql": "SELECT * FROM adult"}, "not sql"),
        ({"table": "adult", "suda": True}, "suda"),
        ({"table": "adult", "population_table": "register"}, "population_table"),
        ({}, "either table or path"),
    ],
)
def test_spark_refuses_what_it_cannot_do(
    spark_conn: str, kwargs: dict[str, Any], named: str
) -> None:
    op = _operator(quasi_identifiers="sex,age", **kwargs)
    with pytest.raises(ReidentConfigurationError, match=named):
        op.execute({"ti": PushedTI()})


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"conn_type": "spark"}, "names no master"),
        ({"conn_type": "spark_connect", "host": "sc://spark.example/db"}, "not supported"),
        ({"conn_type": "spark", "host": "local[2]", "extra": "[1]"}, "not a JSON object"),
    ],
)
def test_spark_connection_refused_before_a_session(
    monkeypatch: pytest.MonkeyPatch, value: dict[str, Any], named: str
) -> None:
    """A connection the session cannot be built from fails now (no Spark is started)."""
    monkeypatch.setenv("AIRFLOW_CONN_REIDENT_SPARK_BAD", json.dumps(value))
    op = ReidentificationRiskOperator(
        task_id="bad", conn_id="reident_spark_bad", path="x.parquet", quasi_identifiers="sex"
    )
    with pytest.raises(ReidentConfigurationError, match=named):
        op.execute({"ti": PushedTI()})
