"""``expect_table_to_hold_no_direct_identifiers`` and the ``reident.identifier_scan`` metric
(issue 27) on pandas and SQLite (Spark: ``test_identifier_scan_spark.py``).

The tables are ``tests/data/identifiers/``: what is planted where, and the verdict each
column gets, are derived in ``make_tables.py`` and pinned on the CSV reading by
``tests/engine/test_scan_columns.py``; here every engine must give the same verdicts as that
reading (the same counts, through the batch's own source).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from great_expectations.compatibility import pydantic

from reident_airflow.engine.identifiers import IdentifierScan, ScanOptions, scan_columns
from reident_airflow.gx import (
    EXPECTATION_TYPES,
    IDENTIFIER_SCAN_METRIC,
    METRIC_NAMES,
    ExpectTableToHoldNoDirectIdentifiers,
)
from reident_airflow.gx.metrics import SCAN_KEYS
from reident_airflow.sources.files import FileSource
from tests._identifiers import DATA, PLANTED_FAILING
from tests.conftest import require_server
from tests.gx.conftest import sql_batch
from tests.gx.test_metrics import metric

PLANTED_KWARGS: dict[str, Any] = {"quasi_identifiers": ["sex", "ethnicity"], "safe_harbor": True}
CLEAN_KWARGS: dict[str, Any] = {"quasi_identifiers": ["sex", "age", "zip"], "safe_harbor": True}


def read_table(name: str) -> pd.DataFrame:
    """A test table as the CSV reading holds it: text, an empty field missing."""
    return pd.read_csv(DATA / name, dtype=str)


def csv_verdicts(name: str, kwargs: dict[str, Any]) -> dict[str, str]:
    """The verdicts of the CSV reading (DuckDB on the file), the reference for every engine."""
    with FileSource(str(DATA / name)) as source:
        scan = scan_columns(source, ScanOptions(policy="fail", **kwargs))
    return {c.column: c.verdict for c in scan.columns}


def verdicts_of(result: Any) -> dict[str, str]:
    columns = result.result["details"]["assessment"]["columns"]
    return {c["column"]: c["verdict"] for c in columns}


@pytest.fixture(scope="module")
def sqlite_tables(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite file holding both tables, every column TEXT (as the CSV reading types them)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('gx-scan') / 'scan.db'}"
    engine = sa.create_engine(url)
    for name in ("planted", "clean"):
        frame = read_table(f"{name}.csv")
        frame.to_sql(name, engine, index=False, dtype=dict.fromkeys(frame.columns, sa.Text()))
    engine.dispose()
    return url


@pytest.fixture
def postgres_planted() -> Iterator[tuple[str, str]]:
    """``(url, table)``: planted.csv in a uniquely named PostgreSQL table (TEXT columns)."""
    url = require_server("postgresql")
    table = f"reident_gx_i27_planted_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(url)
    frame = read_table("planted.csv")
    try:
        frame.to_sql(table, engine, index=False, dtype=dict.fromkeys(frame.columns, sa.Text()))
        yield url, table
    finally:
        with engine.begin() as conn:
            sa.Table(table, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


def test_postgresql_gives_the_same_verdicts(
    context: Any, postgres_planted: tuple[str, str]
) -> None:
    url, table = postgres_planted
    result = sql_batch(context, url, table).validate(
        ExpectTableToHoldNoDirectIdentifiers(**PLANTED_KWARGS)
    )
    assert result.result["details"]["failing"] == PLANTED_FAILING
    assert verdicts_of(result) == csv_verdicts("planted.csv", PLANTED_KWARGS)


def _batch(engine: str, name: str, pandas_batch: Callable[..., Any], context: Any, url: str) -> Any:
    if engine == "pandas":
        return pandas_batch(read_table(f"{name}.csv"))
    return sql_batch(context, url, name)


@pytest.mark.parametrize("engine", ["pandas", "sqlite"])
def test_the_planted_table_fails_naming_its_identifiers(
    engine: str, pandas_batch: Callable[..., Any], context: Any, sqlite_tables: str
) -> None:
    batch = _batch(engine, "planted", pandas_batch, context, sqlite_tables)
    result = batch.validate(ExpectTableToHoldNoDirectIdentifiers(**PLANTED_KWARGS))
    assert result.success is False
    details = result.result["details"]
    assert details["failing"] == PLANTED_FAILING
    assert details["flagged"] == [*PLANTED_FAILING, "note"]
    assert result.result["observed_value"] == 5
    assert details["measure"] == "failing_columns" and details["limit"] == 0
    assert details["summary"] == (
        "5 failing column(s): ref, mrn, age, zip, phone; possible identifiers: note"
    )
    assert details["assessment"]["schema"] == "reident.identifier_scan/v1"
    assert details["assessment"]["options"]["policy"] == "fail"
    assert verdicts_of(result) == csv_verdicts("planted.csv", PLANTED_KWARGS)


@pytest.mark.parametrize("engine", ["pandas", "sqlite"])
def test_the_clean_table_succeeds(
    engine: str, pandas_batch: Callable[..., Any], context: Any, sqlite_tables: str
) -> None:
    batch = _batch(engine, "clean", pandas_batch, context, sqlite_tables)
    result = batch.validate(ExpectTableToHoldNoDirectIdentifiers(**CLEAN_KWARGS))
    assert result.success is True, result.result
    assert result.result["observed_value"] == 0
    assert result.result["details"]["flagged"] == []
    assert set(verdicts_of(result).values()) == {"clear"}


def test_allowed_and_declared_columns_are_not_flagged(
    pandas_batch: Callable[..., Any],
) -> None:
    kwargs = {
        "quasi_identifiers": ["sex", "ethnicity", "age", "zip"],
        "allow_columns": ["ref", "mrn", "phone"],
        "safe_harbor": True,
    }
    result = pandas_batch(read_table("planted.csv")).validate(
        ExpectTableToHoldNoDirectIdentifiers(**kwargs)
    )
    assert result.success is True
    assert result.result["details"]["flagged"] == ["note"]  # a possible identifier only


def test_the_metric_is_the_engine_scan_on_every_engine(
    pandas_batch: Callable[..., Any], context: Any, sqlite_tables: str
) -> None:
    kwargs = {"quasi_identifiers": ["sex", "ethnicity"], "safe_harbor": True}
    for batch in (
        pandas_batch(read_table("planted.csv")),
        sql_batch(context, sqlite_tables, "planted"),
    ):
        value = metric(context, batch, IDENTIFIER_SCAN_METRIC, **kwargs)
        assert isinstance(value, IdentifierScan)
        assert value.failing == tuple(PLANTED_FAILING)


def test_options_are_checked_when_built() -> None:
    with pytest.raises(pydantic.ValidationError, match="phone_regions"):
        ExpectTableToHoldNoDirectIdentifiers(phone_regions=["XX"])
    with pytest.raises(pydantic.ValidationError, match="sample_size"):
        ExpectTableToHoldNoDirectIdentifiers(sample_size=0)
    with pytest.raises(pydantic.ValidationError, match="list of names"):
        ExpectTableToHoldNoDirectIdentifiers(allow_columns="ref")
    with pytest.raises(pydantic.ValidationError, match="true or false"):
        ExpectTableToHoldNoDirectIdentifiers(safe_harbor="yes")


def test_an_unknown_allowed_column_is_a_failed_result(pandas_batch: Callable[..., Any]) -> None:
    result = pandas_batch(read_table("clean.csv")).validate(
        ExpectTableToHoldNoDirectIdentifiers(allow_columns=["no_such_column"])
    )
    assert result.success is False
    assert result.exception_info["raised_exception"] is True
    assert "no_such_column" in result.exception_info["exception_message"]


def test_registered_with_the_others() -> None:
    assert "expect_table_to_hold_no_direct_identifiers" in EXPECTATION_TYPES
    assert IDENTIFIER_SCAN_METRIC in METRIC_NAMES
    # the metric's value keys are the expectation's fields of the same names
    assert set(SCAN_KEYS) <= set(ExpectTableToHoldNoDirectIdentifiers.__fields__)


def test_the_example_suite_fails_the_planted_table_and_passes_the_clean_one(
    tmp_path: Path,
) -> None:
    """``expectations/identifier_scan.suite.json`` declares sex, age, zip and ethnicity: on
    planted.csv ref, mrn and phone remain (make_tables.py), on clean.csv nothing."""
    from reident_airflow.engine.errors import ThresholdBreached
    from reident_airflow.gx import run_release_checkpoint
    from tests.conftest import ROOT

    suite = ROOT / "expectations" / "identifier_scan.suite.json"
    checkpoint = ROOT / "expectations" / "adult_release.checkpoint.json"
    alerts = tmp_path / "alerts.jsonl"
    with pytest.raises(ThresholdBreached) as caught:
        run_release_checkpoint(
            suite=suite, checkpoint=checkpoint, csv=str(DATA / "planted.csv"), alert_file=alerts
        )
    assert "3 failing column(s): ref, mrn, phone" in str(caught.value)
    [failed] = caught.value.report["validations"][0]["failed"]
    assert (failed["measure"], failed["value"], failed["limit"]) == ("failing_columns", 3, 0)
    outcome = run_release_checkpoint(
        suite=suite, checkpoint=checkpoint, csv=str(DATA / "clean.csv"), alert_file=alerts
    )
    assert outcome.success is True


def test_issue_38_forms_give_the_csv_verdicts(
    pandas_batch: Callable[..., Any], context: Any, tmp_path: Path
) -> None:
    """Issue 38's forms and traps (forms.csv) through the expectation on pandas and SQLite:
    the verdicts of the CSV reading (what each must be: tests/engine/test_identifier_forms.py),
    the failing columns exactly those."""
    want = csv_verdicts("forms.csv", {})
    frame = read_table("forms.csv")
    url = f"sqlite:///{tmp_path / 'forms.db'}"
    engine = sa.create_engine(url)
    frame.to_sql("forms", engine, index=False, dtype=dict.fromkeys(frame.columns, sa.Text()))
    engine.dispose()
    for batch in (pandas_batch(frame), sql_batch(context, url, "forms")):
        result = batch.validate(ExpectTableToHoldNoDirectIdentifiers())
        assert verdicts_of(result) == want
        failing = [
            c for c, v in want.items() if v in ("identifier", "quasi-identifier not declared")
        ]
        assert sorted(result.result["details"]["failing"]) == sorted(failing)
        assert not result.success
