"""The conformance corpus (issue 25): every backend x entry point reports the truth.

The corpus of :mod:`tests.conformance.corpus` (36 rows of hostile typed columns) is loaded
into each backend in its native types by :mod:`tests.conformance.loaders`, then assessed by
each entry point that reads that backend:

==========  ==========================================================================
backend     entry points
==========  ==========================================================================
CSV         ``reident assess FILE``; the risk operator with ``path=``
Parquet     ``reident assess FILE``; the risk operator with ``path=``; the Python API
            (``reident_airflow.api.assess``) on the Arrow table the file was written from,
            and on that table as a polars DataFrame
pandas      Great Expectations (pandas datasource); the Python API on the DataFrame
SQLite      ``reident assess URL --table``; the operator with ``table=`` and ``sql=``;
            Great Expectations (SQLite datasource)
PostgreSQL  the CLI; the operator with ``table=``, ``sql=`` and ``table=`` + ``where=``;
            Great Expectations (PostgreSQL datasource)
MariaDB     the same, Great Expectations through its generic SQL datasource
Spark       ``reident assess --engine spark --table VIEW``; the operator on a ``spark``
            connection; Great Expectations (Spark datasource); the Python API on the
            DataFrame -- marked ``spark``
==========  ==========================================================================

Each column alone is the QI of one assessment (its class-size histogram must equal
:func:`~tests.conformance.corpus.expected`), and so is the whole set of the backend's columns
at once (``ALL``). A column whose type has no trustworthy equality (PostgreSQL ``json``, a
Spark ``UTF8_LCASE`` string) must be refused with an input error naming it. Database cases
are marked ``db``: under ``CI=true`` an unreachable server fails them (``require_server``).
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

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.operators.risk import ReidentificationRiskOperator
from tests.cli._cli import run
from tests.conformance import loaders
from tests.conformance.corpus import CORPUS, PLACEMENTS, Refused, assessed, expected, placement
from tests.conftest import require_server
from tests.operators._fakes import PushedTI, make_operator
from tests.spark.sessions import classic_spark

__all__ = ["classic_spark"]  # the Spark fixture, used by name

ALL = "ALL"

#: the entry points reading each backend
ENTRIES: dict[str, tuple[str, ...]] = {
    "csv": ("cli", "operator"),
    "parquet": ("cli", "operator", "api_arrow", "api_polars"),
    "pandas": ("gx", "api"),
    "sqlite": ("cli", "operator", "operator_sql", "gx"),
    "postgresql": ("cli", "operator", "operator_sql", "operator_where", "gx"),
    "mariadb": ("cli", "operator", "operator_sql", "operator_where", "gx"),
    "spark": ("cli", "operator", "gx", "api"),
}
SERVERS = ("postgresql", "mariadb")


def _cases() -> Iterator[Any]:
    for backend, entries in ENTRIES.items():
        marks = [pytest.mark.db] if backend in SERVERS else []
        for entry in entries:
            for name in [*(p.name for p in PLACEMENTS[backend]), ALL]:
                yield pytest.param(
                    backend, entry, name, marks=marks, id=f"{backend}-{entry}-{name}"
                )


#: What an entry point reports: ("histogram", [[size, classes], ...]) or ("refused", message)
Outcome = tuple[str, Any]
#: an entry point on a loaded backend: the QIs -> its outcome
Assess = Callable[[list[str]], Outcome]


# --------------------------------------------------------------------------- entry points
def _cli(*source: str) -> Assess:
    def assess(qis: list[str]) -> Outcome:
        code, out, err = run(
            "assess",
            *source,
            "--qi",
            ",".join(qis),
            "--json",
            "-",
            "--no-advice",
            "--no-fingerprint",
        )
        if code == 2:
            return ("refused", err.strip())
        assert code == 0, err
        return ("histogram", json.loads(out)["class_size_histogram"])

    return assess


def _operator(engine: sa.Engine | None = None, **staged: Any) -> Assess:
    def assess(qis: list[str]) -> Outcome:
        op = make_operator(
            ReidentificationRiskOperator,
            engine,
            quasi_identifiers=qis,
            fingerprint=False,
            advice=False,
            # the corpus checks the grouping of the QIs; the identifier scan of every column
            # of the table is tests/sources/test_column_profile.py's (and on MariaDB's BIT
            # column SQLAlchemy warns when the profile compares it with NULL)
            identifier_scan="off",
            **staged,
        )
        try:
            report = op.execute({"ti": PushedTI()})
        except InvalidInputError as exc:
            return ("refused", str(exc))
        return ("histogram", report["class_size_histogram"])

    return assess


def _gx(batch: Any) -> Assess:
    from reident_airflow.gx import ExpectTableToBeKAnonymous

    def assess(qis: list[str]) -> Outcome:
        result = batch.validate(ExpectTableToBeKAnonymous(quasi_identifiers=qis, k=1))
        info = result.exception_info or {}
        if info.get("raised_exception"):
            return ("refused", str(info.get("exception_message")))
        return ("histogram", result.result["details"]["assessment"]["class_size_histogram"])

    return assess


def _api(frame: Any) -> Assess:
    from reident_airflow.api import assess as assess_frame

    def assess(qis: list[str]) -> Outcome:
        options = {"quasi_identifiers": qis, "rank_attributes": False}
        try:
            result = assess_frame(frame, options)
        except InvalidInputError as exc:
            return ("refused", str(exc))
        return ("histogram", result.to_dict()["class_size_histogram"])

    return assess


def _gx_context() -> Any:
    from tests.gx.conftest import new_context

    return new_context()


def _sql_entries(backend: str, engine: sa.Engine, url: str, table: str) -> dict[str, Assess]:
    quoted = engine.dialect.identifier_preparer.quote(table)
    entries = {
        "cli": _cli(url, "--table", table),
        "operator": _operator(engine, conn_id="corpus", table=table),
        "operator_sql": _operator(engine, conn_id="corpus", sql=f"SELECT * FROM {quoted}"),
        "operator_where": _operator(engine, conn_id="corpus", table=table, where="1 = 1"),
    }
    context = _gx_context()
    name = f"sql_{uuid.uuid4().hex[:8]}"
    if backend == "sqlite":
        source = context.data_sources.add_sqlite(name, connection_string=url)
    elif backend == "postgresql":
        source = context.data_sources.add_postgres(name, connection_string=url)
    else:
        source = context.data_sources.add_sql(name, connection_string=url)
    asset = source.add_table_asset("corpus", table_name=table)
    entries["gx"] = _gx(asset.add_batch_definition_whole_table("whole").get_batch())
    return entries


# ----------------------------------------------------------------------------- backends
@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("conformance")


@pytest.fixture(scope="module")
def csv_entries(workdir: Path) -> dict[str, Assess]:
    path = loaders.write_csv(workdir / "corpus.csv")
    return {"cli": _cli(str(path)), "operator": _operator(path=str(path))}


@pytest.fixture(scope="module")
def parquet_entries(workdir: Path) -> dict[str, Assess]:
    import polars as pl

    path = loaders.write_parquet(workdir / "corpus.parquet")
    table = loaders.arrow_table("parquet")
    return {
        "cli": _cli(str(path)),
        "operator": _operator(path=str(path)),
        "api_arrow": _api(table),
        "api_polars": _api(pl.from_arrow(table)),
    }


@pytest.fixture(scope="module")
def pandas_entries() -> dict[str, Assess]:
    context = _gx_context()
    source = context.data_sources.add_pandas(f"pandas_{uuid.uuid4().hex[:8]}")
    definition = source.add_dataframe_asset("corpus").add_batch_definition_whole_dataframe("whole")
    frame = loaders.frame()
    return {
        "gx": _gx(definition.get_batch(batch_parameters={"dataframe": frame})),
        "api": _api(frame),
    }


@pytest.fixture(scope="module")
def sqlite_entries(workdir: Path) -> Iterator[dict[str, Assess]]:
    url = f"sqlite:///{workdir / 'corpus.db'}"
    engine = sa.create_engine(url)
    with loaders.sqlite_table(engine) as table:
        yield _sql_entries("sqlite", engine, url, table)
    engine.dispose()


def _server_entries(backend: str) -> Iterator[dict[str, Assess]]:
    url = require_server(backend)
    engine = sa.create_engine(url)
    load = loaders.postgresql_table if backend == "postgresql" else loaders.mariadb_table
    try:
        with load(engine) as table:
            yield _sql_entries(backend, engine, url, table)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def postgresql_entries() -> Iterator[dict[str, Assess]]:
    yield from _server_entries("postgresql")


@pytest.fixture(scope="module")
def mariadb_entries() -> Iterator[dict[str, Assess]]:
    yield from _server_entries("mariadb")


@pytest.fixture(scope="module")
def spark_entries(classic_spark: Any) -> Iterator[dict[str, Assess]]:
    import json as json_module

    view = f"corpus_{uuid.uuid4().hex[:10]}"
    df = loaders.spark_frame(classic_spark)
    df.createOrReplaceTempView(view)
    context = _gx_context()
    source = context.data_sources.add_spark(f"spark_{uuid.uuid4().hex[:8]}")
    batch = (
        source.add_dataframe_asset("corpus")
        .add_batch_definition_whole_dataframe("whole")
        .get_batch(batch_parameters={"dataframe": df})
    )
    conn_id = "reident_corpus_spark"
    value = {"conn_type": "spark", "host": "local[2]"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json_module.dumps(value))
        yield {
            "cli": _cli("--engine", "spark", "--spark-master", "local[2]", "--table", view),
            "operator": _operator(conn_id=conn_id, table=view),
            "gx": _gx(batch),
            "api": _api(df),
        }
    classic_spark.catalog.dropTempView(view)


# --------------------------------------------------------------------------------- test
def truth(backend: str, name: str) -> Outcome:
    if name == ALL:
        return ("histogram", expected(backend, [p.name for p in assessed(backend)]))
    p = placement(backend, name)
    if isinstance(p.storage, Refused):
        return ("refused", name)
    return ("histogram", expected(backend, [name]))


@pytest.mark.parametrize(("backend", "entry", "name"), list(_cases()))
def test_corpus(request: pytest.FixtureRequest, backend: str, entry: str, name: str) -> None:
    """One column of the corpus (or ALL of the backend's columns) as the QIs: the entry
    point reports the truth's class-size histogram, or refuses a column it cannot group."""
    entries: dict[str, Assess] = request.getfixturevalue(f"{backend}_entries")
    want = truth(backend, name)
    qis = [p.name for p in assessed(backend)] if name == ALL else [name]
    got = entries[entry](qis)
    if want[0] == "refused":
        assert got[0] == "refused", f"{name} should be refused; got the histogram {got[1]}"
        assert name in got[1], f"the refusal does not name the column: {got[1]}"
        return
    assert got == want, f"truth {want[1]}, got {got[1]}"


def test_corpus_frame_holds_the_placements() -> None:
    """The pandas frame has each placement's dtype (a loader that silently converted a
    column would test something else)."""
    df = loaders.frame()
    for p in PLACEMENTS["pandas"]:
        dtype = df[p.name].dtype
        assert str(dtype) == p.native or dtype == pd.api.types.pandas_dtype(p.native), p


def test_corpus_frame_keeps_nan_apart_from_missing() -> None:
    """The loader's float columns hold NaN where the corpus has NaN and missing where it has
    None (pandas turns NaN into NA when a Float64 column is built from a list)."""
    df = loaders.frame()
    for name in ("float_edge", "float_edge_arrow"):
        raw = CORPUS["float_edge"].cells()
        missing = [bool(m) for m in df[name].isna()]
        assert missing == [v is None for v in raw], name
