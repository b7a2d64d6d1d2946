"""Long CSV records under the reading contract (issue 30): the first reading runs at DuckDB's
own line limit (2,000,000 bytes, so it parses the file on all its threads), and a longer
record makes the reading start again with room for it, so that every field is read exactly,
in a plain file as in a ``.csv.gz``.

Each file is written here byte by byte; the expected values are the fields as written.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from reident_airflow.sources.files import FileSource, read_columns

#: Longer than the 2,000,000 bytes the reading starts with.
LONG = 3_000_001


def _long_field() -> str:
    """A quoted field of exactly ``LONG`` characters holding a separator, a doubled quote
    and a CRLF, each of which a split or merged record would lose."""
    head = 'a,b ""c"" \r\nd '  # 14 characters as written, 12 once unquoted
    return head + "x" * (LONG - 12)


def test_a_field_longer_than_the_first_limit_is_read_exactly(tmp_path: Path) -> None:
    field = _long_field()
    value = field.replace('""', '"')
    assert len(value) == LONG
    path = tmp_path / "long.csv"
    path.write_text(f'q,t\nm,1\nf,"{field}"\nm,2\n', encoding="utf-8", newline="")
    got = read_columns(path, ["q", "t"]).to_pydict()
    assert got["q"] == ["m", "f", "m"]  # 3 records: none split, none merged
    assert got["t"] == ["1", value, "2"]
    # grouped on q: classes m x 2, f x 1
    sizes = FileSource(path).histogram(["q"])
    assert (sizes.records, sizes.classes) == (3, 2)


def test_a_file_whose_parse_needs_the_limit_raised_twice(tmp_path: Path) -> None:
    # the 3 MB record raises the limit to 16 MB (8 x 2 MB); the 40 MB one, further on,
    # raises it again (to twice its length): both read exactly, no record lost
    first, second = "y" * LONG, "z" * 40_000_000
    rows = ["q,t", *(f"r{i},{i}" for i in range(1000)), f"a,{first}", "b,1", f"c,{second}"]
    path = tmp_path / "longer.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    got = read_columns(path, ["q", "t"]).to_pydict()
    assert len(got["q"]) == 1003 and got["q"][-3:] == ["a", "b", "c"]
    assert got["t"][-3:] == [first, "1", second]
    assert got["t"][:3] == ["0", "1", "2"]


def test_a_csv_gz_with_a_long_field_reads_as_the_plain_file(tmp_path: Path) -> None:
    field = _long_field()
    data = f'q,t\r\nm,1\r\nf,"{field}"\r\nm,2\r\n'.encode()
    plain, packed = tmp_path / "p.csv", tmp_path / "p.csv.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    got = read_columns(packed, ["q", "t"]).to_pydict()
    assert got == read_columns(plain, ["q", "t"]).to_pydict()
    assert got["t"] == ["1", field.replace('""', '"'), "2"]
    sizes = FileSource(packed).histogram(["q"])
    assert (sizes.records, sizes.classes) == (3, 2)  # m x 2, f x 1
