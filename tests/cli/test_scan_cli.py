"""``reident scan`` and ``reident assess --scan`` on issue 27's test tables, from every
backend the command line reads (CSV, Parquet, SQLite, PostgreSQL, MariaDB): the same verdicts
everywhere, the exit codes, and no value of the table in any output.

The expected verdicts are those ``tests/data/identifiers/make_tables.py`` derives column by
column (and ``tests/engine/test_scan_columns.py`` pins on the CSV): on ``planted.csv`` with
``sex`` and ``ethnicity`` declared and Safe Harbor, ``ref`` (unique), ``mrn`` (record number),
``phone`` (phone numbers) are identifiers, ``age`` (a 97) and ``zip`` (a postcode; restricted
ZIP3 areas) undeclared quasi-identifiers, ``note`` (e-mails in free text) a possible
identifier; on ``clean.csv`` every column is clear.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests._identifiers import DATA, assert_no_value
from tests._identifiers import PLANTED_VERDICTS as PLANTED
from tests._identifiers import rows as _rows
from tests.cli._cli import run
from tests.conftest import require_server

PLANTED_ARGS = ("--qi", "sex,ethnicity", "--safe-harbor")
CLEAN_ARGS = ("--qi", "sex,age,zip", "--safe-harbor")

BACKENDS = [
    "csv",
    "parquet",
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


@pytest.fixture
def table_input(tmp_path: Path) -> Iterator[Callable[[str, str], list[str]]]:
    """``make(backend, name)``: the INPUT arguments that read ``<name>.csv`` from ``backend``
    (Parquet: ``age`` and ``zip`` as integers; databases: ``age`` as an integer, the rest
    text); database tables are dropped after."""
    made: list[tuple[sa.Engine, sa.Table]] = []

    def make(backend: str, name: str) -> list[str]:
        path = DATA / f"{name}.csv"
        if backend == "csv":
            return [str(path)]
        if backend == "parquet":
            import duckdb

            out = tmp_path / f"{name}.parquet"
            names = list(_rows(name)[0])
            cast = {"age", "zip"}
            select = ", ".join(
                f'CAST("{n}" AS BIGINT) AS "{n}"' if n in cast else f'"{n}"' for n in names
            )
            con = duckdb.connect()
            con.execute(
                f"COPY (SELECT {select} FROM read_csv($p, header = true, all_varchar = true)) "
                f"TO '{out}' (FORMAT parquet)",
                {"p": str(path)},
            )
            con.close()
            return [str(out)]
        url = (
            f"sqlite:///{tmp_path / 'scan.db'}" if backend == "sqlite" else require_server(backend)
        )
        engine = sa.create_engine(url)
        table_name = f"i27_gate_{uuid.uuid4().hex[:8]}"
        rows = _rows(name)
        columns = [sa.Column(c, sa.Integer() if c == "age" else sa.String(255)) for c in rows[0]]
        table = sa.Table(table_name, sa.MetaData(), *columns)
        table.create(engine)
        made.append((engine, table))
        typed = [{k: (int(v) if k == "age" and v else v) for k, v in r.items()} for r in rows]
        with engine.begin() as conn:
            conn.execute(table.insert(), typed)
        return [url, "--table", table_name]

    yield make
    for engine, table in made:
        table.drop(engine)
        engine.dispose()


def _verdicts(doc: dict[str, object]) -> dict[str, str]:
    columns = doc["columns"]
    assert isinstance(columns, list)
    return {c["column"]: c["verdict"] for c in columns}


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_finds_every_planted_identifier_on_every_backend(
    backend: str, table_input: Callable[[str, str], list[str]]
) -> None:
    source = table_input(backend, "planted")
    code, out, err = run("scan", *source, *PLANTED_ARGS, "--json", "-", "--quiet")
    assert code == 0, err  # --policy warn (the default) reports and passes
    doc = json.loads(out)
    assert doc["schema"] == "reident.identifier_scan/v1"
    assert _verdicts(doc) == PLANTED
    assert doc["passed"] is True and doc["failing"] == ["ref", "mrn", "age", "zip", "phone"]
    # one stderr line per flagged column, in the table's order
    flagged = [line.split(": ")[2] for line in err.splitlines()]
    assert flagged == ["ref", "mrn", "age", "zip", "phone", "note"]
    code, out, err = run("scan", *source, *PLANTED_ARGS, "--policy", "fail", "--quiet")
    assert code == 1, err
    assert "FAILED" in out.splitlines()[0]
    assert_no_value(out, err)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_clean_table_is_clear_on_every_backend(
    backend: str, table_input: Callable[[str, str], list[str]]
) -> None:
    source = table_input(backend, "clean")
    code, out, err = run("scan", *source, *CLEAN_ARGS, "--policy", "fail", "--json", "-")
    assert code == 0 and err == ""
    assert set(_verdicts(json.loads(out)).values()) == {"clear"}
    code, out, err = run(
        "assess", *source, *CLEAN_ARGS, "--scan", "fail", "--json", "-", "--no-fingerprint"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["passed"] is True and doc["warnings"] == []
    assert set(_verdicts(doc["identifier_scan"]).values()) == {"clear"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_assess_scan_fail_breaches_on_the_planted_table(
    backend: str, table_input: Callable[[str, str], list[str]], tmp_path: Path
) -> None:
    source = table_input(backend, "planted")
    out_json = tmp_path / "assessment.json"
    code, out, err = run(
        "assess", *source, *PLANTED_ARGS, "--min-k", "5", "--scan", "fail",
        "--json", str(out_json), "--no-fingerprint", "--report", str(tmp_path / "r.html"),
    )  # fmt: skip
    # k = 50 passes min_k 5: the scan alone fails the release, five failing columns
    assert code == 1, err
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    assert doc["k"] == 50 and doc["passed"] is False
    assert doc["breaches"] == [
        {"metric": "identifier_scan.failing_columns", "observed": 5.0, "limit": 0.0}
    ]
    assert doc["warnings"] == [
        {"metric": "identifier_scan.flagged_columns", "observed": 6.0, "limit": 0.0}
    ]
    assert _verdicts(doc["identifier_scan"]) == PLANTED
    assert "reident: scan: mrn: identifier (name: record number" in err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert_no_value(out, err, out_json.read_text(encoding="utf-8"), page)


def test_assess_without_scan_is_unchanged_and_scan_adds_only_its_parts() -> None:
    source = str(DATA / "planted.csv")
    base = ("assess", source, "--qi", "sex,ethnicity", "--json", "-", "--no-fingerprint")
    code, plain, err = run(*base)
    assert code == 0 and err == ""
    assert "identifier_scan" not in plain
    code, scanned, err = run(*base, "--scan", "warn", "--quiet")
    assert code == 0  # warn: the release passes
    plain_doc, scanned_doc = json.loads(plain), json.loads(scanned)
    assert scanned_doc.pop("identifier_scan")["options"]["policy"] == "warn"
    # without Safe Harbor age is clear; zip (a postcode by name) still flagged: 5 flagged
    assert scanned_doc.pop("warnings") == [
        {"metric": "identifier_scan.flagged_columns", "observed": 5.0, "limit": 0.0}
    ]
    plain_doc.pop("warnings")
    assert scanned_doc == plain_doc


def test_scan_without_a_value_takes_the_presets_policy() -> None:
    source = str(DATA / "planted.csv")
    args = ("assess", source, "--qi", "sex,ethnicity", "--json", "-", "--quiet")
    # el-emam-public: fail with Safe Harbor (docs/metrics.md §11); k5: warn
    code, out, _ = run(*args, "--preset", "el-emam-public", "--scan", "--no-fingerprint")
    options = json.loads(out)["identifier_scan"]["options"]
    assert code == 1 and options["policy"] == "fail" and options["safe_harbor"] is True
    code, out, _ = run(*args, "--preset", "k5", "--scan", "--no-fingerprint")
    assert code == 0 and json.loads(out)["identifier_scan"]["options"]["policy"] == "warn"
    code, out, _ = run(*args, "--preset", "el-emam-public", "--scan", "warn", "--no-fingerprint")
    assert code == 0 and json.loads(out)["identifier_scan"]["options"]["policy"] == "warn"


def test_allowed_and_extra_names() -> None:
    source = str(DATA / "clean.csv")
    code, out, _ = run(
        "scan", source, "--qi", "sex,age,zip", "--extra-names", "ward", "--json", "-"
    )
    assert code == 0 and _verdicts(json.loads(out))["ward"] == "identifier"
    code, out, _ = run(
        "scan", source, "--extra-names", "ward", "--allow", "ward", "--policy", "fail",
        "--sample-size", "10", "--phone-regions", "US,DE", "--json", "-",
    )  # fmt: skip
    doc = json.loads(out)
    assert doc["options"]["sample_size"] == 10 and doc["options"]["phone_regions"] == ["US", "DE"]
    assert _verdicts(doc)["ward"] == "clear"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--allow", "nope"), "--allow names 'nope', which the table lacks"),
        (("--qi", "nope"), "--qi names 'nope', which the table lacks"),
        (("--phone-regions", "XX"), "--phone-regions holds 'XX'"),
        (("--approximate",), "--approximate applies only with --engine spark"),
    ],
)
def test_input_errors_exit_2_naming_the_flag(argv: tuple[str, ...], message: str) -> None:
    code, out, err = run("scan", str(DATA / "planted.csv"), *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_scan_flags_need_scan_on_assess() -> None:
    code, _, err = run("assess", str(DATA / "planted.csv"), "--qi", "sex", "--safe-harbor")
    assert code == 2 and "--safe-harbor applies only with --scan" in err
    code, _, err = run("assess", str(DATA / "planted.csv"), "--qi", "sex", "--scan", "maybe")
    assert code == 2 and "must be warn or fail" in err


@pytest.mark.spark
def test_scan_on_spark_gives_the_same_verdicts(
    table_input: Callable[[str, str], list[str]],
) -> None:
    import subprocess
    import sys

    [parquet] = table_input("parquet", "planted")
    command = [sys.executable, "-m", "reident_airflow.cli", "scan", "--engine", "spark", parquet]
    command += [*PLANTED_ARGS, "--policy", "fail", "--spark-master", "local[2]", "--json", "-"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stderr[-3000:]
    assert _verdicts(json.loads(done.stdout)) == PLANTED
    assert_no_value(done.stdout, done.stderr)
