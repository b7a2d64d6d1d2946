"""The release ledger (issue 28): a candidate compared with the ledger of a release counts what
it counts compared with the release itself.

The releases are the hand-worked cases of ``test_release_changes`` (arrivals only,
departures only, updates, duplicates, generalized, an empty difference, the suppressed class),
with their plain-Python :func:`reference`; here each previous release is written, its ledger
kept, and the candidate compared with both, on CSV, Parquet, SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.files import FileSource
from reident_airflow.sources.release_ledger import COLUMNS, sqlite_digest
from reident_airflow.sources.sql import SqlSource
from reident_airflow.sources.writers import (
    ledger_of_file,
    ledger_of_table,
    write_file_atomic,
    write_table_atomic,
)
from tests.conftest import require_server
from tests.sources.test_release_changes import (
    CASES,
    FLOAT_CANDIDATE,
    FLOAT_PREVIOUS,
    HOSTILE_CANDIDATE,
    HOSTILE_PREVIOUS,
    Made,
    Release,
    _without_nan,
    made,
    reference,
    summary,
)

__all__ = ["made"]

BACKENDS = [
    "csv",
    "parquet",
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


def _ledger_of(source: Any, qis: Sequence[str]) -> Any:
    """The ledger of a release as written by ``made``, kept beside it, as a source."""
    if isinstance(source, FileSource):
        return FileSource(ledger_of_file(source.path, qis))
    where = source.located()
    name = ledger_of_table(source._bound(), where["table"], qis)
    return SqlSource(source._bound(), table=name)


def _both(make: Made, previous: Release, candidate: Release, qis: Sequence[str]) -> tuple[Any, Any]:
    """The candidate compared with the previous release, and with its ledger."""
    with (
        make(candidate, "candidate") as new,
        make(previous, "previous") as old,
        _ledger_of(old, qis) as ledger,
    ):
        try:
            return summary(new.release_changes(old, qis)), summary(new.release_changes(ledger, qis))
        finally:
            if isinstance(ledger, SqlSource):
                with ledger._bound().begin() as conn:
                    conn.exec_driver_sql(f"DROP TABLE {ledger.located()['table']}")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_ledger_counts_what_the_release_counts(
    made: Callable[[str], Made], backend: str, case: str
) -> None:
    previous, candidate, qis = CASES[case]
    direct, through_ledger = _both(made(backend), previous, candidate, qis)
    assert direct == reference(previous, candidate, qis)
    assert through_ledger == direct


@pytest.mark.parametrize("qis", [("g",), ("g", "t")])
@pytest.mark.parametrize("backend", BACKENDS)
def test_case_spaces_and_normal_forms_stay_apart_in_the_ledger(
    made: Callable[..., Made], backend: str, qis: tuple[str, ...]
) -> None:
    # citext, NOCASE and MariaDB's default collation would merge them: the digests must not
    direct, through_ledger = _both(
        made(backend, hostile=True), HOSTILE_PREVIOUS, HOSTILE_CANDIDATE, qis
    )
    # 'A', 'a ' and NFD 'é' arrive, 'a' and NFC 'é' depart (test_release_changes)
    assert direct == reference(HOSTILE_PREVIOUS, HOSTILE_CANDIDATE, qis)
    assert through_ledger == direct


@pytest.mark.parametrize("backend", ["parquet", "sqlite", *BACKENDS[3:]])
def test_floats_in_the_ledger_compare_by_value(made: Callable[[str], Made], backend: str) -> None:
    previous, candidate = FLOAT_PREVIOUS, FLOAT_CANDIDATE
    if backend in ("sqlite", "mariadb"):
        previous = _without_nan(previous, as_missing=backend == "sqlite")
        candidate = _without_nan(candidate, as_missing=backend == "sqlite")
    direct, through_ledger = _both(made(backend), previous, candidate, ("g",))
    assert direct == reference(previous, candidate, ("g",))
    assert through_ledger == direct


# ------------------------------------------------------------------------- publishing
# PREVIOUS of test_release_changes, and a candidate: (F,100,cold) updated to asthma, one
# more (M,200,flu), one new (M,300,flu). By hand: arrivals (F,100) 1, (M,200) 1, (M,300) 1 ->
# three classes of one; departures (F,100) 1 -> one class of one; 5 previous, 7 records.
PUBLISHED = pd.DataFrame(
    [
        ("F", "100", "flu"),
        ("F", "100", "flu"),
        ("F", "100", "cold"),
        ("M", "200", "flu"),
        ("M", "200", "flu"),
    ],
    columns=["sex", "zip", "diagnosis"],
)
NEXT = pd.DataFrame(
    [
        ("F", "100", "flu"),
        ("F", "100", "flu"),
        ("F", "100", "asthma"),
        ("M", "200", "flu"),
        ("M", "200", "flu"),
        ("M", "200", "flu"),
        ("M", "300", "flu"),
    ],
    columns=["sex", "zip", "diagnosis"],
)
BY_HAND = (5, 7, ((1, 3),), ((1, 1),))


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_file_published_with_its_ledger(tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"release{suffix}"
    write_file_atomic(PUBLISHED, target, ledger=["sex", "zip"])
    ledger = Path(f"{target}.ledger.parquet")
    header = pq.read_table(ledger).to_pylist()[0]
    assert header["kind"] == 0
    assert json.loads(header["about"])["columns"] == ["sex", "zip", "diagnosis"]
    assert pq.read_table(ledger).num_rows == 1 + len(PUBLISHED)
    candidate = tmp_path / f"candidate{suffix}"
    write_file_atomic(NEXT, candidate)
    with FileSource(candidate) as new, FileSource(target) as old:
        assert summary(new.release_changes(old, ["sex", "zip"])) == BY_HAND
    target.unlink()  # the release is gone: the ledger answers the same
    with FileSource(candidate) as new, FileSource(ledger) as kept:
        assert summary(new.release_changes(kept, ["sex", "zip"])) == BY_HAND


def test_a_file_published_without_a_ledger_writes_none(tmp_path: Path) -> None:
    target = tmp_path / "release.csv"
    write_file_atomic(PUBLISHED, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.csv"]


@pytest.fixture
def engine_of(tmp_path: Path) -> Iterator[Callable[[str], sa.Engine]]:
    engines: list[sa.Engine] = []

    def make(backend: str) -> sa.Engine:
        url = f"sqlite:///{tmp_path / 'db.sqlite'}" if backend == "sqlite" else None
        engine = sa.create_engine(url or require_server(backend))
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.dispose()


DATABASES = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


@pytest.mark.parametrize("backend", DATABASES)
def test_a_table_published_with_its_ledger(
    engine_of: Callable[[str], sa.Engine], backend: str
) -> None:
    engine = engine_of(backend)
    target = f"i28_ledger_{uuid.uuid4().hex[:10]}"
    names = [target, f"{target}__ledger", f"{target}_next"]
    try:
        write_table_atomic(engine, PUBLISHED, target, ledger=["sex", "zip"])
        write_table_atomic(engine, NEXT, names[2])
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            kept = conn.execute(sa.text(f"SELECT count(*) FROM {names[1]}")).scalar_one()
        assert {target, names[1]} <= tables
        assert not any(t.startswith(f"{target}__ledger__") for t in tables)  # no staging left
        assert kept == 1 + len(PUBLISHED)
        new = SqlSource(engine, table=names[2])
        assert summary(new.release_changes(SqlSource(engine, table=target), ["sex", "zip"])) == (
            BY_HAND
        )
        # a second publish replaces the ledger with the release, in the same step
        write_table_atomic(engine, NEXT, target, ledger=["sex", "zip"])
        ledger = SqlSource(engine, table=names[1])
        assert summary(new.release_changes(ledger, ["sex", "zip"])) == (7, 7, None, None)
    finally:
        with engine.begin() as conn:
            for name in names:
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)


# ------------------------------------------------------------------------------ refusals
def test_a_ledger_refuses_other_qis_and_other_columns(tmp_path: Path) -> None:
    target = tmp_path / "release.parquet"
    write_file_atomic(PUBLISHED, target, ledger=["sex", "zip"])
    ledger = FileSource(Path(f"{target}.ledger.parquet"))
    candidate = tmp_path / "candidate.parquet"
    write_file_atomic(NEXT, candidate)
    with FileSource(candidate) as new:
        with pytest.raises(InvalidInputError, match="quasi-identifiers 'sex', 'zip'"):
            new.release_changes(ledger, ["sex"])
        with pytest.raises(InvalidInputError, match="leaves out 'diagnosis'"):
            new.release_changes(ledger, ["sex", "zip"], columns=["sex", "zip"])
    fewer = tmp_path / "fewer.parquet"
    write_file_atomic(NEXT[["sex", "zip"]], fewer)
    with FileSource(fewer) as new, pytest.raises(InvalidInputError, match="leaves out"):
        new.release_changes(ledger, ["sex", "zip"])
    typed = tmp_path / "typed.parquet"
    write_file_atomic(NEXT.assign(zip=NEXT["zip"].astype(int)), typed)
    with FileSource(typed) as new, pytest.raises(InvalidInputError, match="column 'zip'"):
        new.release_changes(ledger, ["sex", "zip"])


def test_a_ledger_for_qis_the_release_lacks_is_refused_before_publishing(
    tmp_path: Path,
) -> None:
    target = tmp_path / "release.csv"
    with pytest.raises(InvalidInputError, match="'age'"):
        write_file_atomic(PUBLISHED, target, ledger=["age"])
    assert not target.exists()


def test_the_ledger_holds_digests_only(tmp_path: Path) -> None:
    target = tmp_path / "release.parquet"
    write_file_atomic(PUBLISHED, target, ledger=["sex", "zip"])
    rows = pq.read_table(Path(f"{target}.ledger.parquet")).to_pylist()
    assert tuple(rows[0]) == COLUMNS
    for row in rows[1:]:
        assert row["about"] is None
        assert len(row["row_digest"]) == len(row["class_digest"]) == 64
        int(row["row_digest"], 16)
        int(row["class_digest"], 16)
    # two rows alike digest alike; the header names columns, never a value
    assert rows[1]["row_digest"] == rows[2]["row_digest"]
    assert "flu" not in rows[0]["about"] and "100" not in rows[0]["about"]


def test_the_sqlite_digest_keeps_kinds_apart() -> None:
    # SQLite groups 1 and 1.0 as one, -0.0 with 0.0, but '1' (text) and x'31' (bytes) apart
    assert sqlite_digest(1) == sqlite_digest(1.0)
    assert sqlite_digest(-0.0) == sqlite_digest(0.0)
    assert len({sqlite_digest(1), sqlite_digest("1"), sqlite_digest(b"1")}) == 3
    assert sqlite_digest(None) != sqlite_digest("NULL")
    # the lengths make the concatenation unambiguous
    assert sqlite_digest("ab", "c") != sqlite_digest("a", "bc")


@pytest.mark.db
@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_decimals_of_two_scales_are_one_value_in_the_ledger(backend: str) -> None:
    # 1.50 as DECIMAL(10,2) and 1.500 as DECIMAL(10,3) are one value to GROUP BY: by hand,
    # (a, 1.5) is held by both releases (no change); (a, 2.25) arrives, (a, 3.10) departs
    engine = sa.create_engine(require_server(backend))
    prefix = f"i28_ledger_{uuid.uuid4().hex[:8]}"
    old, new = f"{prefix}_old", f"{prefix}_new"
    try:
        with engine.begin() as conn:
            for name, scale, rows in (
                (old, 2, "('a', 1.50), ('a', 3.10)"),
                (new, 3, "('a', 1.500), ('a', 2.250)"),
            ):
                conn.exec_driver_sql(f"CREATE TABLE {name} (g VARCHAR(8), x DECIMAL(10, {scale}))")
                conn.exec_driver_sql(f"INSERT INTO {name} VALUES {rows}")
        ledger = ledger_of_table(engine, old, ["g"])
        candidate = SqlSource(engine, table=new)
        direct = summary(candidate.release_changes(SqlSource(engine, table=old), ["g"]))
        through_ledger = summary(candidate.release_changes(SqlSource(engine, table=ledger), ["g"]))
        assert direct == (2, 2, ((1, 1),), ((1, 1),))
        assert through_ledger == direct
    finally:
        with engine.begin() as conn:
            for name in (old, new, f"{old}__ledger"):
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()
