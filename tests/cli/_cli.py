"""Running ``reident`` in process, for the command-line tests."""

from __future__ import annotations

import io
import json
from typing import Any

from reident_airflow.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    """``reident ARGV...``: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


#: What identifies a run rather than measures the table: the input's fingerprint (its path
#: or URL, clock and hash) and the advice on a k breach (tests/cli/test_assess_advice.py).
RUN_KEYS = ("input", "advice")


def assess_json(*argv: str) -> tuple[int, dict[str, Any]]:
    """``reident assess ARGV... --json -``: exit code (0 or 1) and the JSON without
    :data:`RUN_KEYS` (``--no-advice --no-fingerprint``), so that the same table read from
    any source, by the CLI, an operator or Spark, gives the same document."""
    code, out, err = run("assess", *argv, "--json", "-", "--no-advice", "--no-fingerprint")
    assert code in (0, 1), err
    doc: dict[str, Any] = json.loads(out)
    assert all(doc.pop(key) is None for key in RUN_KEYS), doc
    return code, doc


def one_line_error(code: int, err: str) -> str:
    """The one line an input error prints (exit 2, no traceback)."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]
