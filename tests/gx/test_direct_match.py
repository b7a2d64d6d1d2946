"""Column Direct Match Protection as an expectation: pandas and SQL give the engine's result.

Original table: 300 records with a unique identifier ``ssn``, ``sex`` and ``age``. The safe
release permutes ``ssn`` (hardly any value kept); the leaking one keeps it (``m = u = n``, so
protection 0).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.engine.direct_match import direct_match_protection
from reident_airflow.gx import ExpectTableDirectMatchProtectionToBeAbove
from tests.conftest import require_server
from tests.gx.conftest import sql_batch

N = 300


def tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(6)
    original = pd.DataFrame(
        {
            "id": np.arange(N),
            "ssn": rng.permutation(np.arange(100_000, 100_000 + N)),
            "sex": rng.choice(["F", "M"], N),
            "age": rng.integers(18, 90, N),
        }
    )
    safe = original.assign(ssn=rng.permutation(original["ssn"].to_numpy()))
    safe = safe.sample(frac=1.0, random_state=1).reset_index(drop=True)  # aligned by key only
    leaking = original.sample(frac=1.0, random_state=2).reset_index(drop=True)
    return original, safe, leaking


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    original, safe, leaking = tables()
    folder = tmp_path_factory.mktemp("direct-match")
    csv = folder / "original.csv"
    original.to_csv(csv, sep=";", index=False)
    url = f"sqlite:///{folder / 'release.db'}"
    engine = sa.create_engine(url)
    for name, frame in (("original", original), ("safe", safe), ("leaking", leaking)):
        frame.to_sql(name, engine, index=False)
    engine.dispose()
    text = pd.read_csv(csv, sep=";", dtype=str, keep_default_na=False)
    return {
        "csv": csv,
        "url": url,
        "frames": {"safe": safe, "leaking": leaking},
        "expected": {
            name: direct_match_protection(text, frame, key="id", target=50).to_dict()
            for name, frame in (("safe", safe), ("leaking", leaking))
        },
    }


@pytest.mark.parametrize(("release", "success"), [("safe", True), ("leaking", False)])
def test_pandas_and_sqlite_give_the_engine_result(
    releases: dict[str, Any], pandas_batch: Any, context: Any, release: str, success: bool
) -> None:
    expected = releases["expected"][release]
    on_frame = pandas_batch(releases["frames"][release]).validate(
        ExpectTableDirectMatchProtectionToBeAbove(
            original_table=str(releases["csv"]), sep=";", key="id", target=50
        )
    )
    on_sqlite = sql_batch(context, releases["url"], release).validate(
        ExpectTableDirectMatchProtectionToBeAbove(original_table="original", key="id", target=50)
    )
    for result in (on_frame, on_sqlite):
        assert result.success is success, result.exception_info
        assert result.result["observed_value"] == expected["protection"]
        assert result.result["details"]["assessment"] == expected
    assert expected["schema"] == "reident.direct_match/v1"
    if not success:
        assert expected["protection"] == 0.0
        assert on_sqlite.result["details"]["below_target"] == ["ssn"]
        assert "lowest column: 'ssn'" in on_sqlite.result["details"]["summary"]


def test_pandas_without_key_aligns_by_position(
    releases: dict[str, Any], pandas_batch: Any, tmp_path: Path
) -> None:
    original, _, _ = tables()
    result = pandas_batch(original).validate(
        ExpectTableDirectMatchProtectionToBeAbove(original_table=str(releases["csv"]), sep=";")
    )
    assert result.success is False  # the original itself: every identifier kept
    assert result.result["observed_value"] == 0.0
    document = result.result["details"]["assessment"]
    assert document["key"] is None
    assert document["columns"][0]["column"] in {"id", "ssn"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"original_table": "original"}, "a database table has no row order: give key=COLUMN"),
        ({"original_table": "nope", "key": "id"}, "table 'nope' does not exist"),
        ({"original_table": "original", "key": "sex"}, "key column 'sex' is not unique"),
        ({"original_table": "original", "key": "idx"}, "key column 'idx' is missing"),
        (
            {"original_table": "original", "key": "id", "columns": ["ssn", "zip"]},
            "columns missing from the original table: ['zip']",
        ),
    ],
)
def test_sql_input_errors_are_failed_results(
    releases: dict[str, Any], context: Any, kwargs: dict[str, Any], message: str
) -> None:
    result = sql_batch(context, releases["url"], "safe").validate(
        ExpectTableDirectMatchProtectionToBeAbove(**kwargs)
    )
    assert result.success is False
    assert message in result.exception_info["exception_message"]


def test_pandas_missing_original_file(pandas_batch: Any, tmp_path: Path) -> None:
    result = pandas_batch(tables()[1]).validate(
        ExpectTableDirectMatchProtectionToBeAbove(original_table=str(tmp_path / "none.csv"))
    )
    assert result.success is False
    assert "none.csv" in result.exception_info["exception_message"]


@pytest.fixture
def postgres_releases() -> Iterator[tuple[str, dict[str, str]]]:
    url = require_server("postgresql")
    suffix = uuid.uuid4().hex[:10]
    names = {n: f"reident_gx_{n}_{suffix}" for n in ("original", "safe", "leaking")}
    engine = sa.create_engine(url)
    original, safe, leaking = tables()
    try:
        for name, frame in (("original", original), ("safe", safe), ("leaking", leaking)):
            frame.to_sql(names[name], engine, index=False)
        yield url, names
    finally:
        with engine.begin() as conn:
            for table in names.values():
                sa.Table(table, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


def test_postgresql_gives_the_engine_result(
    postgres_releases: tuple[str, dict[str, str]], releases: dict[str, Any], context: Any
) -> None:
    url, names = postgres_releases
    for release, success in (("safe", True), ("leaking", False)):
        result = sql_batch(context, url, names[release]).validate(
            ExpectTableDirectMatchProtectionToBeAbove(
                original_table=names["original"], key="id", target=50
            )
        )
        assert result.success is success, result.exception_info
        assert result.result["observed_value"] == releases["expected"][release]["protection"]
        assert result.result["details"]["assessment"] == releases["expected"][release]
