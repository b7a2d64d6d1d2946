"""Issue 42 item 2: under HIPAA Safe Harbor every element of a date but its year is removed
(45 CFR 164.514(b)(2)(i)(C)), so a month, an ISO week or a quarter written with its year fails
where an exact date fails; a name naming a month, week or day of the year is a date element.

The expected verdicts come from the rule, not from a run: Safe Harbor gives a string column of
exact dates ``quasi-identifier not declared`` (``_content_findings``), so a column of months
gets the same; without Safe Harbor neither is flagged. ISO week facts (2020 has a week 53,
2025 does not) are from ISO 8601's rule: a year has 53 weeks when it starts on a Thursday, or
is a leap year starting on a Wednesday (1 January 2020 was a Wednesday, 2025 a Wednesday).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from reident_airflow.engine.identifiers import (
    CLEAR,
    UNDECLARED,
    ScanOptions,
    match_name,
    scan_columns,
)
from reident_airflow.sources.files import FileSource

#: Layouts of a date element with its year, one value of each a column is made of.
LAYOUTS = {
    "year-month": ["2025-05", "2024-12", "2019/01"],
    "month/year": ["05/2025", "5/2024", "12-2019"],
    "english month": ["May 2025", "Dec. 2024", "September, 2019", "admitted May 5, 2025"],
    "other languages": ["mai 2025", "mayo de 2025", "février 2025", "März 2024", "mei 2019"],
    "iso week": ["2025-W19", "2020-W53", "2024W01-3"],
    "quarter": ["2025-Q2", "Q2 2025", "2019 q4", "Q1/2024"],
}

#: Shaped like an element but none: no month 13, no week 53 in 2025, no quarter 5, no year
#: 1700, a decimal number, a quarter or a month without its year.
NEAR_MISSES = ["2025-13", "13/2025", "2025-W53", "Q5 2025", "Jan 1700", "1999.5", "Q3", "May"]


def _scan(tmp_path: Path, columns: dict[str, list[str]], safe_harbor: bool) -> dict[str, str]:
    path = tmp_path / "t.csv"
    n = max(len(v) for v in columns.values())
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(list(columns))
        for i in range(n * 4):
            writer.writerow([v[i % len(v)] for v in columns.values()])
    with FileSource(str(path)) as source:
        result = scan_columns(source, ScanOptions(policy="fail", safe_harbor=safe_harbor))
    return {c.column: c.verdict for c in result.columns}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_column_of_date_elements_fails_under_safe_harbor(layout: str, tmp_path: Path) -> None:
    # a neutral name: the values decide
    columns = {"visit": LAYOUTS[layout]}
    assert _scan(tmp_path, columns, safe_harbor=True) == {"visit": UNDECLARED}
    assert _scan(tmp_path, columns, safe_harbor=False) == {"visit": CLEAR}


def test_near_misses_are_no_date_elements(tmp_path: Path) -> None:
    # a guard against over-reading (clear on main too)
    assert _scan(tmp_path, {"visit": NEAR_MISSES}, safe_harbor=True) == {"visit": CLEAR}


def test_admit_month_fails_like_an_exact_date(tmp_path: Path) -> None:
    columns = {
        "admit_month": ["2025-05", "2025-06", "2025-07"],
        "admit_date": ["2025-05-03", "2025-06-11", "2025-07-21"],
    }
    assert _scan(tmp_path, columns, safe_harbor=True) == {
        "admit_month": UNDECLARED,
        "admit_date": UNDECLARED,
    }
    assert _scan(tmp_path, columns, safe_harbor=False) == {
        "admit_month": CLEAR,
        "admit_date": CLEAR,
    }


@pytest.mark.parametrize(
    ("name", "element"),
    [
        ("admit_month", True),
        ("AdmitMonth", True),
        ("birth_week", True),
        ("discharge_week_of_year", True),
        ("day_of_year", True),
        ("Aufnahmemonat", False),  # a compound in German: not read (documented)
        ("months_since_diagnosis", False),  # a duration
        ("age_months", False),
        ("gestational_week", False),
        ("fiscal_quarter", False),  # a quarter without its year; the values decide
        ("quarter", False),
        ("monthly_fee", False),
        ("power_kw", False),  # kilowatts, not a Kalenderwoche
        ("Kalenderwoche", True),
    ],
)
def test_names_of_date_elements(name: str, element: bool) -> None:
    rule = match_name(name, safe_harbor=True)
    assert (rule is not None and rule.category == "date element") is element
    # without Safe Harbor no such rule applies
    plain = match_name(name)
    assert plain is None or plain.category != "date element"


def test_a_month_number_named_as_one_fails_under_safe_harbor_only(tmp_path: Path) -> None:
    columns = {"admit_month": [str(m) for m in range(1, 13)]}
    assert _scan(tmp_path, columns, safe_harbor=True) == {"admit_month": UNDECLARED}
    assert _scan(tmp_path, columns, safe_harbor=False) == {"admit_month": CLEAR}


def test_date_element_check() -> None:
    from reident_airflow.engine.identifier_checks import date_element

    for values in LAYOUTS.values():
        for value in values:
            if not value.startswith("admitted"):
                assert date_element(value), value
    assert not any(date_element(v) for v in NEAR_MISSES)


def test_a_month_stored_as_a_date_fails_as_every_date_column(tmp_path: Path) -> None:
    """A DATE column whose values are all the first of a month (a month stored as a date)
    gets the verdict of every date column under Safe Harbor, by its type, where the data is
    (Parquet in DuckDB, a PostgreSQL DATE and TIMESTAMP); without Safe Harbor it is clear.
    A guard (main gives it too): the scan does not count truncated values, the type
    decides."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    months = [dt.date(2025, 1 + i % 12, 1) for i in range(48)]
    path = tmp_path / "months.parquet"
    pq.write_table(pa.table({"admitted": pa.array(months, type=pa.date32())}), path)
    for safe_harbor, verdict in ((True, UNDECLARED), (False, CLEAR)):
        with FileSource(str(path)) as source:
            result = scan_columns(source, ScanOptions(safe_harbor=safe_harbor))
        assert {c.column: c.verdict for c in result.columns} == {"admitted": verdict}


@pytest.mark.db
def test_a_month_stored_as_a_date_in_postgresql() -> None:
    import datetime as dt
    import uuid

    import sqlalchemy as sa

    from reident_airflow.sources.sql import SqlSource
    from tests.conftest import require_server

    engine = sa.create_engine(require_server("postgresql"))
    table = sa.Table(
        f"i42_months_{uuid.uuid4().hex[:8]}",
        sa.MetaData(),
        sa.Column("admitted", sa.Date()),
        sa.Column("admitted_at", sa.DateTime()),
    )
    table.create(engine)
    try:
        rows = [
            {
                "admitted": dt.date(2025, 1 + i % 12, 1),
                "admitted_at": dt.datetime(2025, 1 + i % 12, 1),
            }
            for i in range(48)
        ]
        with engine.begin() as conn:
            conn.execute(table.insert(), rows)
        for safe_harbor, verdict in ((True, UNDECLARED), (False, CLEAR)):
            source = SqlSource(engine, table=table.name)
            result = scan_columns(source, ScanOptions(safe_harbor=safe_harbor))
            assert {c.column: c.verdict for c in result.columns} == {
                "admitted": verdict,
                "admitted_at": verdict,
            }
    finally:
        table.drop(engine)
        engine.dispose()
