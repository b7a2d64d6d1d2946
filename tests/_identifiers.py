"""Issue 27's identifier-scan test tables (``tests/data/identifiers/``) as the tests read
them: the rows, the verdicts ``make_tables.py`` derives for ``planted.csv`` (with ``sex`` and
``ethnicity`` declared and Safe Harbor), and the check that no output holds a value.

``ref`` (a renamed unique id), ``mrn`` (a record number) and ``phone`` (phone numbers in four
formats) are identifiers; ``age`` (a 97) and ``zip`` (restricted ZIP3 areas) are
quasi-identifiers not declared; ``note`` (e-mail addresses and a card number in free text) is
a possible identifier, which does not fail; every column of ``clean.csv`` is clear.
"""

from __future__ import annotations

import csv
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "identifiers"

PLANTED_VERDICTS = {
    "ref": "identifier",
    "mrn": "identifier",
    "sex": "clear",
    "age": "quasi-identifier not declared",
    "zip": "quasi-identifier not declared",
    "phone": "identifier",
    "ethnicity": "clear",
    "note": "possible identifier",
}
#: The failing columns of ``planted.csv``, in the table's order.
PLANTED_FAILING = ["ref", "mrn", "age", "zip", "phone"]


def rows(name: str) -> list[dict[str, str | None]]:
    """The records of ``<name>.csv``, an empty field as ``None``."""
    with (DATA / f"{name}.csv").open(encoding="utf-8", newline="") as fh:
        return [{k: (v if v != "" else None) for k, v in r.items()} for r in csv.DictReader(fh)]


def planted_values() -> set[str]:
    """Every value of ``planted.csv`` of four characters or more (shorter ones, ``M``, ``77``,
    are digits or letters any output holds): what no output may hold."""
    return {v for row in rows("planted") for v in row.values() if v is not None and len(v) >= 4}


def assert_no_value(*outputs: str) -> None:
    """No value of :func:`planted_values` is in any of ``outputs``."""
    values = planted_values()
    assert len(values) > 400  # ref, mrn, phone: 200 each; zips, notes, labels
    for text in outputs:
        leaked = sorted(v for v in values if v in text)
        assert not leaked, leaked[:3]
