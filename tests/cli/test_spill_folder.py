"""DuckDB's spill folder holds QI values: it is private and removed on SIGTERM/SIGINT
(issue 25, item 8).

Before, a SIGTERM while DuckDB spilled left the folder (and its files of QI values) behind:
the folder was removed only by ``atexit``, which the default SIGTERM action skips.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from reident_airflow.sources import files

_RUNNER = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from reident_airflow.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _many_classes(path: Path, rows: int = 3_000_000) -> None:
    """``rows`` records, each its own class: grouping them under a small memory limit spills."""
    with path.open("w", encoding="utf-8") as fh:
        fh.write("a,b\n")
        for start in range(0, rows, 10_000):
            fh.write(
                "".join(f"{i},v{i * 7919 % 1_000_003}\n" for i in range(start, start + 10_000))
            )


def _spilled_bytes(root: Path) -> int:
    total = 0
    for p in root.rglob("*"):
        with contextlib.suppress(OSError):  # removed meanwhile
            total += p.stat().st_size if p.is_file() else 0
    return total


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_spilling_removes_the_spill_folder(tmp_path: Path, signum: int) -> None:
    data = tmp_path / "many.csv"
    _many_classes(data)
    root = tmp_path / "tmp"
    root.mkdir()
    env = {**os.environ, "TMPDIR": str(root), "PYTHONPATH": str(Path.cwd())}
    argv = ["assess", str(data), "--qi", "a,b", "--memory-limit", "100MB", "--no-ranking"]
    with subprocess.Popen(
        [sys.executable, "-c", _RUNNER, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                if _spilled_bytes(root) > 1_000_000:
                    break
                time.sleep(0.01)
            assert proc.poll() is None, "the run ended before it spilled"
            folders = [p for p in root.iterdir() if p.name.startswith("reident-spill-")]
            assert len(folders) == 1
            assert stat.S_IMODE(folders[0].stat().st_mode) == 0o700  # only this user enters
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == (-signal.SIGTERM if signum == signal.SIGTERM else 130), err
    assert list(root.iterdir()) == []  # the spill folder is gone, with every value in it


def test_a_spill_folder_is_created_private_and_removed_at_exit(tmp_path: Path) -> None:
    root = tmp_path / "tmp"
    root.mkdir()
    code = (
        "import os, stat, tempfile, sys\n"
        "from reident_airflow.sources import files\n"
        "with files._duckdb('64MB') as con:\n"
        "    con.sql('select 1').fetchall()\n"
        "(folder,) = os.listdir(tempfile.gettempdir())\n"
        "path = os.path.join(tempfile.gettempdir(), folder)\n"
        "print(folder, oct(stat.S_IMODE(os.stat(path).st_mode)))\n"
        "sys.exit(3)\n"  # an exit with an error status still removes it
    )
    env = {**os.environ, "TMPDIR": str(root), "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 3, done.stderr
    name, mode = done.stdout.split()
    assert name.startswith("reident-spill-")
    assert mode == "0o700"
    assert list(root.iterdir()) == []


def test_a_folder_left_by_a_killed_process_is_removed_by_the_next_one(tmp_path: Path) -> None:
    root = tmp_path / "tmp"
    root.mkdir()
    # a process id that no process has: larger than any the kernel hands out
    gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    stale = root / f"reident-spill-{gone}-abcd1234"
    stale.mkdir(mode=0o700)
    (stale / "duckdb_temp_block.tmp").write_bytes(b"values")
    alive = root / f"reident-spill-{os.getpid()}-keep"  # this process's: kept
    alive.mkdir()
    env = {**os.environ, "TMPDIR": str(root), "PYTHONPATH": str(Path.cwd())}
    code = "from reident_airflow.sources import files\nwith files._duckdb('64MB'):\n    pass\n"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in root.iterdir()) == [alive.name]


def test_the_signal_handler_chains_to_the_one_before_it(tmp_path: Path) -> None:
    """Airflow's task runner has its own SIGTERM handler (it calls ``on_kill`` and fails the
    task): the folder is removed first, then that handler runs, and a later reading gets a
    new private folder."""
    from reident_airflow.sources import scratch

    calls: list[int] = []

    class Terminated(Exception):
        pass

    def airflow_like(signum: int, frame: object) -> None:
        calls.append(signum)
        raise Terminated

    old = signal.signal(signal.SIGTERM, airflow_like)
    saved_tempdir = tempfile.tempdir
    tempfile.tempdir = str(tmp_path)
    try:
        with pytest.raises(Terminated), files._duckdb("31MB") as con:
            (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("reident-spill-")]
            os.kill(os.getpid(), signal.SIGTERM)
            con.sql("select count(*) from range(100000000) t(i)").fetchall()
            time.sleep(1)
            pytest.fail("the handler did not run")
        assert calls == [signal.SIGTERM]
        assert not folder.exists()
        assert signal.getsignal(signal.SIGTERM) is scratch._on_signal
        with files._duckdb("31MB") as con:  # a new private folder
            assert con.sql("select 1").fetchall() == [(1,)]
        (again,) = [p for p in tmp_path.iterdir() if p.name.startswith("reident-spill-")]
        assert again != folder
    finally:
        signal.signal(signal.SIGTERM, old)
        tempfile.tempdir = saved_tempdir
        scratch.remove_all()
        scratch._PREVIOUS.clear()


def test_a_previous_handler_that_returns_still_stops_the_reading(tmp_path: Path) -> None:
    """Airflow 3's task runner calls the operator's ``on_kill`` on SIGTERM and returns: the
    query under way is interrupted all the same, its folder removed, and the reading raises
    an error naming the signal (not DuckDB's "Query interrupted")."""
    import threading

    from reident_airflow.sources import scratch

    calls: list[int] = []

    def on_term(signum: int, frame: object) -> None:  # like Airflow's _on_term
        calls.append(signum)

    old = signal.signal(signal.SIGTERM, on_term)
    saved_tempdir = tempfile.tempdir
    tempfile.tempdir = str(tmp_path)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        with (
            pytest.raises(InterruptedError, match="SIGTERM"),
            files._duckdb("29MB") as con,
        ):
            (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("reident-spill-")]
            timer.start()
            # minutes of work unless interrupted
            con.sql("select sum(i * i % 7) from range(100000000000) t(i)").fetchall()
        assert calls == [signal.SIGTERM]
        assert not folder.exists()
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, old)
        tempfile.tempdir = saved_tempdir
        scratch.remove_all()
        scratch._PREVIOUS.clear()
