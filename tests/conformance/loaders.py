"""Put the corpus into each backend, in the native types of :data:`corpus.PLACEMENTS`.

The loaders write the raw values of :mod:`tests.conformance.corpus` with the backend's own
client (the csv text by hand, pyarrow, pandas, sqlite3/psycopg2/pymysql through SQLAlchemy,
Spark); whatever the backend then makes of a value is its storage rule, which the truth
applies. Database objects get unique names and are dropped by the context managers.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from tests.conformance.corpus import CORPUS, MOOD, PLACEMENTS, ROWS, UTC, Placement, csv_text


def _cells(p: Placement, rows: Sequence[int] | None = None) -> list[Any]:
    """The placement's raw values, row by row (``rows``: these rows of the corpus, in this
    order, a row given twice held twice; by default all)."""
    cells = CORPUS[p.column].cells()
    return cells if rows is None else [cells[i] for i in rows]


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


# ------------------------------------------------------------------------------- files
def _csv_field(value: Any) -> str:
    """Missing is an empty unquoted field; any text is quoted (so '' is ``""``)."""
    if value is None:
        return ""
    return '"' + csv_text(value).replace('"', '""') + '"'


def write_csv(path: Path) -> Path:
    placements = PLACEMENTS["csv"]
    lines = [",".join(p.name for p in placements)]
    columns = [_cells(p) for p in placements]
    lines += [",".join(_csv_field(v) for v in row) for row in zip(*columns, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    return path


_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "dictionary<string>": pa.dictionary(pa.int32(), pa.string()),
    "double": pa.float64(),
    "float": pa.float32(),
    "int64": pa.int64(),
    "decimal128(38,9)": pa.decimal128(38, 9),
    "bool": pa.bool_(),
    "timestamp[us,UTC]": pa.timestamp("us", tz="UTC"),
    "timestamp[us,Europe/Paris]": pa.timestamp("us", tz="Europe/Paris"),
    "binary": pa.binary(),
}


def _arrow_array(values: Sequence[Any], native: str) -> pa.Array:
    kind = _ARROW[native]
    if pa.types.is_dictionary(kind):
        return pa.array(values, pa.string()).dictionary_encode()
    if pa.types.is_timestamp(kind):
        values = [None if v is None else v.astimezone(UTC) for v in values]
    return pa.array(values, kind)


def arrow_table(backend: str) -> pa.Table:
    placements = PLACEMENTS[backend]
    return pa.table({p.name: _arrow_array(_cells(p), p.native) for p in placements})


def write_parquet(path: Path) -> Path:
    pq.write_table(arrow_table("parquet"), path)
    return path


def frame() -> pd.DataFrame:
    """The pandas DataFrame Great Expectations assesses."""
    out: dict[str, Any] = {}
    for p in PLACEMENTS["pandas"]:
        values = _cells(p)
        if p.native == "object":
            out[p.name] = pd.Series(values, dtype=object)
        elif p.native.startswith("datetime64"):
            out[p.name] = pd.Series(
                [pd.NaT if v is None else pd.Timestamp(v) for v in values], dtype=p.native
            )
        elif p.native == "Float64":
            # from data and mask: pd.Series([nan], dtype="Float64") would make NaN missing
            data = np.array([0.0 if v is None else v for v in values], dtype=np.float64)
            mask = np.array([v is None for v in values])
            out[p.name] = pd.Series(pd.arrays.FloatingArray(data, mask))
        elif p.native == "double[pyarrow]":
            # from an Arrow array: NaN stays NaN, None is null
            out[p.name] = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, pa.float64())))
        elif p.native == "float64" or p.native == "float32":
            assert None not in values, p  # numpy floats cannot hold missing apart from NaN
            out[p.name] = pd.Series(values, dtype=p.native)
        else:
            out[p.name] = pd.Series(values, dtype=p.native)
    df = pd.DataFrame(out)
    assert len(df) == ROWS
    return df


# --------------------------------------------------------------------------- databases
def _insert(conn: sa.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    conn.exec_driver_sql(sql, rows)


def _rows(
    placements: Sequence[Placement], convert: Any = None, rows: Sequence[int] | None = None
) -> list[tuple[Any, ...]]:
    columns = [[convert(p, v) if convert else v for v in _cells(p, rows)] for p in placements]
    return list(zip(*columns, strict=True))


def _sqlite_value(p: Placement, value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()  # the storage rule iso_text: SQLite has no date type
    return value


@contextmanager
def sqlite_table(engine: sa.Engine, rows: Sequence[int] | None = None) -> Iterator[str]:
    placements = PLACEMENTS["sqlite"]
    name = unique("corpus")
    columns = ", ".join(f'"{p.name}" {p.native}'.rstrip() for p in placements)
    marks = ", ".join("?" for _ in placements)
    with engine.begin() as conn:
        conn.exec_driver_sql(f'CREATE TABLE "{name}" ({columns})')
        _insert(
            conn, f'INSERT INTO "{name}" VALUES ({marks})', _rows(placements, _sqlite_value, rows)
        )
    try:
        yield name
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP TABLE IF EXISTS "{name}"')


def _citext(engine: sa.Engine) -> None:
    """``CREATE EXTENSION IF NOT EXISTS citext``; two sessions creating it at once may
    collide on the catalog's unique index, then the other one made it (left installed)."""
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS citext")
    except sa.exc.IntegrityError:
        with engine.connect() as conn:
            found = conn.exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'citext'")
            assert found.scalar() == 1


@contextmanager
def postgresql_table(engine: sa.Engine, rows: Sequence[int] | None = None) -> Iterator[str]:
    """The corpus in a PostgreSQL table, with the objects its types need (citext, two
    nondeterministic ICU collations, two domains, an enum), all dropped afterwards."""
    placements = PLACEMENTS["postgresql"]
    objects = {
        "ci": unique("corpus_ci"),
        "ai": unique("corpus_ai"),
        "email": unique("corpus_email"),
        "ci_text": unique("corpus_ci_text"),
        "mood": unique("corpus_mood"),
        "amount": unique("corpus_amount"),
    }
    name = unique("corpus")
    labels = ", ".join(f"'{label}'" for label in MOOD)
    _citext(engine)
    setup = [
        f"""CREATE COLLATION "{objects["ci"]}" """
        "(provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
        f"""CREATE COLLATION "{objects["ai"]}" """
        "(provider = icu, locale = 'und-u-ks-level1', deterministic = false)",
        f'CREATE DOMAIN "{objects["email"]}" AS citext',
        f'CREATE DOMAIN "{objects["ci_text"]}" AS text COLLATE "{objects["ci"]}"',
        f'CREATE TYPE "{objects["mood"]}" AS ENUM ({labels})',
        f'CREATE DOMAIN "{objects["amount"]}" AS numeric',
    ]
    domains = ("email", "ci_text", "mood", "amount")
    quoted = {k: f'"{v}"' if k in domains else v for k, v in objects.items()}
    columns = ", ".join(f'"{p.name}" {p.native.format(**quoted)}' for p in placements)
    marks = ", ".join("%s" for _ in placements)
    try:
        with engine.begin() as conn:
            for statement in setup:
                conn.exec_driver_sql(statement)
            conn.exec_driver_sql(f'CREATE TABLE "{name}" ({columns})')
            _insert(conn, f'INSERT INTO "{name}" VALUES ({marks})', _rows(placements, rows=rows))
        yield name
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP TABLE IF EXISTS "{name}"')
            for kind, obj in (
                ("DOMAIN", objects["email"]),
                ("DOMAIN", objects["ci_text"]),
                ("TYPE", objects["mood"]),
                ("DOMAIN", objects["amount"]),
                ("COLLATION", objects["ci"]),
                ("COLLATION", objects["ai"]),
            ):
                conn.exec_driver_sql(f'DROP {kind} IF EXISTS "{obj}"')


def _mariadb_value(p: Placement, value: Any) -> Any:
    if isinstance(value, dt.datetime):
        # DATETIME holds no zone: the loader writes the UTC instant (storage rule utc_instant)
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


@contextmanager
def mariadb_table(engine: sa.Engine, rows: Sequence[int] | None = None) -> Iterator[str]:
    placements = PLACEMENTS["mariadb"]
    name = unique("corpus")
    columns = ", ".join(f"`{p.name}` {p.native}" for p in placements)
    marks = ", ".join("%s" for _ in placements)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE `{name}` ({columns}) CHARACTER SET utf8mb4")
        _insert(
            conn, f"INSERT INTO `{name}` VALUES ({marks})", _rows(placements, _mariadb_value, rows)
        )
    try:
        yield name
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS `{name}`")


def spark_frame(session: Any, rows: Sequence[int] | None = None) -> Any:
    """The corpus as a Spark DataFrame (from Arrow), the collated columns cast in Spark."""
    plain = [p for p in PLACEMENTS["spark"] if "collate" not in p.native]
    natives = {
        "string": "string",
        "double": "double",
        "float": "float",
        "bigint": "int64",
        "decimal(38,9)": "decimal128(38,9)",
        "boolean": "bool",
        "timestamp": "timestamp[us,UTC]",
        "binary": "binary",
    }
    table = pa.table({p.name: _arrow_array(_cells(p, rows), natives[p.native]) for p in plain})
    df = session.createDataFrame(table)
    columns = []
    for p in PLACEMENTS["spark"]:
        if "collate" in p.native:
            source = p.name.split("_")[0]
            columns.append(f"CAST(`{source}` AS {p.native}) AS `{p.name}`")
        else:
            columns.append(f"`{p.name}`")
    return df.selectExpr(*columns)
