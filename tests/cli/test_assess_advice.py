"""``reident assess`` after the gate (issue 19): warnings and the advice on a k breach on
stderr, the JSON's ``"advice"`` and ``"input"`` objects, and the report's fingerprint.

Issue 19's acceptance: Adult on ``sex, age, race`` with ``min_k = 5``; the counts below 5
are made here with ``csv`` and ``Counter``, the Datafly outcome by a direct
:func:`~reident_airflow.engine.datafly.datafly` run with ARX's hierarchies in tests/data.
"""

from __future__ import annotations

import csv
import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.engine.datafly import datafly
from reident_airflow.engine.hierarchies import load_hierarchy
from tests.cli._cli import one_line_error, run
from tests.conftest import oracle_data, require_server

QIS = ("sex", "age", "race")


def _adult_counts() -> tuple[int, int, int]:
    """Records, and the classes and records below k = 5 on sex, age and race, by hand."""
    with oracle_data("adult.csv").open(newline="", encoding="utf-8") as fh:
        rows = [tuple(r[q] for q in QIS) for r in csv.DictReader(fh, delimiter=";")]
    small = [n for n in Counter(rows).values() if n < 5]
    return len(rows), len(small), sum(small)


def test_adult_k_breach_names_the_counts_and_datafly(tmp_path: Path) -> None:
    adult = oracle_data("adult.csv")
    given = [f"{q}={oracle_data(f'adult_hierarchy_{q}.csv')}" for q in QIS]
    report = tmp_path / "r.html"
    argv = ["assess", str(adult), "--sep", ";", "--qi", ",".join(QIS), "--min-k", "5"]
    for flag in given:
        argv += ["--hierarchy", flag]
    code, out, err = run(*argv, "--json", "-", "--report", str(report), "--quiet")
    assert code == 1
    doc = json.loads(out)
    records, classes_below, records_below = _adult_counts()
    assert (records, classes_below, records_below) == (30162, 191, 425)

    frame = pd.read_csv(adult, sep=";", dtype=str, keep_default_na=False)
    arx = {q: load_hierarchy(oracle_data(f"adult_hierarchy_{q}.csv"), column=q) for q in QIS}
    expected = datafly(frame, list(QIS), arx, 5)

    advice = doc["advice"]
    assert (advice["k"], advice["records"]) == (5, records)
    assert (advice["classes_below_k"], advice["records_below_k"]) == (classes_below, records_below)
    assert advice["datafly"]["feasible"] is True
    assert advice["datafly"]["levels"] == dict(expected.levels)
    assert advice["datafly"]["suppressed_records"] == expected.suppressed_records
    # --quiet silences progress, not results: the advice is the one line on stderr
    [line] = err.splitlines()
    assert line.startswith(
        f"reident: advice: {classes_below} of {doc['classes']} classes, holding "
        f"{records_below} of {records} records, are smaller than k=5;"
    ), line
    assert f"suppress {expected.suppressed_records} record(s)." in line
    assert "'age' drives the risk" in line

    # the input's fingerprint: the file's SHA-256 and size, and the records read
    data = adult.read_bytes()
    fingerprint = doc["input"]
    assert fingerprint["kind"] == "file" and fingerprint["location"] == str(adult)
    assert fingerprint["sha256"] == hashlib.sha256(data).hexdigest()
    assert (fingerprint["size_bytes"], fingerprint["rows"]) == (len(data), records)
    assert fingerprint["sha256"] in report.read_text(encoding="utf-8")  # the report shows it


def test_warnings_are_printed_and_do_not_fail(tmp_path: Path) -> None:
    # classes (x, 1) x3 and (y, 2) x4: k = 3, passing --min-k 2 but under the warning level 5
    table = tmp_path / "t.csv"
    table.write_text("a,b\n" + "x,1\n" * 3 + "y,2\n" * 4, encoding="utf-8")
    base = ("assess", str(table), "--qi", "a,b", "--json", "-")
    code, out, err = run(*base, "--min-k", "2", "--warn-min-k", "5", "--quiet", "--no-fingerprint")
    assert code == 0
    doc = json.loads(out)
    assert doc["warnings"] == [{"metric": "k", "observed": 3, "limit": 5}]
    assert (doc["advice"], doc["input"]) == (None, None)  # no k breach; not fingerprinted
    assert err == "reident: warning: k = 3 (warning level: at least 5)\n"

    # a k breach with --no-advice: no advice and INPUT is not read again
    code, out, err = run(*base, "--min-k", "4", "--no-advice", "--quiet")
    assert code == 1 and err == ""
    doc = json.loads(out)
    assert doc["advice"] is None and doc["input"]["rows"] == 7


def test_advice_without_a_hierarchy_says_which_qis_lack_one(tmp_path: Path) -> None:
    # classes (x, 1) x1 and (y, 2) x2 below k = 3: 2 classes, 3 records; no hierarchy for
    # 'a' or 'b' (neither is bundled), so no Datafly outlook
    table = tmp_path / "t.csv"
    table.write_text("a,b\nx,1\ny,2\ny,2\nz,3\nz,3\nz,3\n", encoding="utf-8")
    code, out, err = run("assess", str(table), "--qi", "a,b", "--min-k", "3", "--json", "-")
    assert code == 1
    advice = json.loads(out)["advice"]
    assert (advice["classes_below_k"], advice["records_below_k"], advice["datafly"]) == (
        2,
        3,
        None,
    )
    line = err.strip().splitlines()[-1]
    assert line.startswith("reident: advice: 2 of 3 classes, holding 3 of 6 records"), line
    assert "no hierarchy (or none that covers the data) for 'a', 'b'" in line


def test_a_hierarchy_for_a_column_not_among_the_qis_is_refused_first(tmp_path: Path) -> None:
    code, _, err = run(
        "assess", str(tmp_path / "absent.csv"), "--qi", "a", "--hierarchy", "zip=h.csv"
    )
    line = one_line_error(code, err)
    assert "--hierarchy given for column 'zip'" in line  # before INPUT (absent) is read


# --------------------------------------------------------------------------- a database
ROWS = [("M", 30)] * 2 + [("M", 31), ("M", 32), ("F", 41)] + [("F", 40)] * 2


@pytest.fixture
def patients(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A PostgreSQL table of :data:`ROWS` (sex, age), and its URL."""
    url = require_server("postgresql")
    engine = sa.create_engine(url)
    name = f"advice_{uuid.uuid4().hex[:10]}"
    table = sa.Table(name, sa.MetaData(), sa.Column("sex", sa.Text), sa.Column("age", sa.Integer))
    with engine.begin() as conn:
        table.create(conn)
        conn.execute(sa.insert(table), [{"sex": s, "age": a} for s, a in ROWS])
    try:
        yield url, name
    finally:
        with engine.begin() as conn:
            table.drop(conn)
        engine.dispose()


@pytest.mark.db
def test_database_advice_and_fingerprint(patients: tuple[str, str], tmp_path: Path) -> None:
    url, name = patients
    (tmp_path / "age.csv").write_text(
        "30;30-39;*\n31;30-39;*\n32;30-39;*\n40;40-49;*\n41;40-49;*\n", encoding="utf-8"
    )
    (tmp_path / "sex.csv").write_text("M;*\nF;*\n", encoding="utf-8")
    code, out, err = run(
        "assess",
        url,
        "--table",
        name,
        "--qi",
        "sex,age",
        "--min-k",
        "2",
        "--json",
        "-",
        "--hierarchy",
        f"age={tmp_path / 'age.csv'}",
        "--hierarchy",
        f"sex={tmp_path / 'sex.csv'}",
    )
    assert code == 1, err
    doc = json.loads(out)
    # classes (M,30) 2, (M,31) 1, (M,32) 1, (F,41) 1, (F,40) 2: 3 classes of 1 record below
    # k = 2. Datafly: 3 records below k exceed its limit of k = 2 records, so it generalizes
    # age (5 distinct values, sex 2) one level: (M,30-39) 4, (F,40-49) 3 -- none suppressed
    advice = doc["advice"]
    assert (advice["classes"], advice["classes_below_k"], advice["records_below_k"]) == (5, 3, 3)
    assert advice["datafly"]["levels"] == {"sex": 0, "age": 1}
    assert advice["datafly"]["suppressed_records"] == 0
    # age level 1 is 30-39 / 40-49: intervals of width 10
    assert (
        "generalize sex → as is (level 0), age → intervals of width 10 (level 1) and suppress "
        "0 record(s)"
    ) in err
    # the trade-off: 3 records below k as they are, none after age -> 1
    assert advice["datafly"]["tradeoff"] == [
        {
            "levels": {"sex": 0, "age": 0},
            "suppressed": 3,
            "labels": {"sex": "as is", "age": "as is"},
        },
        {
            "levels": {"sex": 0, "age": 1},
            "suppressed": 0,
            "labels": {"sex": "as is", "age": "intervals of width 10"},
        },
    ]
    fingerprint = doc["input"]
    assert fingerprint["kind"] == "database" and fingerprint["dialect"] == "postgresql"
    assert (fingerprint["table"], fingerprint["rows"]) == (name, len(ROWS))
    assert fingerprint["snapshot"] and fingerprint["location"] == (
        "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
    )


def test_a_glob_of_parquet_files_is_not_fingerprinted(tmp_path: Path) -> None:
    # two files of one class each, (x) 2 and (y) 1 records: k = 1
    pd.DataFrame({"a": ["x", "x"]}).to_parquet(tmp_path / "p1.parquet")
    pd.DataFrame({"a": ["y"]}).to_parquet(tmp_path / "p2.parquet")
    code, out, _ = run("assess", str(tmp_path / "p*.parquet"), "--qi", "a", "--json", "-")
    doc = json.loads(out)
    assert (code, doc["records"], doc["k"], doc["input"]) == (0, 3, 1, None)
    # the directory is: one digest over its files' digests
    code, out, _ = run("assess", str(tmp_path), "--qi", "a", "--json", "-")
    assert json.loads(out)["input"]["rows"] == 3 and len(json.loads(out)["input"]["sha256"]) == 64


# ------------------------------------------ issue 29, item 7: the limit of reident datafly
#: Eight records on (age, zip), k = 2; by hand (tests/operators/test_risk_advice.py): 4
#: records below k at level 0; at the default limit (2 records) Datafly takes age to its
#: decades and suppresses none, at --suppression-limit 4 it stops there and suppresses 4.
SMALL = "age,zip\n21,13011\n21,13011\n22,13012\n23,13012\n34,13013\n34,13013\n35,13014\n36,13014\n"
SMALL_HIERARCHIES = {
    "age": "21;20-29;*\n22;20-29;*\n23;20-29;*\n34;30-39;*\n35;30-39;*\n36;30-39;*\n",
    "zip": "13011;1301*;*\n13012;1301*;*\n13013;1301*;*\n13014;1301*;*\n",
}


@pytest.mark.parametrize(
    ("limit", "levels", "suppressed"),
    [((), {"age": 1, "zip": 0}, 0), (("--suppression-limit", "4"), {"age": 0, "zip": 0}, 4)],
)
def test_the_outlook_is_what_reident_datafly_then_does(
    tmp_path: Path, limit: tuple[str, ...], levels: dict[str, int], suppressed: int
) -> None:
    source = tmp_path / "small.csv"
    source.write_text(SMALL, encoding="utf-8")
    given: list[str] = []
    for q, text in SMALL_HIERARCHIES.items():
        (tmp_path / f"{q}.csv").write_text(text, encoding="utf-8")
        given += ["--hierarchy", f"{q}={tmp_path / f'{q}.csv'}"]
    code, out, err = run(
        "assess", str(source), "--qi", "age,zip", "--min-k", "2", *given, *limit, "--json", "-"
    )
    assert code == 1, err
    outlook = json.loads(out)["advice"]["datafly"]
    code, out, err = run(
        "datafly",
        str(source),
        "--qi",
        "age,zip",
        "--k",
        "2",
        *given,
        *limit,
        "--output",
        str(tmp_path / "released.csv"),
        "--json",
        "-",
    )
    assert code == 0, err
    done = json.loads(out)
    assert (done["levels"], done["suppressed_records"]) == (levels, suppressed)  # by hand
    assert (outlook["levels"], outlook["suppressed_records"]) == (levels, suppressed)
    assert outlook["suppression_limit"] == done["suppression_limit"]


def test_a_bad_suppression_limit_is_a_usage_error(tmp_path: Path) -> None:
    source = tmp_path / "small.csv"
    source.write_text(SMALL, encoding="utf-8")
    code, _, err = run(
        "assess", str(source), "--qi", "age,zip", "--min-k", "2", "--suppression-limit", "x"
    )
    assert code == 2 and "--suppression-limit" in one_line_error(code, err)


def test_the_tradeoff_opens_with_what_datafly_suppresses_not_the_histogram(
    tmp_path: Path,
) -> None:
    """Why the first row is a Datafly run and not ``records_below_k`` (sources/advice.py):
    by hand, of 5 records the one whose QIs are all ``*`` is left out of the assessment (ARX),
    whose 4 records sit in 2 classes of 2, all below k = 3; Datafly groups that record as a
    class of its own, so at level 0 it would suppress 5."""
    source = tmp_path / "starred.csv"
    source.write_text("a,b\n1,x\n1,x\n2,y\n2,y\n*,*\n", encoding="utf-8")
    (tmp_path / "a.csv").write_text("1;*\n2;*\n*;*\n", encoding="utf-8")
    (tmp_path / "b.csv").write_text("x;*\ny;*\n*;*\n", encoding="utf-8")
    code, out, err = run(
        "assess", str(source), "--qi", "a,b", "--min-k", "3",
        "--hierarchy", f"a={tmp_path / 'a.csv'}", "--hierarchy", f"b={tmp_path / 'b.csv'}",
        "--json", "-", "--no-fingerprint",
    )  # fmt: skip
    assert code == 1, err
    doc = json.loads(out)
    assert (doc["records"], doc["excluded_records"]) == (4, 1)
    assert doc["advice"]["records_below_k"] == 4
    assert doc["advice"]["datafly"]["tradeoff"][0]["suppressed"] == 5
