"""`reident direct-match`: hand-computed cases, the three paths (CSV, pandas, database
pushdown) agreeing on Adult, bad input (exit 2, one line) and hostile identifiers.

Expected protections are hand computations of ``P_c = 100 * (1 - m_c * u_c / n^2)``
(docs/metrics.md §8) with ``m_c`` and ``u_c`` counted in the comment next to them.
"""

from __future__ import annotations

import csv as csv_module
import io
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from reident_airflow.cli import main
from reident_airflow.engine.direct_match import direct_match_protection, direct_match_report
from reident_airflow.summary import direct_match_summary
from tests.cli._cli import one_line_error
from tests.conftest import oracle_data, require_server


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["direct-match", *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def run_json(*argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(*argv, "--json", "-")
    assert code in (0, 1), err
    report: dict[str, Any] = json.loads(out)
    return code, report


def csv(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def protections(report: dict[str, Any]) -> dict[str, float]:
    return {c["column"]: c["protection"] for c in report["columns"]}


# --- hand-computed cases -------------------------------------------------------------------


@pytest.fixture
def hand(tmp_path: Path) -> tuple[str, str]:
    original = csv(
        tmp_path / "original.csv",
        "id,const,num,miss\n1,k,1,\n2,k,2,x\n3,k,3,\n4,k,4,y\n",
    )
    avatar = csv(
        tmp_path / "avatar.csv",
        "id,const,num,miss\n1,k,1.0,\n2,k,2.0,x\n3,k,3,z\n4,k,5,\n",
    )
    return original, avatar


def test_hand_computed_columns(hand: tuple[str, str]) -> None:
    code, report = run_json(*hand)
    assert code == 1
    assert protections(report) == {
        "id": 0.0,  # leaked identifier: m = u = n = 4 -> 100 * (1 - 16/16)
        "num": 25.0,  # 1 = 1.0, 2 = 2.0, 3 = 3, 4 != 5: m = 3, u = 4 -> 100 * (1 - 12/16)
        "miss": 62.5,  # missing = missing, x = x: m = 2; u = {missing, x, z} = 3 -> 1 - 6/16
        "const": 75.0,  # constant: m = 4, u = 1 -> 100 * (1 - 4/16)
    }
    assert [c["column"] for c in report["columns"]] == ["id", "num", "miss", "const"]
    assert report["protection"] == 0.0 and report["records"] == 4
    assert report["below_target"] == ["id", "num"] and report["passed"] is False
    assert report["breaches"] == [
        {"metric": "direct_match.protection", "observed": 0.0, "limit": 50.0}
    ]
    assert report["schema"] == "reident.direct_match/v1" and report["key"] is None


def test_key_is_not_scored_and_aligns_shuffled_rows(tmp_path: Path, hand: tuple[str, str]) -> None:
    shuffled = csv(
        tmp_path / "shuffled.csv",
        "const,miss,id,num\nk,,4,5\nk,z,3,3\nk,,1,1.0\nk,x,2,2.0\n",
    )
    code, report = run_json(hand[0], shuffled, "--key", "id")
    assert code == 1  # num: 25 < 50
    assert protections(report) == {"num": 25.0, "miss": 62.5, "const": 75.0}
    assert report["key"] == "id"
    # the same counts as the row-aligned file, with the key out
    _, positional = run_json(*hand, "--columns", "const,num,miss")
    assert positional["columns"] == report["columns"]


def test_half_matching_distinct_column_is_exactly_at_the_target(tmp_path: Path) -> None:
    # n = 10 distinct values, 5 released unchanged: m = 5, u = 10 -> 100 * (1 - 50/100) = 50
    original = csv(tmp_path / "o.csv", "v\n" + "".join(f"{i}\n" for i in range(10)))
    avatar = csv(
        tmp_path / "a.csv", "v\n" + "".join(f"{i if i < 5 else i + 10}\n" for i in range(10))
    )
    code, report = run_json(original, avatar)
    assert report["protection"] == 50.0 and code == 0  # at the target passes
    code, report = run_json(original, avatar, "--target", "50.5")
    assert code == 1 and report["below_target"] == ["v"]
    code, report = run_json(original, avatar, "--target", "0")
    assert code == 0 and report["target"] == 0.0


def test_semicolon_separator_and_parquet(tmp_path: Path) -> None:
    original = csv(tmp_path / "o.csv", "a;b\n1;x\n2;y\n")
    frame = pd.DataFrame({"a": [1.0, 3.0], "b": ["x", "y"]})
    parquet = tmp_path / "a.parquet"
    frame.to_parquet(parquet)
    code, report = run_json(original, str(parquet), "--sep", ";")
    # a: 1 = 1.0, 2 != 3: m = 1, u = 2 -> 100 * (1 - 2/4) = 50; b: m = u = 2 -> 0
    assert code == 1 and protections(report) == {"b": 0.0, "a": 50.0}


def test_text_summary_and_json_file(tmp_path: Path, hand: tuple[str, str]) -> None:
    extra = csv(tmp_path / "extra.csv", "id,const,num,added\n1,k,1,a\n2,k,2,a\n3,k,3,a\n4,k,4,a\n")
    out = tmp_path / "report.json"
    code, text, err = run(hand[0], extra, "--json", str(out))
    assert code == 1 and err == ""
    report = json.loads(out.read_text())
    assert report["only_in_original"] == ["miss"] and report["only_in_avatar"] == ["added"]
    assert text == direct_match_summary(report)
    assert "Column direct match protection: BELOW TARGET" in text
    assert "protection : 0.0000 (target 50)" in text
    assert "Below target (2): id, num" in text
    assert "Only in the original table, not compared: miss" in text
    assert "Only in the avatar table, not compared: added" in text
    lines = text.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("Columns")))
    assert lines[header + 2].split() == ["0.0000", "4", "4", "id"]


def test_summary_lists_the_ten_least_protected_columns(tmp_path: Path) -> None:
    n = 20
    cols = [f"c{i:02d}" for i in range(12)]
    rows = [",".join(str(r * (i + 1)) for i in range(12)) for r in range(n)]
    path = csv(tmp_path / "t.csv", ",".join(cols) + "\n" + "\n".join(rows) + "\n")
    code, text, _ = run(path, path)
    assert code == 1
    assert "(10 of 12)" in text
    rows_shown = [r for r in text.splitlines() if len(r.split()) == 4 and r.split()[-1] in cols]
    assert len(rows_shown) == 10
    assert "Below target (12): " + ", ".join(cols) in text  # every column is listed there


def test_json_to_stdout_is_only_json(hand: tuple[str, str]) -> None:
    code, out, _ = run(*hand, "--json", "-")
    assert code == 1
    json.loads(out)  # nothing else on stdout


# --- the three paths agree on Adult ---------------------------------------------------------


def adult_pair() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Adult with an id, and an "avatar" derived from it deterministically.

    sex, race and salary-class are kept; age and education are shuffled between records;
    occupation is shuffled for half the records; native-country is dropped; a leaked record
    code is kept verbatim; the rows are released in another order, with a new column.
    """
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    frame.insert(0, "id", np.arange(1, len(frame) + 1))
    frame["age"] = frame["age"].astype(int)
    frame["code"] = "R" + frame["id"].astype(str).str.zfill(6)
    rng = np.random.default_rng(20240611)
    avatar = frame.drop(columns=["native-country"]).copy()
    for column in ("age", "education"):
        avatar[column] = avatar[column].to_numpy()[rng.permutation(len(avatar))]
    half = rng.random(len(avatar)) < 0.5
    occupation = avatar["occupation"].to_numpy().copy()
    occupation[half] = occupation[half][rng.permutation(int(half.sum()))]
    avatar["occupation"] = occupation
    avatar["released"] = "2024"
    avatar = avatar.iloc[rng.permutation(len(avatar))].reset_index(drop=True)
    return frame, avatar


def _copy(table: Any, conn: Any, keys: list[str], rows: Iterable[tuple[Any, ...]]) -> None:
    """pandas ``to_sql`` method for PostgreSQL: ``COPY ... FROM STDIN`` (names quoted)."""
    buffer = io.StringIO()
    csv_module.writer(buffer).writerows(rows)
    buffer.seek(0)
    quote = conn.dialect.identifier_preparer.quote
    columns = ", ".join(quote(k) for k in keys)
    with conn.connection.cursor() as cursor:
        cursor.copy_expert(f"COPY {quote(table.name)} ({columns}) FROM STDIN WITH CSV", buffer)


def to_database(frame: pd.DataFrame, name: str, engine: sa.Engine) -> None:
    """Write a test table (fast on PostgreSQL: empty text in the frames here is never used)."""
    method = _copy if engine.dialect.name == "postgresql" else None
    frame.to_sql(name, engine, index=False, chunksize=10_000, method=method)


@pytest.fixture(scope="module")
def adult() -> tuple[pd.DataFrame, pd.DataFrame]:
    return adult_pair()


@pytest.fixture(scope="module")
def adult_csvs(
    adult: tuple[pd.DataFrame, pd.DataFrame], tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("adult")
    original, avatar = adult
    original.to_csv(folder / "original.csv", sep=";", index=False)
    avatar.to_csv(folder / "avatar.csv", sep=";", index=False)
    return str(folder / "original.csv"), str(folder / "avatar.csv")


@pytest.fixture(scope="module", params=["postgresql", "mariadb"])
def adult_db(
    request: pytest.FixtureRequest, adult: tuple[pd.DataFrame, pd.DataFrame]
) -> Iterator[tuple[str, str, str]]:
    url = require_server(request.param)
    engine = sa.create_engine(url)
    names = (f"dm_o_{uuid.uuid4().hex[:8]}", f"dm_a_{uuid.uuid4().hex[:8]}")
    for name, frame in zip(names, adult, strict=True):
        to_database(frame, name, engine)
    try:
        yield url, *names
    finally:
        with engine.begin() as conn:
            for name in names:
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


def test_adult_csv_pandas_and_database_paths_give_the_same_json(
    adult: tuple[pd.DataFrame, pd.DataFrame],
    adult_csvs: tuple[str, str],
    adult_db: tuple[str, str, str],
) -> None:
    code, from_csv = run_json(*adult_csvs, "--sep", ";", "--key", "id")
    assert code == 1
    from_pandas = direct_match_report(direct_match_protection(*adult, key="id"))
    url, original, avatar = adult_db
    tables = ("--original-table", original, "--avatar-table", avatar, "--key", "id")
    code, pushed_down = run_json(url, url, *tables)
    assert code == 1
    assert from_csv == from_pandas == pushed_down
    by = {c["column"]: c for c in pushed_down["columns"]}
    n = 30162
    assert pushed_down["records"] == n
    assert by["code"]["protection"] == 0.0  # the leaked record code
    assert by["sex"]["matches"] == n and by["sex"]["distinct_avatar_values"] == 2
    assert by["age"]["matches"] < n // 10  # shuffled
    assert pushed_down["below_target"] == ["code"]
    assert pushed_down["only_in_original"] == ["native-country"]
    assert pushed_down["only_in_avatar"] == ["released"]
    if url.startswith("mysql"):
        return  # the pandas reads below are the same code on every database
    # the database path that reads both tables into pandas (two URLs of one server that differ)
    other = sa.make_url(url).set(query={"connect_timeout": "10"}).render_as_string(False)
    code, read = run_json(url, other, *tables)
    assert code == 1 and read == pushed_down
    # and a file against a table
    code, mixed = run_json(
        adult_csvs[0], url, "--sep", ";", "--avatar-table", avatar, "--key", "id"
    )
    assert mixed == pushed_down


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    else:
        url = require_server(request.param)
    suffix = uuid.uuid4().hex[:8]
    engine = sa.create_engine(url)
    try:
        yield url, suffix
    finally:
        with engine.begin() as conn:
            for name in (f"types_o_{suffix}", f"types_a_{suffix}"):
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


def test_typed_columns_in_the_database(database: tuple[str, str]) -> None:
    """Types differ between the tables: the database compares values as the engine does,
    except MySQL/MariaDB, where a number and text are compared as text (documented)."""
    url, suffix = database
    original = pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "n": pd.array([1, 2, 3, None], dtype="Int64"),
            "t": ["Male", "male", "a", "b"],
            "f": [1.0, 2.5, None, 4.0],
        }
    )
    avatar = pd.DataFrame(
        {
            "id": [4, 3, 2, 1],
            "n": [None, "x", "2", "1.0"],  # text
            "t": ["b", "a ", "Male", "Male"],
            "f": pd.array([4, None, 2, 1], dtype="Int64"),
        }
    )
    engine = sa.create_engine(url)
    original.to_sql(f"types_o_{suffix}", engine, index=False)
    avatar.to_sql(f"types_a_{suffix}", engine, index=False)
    engine.dispose()
    tables = ("--original-table", f"types_o_{suffix}", "--avatar-table", f"types_a_{suffix}")
    _, report = run_json(url, url, *tables, "--key", "id")
    expected = direct_match_report(direct_match_protection(original, avatar, key="id"))
    # n: 1 = '1.0', 2 = '2', 3 != 'x', missing = missing: m = 3, u = 4 -> 100 * (1 - 12/16)
    # t: Male = Male, male != Male, a != 'a ', b = b: m = 2, u = 3 -> 100 * (1 - 6/16)
    # f: 1.0 = 1, 2.5 != 2, missing = missing, 4.0 = 4: m = 3, u = 4 -> 25
    assert protections(expected) == {"n": 25.0, "f": 25.0, "t": 62.5}
    if url.startswith("mysql"):
        # '1' != '1.0' as text: m = 2 -> 100 * (1 - 8/16); the rest as the engine
        assert protections(report) == {"n": 50.0, "f": 25.0, "t": 62.5}
    else:
        assert report == expected


def test_primary_key_and_a_text_key_against_an_integer_key() -> None:
    """A declared primary key skips the uniqueness count; keys of different types align by
    value (PostgreSQL), as in the engine."""
    url = require_server("postgresql")
    engine = sa.create_engine(url)
    meta = sa.MetaData()
    suffix = uuid.uuid4().hex[:8]
    original = sa.Table(
        f"pk_o_{suffix}",
        meta,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("v", sa.Text),
    )
    avatar = sa.Table(f"pk_a_{suffix}", meta, sa.Column("id", sa.Text), sa.Column("v", sa.Text))
    try:
        meta.create_all(engine)
        with engine.begin() as conn:
            conn.execute(sa.insert(original), [{"id": i, "v": f"v{i % 3}"} for i in range(1, 7)])
            rows = [
                {"id": f"{i}.0" if i % 2 else str(i), "v": f"v{i % 2}"} for i in range(6, 0, -1)
            ]
            conn.execute(sa.insert(avatar), rows)
        tables = ("--original-table", original.name, "--avatar-table", avatar.name)
        _, report = run_json(url, url, *tables, "--key", "id")
        frames = [pd.read_sql_table(t.name, engine) for t in (original, avatar)]
        expected = direct_match_report(direct_match_protection(*frames, key="id"))
        # v: original v1 v2 v0 v1 v2 v0, avatar v1 v0 v1 v0 v1 v0 (ids 1..6): m = 2 (ids 1
        # and 6), u = 2 -> 100 * (1 - 4/36)
        assert report == expected
        assert report["columns"][0]["matches"] == 2
        assert report["protection"] == pytest.approx(100 * (1 - 4 / 36))
    finally:
        meta.drop_all(engine)
        engine.dispose()


# --- bad input: exit 2, one line, the same message from files and databases ----------------

Tables = tuple[pd.DataFrame, pd.DataFrame]
_BASE = pd.DataFrame({"id": [1, 2, 3], "a": ["x", "y", "z"], "b": [1, 2, 3]})

BAD: dict[str, tuple[Tables, str]] = {
    "row counts": (
        (_BASE, _BASE.iloc[:2]),
        "the tables have different numbers of records: the original table has 3, "
        "the avatar table has 2",
    ),
    "key missing from the original": (
        (_BASE.drop(columns="id"), _BASE),
        "key column 'id' is missing from the original table",
    ),
    "key missing from the avatar": (
        (_BASE, _BASE.rename(columns={"id": "ident"})),
        "key column 'id' is missing from the avatar table",
    ),
    "key not unique in the original": (
        (_BASE.assign(id=[1, 1, 3]), _BASE),
        "key column 'id' is not unique in the original table: 1 key values occur more than "
        "once, on 2 records",
    ),
    "key not unique in the avatar": (
        (_BASE, _BASE.assign(id=[3, 3, 3])),
        "key column 'id' is not unique in the avatar table: 1 key values occur more than "
        "once, on 3 records",
    ),
    "keys that do not match": (
        (_BASE, _BASE.assign(id=[1, 2, 4])),
        "key column 'id' does not match between the tables: 1 key values of the original "
        "table are not in the avatar table, and 1 key values of the avatar table are not in "
        "the original table",
    ),
    "no common column": (
        (_BASE, _BASE.rename(columns={"a": "c", "b": "d"})),
        "no column to compare: the tables have no column in common besides the key 'id'",
    ),
    "empty original": ((_BASE.iloc[:0], _BASE), "the original table has no records"),
    "empty avatar": ((_BASE, _BASE.iloc[:0]), "the avatar table has no records"),
}


def _files(tmp_path: Path, tables: Tables) -> list[str]:
    paths = [tmp_path / "original.csv", tmp_path / "avatar.csv"]
    for path, frame in zip(paths, tables, strict=True):
        frame.to_csv(path, index=False)
    return [str(p) for p in paths]


@pytest.fixture(params=["csv", "sqlite", "postgresql", "mariadb"])
def materialize(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[Tables], list[str]]]:
    """Turn (original, avatar) into the CLI arguments of one backend."""
    if request.param == "csv":
        yield lambda tables: _files(tmp_path, tables)
        return
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    else:
        url = require_server(request.param)
    engine = sa.create_engine(url)
    created: list[str] = []

    def make(tables: Tables) -> list[str]:
        names = [f"bad_o_{uuid.uuid4().hex[:8]}", f"bad_a_{uuid.uuid4().hex[:8]}"]
        for name, frame in zip(names, tables, strict=True):
            frame.to_sql(name, engine, index=False)
            created.append(name)
        return [url, url, "--original-table", names[0], "--avatar-table", names[1]]

    try:
        yield make
    finally:
        with engine.begin() as conn:
            for name in created:
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exit_2_with_the_same_message_everywhere(
    materialize: Callable[[Tables], list[str]], case: str
) -> None:
    tables, message = BAD[case]
    args = materialize(tables)
    line = one_line_error(*run(*args, "--key", "id")[::2])
    assert line == f"reident: error: {message}"


def test_positional_bad_input(tmp_path: Path) -> None:
    files = _files(tmp_path, (_BASE, _BASE.iloc[:1]))
    line = one_line_error(*run(*files)[::2])
    assert "different numbers of records" in line
    files = _files(tmp_path, (_BASE[["a"]], _BASE[["b"]]))
    line = one_line_error(*run(*files)[::2])
    assert line.endswith("no column to compare: the tables have no column in common")
    header_only = csv(tmp_path / "header.csv", "id,a\n")
    line = one_line_error(*run(header_only, files[0])[::2])
    assert "original table has no records" in line
    nothing = csv(tmp_path / "nothing.csv", "")
    line = one_line_error(*run(files[0], nothing)[::2])
    assert "empty" in line


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "150"], "--target: must be between 0 and 100"),
        (["--target", "abc"], "--target: must be a number"),
        (["--target", "nan"], "--target: must be between 0 and 100"),
        (["--sep", ";;"], "--sep: must be a single character"),
        (["--columns", "a,,b"], "--columns"),
        (["--columns", "a,nope"], "columns missing from the original table: ['nope']"),
        (["--key", "a", "--columns", "a"], "the key column 'a' cannot also be scored"),
        (["--original-table", "t"], "--original-table applies only when ORIGINAL is a database"),
        (["--schema", "s"], "--schema and --avatar-schema apply only to database URLs"),
    ],
)
def test_bad_arguments(tmp_path: Path, extra: list[str], message: str) -> None:
    files = _files(tmp_path, (_BASE, _BASE))
    line = one_line_error(*run(*files, *extra)[::2])
    assert message in line


def test_missing_file_and_database_without_table_or_key(tmp_path: Path) -> None:
    files = _files(tmp_path, (_BASE, _BASE))
    line = one_line_error(*run(files[0], str(tmp_path / "nope.csv"))[::2])
    assert "nope.csv: no such file" in line
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    line = one_line_error(*run(url, files[1], "--key", "id")[::2])
    assert "ORIGINAL is a database URL: give --original-table NAME" in line
    line = one_line_error(*run(url, url, "--original-table", "o", "--avatar-table", "a")[::2])
    assert "a database table has no row order" in line and "--key" in line
    line = one_line_error(
        *run("notadriver://x/y", files[1], "--original-table", "t", "--key", "id")[::2]
    )
    assert "not a usable database URL" in line


# --- hostile identifiers: fail clearly, execute nothing ------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def victim(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    else:
        url = require_server("postgresql")
    engine = sa.create_engine(url)
    suffix = uuid.uuid4().hex[:8]
    staged, victim_table = f"staged_{suffix}", f"x_{suffix}"
    _BASE.to_sql(staged, engine, index=False)
    pd.DataFrame({"keep": [1]}).to_sql(victim_table, engine, index=False)
    try:
        yield url, staged, victim_table
    finally:
        with engine.begin() as conn:
            for name in (staged, victim_table):
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        engine.dispose()


@pytest.mark.parametrize(
    ("hostile", "message"),
    [
        ("table", "does not exist"),
        ("quoted_table", "does not exist"),
        ("key", "is missing from the original table"),
        ("columns", "columns missing from the original table"),
        ("schema", "does not exist"),
    ],
)
def test_hostile_identifiers_fail_clearly_and_execute_nothing(
    victim: tuple[str, str, str], hostile: str, message: str
) -> None:
    url, staged, victim_table = victim
    drop = f"t; DROP TABLE {victim_table}"
    table, key, extra = staged, "id", []
    if hostile == "table":
        table = drop
    elif hostile == "quoted_table":
        table = f'{staged}"; DROP TABLE {victim_table}; --'
    elif hostile == "key":
        key = f"id; DROP TABLE {victim_table}"
    elif hostile == "columns":
        extra = ["--columns", f"a; DROP TABLE {victim_table}"]
    else:
        extra = ["--schema", f"public; DROP TABLE {victim_table}"]
    args = [url, url, "--original-table", table, "--avatar-table", staged, "--key", key, *extra]
    line = one_line_error(*run(*args)[::2])
    assert message in line
    engine = sa.create_engine(url)
    try:
        assert {staged, victim_table} <= set(sa.inspect(engine).get_table_names())
        with engine.connect() as conn:
            assert (
                conn.execute(sa.select(sa.func.count()).select_from(sa.table(staged))).scalar() == 3
            )
    finally:
        engine.dispose()


def test_report_is_written(tmp_path: Path) -> None:
    """`--report` writes the HTML report of the comparison (aggregates only)."""
    original = tmp_path / "o.csv"
    avatar = tmp_path / "a.csv"
    original.write_text("id,secret\n1,alpha\n2,beta\n3,gamma\n4,delta\n", encoding="utf-8")
    avatar.write_text("id,secret\n1,alpha\n2,beta\n3,zeta\n4,eta\n", encoding="utf-8")
    report = tmp_path / "dm.html"
    code = main(
        ["direct-match", str(original), str(avatar), "--report", str(report)],
        out=io.StringIO(),
        err=io.StringIO(),
    )
    assert code == 1  # id leaks: protection 0 < 50
    html = report.read_text(encoding="utf-8")
    assert "Direct" in html and "BREACHED" in html
    for value in ("alpha", "beta", "zeta"):
        assert value not in html
