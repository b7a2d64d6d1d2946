"""DirectMatchProtectionOperator on a Spark connection (issue 18): the hand-counted tables of
tests/engine/test_direct_match.py as Parquet, the release shuffled, compared by a classic
``spark`` connection and over Spark Connect. The XCom report equals the one the operator
gives on the same tables as files (the pandas path) and holds the hand counts; a breach fails;
what Spark cannot align is refused before any reading.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reident_airflow.operators.direct_match import DirectMatchProtectionOperator
from reident_airflow.outcomes import ReidentConfigurationError, ReidentificationBreach
from tests.engine.test_direct_match import MIXED_AVATAR, MIXED_EXPECTED, MIXED_ORIGINAL
from tests.operators._fakes import PushedTI, make_operator


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("spark-dm")
    original, avatar = directory / "original.parquet", directory / "avatar.parquet"
    MIXED_ORIGINAL.to_parquet(original, index=False)
    MIXED_AVATAR.sample(frac=1, random_state=5).to_parquet(avatar, index=False)
    return original, avatar


def _operator(conn_id: str | None, tables: tuple[Path, Path], **kwargs: Any) -> Any:
    return make_operator(
        DirectMatchProtectionOperator,
        conn_id=conn_id,
        original_path=str(tables[0]),
        avatar_path=str(tables[1]),
        **kwargs,
    )


@pytest.mark.parametrize("connection", ["spark_conn", "connect_conn"])
def test_equals_the_file_path_and_the_hand_counts(
    request: pytest.FixtureRequest, connection: str, tables: tuple[Path, Path]
) -> None:
    conn_id = request.getfixturevalue(connection)
    on_files = _operator(None, tables, key="id", target=70, on_breach="warn")
    want = on_files.execute({"ti": PushedTI()})
    ti = PushedTI()
    got = _operator(conn_id, tables, key="id", target=70, on_breach="warn").execute({"ti": ti})
    assert got == want == ti.pushed["return_value"]
    counted = {c["column"]: c for c in got["columns"]}
    assert set(counted) == set(MIXED_EXPECTED) - {"id"}  # the key is not scored
    for column, (protection, matches, distinct) in MIXED_EXPECTED.items():
        if column == "id":
            continue
        assert counted[column]["protection"] == pytest.approx(protection)
        assert (counted[column]["matches"], counted[column]["distinct_avatar_values"]) == (
            matches,
            distinct,
        )


def test_breach_fails(spark_conn: str, tables: tuple[Path, Path]) -> None:
    with pytest.raises(ReidentificationBreach) as info:
        _operator(spark_conn, tables, key="id", target=70).execute({"ti": PushedTI()})
    assert info.value.check == "direct_match"


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({}, "aligned by a key column"),
        ({"key": "id", "avatar_conn_id": "warehouse"}, "avatar_conn_id must be it"),
    ],
)
def test_refused_before_reading(
    spark_conn: str, tables: tuple[Path, Path], kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(ReidentConfigurationError, match=named):
        _operator(spark_conn, tables, **kwargs).execute({"ti": PushedTI()})
