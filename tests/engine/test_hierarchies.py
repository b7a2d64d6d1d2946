"""Generalization hierarchies: ARX's CSV format, validation, builders, text matching."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine.errors import HierarchyError, InvalidInputError
from reident_airflow.engine.hierarchies import (
    Hierarchy,
    date_hierarchy,
    interval_hierarchy,
    load_hierarchy,
    masking_hierarchy,
    value_text,
)
from tests.conftest import oracle_data

ADULT_QIS = (
    "age",
    "education",
    "marital-status",
    "native-country",
    "occupation",
    "race",
    "salary-class",
    "sex",
    "workclass",
)


# --- ARX's files -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)


@pytest.mark.parametrize("column", ADULT_QIS)
def test_loads_every_arx_adult_hierarchy(column: str, adult: pd.DataFrame) -> None:
    h = load_hierarchy(oracle_data(f"adult_hierarchy_{column}.csv"), column=column)
    assert h.column == column
    assert len(h) > 0
    assert all(len(labels) == h.levels for labels in h.mapping.values())
    assert h.labels(h.top) == ("*",)  # ARX's files all end in one "*"
    h.check_covers(adult[column], column)  # ARX's hierarchies cover ARX's Adult


def test_arx_age_hierarchy_rows() -> None:
    # tests/data/hierarchies/adult_hierarchy_age.csv, line 39 (ARX 3.9.2 example data)
    h = load_hierarchy(oracle_data("adult_hierarchy_age.csv"))
    assert h.levels == 5 and h.top == 4
    assert h.mapping["39"] == ("39", "35-39", "30-39", "20-39", "*")
    assert h.generalize("39", 2) == "30-39"
    assert h.generalize(39, 3) == "20-39"  # an integer is matched as its text
    assert "39" in h and 39 in h and "1000" not in h


def test_crlf_bom_quotes_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_bytes('\ufeffa;x;*\r\n"b;1";x;*\r\n\r\nc;y;*'.encode())
    h = load_hierarchy(path)
    assert h.values == ("a", "b;1", "c")
    assert h.mapping["c"] == ("c", "y", "*")
    assert h.labels(1) == ("x", "y")


def test_other_separator(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("a,x,*\nb,x,*\n", encoding="utf-8")
    assert load_hierarchy(path, sep=",").levels == 3


def test_ragged_rows_name_file_line_and_counts_not_values(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_bytes(b"Alpha;Greek;*\r\nBeta;Greek;*\r\nGamma;*\r\n")
    with pytest.raises(HierarchyError) as err:
        load_hierarchy(path)
    msg = str(err.value)
    assert str(path) in msg
    assert "line 3" in msg and "has 2 fields" in msg and "expected 3" in msg
    for value in ("Alpha", "Beta", "Gamma", "Greek"):
        assert value not in msg


def test_duplicate_original_value(tmp_path: Path) -> None:
    path = tmp_path / "dup.csv"
    path.write_text("Alpha;*\nBeta;*\nAlpha;*\n", encoding="utf-8")
    with pytest.raises(HierarchyError, match=r"line 3 repeats the original value of line 1") as e:
        load_hierarchy(path)
    assert "Alpha" not in str(e.value)


def test_empty_file_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(HierarchyError, match="no rows"):
        load_hierarchy(path)
    with pytest.raises(HierarchyError, match="does not exist"):
        load_hierarchy(tmp_path / "nope.csv")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("Zürich;*\n".encode("latin-1"))
    with pytest.raises(HierarchyError, match="not UTF-8"):
        load_hierarchy(path)


def test_from_rows_validates() -> None:
    with pytest.raises(HierarchyError, match="no rows"):
        Hierarchy.from_rows([])
    with pytest.raises(HierarchyError, match=r"column 'c': row 2 has 1 field, expected 2"):
        Hierarchy.from_rows([["a", "*"], ["b"]], column="c")
    with pytest.raises(HierarchyError, match="row 2 repeats"):
        Hierarchy.from_rows([["a", "*"], ["a", "*"]])
    h = Hierarchy.from_rows([[1, "*"], [2, "*"]])
    assert h.values == ("1", "2")


def test_save_round_trip(tmp_path: Path) -> None:
    h = masking_hierarchy(["81667", "81675"], column="zip")
    h.save(tmp_path / "zip.csv")
    again = load_hierarchy(tmp_path / "zip.csv", column="zip")
    assert again == h


def test_level_out_of_range() -> None:
    h = Hierarchy.from_rows([["a", "*"]])
    with pytest.raises(InvalidInputError):
        h.labels(2)
    with pytest.raises(InvalidInputError):
        h.generalize("a", -1)
    with pytest.raises(HierarchyError):
        h.generalize("b", 1)


# --- coverage ----------------------------------------------------------------------------------


def test_check_covers_counts_distinct_values_and_records_never_values() -> None:
    h = Hierarchy.from_rows([["Alpha", "*"], ["Beta", "*"]], column="greek")
    h.check_covers(["Alpha", "Beta", "Alpha"])
    values = pd.Series(["Alpha", "Omega", "Omega", "Sigma", "Beta"])
    with pytest.raises(HierarchyError) as err:
        h.check_covers(values, "letters")
    msg = str(err.value)
    assert "'letters'" in msg
    assert "2 distinct values (3 records)" in msg
    for value in ("Omega", "Sigma", "Alpha", "Beta"):
        assert value not in msg


def test_check_covers_uses_the_hierarchy_column_by_default() -> None:
    h = Hierarchy.from_rows([["1", "*"]], column="age")
    with pytest.raises(HierarchyError, match=r"'age'.*1 distinct value \(1 record\)"):
        h.check_covers([2])


def test_values_compared_as_text() -> None:
    h = Hierarchy.from_rows([["39", "*"], ["", "*"], ["2.5", "*"], ["2020-01-05", "*"]])
    h.check_covers(
        [39, "39", np.int64(39), 39.0, None, float("nan"), pd.NA, 2.5, dt.date(2020, 1, 5)]
    )
    h.check_covers(pd.Series([39, 39], dtype="int64"))
    h.check_covers(pd.Series([39.0, np.nan]))
    h.check_covers(pd.to_datetime(pd.Series(["2020-01-05"])))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("39", "39"),
        (" Private", " Private"),
        (39, "39"),
        (np.int32(-4), "-4"),
        (39.0, "39"),
        (2.5, "2.5"),
        (None, ""),
        (float("nan"), ""),
        (pd.NaT, ""),
        (np.datetime64("NaT"), ""),
        (True, "True"),
        (dt.date(2020, 1, 5), "2020-01-05"),
        (dt.datetime(2020, 1, 5), "2020-01-05"),
        (pd.Timestamp("2020-01-05"), "2020-01-05"),
        (np.datetime64("2020-01-05"), "2020-01-05"),
        (pd.Timestamp("2020-01-05 10:30"), "2020-01-05T10:30:00"),
    ],
)
def test_value_text(value: object, text: str) -> None:
    assert value_text(value) == text


# --- builders ----------------------------------------------------------------------------------


def test_interval_hierarchy() -> None:
    h = interval_hierarchy([37, 42, "5", 37, None], column="age")
    assert h.levels == 5
    assert h.mapping["37"] == ("37", "35-39", "30-39", "20-39", "*")
    assert h.mapping["42"] == ("42", "40-44", "40-49", "40-59", "*")
    assert h.mapping["5"] == ("5", "5-9", "0-9", "0-19", "*")
    assert "" not in h.mapping  # missing values are left out
    assert interval_hierarchy([7], widths=(2, 4), top=None).mapping["7"] == ("7", "6-7", "4-7")
    assert interval_hierarchy([-3], widths=(5,)).mapping["-3"] == ("-3", "-5--1", "*")


def test_interval_hierarchy_rejects_bad_input() -> None:
    with pytest.raises(InvalidInputError, match="multiple"):
        interval_hierarchy([1], widths=(5, 8))
    with pytest.raises(InvalidInputError, match="multiple"):
        interval_hierarchy([1], widths=(10, 5))
    with pytest.raises(InvalidInputError, match="positive"):
        interval_hierarchy([1], widths=(0,))
    with pytest.raises(InvalidInputError, match=r"2 distinct values are not an integer") as e:
        interval_hierarchy([1, "Kappa", 2.5])
    assert "Kappa" not in str(e.value)
    with pytest.raises(HierarchyError, match="no values"):
        interval_hierarchy([None])


def test_masking_hierarchy_postcode() -> None:
    h = masking_hierarchy(["81667", "81675", "81925"], column="zip")
    assert h.levels == 6
    assert h.mapping["81667"] == ("81667", "8166*", "816**", "81***", "8****", "*****")
    assert h.labels(2) == ("816**", "819**")
    assert h.labels(h.top) == ("*****",)


def test_masking_hierarchy_lengths_and_steps() -> None:
    h = masking_hierarchy(["123", "12345"], mask_char="#")
    assert h.mapping["123"] == ("123", "12#", "1##", "###", "###", "#####")
    assert h.mapping["12345"] == ("12345", "1234#", "123##", "12###", "1####", "#####")
    s = masking_hierarchy(["81667"], steps=(2, 4, 9))
    assert s.mapping["81667"] == ("81667", "816**", "8****", "*****")
    with pytest.raises(InvalidInputError):
        masking_hierarchy(["1"], steps=(2, 2))
    with pytest.raises(InvalidInputError):
        masking_hierarchy(["1"], mask_char="**")
    with pytest.raises(HierarchyError):
        masking_hierarchy([])


def test_date_hierarchy() -> None:
    h = date_hierarchy(["2020-03-15", dt.date(2021, 1, 2), pd.Timestamp("2019-12-31"), None])
    assert h.levels == 4
    assert h.mapping["2020-03-15"] == ("2020-03-15", "2020-03", "2020", "*")
    assert h.mapping["2021-01-02"] == ("2021-01-02", "2021-01", "2021", "*")
    assert h.mapping["2019-12-31"] == ("2019-12-31", "2019-12", "2019", "*")
    # a datetime64 column is matched through the same text
    h.check_covers(pd.to_datetime(pd.Series(["2020-03-15", "2019-12-31"])))
    with pytest.raises(InvalidInputError, match="1 distinct value is not a date") as e:
        date_hierarchy(["2020-01-01", "Lambda"])
    assert "Lambda" not in str(e.value)
