"""Files that older readers misread: each gives the right numbers or a clear exit 2.

Every case is one of issue 15's list, measured on the earlier pyarrow reader (which lost
records or merged them and still exited 0). Expected values are computed by hand from how
each file is built (see each test); nothing here is taken from the code under test.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli._cli import assess_json, one_line_error, run


def _stray_quote_csv(path: Path, rows: int, bad_row: int) -> None:
    """``rows`` records ``i % 7, x{i % 3}``; record ``bad_row`` holds one stray quote
    (``"y``) that opens a quoted field and is never closed."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write("a,b\n")
        chunk: list[str] = []
        for i in range(rows):
            chunk.append('x,"y\n' if i == bad_row else f"{i % 7},x{i % 3}\n")
            if len(chunk) >= 100_000:
                fh.write("".join(chunk))
                chunk.clear()
        fh.write("".join(chunk))


@pytest.mark.parametrize("rows", [500_000, 5_000_000])
def test_a_stray_quote_stops_the_run_naming_the_line(tmp_path: Path, rows: int) -> None:
    # The older reader reported 401,892 of 500,000 records and exited 0.
    path = tmp_path / "stray.csv"
    bad = rows // 5 + 17
    _stray_quote_csv(path, rows, bad)
    line = one_line_error(*run("assess", str(path), "--qi", "a,b")[::2])
    # the header is line 1 and record i is on line i + 2
    assert f"line {bad + 2}" in line
    assert "quote" in line
    assert '"y' not in line and "x," not in line  # no content of the record


def test_datafly_writes_nothing_when_the_input_has_a_stray_quote(tmp_path: Path) -> None:
    path = tmp_path / "stray.csv"
    _stray_quote_csv(path, 500_000, 1_000)
    hierarchy = tmp_path / "h.csv"
    hierarchy.write_text("".join(f"{v};*\n" for v in ["0", "1", "2", "3", "4", "5", "6", "x"]))
    output = tmp_path / "release.csv"
    code, _, err = run(
        "datafly", str(path), "--qi", "a", "--k", "2", "--hierarchy", f"a={hierarchy}",
        "--output", str(output),
    )  # fmt: skip
    line = one_line_error(code, err)
    assert "line 1002" in line
    assert not output.exists()


def test_quoted_line_breaks_are_part_of_the_value(tmp_path: Path) -> None:
    # 300,000 records written by Python's csv module; the QI cycles over 60 values that each
    # hold a line break, so there are 60 classes of 300,000 / 60 = 5,000 records.
    path = tmp_path / "nl.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["note", "n"])
        writer.writerows([f'line {i % 60}\nnext, "quoted"', "1"] for i in range(300_000))
    _, doc = assess_json(str(path), "--qi", "note", "--no-ranking")
    assert doc["records"] == 300_000
    assert doc["classes"] == 60
    assert doc["k"] == 5_000


def test_an_unclosed_quote_in_a_small_file(tmp_path: Path) -> None:
    # 5 records; the second opens a quote that never closes (the older reader saw 2 records)
    path = tmp_path / "unclosed.csv"
    path.write_text('a,b\n1,2\n3,"4\n5,6\n7,8\n9,10\n', encoding="utf-8")
    line = one_line_error(*run("assess", str(path), "--qi", "a")[::2])
    assert "line 3" in line and "quote" in line


def test_a_ragged_record_names_the_line_and_the_field_counts(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\n1,2\n3,4,5\n6,7\n", encoding="utf-8")
    line = one_line_error(*run("assess", str(path), "--qi", "a")[::2])
    assert "line 3" in line and "3 fields" in line and "has 2" in line


def test_a_10_mb_field_and_a_wide_header_are_read(tmp_path: Path) -> None:
    big = tmp_path / "big.csv"
    # 3 records: q = a, a, b -> classes of 2 and 1
    big.write_text("q,text\na," + "x" * 10_000_000 + "\na,y\nb,z\n", encoding="utf-8")
    _, doc = assess_json(str(big), "--qi", "q,text", "--no-ranking")
    assert (doc["records"], doc["classes"]) == (3, 3)
    wide = tmp_path / "wide.csv"
    names = [f"column_{i:05d}_with_a_long_name" for i in range(3_800)]  # > 64 KiB of header
    assert len(",".join(names)) > 64 * 1024
    rows = [",".join(str((r + i) % 2) for i in range(3_800)) for r in range(4)]
    wide.write_text(",".join(names) + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    # the last column alternates 1, 0, 1, 0 over the 4 records: 2 classes of 2
    _, doc = assess_json(str(wide), "--qi", names[-1], "--no-ranking")
    assert (doc["records"], doc["classes"], doc["k"]) == (4, 2, 2)


def test_a_repeated_header_name_cannot_be_selected(tmp_path: Path) -> None:
    path = tmp_path / "dup.csv"
    path.write_text("a,b,a\n1,2,3\n4,5,6\n", encoding="utf-8")
    line = one_line_error(*run("assess", str(path), "--qi", "a")[::2])
    assert "positions 1, 3" in line
    # the column that is not repeated still works
    assert assess_json(str(path), "--qi", "b", "--no-ranking")[1]["records"] == 2


def test_names_with_surrounding_spaces_can_be_selected(tmp_path: Path) -> None:
    path = tmp_path / "spaces.csv"
    # header " age" (leading space) and "sex "; records: 2 distinct (age, sex) pairs
    path.write_text(" age,sex \n30,F\n30,F\n40,M\n", encoding="utf-8")
    _, doc = assess_json(str(path), "--qi", " age,sex ", "--no-ranking")
    assert doc["quasi_identifiers"] == [" age", "sex "]
    assert (doc["records"], doc["classes"], doc["k"]) == (3, 2, 1)
    # looked up without the spaces only when no column has the name as given
    _, doc = assess_json(str(path), "--qi", "age, sex", "--no-ranking")
    assert doc["quasi_identifiers"] == [" age", "sex "]


def test_a_wrong_separator_is_suggested(tmp_path: Path) -> None:
    path = tmp_path / "semi.csv"
    path.write_text("sex;age\nF;30\n", encoding="utf-8")
    line = one_line_error(*run("assess", str(path), "--qi", "sex")[::2])
    assert "--sep ';'" in line


def test_parquet_floats_minus_zero_equals_zero_and_nan_is_not_missing(tmp_path: Path) -> None:
    # x: 0.0, -0.0, nan, nan, None -> values {0.0 (2 records), NaN (2), missing (1)}
    path = tmp_path / "floats.parquet"
    pq.write_table(pa.table({"x": [0.0, -0.0, float("nan"), float("nan"), None]}), path)
    _, doc = assess_json(str(path), "--qi", "x", "--no-ranking")
    assert doc["class_size_histogram"] == [[1, 1], [2, 2]]
    # the class table path (ranking on) must agree with the histogram path
    _, doc = assess_json(str(path), "--qi", "x")
    assert doc["class_size_histogram"] == [[1, 1], [2, 2]]


def test_quoted_empty_text_is_not_missing(tmp_path: Path) -> None:
    # a: unquoted empty (missing), "" (empty text), "" again -> classes of 1 and 2
    path = tmp_path / "empty.csv"
    path.write_text('a,b\n,1\n"",2\n"",3\n', encoding="utf-8")
    _, doc = assess_json(str(path), "--qi", "a", "--no-ranking")
    assert doc["class_size_histogram"] == [[1, 1], [2, 1]]


def test_not_utf8_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"name,n\nJose,1\nJos\xe9,2\n")
    line = one_line_error(*run("assess", str(path), "--qi", "name")[::2])
    assert "UTF-8" in line and "line 3" in line


def test_text_is_compared_exactly(tmp_path: Path) -> None:
    # NFC e-acute, NFD e + combining acute, E, e, "e " and 01 / 1: seven distinct values
    values = ["\u00e9", "e\u0301", "E", "e", "e ", "01", "1"]
    path = tmp_path / "text.csv"
    path.write_text("v\n" + "\n".join(values) + "\n", encoding="utf-8")
    _, doc = assess_json(str(path), "--qi", "v", "--no-ranking")
    assert (doc["records"], doc["classes"]) == (7, 7)


def test_memory_limit_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("a\n1\n", encoding="utf-8")
    code, _, err = run("assess", str(path), "--qi", "a", "--memory-limit", "lots")
    assert code == 2 and "1GB" in err
    _, doc = assess_json(str(path), "--qi", "a", "--memory-limit", "256MB", "--no-ranking")
    assert doc["records"] == 1
