"""The release comparison joins the conformance corpus (issue 38).

Two releases of the corpus (:mod:`tests.conformance.corpus`), loaded into each backend in its
native types: the previous release holds the 36 rows, the candidate drops three of them and
holds three others twice (:data:`CANDIDATE_ROWS`). Each hostile column ``c`` is compared
alone: the previous release is ``c`` only (a view of the loaded table, or a file of that one
column), so the releases share that one column and it is the QI. Each entry point that takes a
previous release -- the CLI's ``--previous``, the risk operator's ``previous_release``, GX's
differencing expectation on a SQL batch -- must report the arrivals and departures
:func:`reference` counts in plain Python from the corpus rows (``EXCEPT ALL`` both ways, each
value stored by its backend's rule and compared by :func:`corpus._key`: numbers by value,
text by characters, bytes by bytes), against the previous release itself and against its
ledger.

Columns of two types (:data:`MIXED`, the previous release's column of another placement under
the candidate's name) are compared, or refused with an input error naming the column, as
docs/reading.md says ("Two releases compared"): one kind in both releases (text, bytes,
numbers of one type -- a 4-byte float counts as the float it widens to), except on SQLite
whose integers and reals are one kind (SQLite compares them exactly, by value); a ledger
compares only the types it was made for. The outcome of each pair is written below with its
reason, not taken from the code.

One loaded backend serves every column and entry point (module fixtures); database cases are
marked ``db`` and use ``require_server``.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.operators.risk import ReidentificationRiskOperator
from tests.cli._cli import run
from tests.conformance import loaders
from tests.conformance.corpus import CORPUS, PLACEMENTS, ROWS, Refused, _key, placement
from tests.conftest import require_server
from tests.operators._fakes import PushedTI, make_operator
from tests.spark.sessions import classic_spark

__all__ = ["classic_spark"]  # the Spark fixture, used by name

#: the candidate: the corpus without rows 0 (group 0's only row), 4 (group 2) and 35 (group
#: 7), with rows 1, 10 and 30 twice -- every group keeps a row, so a SQLite column keeps its
#: storage classes
CANDIDATE_ROWS = [i for i in range(ROWS) if i not in (0, 4, 35)] + [1, 10, 30]
PREVIOUS_ROWS = list(range(ROWS))

#: (candidate column, previous column, table outcome, ledger outcome): "compared" (checked
#: against the reference) or "refused" (an input error naming the column)
MIXED: dict[str, list[tuple[str, str, str, str]]] = {
    # CSV holds text only: any two columns are text
    "csv": [("int", "float_close", "compared", "compared")],
    "parquet": [
        # double against float: one kind (the float widens exactly); the ledger holds types
        ("float_close", "float_close32", "compared", "refused"),
        # a dictionary of text is read as its text; an instant in any zone as an instant
        ("case", "case_dict", "compared", "compared"),
        ("instant", "instant_paris", "compared", "compared"),
        ("int", "float_close", "refused", "refused"),  # numbers of two types
        ("decimal", "int", "refused", "refused"),
        ("bytes", "case", "refused", "refused"),  # bytes against text
    ],
    "sqlite": [
        ("case", "case_nocase", "compared", "compared"),  # text, the collation bypassed
        ("float_close", "int", "compared", "compared"),  # SQLite numbers: by value
        ("int", "case", "refused", "refused"),  # numbers against text
        ("bytes", "case", "refused", "refused"),
        ("mixed", "case", "refused", "refused"),
    ],
    "postgresql": [
        ("case", "case_citext", "compared", "compared"),  # both by their text
        ("label", "case", "compared", "compared"),  # an enum by its text
        ("float_close", "float_close4", "compared", "refused"),
        ("int", "float_close", "refused", "refused"),
        ("decimal", "int", "refused", "refused"),
        ("bytes", "case", "refused", "refused"),
        ("instant", "int", "refused", "refused"),
    ],
    "mariadb": [
        ("case", "case_bin", "compared", "compared"),  # text by its bytes
        ("bytes", "bytes_fixed", "compared", "compared"),  # bytes
        ("float_close_double", "float_close", "compared", "refused"),
        ("int", "float_close_double", "refused", "refused"),
        ("decimal", "int", "refused", "refused"),
        ("bits", "int", "refused", "refused"),
        ("bytes", "case", "refused", "refused"),
    ],
    # Spark: no ledger (the ledger outcome is not used)
    "spark": [
        ("float_close", "float_close32", "compared", "-"),
        ("case", "label", "compared", "-"),
        ("int", "float_close", "refused", "-"),
        ("decimal", "int", "refused", "-"),
        ("bytes", "case", "refused", "-"),
        ("instant", "int", "refused", "-"),
    ],
}
BACKENDS = ("csv", "parquet", "sqlite", "postgresql", "mariadb", "spark")
SERVERS = ("postgresql", "mariadb")


# ------------------------------------------------------------------------------ the truth
def _stored(backend: str, name: str, rows: Sequence[int]) -> list[Any]:
    p = placement(backend, name)
    assert not isinstance(p.storage, Refused), p
    cells = CORPUS[p.column].cells()
    return [_key(p.storage(cells[i])) for i in rows]


Histogram = list[list[int]]


def _histogram(moved: Counter[Any]) -> Histogram:
    sizes = Counter(n for n in moved.values() if n > 0)
    return [[size, count] for size, count in sorted(sizes.items())]


def reference(backend: str, new: str, old: str) -> tuple[Histogram, Histogram]:
    """The arrivals and departures histograms of the candidate's column ``new`` against the
    previous release's column ``old`` (the QI, and the only compared column): multiset
    differences both ways of the stored values, per class (a class is a value here)."""
    candidate = Counter(_stored(backend, new, CANDIDATE_ROWS))
    previous = Counter(_stored(backend, old, PREVIOUS_ROWS))
    return _histogram(candidate - previous), _histogram(previous - candidate)


#: an outcome: ("changes", (arrivals, departures)) or ("refused", message)
Outcome = tuple[str, Any]
#: an entry point: (candidate, QI, previous release) -> its outcome
Compare = Callable[[str, str], Outcome]


def _of(doc: dict[str, Any] | None) -> Outcome:
    assert doc is not None, "no comparison was made"
    return ("changes", (doc["arrivals"]["histogram"], doc["departures"]["histogram"]))


# --------------------------------------------------------------------------- entry points
def _cli(*source: str) -> Compare:
    def compare(qi: str, previous: str) -> Outcome:
        code, out, err = run(
            "assess", *source, "--qi", qi, "--previous", previous, "--json", "-",
            "--no-advice", "--no-fingerprint", "--no-ranking", "--quiet",
        )  # fmt: skip
        if code == 2:
            return ("refused", err.strip())
        assert code == 0, err
        return _of(json.loads(out)["since_last_release"])

    return compare


def _operator(engine: sa.Engine | None = None, **staged: Any) -> Compare:
    def compare(qi: str, previous: str) -> Outcome:
        op = make_operator(
            ReidentificationRiskOperator,
            engine,
            quasi_identifiers=[qi],
            previous_release=previous,
            fingerprint=False,
            advice=False,
            rank_attributes=False,
            identifier_scan="off",
            **staged,
        )
        try:
            report = op.execute({"ti": PushedTI()})
        except InvalidInputError as exc:
            return ("refused", str(exc))
        return _of(report["since_last_release"])

    return compare


def _gx(batch: Any) -> Compare:
    from reident_airflow.gx import ExpectTableDifferencingRiskToBeBelow

    def compare(qi: str, previous: str) -> Outcome:
        expectation = ExpectTableDifferencingRiskToBeBelow(
            quasi_identifiers=[qi], previous_release=previous, min_arrival_k=1
        )
        result = batch.validate(expectation)
        info = result.exception_info or {}
        if info.get("raised_exception"):
            return ("refused", str(info.get("exception_message")))
        return _of(result.result["details"]["assessment"])

    return compare


# ------------------------------------------------------------------------------ backends
class Loaded:
    """A backend holding both releases: its entry points, and how to name the previous
    release of one column (``previous(candidate_name, previous_name, ledger)``)."""

    def __init__(self, entries: dict[str, Compare], previous: Callable[[str, str, bool], str]):
        self.entries = entries
        self.make = previous
        self.made: dict[tuple[str, str, bool], str] = {}

    def previous(self, new: str, old: str, ledger: bool) -> str:
        """The previous release of one column, made once for every entry point."""
        key = (new, old, ledger)
        if key not in self.made:
            self.made[key] = self.make(new, old, ledger)
        return self.made[key]


def _file_previous(workdir: Path, kind: str) -> Callable[[str, str, bool], str]:
    from reident_airflow.sources.writers import ledger_of_file

    def previous(new: str, old: str, ledger: bool) -> str:
        path = workdir / f"previous_{new}_{old}_{uuid.uuid4().hex[:6]}.{kind}"
        p = placement(kind, old)
        cells = [CORPUS[p.column].cells()[i] for i in PREVIOUS_ROWS]
        if kind == "csv":
            lines = [new] + [loaders._csv_field(v) for v in cells]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
        else:
            pq.write_table(pa.table({new: loaders._arrow_array(cells, p.native)}), path)
        return str(ledger_of_file(path, [new])) if ledger else str(path)

    return previous


def _candidate_file(workdir: Path, kind: str) -> Path:
    path = workdir / f"candidate.{kind}"
    placements = PLACEMENTS[kind]
    columns = {p.name: loaders._cells(p, CANDIDATE_ROWS) for p in placements}
    if kind == "csv":
        lines = [",".join(columns)]
        lines += [
            ",".join(loaders._csv_field(v) for v in row)
            for row in zip(*columns.values(), strict=True)
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    else:
        natives = {p.name: p.native for p in placements}
        pq.write_table(
            pa.table({n: loaders._arrow_array(v, natives[n]) for n, v in columns.items()}), path
        )
    return path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("release_corpus")


@pytest.fixture(scope="module")
def csv_loaded(workdir: Path) -> Loaded:
    path = str(_candidate_file(workdir, "csv"))
    entries = {"cli": _cli(path), "operator": _operator(path=path)}
    return Loaded(entries, _file_previous(workdir, "csv"))


@pytest.fixture(scope="module")
def parquet_loaded(workdir: Path) -> Loaded:
    path = str(_candidate_file(workdir, "parquet"))
    entries = {"cli": _cli(path), "operator": _operator(path=path)}
    return Loaded(entries, _file_previous(workdir, "parquet"))


def _sql_loaded(backend: str, engine: sa.Engine, url: str, new: str, old: str) -> Loaded:
    from reident_airflow.sources.writers import ledger_of_table
    from tests.conformance.test_corpus import _gx_context

    q = engine.dialect.identifier_preparer.quote
    context = _gx_context()
    name = f"sql_{uuid.uuid4().hex[:8]}"
    if backend == "sqlite":
        source = context.data_sources.add_sqlite(name, connection_string=url)
    elif backend == "postgresql":
        source = context.data_sources.add_postgres(name, connection_string=url)
    else:
        source = context.data_sources.add_sql(name, connection_string=url)
    batch = (
        source.add_table_asset("candidate", table_name=new)
        .add_batch_definition_whole_table("whole")
        .get_batch()
    )
    entries = {
        "cli": _cli(url, "--table", new),
        "operator": _operator(engine, conn_id="corpus", table=new),
        "gx": _gx(batch),
    }

    def previous(column: str, other: str, ledger: bool) -> str:
        view = f"{old}_v{uuid.uuid4().hex[:6]}"
        with engine.begin() as conn:
            conn.exec_driver_sql(
                f"CREATE VIEW {q(view)} AS SELECT {q(other)} AS {q(column)} FROM {q(old)}"
            )
        return ledger_of_table(engine, view, [column]) if ledger else view

    return Loaded(entries, previous)


def _drop_made(engine: sa.Engine, old: str) -> None:
    """Drop the views and ledgers made of the previous release ``old``."""
    names = sa.inspect(engine)
    q = engine.dialect.identifier_preparer.quote
    with engine.begin() as conn:
        for view in names.get_view_names():
            if view.startswith(f"{old}_v"):
                conn.exec_driver_sql(f"DROP VIEW IF EXISTS {q(view)}")
        for table in names.get_table_names():
            if table.startswith(f"{old}_v"):
                conn.exec_driver_sql(f"DROP TABLE IF EXISTS {q(table)}")


@pytest.fixture(scope="module")
def sqlite_loaded(workdir: Path) -> Iterator[Loaded]:
    url = f"sqlite:///{workdir / 'releases.db'}"
    engine = sa.create_engine(url)
    with loaders.sqlite_table(engine, CANDIDATE_ROWS) as new, loaders.sqlite_table(engine) as old:
        yield _sql_loaded("sqlite", engine, url, new, old)
        _drop_made(engine, old)
    engine.dispose()


def _server_loaded(backend: str) -> Iterator[Loaded]:
    url = require_server(backend)
    engine = sa.create_engine(url)
    load = loaders.postgresql_table if backend == "postgresql" else loaders.mariadb_table
    try:
        with ExitStack() as stack:
            new = stack.enter_context(load(engine, CANDIDATE_ROWS))
            old = stack.enter_context(load(engine))
            try:
                yield _sql_loaded(backend, engine, url, new, old)
            finally:
                _drop_made(engine, old)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def postgresql_loaded() -> Iterator[Loaded]:
    yield from _server_loaded("postgresql")


@pytest.fixture(scope="module")
def mariadb_loaded() -> Iterator[Loaded]:
    yield from _server_loaded("mariadb")


@pytest.fixture(scope="module")
def spark_loaded(classic_spark: Any) -> Iterator[Loaded]:
    from tests.conformance.test_corpus import _gx_context

    session = classic_spark
    new = f"candidate_{uuid.uuid4().hex[:10]}"
    frame = loaders.spark_frame(session, CANDIDATE_ROWS)
    frame.createOrReplaceTempView(new)
    old_frame = loaders.spark_frame(session, PREVIOUS_ROWS)
    made = [new]
    context = _gx_context()
    source = context.data_sources.add_spark(f"spark_{uuid.uuid4().hex[:8]}")
    batch = (
        source.add_dataframe_asset("candidate")
        .add_batch_definition_whole_dataframe("whole")
        .get_batch(batch_parameters={"dataframe": frame})
    )

    def previous(column: str, other: str, ledger: bool) -> str:
        assert not ledger, "Spark keeps no ledger"
        view = f"previous_{uuid.uuid4().hex[:10]}"
        old_frame.selectExpr(f"`{other}` AS `{column}`").createOrReplaceTempView(view)
        made.append(view)
        return view

    conn_id = "reident_release_corpus_spark"
    value = {"conn_type": "spark", "host": "local[2]"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(value))
        yield Loaded(
            {
                "cli": _cli("--engine", "spark", "--spark-master", "local[2]", "--table", new),
                "operator": _operator(conn_id=conn_id, table=new),
                "gx": _gx(batch),
            },
            previous,
        )
    for view in made:
        session.catalog.dropTempView(view)


# ---------------------------------------------------------------------------------- tests
def _pairs(backend: str, mixed: bool, ledger: bool) -> list[tuple[str, str, str]]:
    """(candidate column, previous column, expected outcome) of one run."""
    if mixed:
        return [(n, o, lo if ledger else to) for n, o, to, lo in MIXED[backend]]
    # a column no entry point may group (PostgreSQL json, a UTF8_LCASE string) is refused
    return [
        (p.name, p.name, "refused" if isinstance(p.storage, Refused) else "compared")
        for p in PLACEMENTS[backend]
    ]


def _cases() -> Iterator[Any]:
    for backend in BACKENDS:
        marks = [pytest.mark.db] if backend in SERVERS else []
        marks += [pytest.mark.spark] if backend == "spark" else []
        entries = (
            ("cli", "operator") if backend in ("csv", "parquet") else ("cli", "operator", "gx")
        )
        for entry in entries:
            for mixed in (False, True):
                for ledger in (False, True) if backend != "spark" else (False,):
                    kind = f"{'mixed' if mixed else 'same'}-{'ledger' if ledger else 'table'}"
                    yield pytest.param(
                        backend, entry, mixed, ledger, marks=marks, id=f"{backend}-{entry}-{kind}"
                    )


@pytest.mark.parametrize(("backend", "entry", "mixed", "ledger"), list(_cases()))
def test_release_corpus(
    request: pytest.FixtureRequest, backend: str, entry: str, mixed: bool, ledger: bool
) -> None:
    """Every hostile column of the backend (or every mixed pair), compared through one entry
    point with the previous release (or its ledger): the reference's arrivals and departures,
    or a refusal naming the column; 0 differences, 0 crashes."""
    loaded: Loaded = request.getfixturevalue(f"{backend}_loaded")
    compare = loaded.entries[entry]
    wrong = []
    for new, old, want in _pairs(backend, mixed, ledger):
        try:
            previous = loaded.previous(new, old, ledger)
        except InvalidInputError as exc:  # a ledger of a column that cannot be grouped
            got: Outcome = ("refused", str(exc))
        else:
            got = compare(new, previous)
        if want == "refused":
            if got[0] != "refused" or repr(new) not in got[1]:
                wrong.append(f"{new} vs {old}: should be refused naming {new!r}; got {got}")
            continue
        truth = ("changes", reference(backend, new, old))
        if got != truth:
            wrong.append(f"{new} vs {old}: truth {truth}, got {got}")
    assert not wrong, "\n".join(wrong)
