"""Inputs the command line cannot read say so in one line, naming what they are (issue 42
item 6): an Excel or JSON file was read as CSV (a header of garbage or of JSON fragments),
a ``postgres://`` URL failed with "not a usable database URL (NoSuchModuleError)", and a
mistyped table name said only that the table does not exist.

The spreadsheets' first bytes are the containers' published signatures: a ZIP local file
header ``PK\\x03\\x04`` (.xlsx, .ods) and the OLE2 compound file signature ``D0 CF 11 E0``
(.xls); neither file is a whole workbook, as the first bytes are what is read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.cli._cli import one_line_error, run
from tests.conftest import require_server

_ZIP = b"PK\x03\x04\x14\x00\x06\x00" + b"\x00" * 56
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 56


@pytest.mark.parametrize(
    ("name", "content", "named"),
    [
        ("people.xlsx", _ZIP, "an Excel workbook (.xlsx)"),
        ("people.xls", _OLE2, "an Excel 97-2003 workbook (.xls)"),
        # the name says CSV, the bytes say otherwise
        ("people.csv", _ZIP, "an Excel workbook (a ZIP container, as .xlsx is)"),
        ("export.csv", _OLE2, "an Excel 97-2003 workbook (.xls)"),
        ("people.json", b'[{"sex": "F", "zip": "100"}]', "JSON"),
        ("people.jsonl", b'{"sex": "F"}\n{"sex": "M"}\n', "JSON Lines"),
        ("people.txt", b'  {"sex": "F", "zip": "100"}', "JSON"),
        ("people.csv", b'\xef\xbb\xbf[\n  {"sex": "F"}\n]', "JSON"),
    ],
)
@pytest.mark.parametrize("command", ["assess", "scan"])
def test_a_spreadsheet_or_json_file_is_refused_naming_its_format(
    tmp_path: Path, name: str, content: bytes, named: str, command: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    code, out, err = run(command, str(path), "--qi", "sex")
    line = one_line_error(code, err)
    assert f"{named}, not CSV" in line, line
    assert out == ""


def test_a_csv_whose_header_starts_with_a_bracket_is_still_csv(tmp_path: Path) -> None:
    path = tmp_path / "bracket.csv"
    path.write_text("[sex],zip\nF,100\nF,100\n", encoding="utf-8")
    code, _, err = run("assess", str(path), "--qi", "[sex]")
    assert code == 0, err


@pytest.mark.parametrize("scheme", ["postgres", "postgres+psycopg2", "POSTGRES"])
def test_a_postgres_url_gets_the_postgresql_hint(scheme: str) -> None:
    url = f"{scheme}://user:secret@127.0.0.1:5432/test"
    code, _, err = run("assess", url, "--table", "patients", "--qi", "sex")
    line = one_line_error(code, err)
    assert "use postgresql://" in line
    assert "secret" not in line


def test_a_mistyped_table_name_gets_the_closest_names(tmp_path: Path) -> None:
    db = tmp_path / "staging.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE patients (sex TEXT, zip TEXT)")
        conn.execute("CREATE TABLE patient_visits (sex TEXT)")
        conn.execute("CREATE TABLE billing (sex TEXT)")
        conn.execute("INSERT INTO patients VALUES ('F', '10001')")
    for command in ("assess", "scan"):
        code, _, err = run(command, f"sqlite:///{db}", "--table", "patinets", "--qi", "sex")
        line = one_line_error(code, err)
        assert "table 'patinets' does not exist" in line
        assert "did you mean 'patients'" in line
        assert "billing" not in line  # not close
        assert "10001" not in line  # names only, never a value
    # nothing close: no hint
    code, _, err = run("assess", f"sqlite:///{db}", "--table", "zzz", "--qi", "sex")
    assert "did you mean" not in one_line_error(code, err)


@pytest.mark.db
def test_a_mistyped_table_name_on_postgresql(tmp_path: Path) -> None:
    url = require_server("postgresql")
    engine = sa.create_engine(url)
    name = "i42_hint_patients"
    with engine.begin() as conn:
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        conn.exec_driver_sql(f"CREATE TABLE {name} (sex text)")
    try:
        code, _, err = run("assess", url, "--table", "i42_hint_patinets", "--qi", "sex")
        assert f"did you mean '{name}'" in one_line_error(code, err)
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
        engine.dispose()
