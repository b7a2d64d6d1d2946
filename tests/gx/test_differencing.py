"""``expect_table_differencing_risk_to_be_below`` (issue 28): the batch against the release it
replaces, on pandas, SQLite, PostgreSQL and MariaDB, gives the numbers worked out by hand.

The releases of tests/cli/test_previous_release.py: the previous one holds 40 records of
class (F, 100) and 6 of (M, 200); the candidate drops two (M, 200) records and admits one (F,
100) patient. On the QIs sex and zip, by hand:

- arrivals: 1 record, alone in (F, 100): a(c) = 1, arrival k 1, highest risk 1/1 = 1; so
  ``min_arrival_k = 2`` is breached (the issue's example: a class of 40 in both releases,
  one arrival) and ``max_arrival_risk = 0.5`` too;
- departures: 2 records in (M, 200): d(c) = 2, departure k 2, highest risk 1/2; so
  ``min_departure_k = 2`` and ``max_departure_risk = 0.5`` are met, ``min_departure_k = 3``
  is not;
- the previous release holds 46 records, the candidate 45.

The same candidate against itself: nothing moved, every limit met.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from great_expectations.compatibility import pydantic

from reident_airflow.gx import ExpectTableDifferencingRiskToBeBelow
from tests.cli.test_previous_release import CANDIDATE, PREVIOUS
from tests.conftest import require_server

QIS = ["sex", "zip"]
ARRIVAL_K = {"metric": "since_last_release.arrivals.k", "observed": 1.0, "limit": 2.0}
ADVICE = (
    "hold back 1 of the 1 arrivals (1 of 1 classes) until their class has 2 arrivals, or "
    "release arrivals in batches"
)
#: Every value the releases hold: none may appear in a result.
VALUES = set(pd.concat([PREVIOUS, CANDIDATE]).to_numpy().ravel().tolist())


def _expectation(previous: str, **kwargs: Any) -> ExpectTableDifferencingRiskToBeBelow:
    options: dict[str, Any] = {"min_arrival_k": 2, "min_departure_k": 2}
    options.update(kwargs)
    return ExpectTableDifferencingRiskToBeBelow(
        quasi_identifiers=QIS, previous_release=previous, **options
    )


def _strings(node: Any) -> Iterator[str]:
    """Every string of a JSON document, keys included."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def check_forty(result: Any) -> None:
    """The hand-computed verdict of the module docstring (min_arrival_k = 2,
    min_departure_k = 2), and no value of a record in the result."""
    assert result.success is False
    body = result.result
    assert body["observed_value"] == 1  # one limit breached
    details = body["details"]
    assert details["measure"] == "breached_limits" and details["limit"] == 0
    assert details["breaches"] == [ARRIVAL_K]
    assert details["thresholds"] == {"min_arrival_k": 2, "min_departure_k": 2}
    assert details["advice"] == ADVICE
    doc = details["assessment"]
    assert doc["schema"] == "reident.differencing/v1"
    assert (doc["previous_records"], doc["records"]) == (46, 45)
    arrivals, departures = doc["arrivals"], doc["departures"]
    assert (arrivals["records"], arrivals["classes"], arrivals["k"]) == (1, 1, 1)
    assert arrivals["highest_risk"] == 1.0 and arrivals["histogram"] == [[1, 1]]
    assert (departures["records"], departures["classes"], departures["k"]) == (2, 1, 2)
    assert departures["highest_risk"] == 0.5 and departures["histogram"] == [[2, 1]]
    dumped = result.to_json_dict()
    json.dumps(dumped)  # serialisable as GE saves it
    leaked = {s for s in _strings(dumped) if s in VALUES} - {"sex", "zip"}
    assert not leaked, leaked


# ------------------------------------------------------------------------------------ pandas
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_pandas_against_a_file(
    pandas_batch: Callable[[pd.DataFrame], Any], tmp_path: Path, suffix: str
) -> None:
    previous = tmp_path / f"previous.{suffix}"
    if suffix == "csv":
        PREVIOUS.to_csv(previous, sep=";", index=False)
    else:
        PREVIOUS.to_parquet(previous, index=False)
    result = pandas_batch(CANDIDATE).validate(_expectation(str(previous), sep=";"))
    check_forty(result)


def test_the_risk_limits_and_a_departure_breach(
    pandas_batch: Callable[[pd.DataFrame], Any], tmp_path: Path
) -> None:
    PREVIOUS.to_parquet(tmp_path / "previous.parquet", index=False)
    batch = pandas_batch(CANDIDATE)
    risks = _expectation(
        str(tmp_path / "previous.parquet"),
        min_arrival_k=None,
        min_departure_k=None,
        max_arrival_risk=0.5,
        max_departure_risk=0.5,
    )
    result = batch.validate(risks)
    # 1/1 > 0.5 breaches; 1/2 = 0.5 does not
    assert result.success is False and result.result["observed_value"] == 1
    assert result.result["details"]["breaches"] == [
        {"metric": "since_last_release.arrivals.highest_risk", "observed": 1.0, "limit": 0.5}
    ]
    # a risk limit of r asks for ceil(1 / r) = 2 arrivals in a class
    assert result.result["details"]["advice"] == ADVICE
    departures = _expectation(
        str(tmp_path / "previous.parquet"), min_arrival_k=None, min_departure_k=3
    )
    result = batch.validate(departures)
    assert result.success is False
    assert result.result["details"]["breaches"] == [
        {"metric": "since_last_release.departures.k", "observed": 2.0, "limit": 3.0}
    ]
    assert result.result["details"]["advice"] is None  # no arrival limit breached


def test_an_unchanged_release_passes(
    pandas_batch: Callable[[pd.DataFrame], Any], tmp_path: Path
) -> None:
    CANDIDATE.to_parquet(tmp_path / "same.parquet", index=False)
    result = pandas_batch(CANDIDATE).validate(_expectation(str(tmp_path / "same.parquet")))
    assert result.success is True and result.result["observed_value"] == 0
    details = result.result["details"]
    assert details["breaches"] == [] and details["advice"] is None
    assert details["summary"] == "no arrivals; no departures: within the limits"
    doc = details["assessment"]
    assert doc["arrivals"]["records"] == 0 and doc["arrivals"]["k"] is None


def test_a_missing_previous_release_is_not_evaluated(
    pandas_batch: Callable[[pd.DataFrame], Any], tmp_path: Path
) -> None:
    result = pandas_batch(CANDIDATE).validate(_expectation(str(tmp_path / "none.csv")))
    assert result.success is False
    assert result.exception_info["raised_exception"] is True
    assert result.result["details"]["summary"].startswith("not evaluated: ")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_arrival_k": None, "min_departure_k": None}, "give at least one limit"),
        ({"min_arrival_k": 0}, "min_arrival_k must be >= 1"),
        ({"max_arrival_risk": 0}, "max_arrival_risk"),
        ({"max_departure_risk": 1.5}, "max_departure_risk"),
        ({"columns": "sex"}, "columns must be a list"),
    ],
)
def test_bad_parameters_fail_when_built(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        _expectation("previous.csv", **kwargs)


def test_the_sentence_names_the_limits() -> None:
    template, params = ExpectTableDifferencingRiskToBeBelow._sentence(
        {"quasi_identifiers": QIS, "previous_release": "p", "min_arrival_k": 2}
    )
    assert template == (
        "Compared with the previous release $previous_release on quasi-identifiers "
        "$qi_0, $qi_1: at least $min_arrival_k arrivals in every class records arrive in."
    )
    assert params == {"previous_release": "p", "qi_0": "sex", "qi_1": "zip", "min_arrival_k": 2}


# ------------------------------------------------------------------------------- databases
def _sql_batch(context: Any, url: str, table: str) -> Any:
    name = f"sql_{uuid.uuid4().hex[:8]}"
    if url.startswith("sqlite"):
        source = context.data_sources.add_sqlite(name, connection_string=url)
    elif url.startswith("postgresql"):
        source = context.data_sources.add_postgres(name, connection_string=url)
    else:
        source = context.data_sources.add_sql(name, connection_string=url)
    asset = source.add_table_asset("table", table_name=table)
    return asset.add_batch_definition_whole_table("whole").get_batch()


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``(url, prefix)``: ``<prefix>_previous`` and ``<prefix>_candidate`` in the database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'releases.db'}"
    else:
        url = require_server(request.param)
    prefix = f"i28pair_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(url)
    PREVIOUS.to_sql(f"{prefix}_previous", engine, index=False)
    CANDIDATE.to_sql(f"{prefix}_candidate", engine, index=False)
    try:
        yield url, prefix
    finally:
        with engine.begin() as conn:
            for table in ("previous", "candidate"):
                sa.Table(f"{prefix}_{table}", sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


def test_a_database_table(context: Any, database: tuple[str, str]) -> None:
    url, prefix = database
    batch = _sql_batch(context, url, f"{prefix}_candidate")
    check_forty(batch.validate(_expectation(f"{prefix}_previous")))
    missing = batch.validate(_expectation(f"{prefix}_nothing"))
    assert missing.success is False
    assert "does not exist" in missing.exception_info["exception_message"]


def test_a_suite_holding_it_gets_the_guard_and_saves_it(context: Any) -> None:
    """Fail closed (reident_airflow.gx.guard): the suite is guarded, and the expectation
    comes back from the suite's JSON as it was built."""
    from great_expectations.core.expectation_suite import ExpectationSuite

    from reident_airflow.gx import is_guard

    suite = context.suites.add(ExpectationSuite(name=f"i28pair_{uuid.uuid4().hex[:8]}"))
    built = _expectation("previous.parquet", max_arrival_risk=0.5, columns=["sex", "zip"])
    suite.add_expectation(built)
    assert len(suite.expectations) == 2 and is_guard(suite.expectations[0])
    saved = context.suites.get(suite.name)
    [guard, loaded] = saved.expectations
    assert is_guard(guard)
    assert loaded.configuration.kwargs == built.configuration.kwargs
    assert loaded.expectation_type == "expect_table_differencing_risk_to_be_below"


def test_a_limit_as_a_suite_parameter(
    pandas_batch: Callable[[pd.DataFrame], Any], tmp_path: Path
) -> None:
    """Resolved when validating, then checked: 2 gives the hand-computed verdict, 0 is
    refused as GE refuses a bad resolved value of the other expectations (it rebuilds the
    expectation: a ValidationError)."""
    PREVIOUS.to_parquet(tmp_path / "previous.parquet", index=False)
    expectation = _expectation(
        str(tmp_path / "previous.parquet"), min_arrival_k={"$PARAMETER": "arrival_k"}
    )
    batch = pandas_batch(CANDIDATE)
    check_forty(batch.validate(expectation, expectation_parameters={"arrival_k": 2}))
    with pytest.raises(pydantic.ValidationError, match="min_arrival_k must be >= 1"):
        batch.validate(expectation, expectation_parameters={"arrival_k": 0})
