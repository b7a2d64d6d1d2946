"""Issue 25, item 8: an operator stopped by Airflow while DuckDB spills leaves no spill folder.

Airflow 3's task runner handles SIGTERM itself (``task_runner.py``: its ``_on_term`` calls
the operator's ``on_kill`` and returns; the supervisor kills the process later). The task
below installs a handler that does the same, then runs the risk operator on a file large
enough to spill under ``memory_limit``; SIGTERM comes from outside while it spills. The
spill folder must be gone, Airflow's handler must still have run, and the task must stop
with an error naming the signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_TASK = """
import signal, sys
from reident_airflow.operators.risk import ReidentificationRiskOperator

op = ReidentificationRiskOperator(
    task_id="risk", path=sys.argv[1], quasi_identifiers=["a", "b"], memory_limit="200MB",
    advice=False,
)
killed = []
op.on_kill = lambda: killed.append(True)

def _on_term(signum, frame):  # what Airflow 3's task runner installs
    op.on_kill()

signal.signal(signal.SIGTERM, _on_term)
try:
    op.execute({})
except BaseException as exc:
    print(type(exc).__name__, exc, "on_kill" if killed else "-", flush=True)
    sys.exit(3)
print("finished", flush=True)
"""


def _many_classes(path: Path, rows: int = 3_000_000) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write("a,b\n")
        for start in range(0, rows, 10_000):
            block = range(start, start + 10_000)
            fh.write("".join(f"{i},v{i * 7919 % 1_000_003}\n" for i in block))


def _spilled_bytes(root: Path) -> int:
    total = 0
    for p in root.rglob("*"):
        with contextlib.suppress(OSError):  # removed meanwhile
            total += p.stat().st_size if p.is_file() else 0
    return total


def test_sigterm_to_an_operator_task_removes_the_spill_folder(tmp_path: Path) -> None:
    data = tmp_path / "many.csv"
    _many_classes(data)
    root = tmp_path / "tmp"
    root.mkdir()
    env = {**os.environ, "TMPDIR": str(root), "PYTHONPATH": str(Path.cwd())}
    with subprocess.Popen(
        [sys.executable, "-c", _TASK, str(data)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            deadline = time.monotonic() + 180
            while proc.poll() is None and time.monotonic() < deadline:
                if _spilled_bytes(root) > 1_000_000:
                    break
                time.sleep(0.01)
            assert proc.poll() is None, "the task ended before it spilled"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 3, err
    last = out.strip().splitlines()[-1]  # Airflow's own log lines come first
    assert last.startswith("InterruptedError") and "SIGTERM" in last, out
    assert last.endswith("on_kill")  # Airflow's handler ran
    assert [p for p in root.iterdir() if p.name.startswith("reident-")] == []
