"""The fingerprint of an input: a real file's bytes, real PostgreSQL, MariaDB and SQLite.

Hashes are checked against ``hashlib`` over the whole content (an independent computation of
the streamed, chunked digest) and one published test vector (FIPS 180-2: SHA-256("abc")).
Row counts are the rows each test inserts, counted in its comment.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources import fingerprint as fp
from reident_airflow.sources.files import FileSource
from reident_airflow.sources.fingerprint import FileHashing, fingerprint_file
from reident_airflow.sources.sql import fingerprint_sql, safe_location
from tests.conftest import require_server

SHA256_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2
KEYS = {
    "kind",
    "location",
    "taken_at",
    "table",
    "query_sha256",
    "rows",
    "size_bytes",
    "sha256",
    "dialect",
    "snapshot",
    "server_time",
}


# ------------------------------------------------------------------------------------ files
def test_a_file_s_hash_is_sha256_of_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "abc.csv"
    path.write_bytes(b"abc")
    found = fingerprint_file(path)
    assert found.sha256 == SHA256_ABC and found.size_bytes == 3
    assert found.kind == "file" and found.location == str(path) and found.rows is None
    out = found.to_dict()
    assert set(out) == KEYS and json.loads(json.dumps(out)) == out


def test_a_file_is_hashed_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 7-byte chunks, 3,001 bytes take 429 reads; the digest is the whole file's."""
    data = b"sex;age;race\n" * 230 + b"x" * 11  # 13 * 230 + 11 = 3,001 bytes
    path = tmp_path / "adult.csv"
    path.write_bytes(data)
    reads: list[int] = []
    real_open = Path.open

    def counting_open(self: Path, *args: object, **kwargs: object) -> object:
        fh = real_open(self, *args, **kwargs)  # type: ignore[call-overload]
        real_read = fh.read

        def read(n: int = -1) -> bytes:
            assert n == 7, "read whole instead of in chunks"
            reads.append(n)
            chunk: bytes = real_read(n)
            return chunk

        fh.read = read
        return fh

    monkeypatch.setattr(fp, "CHUNK_BYTES", 7)
    monkeypatch.setattr(Path, "open", counting_open)
    found = fingerprint_file(path, rows=230)
    monkeypatch.undo()
    assert found.sha256 == hashlib.sha256(data).hexdigest()
    assert found.size_bytes == 3001 and found.rows == 230
    assert len(reads) == 3001 // 7 + 1 + 1  # 428 full, one of 5 bytes, one empty (the end)


def test_parquet_rows_come_from_the_footer_and_a_directory_gets_one_digest(
    tmp_path: Path,
) -> None:
    table = pa.table({"sex": ["f", "m", "f", "m", "f"], "age": [30, 41, 52, 30, 41]})  # 5 rows
    root = tmp_path / "release"
    (root / "day=2").mkdir(parents=True)
    pq.write_table(table, root / "part-1.parquet")
    pq.write_table(table.slice(0, 2), root / "day=2" / "part-2.parquet")
    one = fingerprint_file(root / "part-1.parquet")
    assert one.rows == 5
    whole = fingerprint_file(root)
    # <relative path>\0<sha256>\n per file in path order: "day=2/..." sorts before "part-1"
    first, second = root / "day=2" / "part-2.parquet", root / "part-1.parquet"
    expected = hashlib.sha256(
        f"day=2/part-2.parquet\0{hashlib.sha256(first.read_bytes()).hexdigest()}\n"
        f"part-1.parquet\0{hashlib.sha256(second.read_bytes()).hexdigest()}\n".encode()
    ).hexdigest()
    assert whole.sha256 == expected
    assert whole.size_bytes == first.stat().st_size + second.stat().st_size
    assert whole.rows is None  # a directory's rows are the reader's to give


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        fingerprint_file(tmp_path / "missing.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match="holds no file"):
        fingerprint_file(tmp_path / "empty")
    (tmp_path / "a.csv").write_bytes(b"a\n")
    with pytest.raises(InvalidInputError, match="rows must be"):
        fingerprint_file(tmp_path / "a.csv", rows=-1)


# ------------------------------------------------------------------ hashed beside the reading
def test_a_file_hashed_ahead_gives_the_same_fingerprint_from_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"sex,age\nf,30\nm,41\nf,30\n"  # 3 records: classes (f, 30) x 2, (m, 41) x 1
    path = tmp_path / "three.csv"
    path.write_bytes(data)
    threads: list[str] = []
    real = fp._sha256_of

    def recording(*args: object) -> tuple[str, int]:
        threads.append(threading.current_thread().name)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(fp, "_sha256_of", recording)
    with FileSource(path) as source:
        source.hash_ahead()
        source.hash_ahead()  # a second call starts no second hash
        sizes = source.histogram(["sex", "age"])
        found = source.fingerprint(rows=3)
    assert threads == ["reident-hash"]  # hashed once, on the thread, not after the reading
    assert sizes.records == 3 and sizes.classes == 2
    assert found.sha256 == hashlib.sha256(data).hexdigest() and found.size_bytes == len(data)
    assert found.rows == 3 and found.location == str(path) and found.kind == "file"
    plain = fingerprint_file(path, rows=3).to_dict()
    assert {**found.to_dict(), "taken_at": None} == {**plain, "taken_at": None}


def test_a_directory_and_a_glob_hashed_ahead(tmp_path: Path) -> None:
    table = pa.table({"sex": ["f", "m", "f"]})
    root = tmp_path / "release"
    root.mkdir()
    pq.write_table(table, root / "part-1.parquet")
    pq.write_table(table.slice(0, 1), root / "part-2.parquet")
    with FileSource(root) as source:
        source.hash_ahead()
        found = source.fingerprint()
    assert found is not None and found.sha256 == fingerprint_file(root).sha256
    with FileSource(str(root / "*.parquet")) as glob:
        glob.hash_ahead()  # a glob names no one file: nothing to hash
        assert glob.fingerprint() is None


def test_a_hash_ahead_cancelled_or_failed(tmp_path: Path) -> None:
    data = b"a,b\n" + b"1,2\n" * 50_000  # 200,004 bytes
    path = tmp_path / "a.csv"
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    # cancelled at once or after a few chunks: never a partial hash, the file hashed again
    hashing = FileHashing(path)
    hashing.cancel()
    assert hashing.fingerprint(rows=50_000).sha256 == expected
    source = FileSource(path)
    source.hash_ahead()
    source.close()
    found = source.fingerprint(rows=50_000)
    assert found is not None and (found.sha256, found.size_bytes) == (expected, 200_004)
    with pytest.raises(InvalidInputError, match="rows must be"):
        FileHashing(path).fingerprint(rows=-1)
    with pytest.raises(InvalidInputError, match="does not exist"):
        FileHashing(tmp_path / "missing.csv").fingerprint()
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match="holds no file"):
        FileHashing(tmp_path / "empty").fingerprint()


# -------------------------------------------------------------------------------- databases
BACKENDS = [
    pytest.param("sqlite"),
    pytest.param("postgresql", marks=pytest.mark.db),
    pytest.param("mariadb", marks=pytest.mark.db),
]


@pytest.fixture
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    backend: str = request.param
    url = f"sqlite:///{tmp_path / 'fp.db'}" if backend == "sqlite" else require_server(backend)
    made = sa.create_engine(url)
    yield made
    made.dispose()


@pytest.fixture
def odd_table(engine: sa.Engine) -> Iterator[str]:
    """A table whose name needs quoting, holding 4 rows (ages 30, 41, 52, 90)."""
    name = f"fp {uuid.uuid4().hex[:8]}"
    table = sa.Table(name, sa.MetaData(), sa.Column("age", sa.Integer))
    table.create(engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [{"age": a} for a in (30, 41, 52, 90)])
    yield name
    table.drop(engine)


_SNAPSHOT = {
    "postgresql": re.compile(r"^\d+:\d+:(\d+(,\d+)*)?$"),  # xmin:xmax:xip_list
}


@pytest.mark.parametrize("engine", BACKENDS, indirect=True)
def test_a_table_and_a_query(engine: sa.Engine, odd_table: str) -> None:
    found = fingerprint_sql(engine, odd_table)
    dialect = "mariadb" if getattr(engine.dialect, "is_mariadb", False) else engine.dialect.name
    assert found.kind == "database" and found.dialect == dialect
    assert found.table == odd_table and found.rows == 4 and found.query_sha256 is None
    assert found.sha256 is None and found.server_time
    assert found.location == safe_location(engine.url)
    pattern = _SNAPSHOT.get(dialect)
    if pattern is not None:
        assert found.snapshot is not None and pattern.match(found.snapshot), found.snapshot
    elif dialect == "sqlite":
        assert found.snapshot is None

    quoted = engine.dialect.identifier_preparer.quote(odd_table)
    sql = f"SELECT age FROM {quoted} WHERE age >= 41"  # 41, 52, 90: 3 rows
    by_query = fingerprint_sql(engine.url.render_as_string(hide_password=False), sql=sql)
    assert by_query.rows == 3 and by_query.table is None
    assert by_query.query_sha256 == hashlib.sha256(sql.encode()).hexdigest()
    assert sql not in json.dumps(by_query.to_dict())  # the query is hashed, never kept


@pytest.mark.parametrize("engine", BACKENDS, indirect=True)
def test_a_connection_is_read_inside_its_transaction(engine: sa.Engine, odd_table: str) -> None:
    table = sa.Table(odd_table, sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn, conn.begin() as tx:
        conn.execute(table.insert(), [{"age": 17}])  # not committed: 4 + 1 = 5 in here
        assert fingerprint_sql(conn, odd_table).rows == 5
        tx.rollback()
    assert fingerprint_sql(engine, odd_table).rows == 4


def test_missing_table_and_bad_arguments(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    with pytest.raises(InvalidInputError, match="does not exist"):
        fingerprint_sql(url, "patients")
    with pytest.raises(InvalidInputError, match="either a table name or a sql query"):
        fingerprint_sql(url, "patients", sql="SELECT 1")


@pytest.mark.db
def test_the_location_holds_no_password() -> None:
    """PostgreSQL here trusts local connections, so the password is accepted and ignored."""
    base = sa.make_url(require_server("postgresql"))
    url = base.set(password="s3cret-pw", query={"application_name": "tok3n"})
    found = fingerprint_sql(url.render_as_string(hide_password=False), sql="SELECT 1 AS one")
    text = json.dumps(found.to_dict())
    assert "s3cret" not in text and "tok3n" not in text and "***" not in text
    assert found.location == "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
    assert found.rows == 1


@pytest.mark.db
def test_postgresql_counts_in_a_repeatable_read_transaction_in_a_schema() -> None:
    """The snapshot and the count are read in one REPEATABLE READ transaction (PostgreSQL's
    default is READ COMMITTED, where each statement could see other data)."""
    engine = sa.create_engine(require_server("postgresql"))
    schema, name = f"fp schema {uuid.uuid4().hex[:6]}", "visits"
    levels: list[str] = []

    def seen(conn: sa.Connection, cursor: object, statement: str, *args: object) -> None:
        if "count(" in statement.lower():
            levels.append(conn.get_isolation_level())

    with engine.begin() as conn:
        conn.execute(sa.schema.CreateSchema(schema))
        table = sa.Table(name, sa.MetaData(), sa.Column("day", sa.Integer), schema=schema)
        table.create(conn)
        conn.execute(table.insert(), [{"day": d} for d in (1, 1, 2)])  # 3 rows
    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        found = fingerprint_sql(engine, name, schema=schema)
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
        with engine.begin() as conn:
            conn.execute(sa.schema.DropSchema(schema, cascade=True))
        engine.dispose()
    assert found.rows == 3 and found.table == f"{schema}.{name}"
    assert levels == ["REPEATABLE READ"]
    other = sa.create_engine(require_server("postgresql"))
    with other.connect() as fresh:
        assert fresh.get_isolation_level() == "READ COMMITTED"  # the server's default
    other.dispose()
