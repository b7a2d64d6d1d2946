"""The identifier scan from kinds to verdicts through a real source (issue 27's acceptance
tables, ``tests/data/identifiers/``; what is planted where is derived in ``make_tables.py``).

The adapters all run :func:`~reident_airflow.engine.identifiers.scan_columns`; these tests
pin what it finds on the two tables read as CSV through DuckDB: every planted identifier on
``planted.csv``, nothing on ``clean.csv``. The other backends give the same profiles
(``tests/sources/test_column_profile.py``), hence the same verdicts.
"""

from __future__ import annotations

import pytest

from reident_airflow.engine.identifiers import (
    CLEAR,
    IDENTIFIER,
    POSSIBLE,
    UNDECLARED,
    ScanOptions,
    scan_columns,
)
from reident_airflow.sources.files import FileSource
from tests._identifiers import DATA


def _verdicts(name: str, options: ScanOptions) -> dict[str, str]:
    with FileSource(str(DATA / name)) as source:
        result = scan_columns(source, options)
    return {c.column: c.verdict for c in result.columns}


def test_every_planted_identifier_is_found() -> None:
    options = ScanOptions(quasi_identifiers=("sex", "ethnicity"), safe_harbor=True)
    verdicts = _verdicts("planted.csv", options)
    # make_tables.py: ref is unique on every record under a name no rule knows; mrn is a
    # record number by name and unique; phone holds fictional numbers in four formats
    assert verdicts["ref"] == IDENTIFIER
    assert verdicts["mrn"] == IDENTIFIER
    assert verdicts["phone"] == IDENTIFIER
    # e-mails in 4 notes and one Luhn-valid card number: content inside free text
    assert verdicts["note"] == POSSIBLE
    # an age of 97 (over 89) and ZIP codes of restricted ZIP3 areas, undeclared
    assert verdicts["age"] == UNDECLARED
    assert verdicts["zip"] == UNDECLARED
    # the declared quasi-identifiers are the assessment's, never flagged
    assert verdicts["sex"] == CLEAR and verdicts["ethnicity"] == CLEAR


@pytest.mark.parametrize("safe_harbor", [False, True])
def test_the_clean_table_comes_out_clear(safe_harbor: bool) -> None:
    options = ScanOptions(quasi_identifiers=("sex", "age", "zip"), safe_harbor=safe_harbor)
    verdicts = _verdicts("clean.csv", options)
    # every record is written twice: nothing unique; no value matches a pattern
    assert set(verdicts) == {"sex", "age", "zip", "ethnicity", "ward", "note"}
    assert set(verdicts.values()) == {CLEAR}, verdicts


def test_an_allowed_column_is_not_flagged() -> None:
    options = ScanOptions(quasi_identifiers=("sex", "ethnicity"), allow_columns=("ref",))
    assert _verdicts("planted.csv", options)["ref"] == CLEAR


def test_the_result_carries_no_value() -> None:
    options = ScanOptions(quasi_identifiers=("sex",), safe_harbor=True)
    with FileSource(str(DATA / "planted.csv")) as source:
        text = repr(scan_columns(source, options).to_dict())
    planted = (DATA / "planted.csv").read_text(encoding="utf-8").splitlines()[1:]
    values = {v for line in planted for v in line.split(",") if len(v) >= 4}
    assert not [v for v in values if v in text]


def test_declared_names_are_read_as_the_assessment_reads_them() -> None:
    # docs/reading.md: a name is looked up as given, then without surrounding spaces
    # (`--qi "sex, ethnicity"` gives " ethnicity")
    options = ScanOptions(quasi_identifiers=("sex", " ethnicity"), allow_columns=("ref ",))
    with FileSource(str(DATA / "planted.csv")) as source:
        result = scan_columns(source, options)
    assert result.options.quasi_identifiers == ("sex", "ethnicity")
    assert result.options.allow_columns == ("ref",)
    assert {c.column: c.treated_as for c in result.columns}["ethnicity"] == "quasi-identifier"
