"""Importing the GE package is quiet (issue 42 item 6: ~200 log lines per import).

GE logs one INFO line per function its documentation decorator skips; under a handler that
shows INFO (Airflow sets one up) every import of :mod:`reident_airflow.gx` printed ~215
lines. The import runs in a fresh interpreter with the root logger at INFO, as a task's is.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

_IMPORT = """
import logging, warnings
warnings.simplefilter("ignore")  # a third party's import-time warnings are not log lines
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
import reident_airflow.gx
logging.getLogger("great_expectations._docs_decorators").warning("a real problem")
logging.getLogger("great_expectations.expectations.registry").error("another one")
"""


def test_the_import_logs_nothing_at_info_and_keeps_warnings() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    # Airflow, when installed, replaces the format with its own: match the logger name
    out = done.stderr + done.stdout  # Airflow under tests logs to stdout
    lines = [line for line in out.splitlines() if "great_expectations" in line]
    assert len(lines) == 2, f"{len(lines)} lines, e.g. {lines[:3]}"
    assert "a real problem" in lines[0]
    assert "another one" in lines[1]
