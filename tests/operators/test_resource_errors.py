"""Issue 25, item 10: an operator that runs out of disk (the file-size limit) or memory says
which, where and what to do, and leaves the retry to Airflow (it is not a configuration
error: a retry with more room may pass)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

_TASK = """
import sys
from reident_airflow.operators.risk import ReidentificationRiskOperator

op = ReidentificationRiskOperator(
    task_id="risk", path=sys.argv[1], quasi_identifiers=["a", "b"], memory_limit=sys.argv[2],
    advice=False,
)
try:
    op.execute({})
except BaseException as exc:
    print(type(exc).__name__, exc, flush=True)
    sys.exit(3)
"""


def _many_classes(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write("a,b\n")
        for start in range(0, rows, 10_000):
            block = range(start, start + 10_000)
            fh.write("".join(f"{i},v{i * 7919 % 1_000_003}\n" for i in block))


@pytest.mark.parametrize(
    ("what", "limit", "memory_limit", "said"),
    [
        (resource.RLIMIT_FSIZE, 1_000_000, "200MB", "file-size limit"),
        (resource.RLIMIT_AS, 3_000_000_000, "", "ran out of memory"),
    ],
    ids=["file-size", "memory"],
)
def test_an_operator_out_of_room_says_so_and_may_be_retried(
    tmp_path: Path, what: int, limit: int, memory_limit: str, said: str
) -> None:
    data = tmp_path / "many.csv"
    _many_classes(data, 4_000_000)

    def lower() -> None:
        resource.setrlimit(what, (limit, limit))

    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run(
        [sys.executable, "-c", _TASK, str(data), memory_limit],
        preexec_fn=lower,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 3, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]  # Airflow's own log lines come first
    # a ResourceExhaustedError, not a ReidentConfigurationError (which fails without retry)
    assert last.startswith("ResourceExhaustedError") and said in last, last
    assert "--memory-limit" in last
