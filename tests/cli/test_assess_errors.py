"""Bad input to `reident assess`: exit 2 and one line naming the problem, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli._cli import one_line_error, run
from tests.conftest import oracle_data

ADULT = str(oracle_data("adult.csv"))


def test_unknown_qi_lists_available_columns() -> None:
    code, _, err = run("assess", ADULT, "--sep", ";", "--qi", "sex,zip")
    line = one_line_error(code, err)
    assert "'zip'" in line and "available columns" in line and "'marital-status'" in line


def test_empty_table(tmp_path: Path) -> None:
    f = tmp_path / "empty.csv"
    f.write_text("sex;age\r\n", encoding="utf-8")
    line = one_line_error(*run("assess", str(f), "--sep", ";", "--qi", "sex")[::2])
    assert "no records" in line


def test_empty_file(tmp_path: Path) -> None:
    f = tmp_path / "nothing.csv"
    f.write_bytes(b"")
    line = one_line_error(*run("assess", str(f), "--qi", "sex")[::2])
    assert "empty" in line


@pytest.mark.parametrize("qi", ["", ",", "sex,,age"])
def test_empty_qi(qi: str) -> None:
    line = one_line_error(*run("assess", ADULT, "--sep", ";", "--qi", qi)[::2])
    assert "--qi" in line


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--record-threshold", "0"),
        ("--record-threshold", "1.5"),
        ("--max-highest-risk", "-1"),
        ("--max-average-risk", "abc"),
        ("--sampling-fraction", "2"),
    ],
)
def test_threshold_outside_unit_interval(flag: str, value: str) -> None:
    line = one_line_error(*run("assess", ADULT, "--sep", ";", "--qi", "sex", flag, value)[::2])
    assert flag in line


def test_population_smaller_than_sample() -> None:
    line = one_line_error(
        *run("assess", ADULT, "--sep", ";", "--qi", "sex", "--population-size", "1000")[::2]
    )
    assert "1000" in line and "30162" in line


def test_population_table_missing_a_sample_class(tmp_path: Path) -> None:
    # a register larger than the sample (every 'Male' record three times) that lacks every
    # 'Female' record: the sample's Female classes are not covered
    rows = oracle_data("adult.csv").read_text(encoding="utf-8").splitlines()
    males = [r for r in rows[1:] if r.startswith("Male;")]
    reg = tmp_path / "register.csv"
    reg.write_text("\n".join([rows[0], *males, *males, *males]) + "\n", encoding="utf-8")
    line = one_line_error(
        *run("assess", ADULT, "--sep", ";", "--qi", "sex,race", "--population-table", str(reg))[::2]
    )
    assert "does not cover the sample" in line and "Female" not in line


def test_unreadable_file(tmp_path: Path) -> None:
    line = one_line_error(*run("assess", str(tmp_path / "missing.csv"), "--qi", "a")[::2])
    assert "no such file" in line
    line = one_line_error(*run("assess", str(tmp_path), "--qi", "a")[::2])
    assert "directory" in line


def test_corrupt_parquet(tmp_path: Path) -> None:
    f = tmp_path / "broken.parquet"
    f.write_bytes(b"PAR1" + b"\x00" * 64)
    line = one_line_error(*run("assess", str(f), "--qi", "a")[::2])
    assert "not a readable Parquet file" in line


def test_non_utf8_file(tmp_path: Path) -> None:
    f = tmp_path / "latin1.csv"
    f.write_bytes("city;age\r\nZ\u00fcrich;34\r\n".encode("latin-1"))
    line = one_line_error(*run("assess", str(f), "--sep", ";", "--qi", "city")[::2])
    assert "UTF-8" in line and "rich" not in line


def test_ragged_csv(tmp_path: Path) -> None:
    f = tmp_path / "ragged.csv"
    f.write_text("a;b;c\r\n1;2;3\r\nsecret;2\r\n", encoding="utf-8")
    line = one_line_error(*run("assess", str(f), "--sep", ";", "--qi", "a")[::2])
    assert "ragged" in line and "2 fields" in line and "secret" not in line


def test_debug_shows_traceback() -> None:
    code, _, err = run("assess", ADULT, "--sep", ";", "--qi", "zip", "--debug")
    assert code == 2 and "Traceback" in err


def test_table_without_url_is_usage_error() -> None:
    line = one_line_error(*run("assess", ADULT, "--sep", ";", "--qi", "sex", "--table", "t")[::2])
    assert "--table" in line
