"""One gate on Adult that the risk operator tests run from every source (a database, a
Spark connection) and compare with ``reident assess`` on tests/data/adult.csv: the same
options given to the CLI and to the operator."""

from __future__ import annotations

from typing import Any

from tests.cli._cli import assess_json
from tests.conftest import oracle_data

__all__ = ["OPERATOR_OPTIONS", "QIS", "cli_json"]

QIS = ["sex", "age", "race", "marital-status", "native-country"]
_CLI_OPTIONS = ("--sampling-fraction", "0.01", "--max-highest-risk", "0.5")
#: The operator's parameters for the CLI's options; on_breach="warn", since the gate breaches.
OPERATOR_OPTIONS: dict[str, Any] = {
    "quasi_identifiers": ",".join(QIS),
    "sampling_fraction": "0.01",
    "max_highest_risk": "0.5",
    "on_breach": "warn",
}


def cli_json() -> dict[str, Any]:
    """``reident assess`` on the CSV, without the run keys (``assess_json``); it breaches."""
    code, doc = assess_json(
        str(oracle_data("adult.csv")), "--sep", ";", "--qi", ",".join(QIS), *_CLI_OPTIONS
    )
    assert code == 1  # highest risk 1 > 0.5
    return doc
