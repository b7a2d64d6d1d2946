"""ReidentificationRiskOperator with sampling weights, sensitive columns and SUDA2.

The weight sums and the value counts of the sensitive columns are computed by the database
(``GROUP BY``): the report equals what ``reident assess`` prints for the same data as a file.
"""

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

from reident_airflow.cli import main
from reident_airflow.operators.risk import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests._sdcmicro import sdcmicro_data, sdcmicro_summary
from tests.conftest import ensure_airflow_db, require_server
from tests.operators._fakes import PushedTI, make_operator

#: What differs between the CLI's run (a file's fingerprint) and the operator's (a table's).
CLI_RUN_KEYS = ("input",)
KEYS = list(sdcmicro_summary()["testdata"]["keyVars"])


def _operator(engine: sa.Engine, **kwargs: Any) -> ReidentificationRiskOperator:
    return make_operator(ReidentificationRiskOperator, engine, conn_id="x", **kwargs)


def _testdata() -> pd.DataFrame:
    frame = pd.read_csv(sdcmicro_data("testdata_data.csv"))
    # a text sensitive column whose values differ only by case: MariaDB's default collation
    # would merge them, the engine must not
    frame["status"] = ["A" if i % 3 else "a" for i in range(len(frame))]
    return frame


def _cli(path: Path, *flags: str) -> dict[str, Any]:
    out = io.StringIO()
    code = main(["assess", str(path), *flags, "--json", "-"], out=out, err=io.StringIO())
    assert code in (0, 1)
    result: dict[str, Any] = json.loads(out.getvalue())
    for key in CLI_RUN_KEYS:  # the CLI's input is the file, the operator's the table
        result.pop(key)
    return result


@pytest.fixture(scope="module")
def testdata_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("weights") / "testdata.csv"
    _testdata().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "mariadb"])
def testdata_in(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[sa.Engine, str]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'db.sqlite'}"
    else:
        url = require_server(request.param)
    engine = sa.create_engine(url)
    name = f"survey_{uuid.uuid4().hex[:8]}"
    _testdata().to_sql(name, engine, index=False, chunksize=2000)
    try:
        yield engine, name
    finally:
        with engine.begin() as conn:
            sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


def test_database_operator_equals_cli_on_csv(
    testdata_in: tuple[sa.Engine, str], testdata_csv: Path
) -> None:
    engine, name = testdata_in
    expected = _cli(
        testdata_csv,
        "--qi",
        ",".join(KEYS),
        "--weight",
        "sampling_weight",
        "--sensitive",
        "hhcivil,status",
        "--suda",
        "--max-global-risk",
        "0.01",
    )
    assert expected["l_diversity"]["status"]["distinct"] == 1  # 'A' and 'a' stay apart
    assert expected["l_diversity"]["status"]["homogeneous_records"] < 0.6
    ti = PushedTI()
    op = _operator(
        engine,
        table=name,
        quasi_identifiers=KEYS,
        weight="sampling_weight",
        sensitive="hhcivil,status",
        suda=True,
        max_global_risk="0.01",
    )
    report = op.execute({"ti": ti})
    assert ti.pushed["return_value"] == report
    fingerprint = report.pop("input")
    # the operator also scans every column (identifier_scan="warn" by default): its object
    # and its warning are the scan's; the rest is what `reident assess` gives
    scan = report.pop("identifier_scan")
    flagged = [w for w in report["warnings"] if w["metric"] == "identifier_scan.flagged_columns"]
    assert flagged == [
        {"metric": "identifier_scan.flagged_columns", "observed": len(scan["flagged"]), "limit": 0}
    ]
    report["warnings"] = [w for w in report["warnings"] if w not in flagged]
    assert report == expected
    assert (fingerprint["kind"], fingerprint["rows"]) == ("database", 4580)
    assert fingerprint["table"] is not None and fingerprint["sha256"] is None
    assert report["journalist"]["basis"] == "sampling_weights"


def test_min_l_breach_names_the_column(testdata_in: tuple[sa.Engine, str]) -> None:
    engine, name = testdata_in
    op = _operator(engine, table=name, quasi_identifiers=KEYS, sensitive=["hhcivil"], min_l="2")
    with pytest.raises(ReidentificationBreach) as info:
        op.execute({"ti": PushedTI()})
    assert "l_diversity.hhcivil.distinct = 1 (limit: at least 2)" in str(info.value)
    assert info.value.breaches == [
        {"metric": "l_diversity.hhcivil.distinct", "observed": 1.0, "limit": 2.0}
    ]


def test_file_source(testdata_csv: Path) -> None:
    ensure_airflow_db()
    op = ReidentificationRiskOperator(
        task_id="w",
        path=str(testdata_csv),
        quasi_identifiers=",".join(KEYS),
        weight="sampling_weight",
        sensitive="hhcivil",
        recursive_c="3",
        on_breach="warn",
        min_l=2,
    )
    report = op.execute({"ti": PushedTI()})
    assert report["l_diversity"]["hhcivil"]["c"] == 3.0
    assert report["individual_risk"]["weight"] == "sampling_weight"
    assert not report["passed"]


@pytest.fixture
def sqlite_table(tmp_path: Path) -> sa.Engine:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    pd.DataFrame(
        {"q": ["a", "a", "b"], "w": [1.0, 0.0, 2.0], "ok": [2.0, 3.0, 4.0], "t": ["1", "2", "x"]}
    ).to_sql("staged", engine, index=False)
    return engine


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weight": "w"}, "weight column 'w' has 1 zero or negative weight"),
        ({"weight": "t"}, "weight column 't' is not numeric"),
        ({"weight": "nope"}, "unknown weight column 'nope'"),
        ({"sensitive": "q"}, "sensitive column 'q' is also a quasi-identifier"),
        ({"max_global_risk": "0.1"}, "max_global_risk gates the individual risk: give weight"),
        ({"min_l": "2"}, "min_l gates l-diversity: give sensitive columns"),
        ({"sensitive": "t", "min_l": "1.5"}, "min_l must be a whole number"),
        ({"sensitive": "t", "recursive_c": "-1"}, "recursive c must be a finite number > 0"),
        ({"weight": "ok", "max_global_risk": "2"}, "max_global_risk must be in"),
    ],
)
def test_bad_parameters_fail_now(
    sqlite_table: sa.Engine, kwargs: dict[str, Any], message: str
) -> None:
    op = _operator(sqlite_table, table="staged", quasi_identifiers="q", **kwargs)
    with pytest.raises(ReidentConfigurationError, match=message):
        op.execute({"ti": PushedTI()})


def test_new_parameters_are_templated() -> None:
    fields = set(ReidentificationRiskOperator.template_fields)
    assert {"weight", "sensitive", "recursive_c", "max_global_risk", "min_l"} <= fields
