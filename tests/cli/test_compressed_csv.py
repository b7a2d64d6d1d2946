"""Compressed CSV (``.csv.gz``, ``.csv.zst``, ``.csv.bz2``) is read under the reading contract,
exactly as the same file uncompressed (issue 25, item 5).

Before, every ``.csv.gz`` was refused ("ran out of memory": a 32 GiB line buffer was asked for),
``.csv.zst`` was refused as "not UTF-8" and ``.csv.bz2`` was read as a one-column file of
compressed bytes. Each hostile file below is written by hand; the expected histogram is
computed by hand from how it is written (see each test), and the compressed file must give
the same document as the uncompressed one.
"""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pytest
import zstandard

from reident_airflow.sources.fingerprint import fingerprint_file
from tests.cli._cli import assess_json, one_line_error, run

COMPRESSORS = {
    "gz": gzip.compress,
    "zst": lambda data: zstandard.ZstdCompressor().compress(data),
    "bz2": bz2.compress,
}


def _write(path: Path, data: bytes, suffix: str) -> Path:
    target = path.with_name(f"{path.name}.{suffix}")
    target.write_bytes(COMPRESSORS[suffix](data))
    return target


def _hostile() -> bytes:
    """A BOM, CRLF line ends, quoted line breaks, a quoted separator, a 10 MB field and a
    5 MB one further on (longer than the first line limit, 2,000,000 bytes).

    Records of q (the QI): "a\\r\\nb" x 3, "a,b" x 2, "x" x 1 with a 10 MB ``t``, "y" x 1000,
    "z" x 1 with a 5 MB ``t``: classes of sizes 3, 2, 1, 1000, 1 on q.
    On (q, t): t is "1" except the two long fields, so the same classes.
    """
    rows = [b"\xef\xbb\xbfq,t"]
    rows += [b'"a\r\nb",1'] * 3
    rows += [b'"a,b",1'] * 2
    rows += [b"x," + b"L" * 10_000_000]
    rows += [b"y,1"] * 1000
    rows += [b'z,"' + b"M" * 5_000_000 + b'"']
    return b"\r\n".join(rows) + b"\r\n"


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_hostile_compressed_csv_reads_as_the_plain_file(tmp_path: Path, suffix: str) -> None:
    data = _hostile()
    plain = tmp_path / "h.csv"
    plain.write_bytes(data)
    packed = _write(plain, data, suffix)
    # by hand: sizes 3, 2, 1, 1000, 1 -> [[1, 2], [2, 1], [3, 1], [1000, 1]]
    expected = [[1, 2], [2, 1], [3, 1], [1000, 1]]
    for qis in ("q", "q,t"):
        _, doc_plain = assess_json(str(plain), "--qi", qis, "--no-ranking")
        _, doc = assess_json(str(packed), "--qi", qis, "--no-ranking")
        assert doc["class_size_histogram"] == expected
        assert (doc["records"], doc["classes"], doc["k"]) == (1007, 5, 1)
        doc_plain.pop("source", None), doc.pop("source", None)
        assert doc == doc_plain
    # the ranking path (one row per class) too: q's distinction = 5 classes / 1007 records
    _, ranked = assess_json(str(packed), "--qi", "q")
    assert ranked["classes"] == 5


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_non_utf8_byte_in_a_compressed_csv_is_refused_naming_its_line(
    tmp_path: Path, suffix: str
) -> None:
    # header on line 1, records on lines 2..5; line 4 holds the byte 0xFF in the QI
    data = b"q,t\n1,a\n2,b\n3\xff,c\n4,d\n"
    plain = tmp_path / "bad.csv"
    plain.write_bytes(data)
    packed = _write(plain, data, suffix)
    plain_line = one_line_error(*run("assess", str(plain), "--qi", "q")[::2])
    line = one_line_error(*run("assess", str(packed), "--qi", "q")[::2])
    assert "not UTF-8" in line and "line 4" in line
    assert line.replace(packed.name, plain.name) == plain_line


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_ragged_compressed_csv_is_refused_naming_its_line(tmp_path: Path, suffix: str) -> None:
    packed = _write(tmp_path / "r.csv", b"a,b\n1,2\n3,4,5\n", suffix)
    line = one_line_error(*run("assess", str(packed), "--qi", "a")[::2])
    assert "line 3" in line and "3 fields" in line


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_file_named_compressed_that_is_not_is_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"plain.csv.{suffix}"
    path.write_bytes(b"a,b\n1,2\n")
    line = one_line_error(*run("assess", str(path), "--qi", "a")[::2])
    assert f"not {'gzip' if suffix == 'gz' else 'zstd' if suffix == 'zst' else 'bzip2'}" in line


def test_a_truncated_compressed_csv_is_refused(tmp_path: Path) -> None:
    data = gzip.compress(b"a,b\n" + b"1,2\n" * 100_000)
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    one_line_error(*run("assess", str(path), "--qi", "a")[::2])


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_compressed_file_is_fingerprinted(tmp_path: Path, suffix: str) -> None:
    import hashlib

    packed = _write(tmp_path / "f.csv", b"a,b\n1,2\n", suffix)
    print_ = fingerprint_file(packed)
    # the fingerprint is the file's bytes as stored: sha256 of the compressed file
    assert print_.sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()
    code, out, err = run("assess", str(packed), "--qi", "a", "--json", "-")
    assert code in (0, 1), err
    assert hashlib.sha256(packed.read_bytes()).hexdigest() in out


def test_the_bzip2_copy_is_removed_after_the_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch_root))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read again
    packed = _write(tmp_path / "c.csv", b"a,b\n1,2\n1,2\n", "bz2")
    _, doc = assess_json(str(packed), "--qi", "a", "--no-ranking")
    assert doc["class_size_histogram"] == [[2, 1]]
    assert not [p for p in scratch_root.iterdir() if p.name.startswith("reident-copy-")]
