"""Issue 19 in the risk operator: the advice on a k breach (log, exception, XCom), the input's
fingerprint and the sign-off in the report.

Acceptance: Adult on ``sex, age, race`` with ``min_k = 5``. The counts below 5 are made here
with ``csv`` and ``Counter``; the Datafly outcome by a direct
:func:`~reident_airflow.engine.datafly.datafly` run with ARX's hierarchies in tests/data.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.engine.datafly import datafly
from reident_airflow.engine.hierarchies import load_hierarchy
from reident_airflow.operators import ReidentificationRiskOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests.conftest import oracle_data
from tests.operators._fakes import PushedTI

QIS = ("sex", "age", "race")


def _adult_counts() -> tuple[int, int, int]:
    """Records, and the classes and records below k = 5 on sex, age and race, by hand."""
    with oracle_data("adult.csv").open(newline="", encoding="utf-8") as fh:
        rows = [tuple(r[q] for q in QIS) for r in csv.DictReader(fh, delimiter=";")]
    small = [n for n in Counter(rows).values() if n < 5]
    return len(rows), len(small), sum(small)


@pytest.fixture(scope="module")
def adult_db(tmp_path_factory: pytest.TempPathFactory) -> sa.Engine:
    db = tmp_path_factory.mktemp("advice") / "staging.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    frame.to_sql("adult", engine, index=False, chunksize=5000)
    return engine


def test_adult_k_breach_names_the_counts_and_datafly(adult_db: sa.Engine) -> None:
    hierarchies = {q: str(oracle_data(f"adult_hierarchy_{q}.csv")) for q in QIS}
    op = ReidentificationRiskOperator(
        task_id="assess",
        conn_id="staging",
        table="adult",
        quasi_identifiers=",".join(QIS),
        min_k="5",
        hierarchies=json.dumps(hierarchies),
    )
    op.get_engine = lambda conn_id: adult_db  # type: ignore[method-assign]  # the test seam
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach) as caught:
        op.execute({"ti": ti})  # type: ignore[arg-type]
    records, classes_below, records_below = _adult_counts()
    assert (records, classes_below, records_below) == (30162, 191, 425)
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    arx = {q: load_hierarchy(oracle_data(f"adult_hierarchy_{q}.csv"), column=q) for q in QIS}
    expected = datafly(frame, list(QIS), arx, 5)

    advice = ti.pushed["return_value"]["advice"]
    assert (advice["k"], advice["records"]) == (5, records)
    assert (advice["classes_below_k"], advice["records_below_k"]) == (classes_below, records_below)
    assert advice["datafly"]["levels"] == dict(expected.levels)
    assert advice["datafly"]["suppressed_records"] == expected.suppressed_records
    # the trade-off opens with the records below k counted by hand, then Datafly's steps
    tradeoff = advice["datafly"]["tradeoff"]
    assert (tradeoff[0]["levels"], tradeoff[0]["suppressed"]) == (
        dict.fromkeys(QIS, 0),
        records_below,
    )
    assert [r["suppressed"] for r in tradeoff[1:]] == [s.below_k for s in expected.steps]
    assert set(advice["datafly"]["level_labels"]) == set(QIS)
    assert advice["driver"]["column"] == "age"
    message = str(caught.value)
    assert (
        f"What to do: {classes_below} of {advice['classes']} classes, holding {records_below} "
        f"of {records} records, are smaller than k=5;"
    ) in message
    assert f"suppress {expected.suppressed_records} record(s)." in message
    fingerprint = ti.pushed["return_value"]["input"]
    assert (fingerprint["kind"], fingerprint["table"], fingerprint["rows"]) == (
        "database",
        "adult",
        records,
    )


def test_fingerprint_and_sign_off_in_the_report(tmp_path: Path) -> None:
    """tests/data/test.csv on age: k = 1 (66 is alone), so min_k = 1 passes."""
    source = oracle_data("test.csv")
    report = tmp_path / "r.html"
    op = ReidentificationRiskOperator(
        task_id="assess",
        path=str(source),
        sep=";",
        quasi_identifiers="age",
        min_k=1,
        report_path=str(report),
        sign_off='{"reviewer": "A. Jones", "decision": "approve", "date": "2026-12-01"}',
    )
    got = op.execute({"ti": PushedTI()})  # type: ignore[arg-type]
    data = source.read_bytes()
    fingerprint = got["input"]
    assert fingerprint["sha256"] == hashlib.sha256(data).hexdigest()
    assert (fingerprint["size_bytes"], fingerprint["rows"]) == (len(data), 7)
    html = report.read_text(encoding="utf-8")
    assert fingerprint["sha256"] in html
    assert "A. Jones" in html and "2026-12-01" in html
    assert got["advice"] is None  # no k breach

    op.fingerprint = "false"
    assert op.execute({"ti": PushedTI()})["input"] is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("sign_off", {"reviewer": "A", "when": "x"}, "sign_off: unknown sign-off keys: when"),
        ("advice", "maybe", "advice must be true or false"),
        ("hierarchies", "[1]", "hierarchies must be a mapping"),
        ("warn_min_k", "0.5", "warn_min_k"),
        ("preset", "ema0070", "did you mean .ema-0070."),
    ],
)
def test_bad_parameters_fail_before_reading(name: str, value: Any, message: str) -> None:
    op = ReidentificationRiskOperator(
        task_id="assess", path="/nonexistent/staged.csv", quasi_identifiers="age", min_k=2
    )
    setattr(op, name, value)
    with pytest.raises(ReidentConfigurationError, match=message):
        op.execute({"ti": PushedTI()})  # type: ignore[arg-type]


# ------------------------------------------------- issue 29, item 7: the operator's own limit
#: Eight records on (age, zip), k = 2. By hand: at level 0 the classes (22, 13012),
#: (23, 13012), (35, 13014) and (36, 13014) hold one record each, 4 records below k. Datafly
#: generalizes first the QI with the most distinct values: age (6) before zip (4), to its
#: decades, where every class holds two records. So at the default limit (k = 2 records) it
#: takes age one level up and suppresses nothing; at 50 % (4 of 8 records) it stops before its
#: first step and suppresses those 4 records.
SMALL = "age,zip\n21,13011\n21,13011\n22,13012\n23,13012\n34,13013\n34,13013\n35,13014\n36,13014\n"
SMALL_HIERARCHIES = {
    "age": "21;20-29;*\n22;20-29;*\n23;20-29;*\n34;30-39;*\n35;30-39;*\n36;30-39;*\n",
    "zip": "13011;1301*;*\n13012;1301*;*\n13013;1301*;*\n13014;1301*;*\n",
}


def _small_table(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    source = tmp_path / "small.csv"
    source.write_text(SMALL, encoding="utf-8")
    paths = {}
    for q, text in SMALL_HIERARCHIES.items():
        (tmp_path / f"{q}.csv").write_text(text, encoding="utf-8")
        paths[q] = str(tmp_path / f"{q}.csv")
    return source, paths


@pytest.mark.parametrize(
    ("limit", "levels", "suppressed"),
    [
        (None, {"age": 1, "zip": 0}, 0),
        ("50%", {"age": 0, "zip": 0}, 4),
        (4, {"age": 0, "zip": 0}, 4),
    ],
)
def test_the_outlook_is_what_the_datafly_operator_then_does(
    tmp_path: Path, limit: Any, levels: dict[str, int], suppressed: int
) -> None:
    from reident_airflow.operators import DataflyOperator

    source, hierarchies = _small_table(tmp_path)
    risk = ReidentificationRiskOperator(
        task_id="assess",
        path=str(source),
        quasi_identifiers="age,zip",
        min_k="2",
        hierarchies=hierarchies,
        suppression_limit=limit,
    )
    ti = PushedTI()
    with pytest.raises(ReidentificationBreach):
        risk.execute({"ti": ti})  # type: ignore[arg-type]
    outlook = ti.pushed["return_value"]["advice"]["datafly"]

    run = DataflyOperator(
        task_id="anonymize",
        path=str(source),
        quasi_identifiers="age,zip",
        k=2,
        hierarchies=hierarchies,
        suppression_limit=limit,
        target_path=str(tmp_path / "released.csv"),
    ).execute({})
    assert (run["levels"], run["suppressed_records"]) == (levels, suppressed)  # by hand
    assert outlook["feasible"] is True
    assert (outlook["levels"], outlook["suppressed_records"]) == (levels, suppressed)
    assert outlook["suppression_limit"] == run["suppression_limit"] == (2 if limit is None else 4)
    assert (outlook["tradeoff"][0]["levels"], outlook["tradeoff"][0]["suppressed"]) == (
        {"age": 0, "zip": 0},
        4,
    )


def test_a_bad_suppression_limit_fails_before_reading(tmp_path: Path) -> None:
    op = ReidentificationRiskOperator(
        task_id="assess",
        path=str(tmp_path / "absent.csv"),
        quasi_identifiers="age,zip",
        min_k="2",
        suppression_limit="1.5",
    )
    with pytest.raises(ReidentConfigurationError, match=r"suppression_limit as a fraction"):
        op.execute({"ti": PushedTI()})  # type: ignore[arg-type]


def test_a_built_hierarchy_needs_the_rows() -> None:
    """Issue 39: a spec built from the column's values (``interval``) is built from the
    staged table's QI columns where they reach the client; where they do not (Spark: no rows
    loader) it is left out, so that the advice names its QI as lacking a hierarchy, and an
    ARX file is loaded either way."""
    sex = str(oracle_data("adult_hierarchy_sex.csv"))
    op = ReidentificationRiskOperator(
        task_id="h",
        path="staged.csv",
        quasi_identifiers="sex,age",
        hierarchies={"sex": sex, "age": {"type": "interval", "widths": [10], "top": "*"}},
    )
    read: list[int] = []

    def rows() -> pd.DataFrame:
        read.append(1)
        return pd.DataFrame({"sex": ["Male", "Female"], "age": [23, 47]})

    assert sorted(op._hierarchies(["sex", "age"], rows)) == ["age", "sex"] and read == [1]
    assert sorted(op._hierarchies(["sex", "age"], None)) == ["sex"]
