"""Outputs over inputs (issue 16): what a command writes never replaces what it reads, every
output location is checked before anything is computed, files keep the mode they should have,
and an interrupted run leaves no temporary file (SIGTERM, SIGINT, kill -9 then a rerun)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._cli import one_line_error, run


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "d.csv"
    path.write_text("a,b\n" + "".join(f"{i % 3},{i % 2}\n" for i in range(30)))
    return path


@pytest.fixture
def hierarchy(tmp_path: Path) -> Path:
    path = tmp_path / "h_a.csv"
    path.write_text("0;*\n1;*\n2;*\n")
    return path


def datafly_args(data: Path, hierarchy: Path, output: Path, *extra: str) -> list[str]:
    return [
        "datafly",
        str(data),
        "--qi",
        "a",
        "--k",
        "2",
        "--hierarchy",
        f"a={hierarchy}",
        "--output",
        str(output),
        "--quiet",
        *extra,
    ]


@pytest.fixture
def umask022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# ---------------------------------------------------------------------- outputs over inputs
def test_assess_json_over_its_input_is_refused(data: Path) -> None:
    before = digest(data)
    line = one_line_error(*run("assess", str(data), "--qi", "a", "--json", str(data))[::2])
    assert "input file" in line
    assert digest(data) == before


def test_assess_report_over_its_input_and_json_over_a_link_to_it(
    data: Path, tmp_path: Path
) -> None:
    before = digest(data)
    # --report takes only an HTML name: an input named like one is still never overwritten
    named_html = tmp_path / "d.html"
    named_html.write_bytes(data.read_bytes())
    code, _, err = run("assess", str(named_html), "--qi", "a", "--report", str(named_html))
    assert "input file" in one_line_error(code, err)
    assert digest(named_html) == before
    link = tmp_path / "link.json"
    link.symlink_to(data)
    code, _, err = run("assess", str(data), "--qi", "a", "--json", str(link))
    one_line_error(code, err)
    hard = tmp_path / "hard.json"
    os.link(data, hard)
    code, _, err = run("assess", str(data), "--qi", "a", "--json", str(hard))
    one_line_error(code, err)
    assert digest(data) == before


def test_assess_json_over_the_population_table(data: Path, tmp_path: Path) -> None:
    population = tmp_path / "pop.csv"
    population.write_text("a\n" + "0\n1\n2\n" * 20)
    before = digest(population)
    code, _, err = run(
        "assess", str(data), "--qi", "a", "--population-table", str(population),
        "--json", str(population),
    )  # fmt: skip
    assert "--population-table" in one_line_error(code, err)
    assert digest(population) == before


def test_json_and_report_naming_the_same_file(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.html"
    code, _, err = run("assess", str(data), "--qi", "a", "--json", str(out), "--report", str(out))
    assert "name the same file" in one_line_error(code, err)
    assert not out.exists()


def test_datafly_json_over_its_input(data: Path, hierarchy: Path, tmp_path: Path) -> None:
    before = digest(data)
    code, _, err = run(*datafly_args(data, hierarchy, tmp_path / "rel.csv", "--json", str(data)))
    one_line_error(code, err)
    assert digest(data) == before
    assert not (tmp_path / "rel.csv").exists()


def test_datafly_output_over_a_hierarchy_file(data: Path, hierarchy: Path) -> None:
    before = digest(hierarchy)
    code, _, err = run(*datafly_args(data, hierarchy, hierarchy))
    assert "hierarchy file of a" in one_line_error(code, err)
    assert digest(hierarchy) == before


def test_datafly_report_over_a_hierarchy_file(data: Path, hierarchy: Path, tmp_path: Path) -> None:
    named_html = tmp_path / "h_a.html"  # --report takes only an HTML name
    named_html.write_bytes(hierarchy.read_bytes())
    before = digest(named_html)
    code, _, err = run(
        *datafly_args(data, named_html, tmp_path / "r.csv", "--report", str(named_html))
    )
    assert "hierarchy file of a" in one_line_error(code, err)
    assert digest(named_html) == before


def test_datafly_json_in_a_missing_directory_replaces_nothing(
    data: Path, hierarchy: Path, tmp_path: Path
) -> None:
    release = tmp_path / "rel.csv"
    release.write_text("previous release\n")
    code, _, err = run(
        *datafly_args(data, hierarchy, release, "--json", str(tmp_path / "missing" / "x.json"))
    )
    assert "does not exist" in one_line_error(code, err)
    assert release.read_text() == "previous release\n"


def test_direct_match_json_over_original_or_avatar(data: Path, tmp_path: Path) -> None:
    avatar = tmp_path / "avatar.csv"
    avatar.write_bytes(data.read_bytes())
    for target in (data, avatar):
        before = digest(target)
        code, _, err = run("direct-match", str(data), str(avatar), "--json", str(target))
        one_line_error(code, err)
        assert digest(target) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any directory")
def test_unwritable_directory_is_refused_first(data: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        code, _, err = run("assess", str(data), "--qi", "a", "--json", str(locked / "x.json"))
        assert "not writable" in one_line_error(code, err)
    finally:
        locked.chmod(0o700)


# --------------------------------------------------------------------------------- modes
@pytest.mark.usefixtures("umask022")
def test_json_keeps_the_mode_of_the_file_it_replaces(data: Path, tmp_path: Path) -> None:
    existing = tmp_path / "old.json"
    existing.write_text("{}")
    existing.chmod(0o644)
    assert run("assess", str(data), "--qi", "a", "--json", str(existing))[0] in (0, 1)
    assert existing.stat().st_mode & 0o777 == 0o644
    existing.chmod(0o640)
    assert run("assess", str(data), "--qi", "a", "--json", str(existing))[0] in (0, 1)
    assert existing.stat().st_mode & 0o777 == 0o640


def test_new_files_get_the_umask_mode(data: Path, hierarchy: Path, tmp_path: Path) -> None:
    for mask, mode in ((0o022, 0o644), (0o027, 0o640)):
        old = os.umask(mask)
        try:
            out = tmp_path / f"m{mask:o}"
            out.mkdir()
            args = datafly_args(data, hierarchy, out / "rel.csv", "--json", str(out / "d.json"))
            code, _, err = run(*args, "--report", str(out / "r.html"))
            assert code == 0, err
        finally:
            os.umask(old)
        for name in ("rel.csv", "d.json", "r.html"):
            assert (out / name).stat().st_mode & 0o777 == mode, name


@pytest.mark.usefixtures("umask022")
def test_report_keeps_the_mode_of_the_file_it_replaces(data: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    report.write_text("old")
    report.chmod(0o600)
    assert run("assess", str(data), "--qi", "a", "--report", str(report))[0] in (0, 1)
    assert report.stat().st_mode & 0o777 == 0o600
    assert report.read_text() != "old"


# ------------------------------------------------------------------- temporaries, signals
def test_a_leftover_of_a_killed_write_is_removed_by_the_next(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    dead = tmp_path / ".x.json.reident-99999999-0123abcd.tmp"  # no such process
    dead.write_text("half")
    other = tmp_path / ".y.json.reident-99999999-0123abcd.tmp"  # another target's
    other.write_text("half")
    assert run("assess", str(data), "--qi", "a", "--json", str(out))[0] in (0, 1)
    assert temporaries(tmp_path) == [other.name]


def test_a_signal_during_an_atomic_write_removes_the_temporary(tmp_path: Path) -> None:
    from reident_airflow._atomic import atomic_file

    target = tmp_path / "t.txt"
    target.write_text("previous")

    class Stop(Exception):
        pass

    def previous_handler(signum: int, frame: object) -> None:
        raise Stop(signum)

    old = signal.signal(signal.SIGTERM, previous_handler)
    try:
        with pytest.raises(Stop), atomic_file(target) as fh:
            fh.write(b"new, half")
            assert len(temporaries(tmp_path)) == 1
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs first
            pytest.fail("the signal did not interrupt the write")
        # our handler was removed again, the previous one got the signal
        assert signal.getsignal(signal.SIGTERM) is previous_handler
    finally:
        signal.signal(signal.SIGTERM, old)
    assert target.read_text() == "previous"
    assert temporaries(tmp_path) == []


# A subprocess whose SIGINT is Python's (a background shell may have it ignored).
_RUNNER = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from reident_airflow.cli import main; sys.exit(main(sys.argv[1:]))"
)
_ROWS = 2_000_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    directory = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(16)
    table = pa.table(
        {
            "a": pa.array(rng.integers(0, 10, _ROWS).astype(str)),
            **{f"c{i}": pa.array(rng.integers(0, 10**9, _ROWS)) for i in range(4)},
        }
    )
    path = directory / "big.csv"
    pcsv.write_csv(table, path, pcsv.WriteOptions(quoting_style="none"))
    hierarchy = directory / "h.csv"
    hierarchy.write_text("".join(f"{i};*\n" for i in range(10)))
    return path, hierarchy


def _start_datafly(source: Path, hierarchy: Path, release: Path) -> subprocess.Popen[bytes]:
    args = [str(a) for a in datafly_args(source, hierarchy, release)]
    return subprocess.Popen(
        [sys.executable, "-c", _RUNNER, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )


def _wait_for_temporary(proc: subprocess.Popen[bytes], directory: Path) -> None:
    deadline = time.monotonic() + 60
    while not temporaries(directory):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"no temporary file appeared: {err.decode()}")
        time.sleep(0.005)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_datafly_killed_mid_write(
    big: tuple[Path, Path], tmp_path: Path, data: Path, hierarchy: Path, signum: int
) -> None:
    source, big_hierarchy = big
    release = tmp_path / "rel.csv"
    release.write_text("previous release\n")
    proc = _start_datafly(source, big_hierarchy, release)
    _wait_for_temporary(proc, tmp_path)
    proc.send_signal(signum)
    proc.communicate(timeout=60)
    code = proc.returncode
    assert code != 0
    assert release.read_text() == "previous release\n"
    if signum == signal.SIGKILL:
        assert len(temporaries(tmp_path)) == 1  # what kill -9 leaves; the next run removes it
        code, _, err = run(*datafly_args(data, hierarchy, release))
        assert code == 0, err
        assert release.read_text() != "previous release\n"
    assert temporaries(tmp_path) == []


def test_json_to_a_device_or_a_pipe_writes_to_it_and_leaves_it_in_place(tmp_path: Path) -> None:
    # A rename over /dev/null once replaced the machine's null device with a regular file.
    data = tmp_path / "d.csv"
    data.write_text("a\n1\n1\n", encoding="utf-8")
    code, _, err = run("assess", str(data), "--qi", "a", "--no-ranking", "--json", os.devnull)
    assert code == 0, err
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = run("assess", str(data), "--qi", "a", "--no-ranking", "--json", str(fifo))
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["records"] == 2
