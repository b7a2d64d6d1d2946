"""The release comparison on typed columns and its ledger's integrity (issue 38, items 1-4).

The releases are small and worked by hand: the previous release holds 3 rows, the
candidate the same 3 and one more row alone in its class, so the truth is 1 arrival in 1
class and no departure (or, for a changed value, 1 arrival and 1 departure).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.files import FileSource
from reident_airflow.sources.sql import SqlSource
from reident_airflow.sources.writers import ledger_of_file, ledger_of_table
from tests._schemas import schema_errors
from tests.cli._cli import assess_json, one_line_error, run
from tests.conftest import require_server

# ------------------------------------------------------------- item 1: typed QIs on servers
#: (backend, column type, three previous values, the new value): PostgreSQL numeric, float and
#: bytea, MariaDB INT, DECIMAL and DATE -- QIs that cannot hold the text '*'
TYPED = [
    ("postgresql", "numeric", ("30", "30", "40"), "41.5"),
    ("postgresql", "double precision", ("1.5", "1.5", "2.5"), "3.5"),
    ("postgresql", "bytea", ("'\\x01'", "'\\x01'", "'\\x02'"), "'\\xff'"),
    ("mariadb", "INT", ("30", "30", "40"), "41"),
    ("mariadb", "DECIMAL(5,2)", ("1.5", "1.5", "2.5"), "3.5"),
    ("mariadb", "DATE", ("'2020-01-01'", "'2020-01-01'", "'2021-01-01'"), "'2022-01-01'"),
]


def _fill(conn: sa.Connection, table: str, native: str, values: tuple[str, ...]) -> None:
    q = conn.dialect.identifier_preparer.quote
    conn.exec_driver_sql(f"CREATE TABLE {q(table)} (sex VARCHAR(3), v {native})")
    rows = ", ".join(f"('F', {v})" for v in values)
    conn.exec_driver_sql(f"INSERT INTO {q(table)} VALUES {rows}")


@pytest.mark.db
@pytest.mark.parametrize(("backend", "native", "old", "new"), TYPED)
def test_typed_qis_on_servers(backend: str, native: str, old: tuple[str, ...], new: str) -> None:
    """``reident assess URL --table new --qi sex,v --previous old`` on a QI of a type that
    cannot hold the text '*': 1 arrival alone in its class (hand-counted), not exit 2
    (main grouped by a constant flag both servers read as a column position)."""
    url = require_server(backend)
    engine = sa.create_engine(url)
    prefix = f"i38t_{uuid.uuid4().hex[:8]}"
    old_t, new_t = f"{prefix}_old", f"{prefix}_new"
    try:
        with engine.begin() as conn:
            _fill(conn, old_t, native, old)
            _fill(conn, new_t, native, (*old, new))
        code, doc = assess_json(url, "--table", new_t, "--qi", "sex,v", "--previous", old_t)
        since = doc["since_last_release"]
        assert (since["previous_records"], since["records"]) == (3, 4)
        assert code == 0
        assert since["arrivals"]["histogram"] == [[1, 1]]
        assert since["departures"]["histogram"] == []
        ledger = ledger_of_table(engine, old_t, ["sex", "v"])
        _code, doc = assess_json(url, "--table", new_t, "--qi", "sex,v", "--previous", ledger)
        assert doc["since_last_release"]["arrivals"]["histogram"] == [[1, 1]]
    finally:
        with engine.begin() as conn:
            for name in (old_t, new_t, f"{old_t}__ledger"):
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


# ------------------------------------------------- item 2: SQLite text against integers
@pytest.fixture
def sqlite_ages(tmp_path: Path) -> Iterator[tuple[sa.Engine, str]]:
    """``old.age`` stored as text, ``new.age`` as integers (one real arrival, 41)."""
    url = f"sqlite:///{tmp_path / 'ages.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE old (sex TEXT, age TEXT)")
        conn.exec_driver_sql("CREATE TABLE new (sex TEXT, age INTEGER)")
        conn.exec_driver_sql("INSERT INTO old VALUES ('F', '30'), ('F', '30'), ('M', '40')")
        conn.exec_driver_sql(
            "INSERT INTO new VALUES ('F', 30), ('F', 30), ('M', 40), ('M', 41), ('M', 41)"
        )
    yield engine, url
    engine.dispose()


def test_sqlite_text_against_integers_is_refused(sqlite_ages: tuple[sa.Engine, str]) -> None:
    """The mix files, PostgreSQL and MariaDB refuse: refused on SQLite too, naming the column
    and both kinds (main reported every unchanged row as an arrival and a departure)."""
    engine, url = sqlite_ages
    code, _out, err = run(
        "assess", url, "--table", "new", "--qi", "sex,age", "--previous", "old",
        "--min-arrival-k", "2", "--no-fingerprint", "--no-advice",
    )  # fmt: skip
    line = one_line_error(code, err)
    assert "'age'" in line and "number" in line and "text" in line, line
    with pytest.raises(InvalidInputError, match="'age' holds number values"):
        SqlSource(engine, table="new").release_changes(SqlSource(engine, table="old"), ["sex"])


def test_sqlite_text_against_integers_through_the_ledger(
    sqlite_ages: tuple[sa.Engine, str],
) -> None:
    engine, _url = sqlite_ages
    ledger = ledger_of_table(engine, "old", ["sex", "age"])
    with pytest.raises(InvalidInputError, match="'age'"):
        SqlSource(engine, table="new").release_changes(
            SqlSource(engine, table=ledger), ["sex", "age"]
        )


def test_sqlite_integers_and_reals_of_one_value_are_one_value(tmp_path: Path) -> None:
    """SQLite compares an integer and a real by value, exactly (``30 = 30.0``; ``2**53 + 1``
    is not ``2**53``): an INTEGER and a REAL column of the same numbers compare equal."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'n.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE old (v REAL)")
        conn.exec_driver_sql("CREATE TABLE new (v INTEGER)")
        conn.exec_driver_sql("INSERT INTO old VALUES (30.0), (9007199254740992.0)")
        conn.exec_driver_sql("INSERT INTO new VALUES (30), (9007199254740993)")
    changes = SqlSource(engine, table="new").release_changes(SqlSource(engine, table="old"), ["v"])
    # by hand: 30 = 30.0; 2**53 + 1 arrives, 2**53 departs
    assert changes.arrivals is not None and changes.departures is not None
    assert (changes.arrivals.records, changes.departures.records) == (1, 1)
    engine.dispose()


# ------------------------------------------------------- item 3: MariaDB binary ledgers
@pytest.mark.db
@pytest.mark.parametrize("mode", ["STRICT_TRANS_TABLES", ""])
def test_mariadb_ledger_of_binary_columns(mode: str) -> None:
    """VARBINARY, BLOB and BIT holding bytes that are not UTF-8, changed in one row: through
    the ledger, 1 arrival and 1 departure (by hand), on a strict and a lax server, and no
    driver error (main converted the bytes to text: an error on a strict server, ``?`` for
    both values on a lax one)."""
    url = require_server("mariadb")
    engine = sa.create_engine(url, connect_args={"init_command": f"SET sql_mode = '{mode}'"})
    prefix = f"i38b_{uuid.uuid4().hex[:8]}"
    old_t, new_t = f"{prefix}_old", f"{prefix}_new"
    try:
        with engine.begin() as conn:
            for name, last in ((old_t, b"\xff\xfe"), (new_t, b"\xfe\xff")):
                conn.exec_driver_sql(
                    f"CREATE TABLE `{name}` (g VARCHAR(3), vb VARBINARY(8), bl BLOB, bt BIT(16))"
                )
                conn.exec_driver_sql(
                    f"INSERT INTO `{name}` VALUES (%s, %s, %s, %s), (%s, %s, %s, %s)",
                    ("a", b"\x80", b"\xc3", b"\xff\x01", "a", last, last, last),
                )
        ledger = ledger_of_table(engine, old_t, ["g"])
        new = SqlSource(engine, table=new_t)
        for previous in (old_t, ledger):
            changes = new.release_changes(SqlSource(engine, table=previous), ["g"])
            assert changes.arrivals is not None and changes.departures is not None, previous
            assert (changes.arrivals.records, changes.departures.records) == (1, 1), previous
    finally:
        with engine.begin() as conn:
            for name in (old_t, new_t, f"{old_t}__ledger"):
                conn.exec_driver_sql(f"DROP TABLE IF EXISTS `{name}`")
        engine.dispose()


# ----------------------------------------------------------- item 4: the ledger's integrity
@pytest.fixture
def released(tmp_path: Path) -> tuple[Path, Path]:
    """A released Parquet file (unchanged as the candidate) and its ledger."""
    frame = pd.DataFrame({"a": ["x", "y", "y"], "b": ["1", "2", "3"]})
    path = tmp_path / "release.parquet"
    frame.to_parquet(path, index=False)
    candidate = tmp_path / "candidate.parquet"
    frame.to_parquet(candidate, index=False)
    return candidate, ledger_of_file(path, ["a"])


def _edit_header(ledger: Path, edit: Any) -> None:
    table = pq.read_table(ledger)
    rows = table.to_pylist()
    about = json.loads(rows[0]["about"])
    edit(about)
    rows[0]["about"] = json.dumps(about, sort_keys=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), ledger)


def test_an_edited_file_ledger_header_is_refused(released: tuple[Path, Path]) -> None:
    """Its columns swapped in the header, the ledger of an unchanged release would report
    every row an arrival and a departure: refused instead, naming the ledger."""
    candidate, ledger = released
    unchanged = FileSource(candidate).release_changes(FileSource(ledger), ["a"])
    assert unchanged.arrivals is None and unchanged.departures is None
    _edit_header(ledger, lambda about: about.update(columns=["b", "a"], qis=["a"]))
    with pytest.raises(InvalidInputError, match="header does not match") as caught:
        FileSource(candidate).release_changes(FileSource(ledger), ["a"])
    assert str(ledger) in str(caught.value)


def test_an_edited_table_ledger_header_is_refused(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'l.db'}")
    pd.DataFrame({"a": ["x", "y"], "b": ["1", "2"]}).to_sql("rel", engine, index=False)
    ledger = ledger_of_table(engine, "rel", ["a"])
    with engine.begin() as conn:
        about = json.loads(
            conn.exec_driver_sql(f'SELECT about FROM "{ledger}" WHERE kind = 0').scalar_one()
        )
        about["columns"] = ["b", "a"]
        conn.exec_driver_sql(
            f'UPDATE "{ledger}" SET about = ? WHERE kind = 0', (json.dumps(about),)
        )
    with pytest.raises(InvalidInputError, match="header does not match"):
        SqlSource(engine, table="rel").release_changes(SqlSource(engine, table=ledger), ["a"])
    engine.dispose()


def test_a_damaged_ledger_is_said_of_the_ledger(tmp_path: Path) -> None:
    """Bytes of the ledger's data pages overwritten: an input error naming the ledger, not
    the candidate."""
    frame = pd.DataFrame({"a": [f"v{i % 50}" for i in range(5000)], "b": range(5000)})
    path = tmp_path / "release.parquet"
    frame.to_parquet(path, index=False)
    ledger = ledger_of_file(path, ["a"])
    data = bytearray(ledger.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = bytes(4096)
    ledger.write_bytes(bytes(data))
    with pytest.raises(InvalidInputError) as caught:
        FileSource(path).release_changes(FileSource(ledger), ["a"])
    message = str(caught.value)
    assert message.startswith(str(ledger)) and "ledger" in message, message


def test_a_killed_ledger_write_leaves_no_temporary_file_behind(tmp_path: Path) -> None:
    """A ledger write killed outright (``kill -9``) leaves its temporary file, named as the
    write names it with the dead process's id; the next write of that ledger removes it."""
    frame = pd.DataFrame({"a": ["x", "y"]})
    path = tmp_path / "release.parquet"
    frame.to_parquet(path, index=False)
    child = subprocess.Popen(["sleep", "60"])
    child.kill()
    child.wait()
    ledger = tmp_path / "release.parquet.ledger.parquet"
    left = tmp_path / f".{ledger.name}.reident-{child.pid}-0badf00d.tmp"
    left.write_bytes(b"PAR1 half written")
    assert not _alive(child.pid)
    ledger_of_file(path, ["a"])
    assert not left.exists()
    assert ledger.is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_int64_against_float64_is_refused_truthfully(tmp_path: Path) -> None:
    """Equal numbers of two types: refused (no backend compares them exactly here), with a
    message that says so -- not that values of different kinds never compare equal."""
    pd.DataFrame({"v": pd.array([1, 2], dtype="int64")}).to_parquet(tmp_path / "n.parquet")
    pd.DataFrame({"v": pd.array([1.0, 2.0], dtype="float64")}).to_parquet(tmp_path / "o.parquet")
    with pytest.raises(InvalidInputError) as caught:
        FileSource(tmp_path / "n.parquet").release_changes(
            FileSource(tmp_path / "o.parquet"), ["v"]
        )
    message = str(caught.value)
    assert "never compare equal" not in message
    assert "numbers of two types are not compared" in message and "'v'" in message


def test_the_assessment_schema_describes_since_last_release(tmp_path: Path) -> None:
    """The shipped assessment JSON Schema checks ``since_last_release``: the document the CLI
    writes validates, and one with a wrong part does not."""
    old = pd.DataFrame({"sex": ["F", "F", "M"], "zip": ["1", "1", "2"]})
    new = pd.concat([old, pd.DataFrame({"sex": ["M"], "zip": ["3"]})], ignore_index=True)
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    code, out, err = run(
        "assess", str(tmp_path / "new.csv"), "--qi", "sex,zip", "--previous",
        str(tmp_path / "old.csv"), "--json", "-", "--no-advice", "--no-fingerprint",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["since_last_release"]["arrivals"]["histogram"] == [[1, 1]]
    assert schema_errors(doc) == []
    for wrong in (
        {"arrivals": {**doc["since_last_release"]["arrivals"], "k": 0}},
        {"schema": "reident.differencing/v0"},
        {"records": -1},
        {"departures": None},
    ):
        bad = {**doc, "since_last_release": {**doc["since_last_release"], **wrong}}
        assert schema_errors(bad), wrong


def test_a_failing_ledger_write_quotes_no_statement(tmp_path: Path) -> None:
    """A database error while the ledger's digests are computed is an error naming the
    ledger, carrying neither the statement nor a value (here SQLite's: a column the digest
    function cannot take, made to fail by a value the function refuses)."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'w.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE rel (a TEXT, b TEXT)")
        conn.exec_driver_sql("INSERT INTO rel VALUES ('secret-value', 'x')")
    from reident_airflow.sources import sql_ledger

    def failing(*values: Any) -> str:
        raise ValueError("secret-value")

    patch = pytest.MonkeyPatch()
    patch.setattr(sql_ledger, "sqlite_digest", failing)
    try:
        with pytest.raises(Exception) as caught:
            ledger_of_table(engine, "rel", ["a"])
    finally:
        patch.undo()
        engine.dispose()
    text = str(caught.value)
    assert "secret-value" not in text and "SELECT" not in text.upper(), text
    assert "rel__ledger" in text, text


def test_a_version_1_ledger_is_refused_naming_its_version(released: tuple[Path, Path]) -> None:
    """A ledger written before the header's digest (version 1: its header row holds no
    digest) is refused clearly, not trusted."""
    candidate, ledger = released
    table = pq.read_table(ledger)
    rows = table.to_pylist()
    about = json.loads(rows[0]["about"])
    about["version"] = 1
    rows[0]["about"] = json.dumps(about, sort_keys=True)
    rows[0]["row_digest"] = None
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), ledger)
    with pytest.raises(InvalidInputError, match="version 1") as caught:
        FileSource(candidate).release_changes(FileSource(ledger), ["a"])
    assert "write the ledger again" in str(caught.value)
