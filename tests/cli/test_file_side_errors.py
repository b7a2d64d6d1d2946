"""File-side errors say what is wrong and what to do, in one line, never a value (issue 25,
item 10).

Before: a full disk or the file-size limit was "unexpected OSError" (or "cannot be read
(IOException)" while spilling), memory limits "unexpected ArrowMemoryError", a Parquet
struct/list QI "unexpected ArrowNotImplementedError", a symbolic-link loop "no such file", an
unreadable hierarchy "unexpected PermissionError", a hierarchy written with ``,`` a "does not
cover" error with no word on ``--hierarchy-sep``, and a name in another Unicode normal form a
bare "unknown quasi-identifier" beside a column that prints the same.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reident_airflow.engine.errors import HierarchyError, InvalidInputError
from reident_airflow.engine.hierarchies import load_hierarchy
from reident_airflow.sources.frames import histogram_from_frame
from tests.cli._cli import one_line_error, run

_RUNNER = "import sys; from reident_airflow.cli import main; sys.exit(main(sys.argv[1:]))"


def _limited(
    argv: list[str], *, limit: int, what: int, tmp: Path, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``reident ARGV`` in a child process under a resource limit (``RLIMIT_FSIZE``,
    ``RLIMIT_AS``), temporary files in ``tmp``."""

    def lower() -> None:
        resource.setrlimit(what, (limit, limit))

    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(Path.cwd())}
    return subprocess.run(
        [sys.executable, "-c", _RUNNER, *argv],
        preexec_fn=lower,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _many_classes(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write("a,b\n")
        for start in range(0, rows, 10_000):
            block = range(start, start + 10_000)
            fh.write("".join(f"{i},v{i * 7919 % 1_000_003}\n" for i in block))


# ------------------------------------------------------------------- disk and memory limits
def test_the_file_size_limit_while_spilling_says_so_and_where(tmp_path: Path) -> None:
    data = tmp_path / "many.csv"
    _many_classes(data, 3_000_000)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    argv = [
        "assess",
        str(data),
        "--qi",
        "a,b",
        "--memory-limit",
        "100MB",
        "--no-ranking",
        "--quiet",
    ]
    done = _limited(argv, limit=1_000_000, what=resource.RLIMIT_FSIZE, tmp=tmp, cwd=tmp_path)
    line = one_line_error(done.returncode, done.stderr)
    assert "file-size limit" in line and "spilled to disk" in line
    assert f"in {tmp}{os.sep}reident-spill-" in line  # where
    assert "--memory-limit" in line  # what to do
    assert list(tmp.iterdir()) == []  # and the spill folder is gone


def test_the_file_size_limit_while_writing_the_release_says_so_and_where(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    # 3,000 records, "M" or "F": the release is about 6 kB, over a 4,096-byte limit
    data.write_text("sex\n" + "M\nF\n" * 1_500, encoding="utf-8")
    hierarchy = tmp_path / "h.csv"
    hierarchy.write_text("M;*\nF;*\n", encoding="utf-8")
    out = tmp_path / "out" / "release.csv"
    out.parent.mkdir()
    argv = ["datafly", str(data), "--qi", "sex", "--k", "2", "--quiet"]
    argv += ["--hierarchy", f"sex={hierarchy}", "--output", str(out)]
    done = _limited(argv, limit=4096, what=resource.RLIMIT_FSIZE, tmp=tmp_path, cwd=tmp_path)
    line = one_line_error(done.returncode, done.stderr)
    assert "file-size limit" in line and f"in {out.parent}" in line
    assert not out.exists()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB file system (tmpfs), for a real full disk; skipped where it cannot be mounted
    (not root, or no CAP_SYS_ADMIN)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_while_spilling_or_decompressing_says_so_and_where(
    tmp_path: Path, small_disk: Path
) -> None:
    import bz2

    data = tmp_path / "many.csv"
    _many_classes(data, 3_000_000)
    argv = ["assess", str(data), "--qi", "a,b", "--memory-limit", "100MB", "--no-ranking"]
    done = _limited(argv, limit=resource.RLIM_INFINITY, what=resource.RLIMIT_FSIZE,
                    tmp=small_disk, cwd=tmp_path)  # fmt: skip
    line = one_line_error(done.returncode, done.stderr)
    assert "the disk is full" in line and "spilled to disk" in line
    assert f"in {small_disk}{os.sep}reident-spill-" in line and "TMPDIR" in line
    # a bzip2 file is decompressed into the temporary folder: 60 MB do not fit in 2 MB
    packed = tmp_path / "many.csv.bz2"
    packed.write_bytes(bz2.compress(data.read_bytes(), compresslevel=1))
    argv = ["assess", str(packed), "--qi", "a,b", "--no-ranking"]
    done = _limited(argv, limit=resource.RLIM_INFINITY, what=resource.RLIMIT_FSIZE,
                    tmp=small_disk, cwd=tmp_path)  # fmt: skip
    line = one_line_error(done.returncode, done.stderr)
    assert "the disk is full while decompressing" in line
    assert f"in {small_disk}{os.sep}reident-copy-" in line
    assert list(small_disk.iterdir()) == []  # and nothing is left there


def test_a_full_disk_while_writing_says_so(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("a\n1\n1\n", encoding="utf-8")
    # /dev/full: every write fails with ENOSPC, as on a full disk
    line = one_line_error(*run("assess", str(data), "--qi", "a", "--json", "/dev/full")[::2])
    assert "the disk is full" in line and "/dev" in line and "unexpected" not in line


@pytest.mark.parametrize("limit", [1_500_000_000, 3_000_000_000])
def test_running_out_of_memory_says_so_and_what_to_do(tmp_path: Path, limit: int) -> None:
    # 1.5 GB: DuckDB cannot allocate its hash table; 3 GB: pyarrow's MemoryError while the
    # class table is encoded (both before: "unexpected ..." or a bare "out of memory")
    data = tmp_path / "many.csv"
    _many_classes(data, 4_000_000)
    done = _limited(
        ["assess", str(data), "--qi", "a,b", "--quiet"],
        limit=limit,
        what=resource.RLIMIT_AS,
        tmp=tmp_path,
        cwd=tmp_path,
    )
    line = one_line_error(done.returncode, done.stderr)
    assert "ran out of memory" in line and "--memory-limit" in line
    assert "fewer quasi-identifiers" in line and "unexpected" not in line


# ------------------------------------------------------------------------ nested columns
@pytest.mark.parametrize(
    ("column", "values", "shown"),
    [
        ("s", [{"a": 1}, {"a": 1}, {"a": 2}], "struct<a: int64>"),
        ("l", [[1, 2], [1, 2], [3]], "list<element: int64>"),
    ],
)
def test_a_nested_parquet_qi_is_refused_naming_column_type_and_fix(
    tmp_path: Path, column: str, values: list[object], shown: str
) -> None:
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({column: values, "n": [1, 2, 3]}), path)
    for extra in ([], ["--no-ranking"]):
        line = one_line_error(*run("assess", str(path), "--qi", f"{column},n", *extra)[::2])
        assert f"{column!r} is a nested column ({shown})" in line
        assert "flatten" in line and "cast it to text" in line
    with pytest.raises(InvalidInputError, match="nested column"):
        histogram_from_frame(pa.table({column: values}), [column])
    # a plain column of the same file is read
    code, _, err = run("assess", str(path), "--qi", "n", "--no-ranking")
    assert code in (0, 1), err


# -------------------------------------------------------------------- Unicode normal forms
def test_a_name_in_another_unicode_normal_form_says_so(tmp_path: Path) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    assert nfc != nfd and len(nfc) == 4 and len(nfd) == 5
    path = tmp_path / "names.csv"
    path.write_text(f"id,{nfc}\n1,a\n", encoding="utf-8")
    line = one_line_error(*run("assess", str(path), "--qi", nfd)[::2])
    assert "differ in Unicode normal form" in line
    assert "column 2" in line and "NFC, 4 code points" in line
    assert "the name given is NFD, 5 code points" in line
    # the same through a database (SQLite), whose names are checked by another function
    db = tmp_path / "t.db"
    with sqlite3.connect(db) as con:
        con.execute(f'CREATE TABLE t (id INTEGER, "{nfc}" TEXT)')
        con.execute("INSERT INTO t VALUES (1, 'a')")
    con.close()
    line = one_line_error(*run("assess", f"sqlite:///{db}", "--table", "t", "--qi", nfd)[::2])
    assert "differ in Unicode normal form" in line and "column 2" in line


# ------------------------------------------------------------------------ paths and links
def test_a_symbolic_link_loop_is_named_so(tmp_path: Path) -> None:
    (tmp_path / "a.csv").symlink_to(tmp_path / "b.csv")
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    line = one_line_error(*run("assess", str(tmp_path / "a.csv"), "--qi", "x")[::2])
    assert "symbolic-link loop" in line and "no such file" not in line


def test_an_unreadable_hierarchy_says_permission_denied(tmp_path: Path) -> None:
    import tempfile

    # a folder anyone may enter, holding a hierarchy only its owner may read
    folder = Path(tempfile.mkdtemp(prefix="reident-test-"))
    try:
        folder.chmod(0o755)
        hierarchy = folder / "h.csv"
        hierarchy.write_text("30;*\n", encoding="utf-8")
        hierarchy.chmod(0o000)
        message = _load_as_another_user(hierarchy) if os.geteuid() == 0 else _load(hierarchy)
    finally:
        (folder / "h.csv").unlink(missing_ok=True)
        folder.rmdir()
    assert message == f"hierarchy file {hierarchy}: permission denied: make it readable by " + (
        "this user (or a folder on its path enterable)"
    )


def _load(path: Path) -> str:
    try:
        load_hierarchy(path)
    except HierarchyError as exc:
        return str(exc)
    return "loaded"


def _load_as_another_user(path: Path) -> str:
    """root reads any file: the check runs in a child that became user ``nobody``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_end, _load(path).encode("utf-8"))
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        message = fh.read().decode("utf-8")
    os.waitpid(pid, 0)
    return message


def test_a_hierarchy_written_with_commas_suggests_the_separator(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("age\n30\n31\n30\n", encoding="utf-8")
    hierarchy = tmp_path / "h.csv"
    hierarchy.write_text("30,3*,*\n31,3*,*\n", encoding="utf-8")  # ARX's layout, commas
    out = tmp_path / "release.csv"
    argv = ["datafly", str(data), "--qi", "age", "--k", "2", "--quiet"]
    line = one_line_error(*run(*argv, "--hierarchy", f"age={hierarchy}", "--output", str(out))[::2])
    assert "--hierarchy-sep ','" in line and "hierarchy_sep=','" in line
    assert "30" not in line.replace(str(tmp_path), "")  # no value of the file
    # with the separator it was written with, it loads
    code, _, err = run(
        *argv, "--hierarchy", f"age={hierarchy}", "--hierarchy-sep", ",", "--output", str(out)
    )
    assert code == 0, err
