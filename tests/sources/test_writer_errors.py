"""Table writes that fail or are interrupted (issue 16).

- A failing INSERT (value too long, wrong type, CHECK or UNIQUE constraint) on PostgreSQL and
  MariaDB raises :class:`TableWriteError`: class name, table, counts and the database's error
  code, never a statement parameter or a value -- a marker planted in every column appears in
  no exception text (str, repr, args, chained causes, the formatted traceback).
- SIGTERM, SIGINT and kill -9 in the middle of a write (a subprocess that signals itself after
  a few chunks): the previous table stays, no staging table is left (after kill -9: the next
  write drops it).
"""

from __future__ import annotations

import subprocess
import sys
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.sources.publish import is_staging_of
from reident_airflow.sources.writers import (
    TableWriteError,
    read_sql_frame,
    write_table_atomic,
)
from tests.conftest import require_server

MARKER = "MRK7f3a9c"


class _Spec(sa.types.UserDefinedType[str]):
    """A column type given as SQL text (a constraint the writer's own types cannot say)."""

    cache_ok = True

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def get_col_spec(self, **kw: Any) -> str:
        return self.spec


@pytest.fixture(params=["postgresql", "mariadb"])
def server(request: pytest.FixtureRequest) -> Iterator[sa.Engine]:
    engine = sa.create_engine(require_server(request.param))
    yield engine
    engine.dispose()


@pytest.fixture
def target(server: sa.Engine) -> Iterator[str]:
    name = f"rel_{uuid.uuid4().hex[:8]}"
    yield name
    with server.begin() as conn:
        for n in sa.inspect(conn).get_table_names():
            if n.startswith(name):  # the table and any staging table of it
                sa.Table(n, sa.MetaData()).drop(conn)


def _staging(engine: sa.Engine, target: str) -> set[str]:
    """The staging tables of ``target`` in the database."""
    return {t for t in sa.inspect(engine).get_table_names() if is_staging_of(engine, t, target)}


def _texts(exc: BaseException) -> str:
    seen: list[str] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None:
            continue
        seen += [str(e), repr(e), repr(e.args), repr(vars(e))]
        todo += [e.__cause__, e.__context__]
    seen.append("".join(traceback.format_exception(exc)))
    return "\n".join(seen)


def _marked(rows: int = 20) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": [f"{MARKER}-name-{i}-{'x' * 40}" for i in range(rows)],
            "note": [f"{MARKER} note {i}" for i in range(rows)],
            "flag": [f"{MARKER}" for _ in range(rows)],
        }
    )


CASES: dict[str, tuple[dict[str, Any], set[str], set[str]]] = {
    # name: column types, PostgreSQL SQLSTATEs, MySQL/MariaDB errnos
    "too_long": ({"name": sa.String(12)}, {"22001"}, {"1406"}),
    "wrong_type": ({"note": sa.Integer()}, {"22P02"}, {"1366"}),
    "check": (
        {"flag": _Spec("VARCHAR(64) CHECK (length(flag) < 5)")},
        {"23514"},
        {"4025", "3819"},
    ),
    "unique": ({"flag": _Spec("VARCHAR(64) UNIQUE")}, {"23505"}, {"1062"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_failing_insert_names_no_value(server: sa.Engine, target: str, case: str) -> None:
    types, pg_codes, my_codes = CASES[case]
    previous = pd.DataFrame({"name": ["old"], "note": ["old"], "flag": ["old"]})
    write_table_atomic(server, previous, target)
    with pytest.raises(TableWriteError) as info:
        write_table_atomic(server, _marked(), target, column_types=types, chunk_rows=10)
    error = info.value
    text = _texts(error)
    assert MARKER not in text
    assert error.__cause__ is None and error.__context__ is None
    assert error.table == target and target in str(error)
    assert error.rows_total == 20 and error.rows_written == 0
    assert error.deterministic
    if server.dialect.name == "postgresql":
        assert error.code in {f"SQLSTATE {c}" for c in pg_codes}, text
    else:
        assert error.code in {f"MySQL error {c}" for c in my_codes}, text
    assert error.code is not None and error.code in str(error)
    frame, _ = read_sql_frame(server, table=target)
    assert frame["name"].tolist() == ["old"]
    assert _staging(server, target) == set()


def test_the_error_pickles(server: sa.Engine, target: str) -> None:
    import pickle

    with pytest.raises(TableWriteError) as info:
        write_table_atomic(server, _marked(), target, column_types={"name": sa.String(12)})
    copy = pickle.loads(pickle.dumps(info.value))
    assert str(copy) == str(info.value) and copy.code == info.value.code


# ----------------------------------------------------------------------------- interrupted
_SCRIPT = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import pandas as pd, sqlalchemy as sa
from reident_airflow.sources.writers import write_table_atomic
url, target, signum = sys.argv[1], sys.argv[2], int(sys.argv[3])
frame = pd.DataFrame({"age": ["new"] * 5000, "n": range(5000)})
def checkpoint(what, rows):
    if what == "chunk" and rows >= 2000:
        os.kill(os.getpid(), signum)
        time.sleep(10)
        print("not interrupted", flush=True)
write_table_atomic(sa.create_engine(url), frame, target, chunk_rows=1000, checkpoint=checkpoint)
print("written", flush=True)
"""


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def any_engine(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, sa.Engine, str]]:
    url = f"sqlite:///{tmp_path / 'w.db'}" if request.param == "sqlite" else None
    url = url or require_server(request.param)
    engine = sa.create_engine(url)
    name = f"rel_{uuid.uuid4().hex[:8]}"
    yield url, engine, name
    with engine.begin() as conn:
        for n in sa.inspect(conn).get_table_names():
            if n.startswith(name):  # the table and any staging table of it
                sa.Table(n, sa.MetaData()).drop(conn)
    engine.dispose()


@pytest.mark.parametrize("signum", [15, 2, 9])
def test_table_write_interrupted(any_engine: tuple[str, sa.Engine, str], signum: int) -> None:
    url, engine, target = any_engine
    write_table_atomic(engine, pd.DataFrame({"age": ["old"] * 3, "n": [1, 2, 3]}), target)
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, url, target, str(signum)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "not interrupted" not in proc.stdout and "written" not in proc.stdout
    frame, _ = read_sql_frame(engine, table=target)
    assert frame["age"].tolist() == ["old"] * 3
    if signum == 9:  # kill -9 cannot be caught: the staging table stays until the next write
        assert len(_staging(engine, target)) == 1
        write_table_atomic(engine, pd.DataFrame({"age": ["next"], "n": [0]}), target)
    assert _staging(engine, target) == set()
