"""Where the data is: rows grouped into class aggregates, whole tables in, releases out.

The engine (:mod:`reident_airflow.engine`) computes on class aggregates; the modules here count
the rows where they are and hand the engine only those aggregates, under the reading contract
of ``docs/reading.md``. Each backend is one :class:`Source`, chosen once by the adapter (the
command line's INPUT and ``--engine``):

- files and DataFrames, grouped by an embedded DuckDB: :class:`~reident_airflow.sources.files.
  FileSource` in :mod:`~reident_airflow.sources.files` (what DuckDB reads of a file:
  :mod:`~reident_airflow.sources.file_source`);
- databases, grouped by the database's own ``GROUP BY``: :class:`~reident_airflow.sources.sql.
  SqlSource` in :mod:`~reident_airflow.sources.sql` (with
  :mod:`~reident_airflow.sources.connect`, :mod:`~reident_airflow.sources.sql_grouping`,
  :mod:`~reident_airflow.sources.sql_fetch`, :mod:`~reident_airflow.sources.db_errors`), and
  direct-match counts in the database: :mod:`~reident_airflow.sources.direct_match_sql`;
- Spark DataFrames, grouped by Spark (classic sessions and Spark Connect):
  :class:`~reident_airflow.sources.spark.SparkSource` in :mod:`~reident_airflow.sources.spark`
  (with :mod:`~reident_airflow.sources.spark_grouping`; direct match and Datafly in
  :mod:`~reident_airflow.sources.spark_release`);
- whole tables for Datafly and direct match: :mod:`~reident_airflow.sources.tables`;
- releases published atomically: :mod:`~reident_airflow.sources.writers` over
  :mod:`~reident_airflow.sources.publish`.

The package itself defines only the :class:`Source` protocol: each backend's module is
imported where it is needed, so that reading a CSV file never loads SQLAlchemy, and reading a
histogram never loads pandas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeAlias, runtime_checkable

from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    import pandas as pd

    from reident_airflow.engine.aggregates import ClassAggregates
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.engine.differencing import ReleaseChanges
    from reident_airflow.engine.distributions import Distributions
    from reident_airflow.engine.identifiers import ColumnPlan, ColumnProfile
    from reident_airflow.engine.options import AssessmentOptions
    from reident_airflow.sources.fingerprint import InputFingerprint

__all__ = [
    "ClassCounting",
    "Counted",
    "HasSiblings",
    "HashesAhead",
    "Source",
    "population_register",
    "previous_release",
]

#: What a source counts for an assessment: the class-size histogram, the class table, the
#: class aggregates (with weight sums and sensitive value counts), or Spark's aggregates.
Counted: TypeAlias = "ClassSizes | ClassTable | ClassAggregates | Distributions"


class Source(Protocol):
    """Where the data is, as one object: a backend that counts what the options need.

    ``label`` names the source in messages and progress (never a URL: it may hold a
    password). ``count`` returns what the options need, counted where the data is (only the
    class-size histogram when no measure needs more); ``class_table`` the class table on the
    QIs (for the advice and a register); ``fingerprint`` what identifies the input
    (``rows``: the records the reader counted, for a CSV file), or ``None`` where there is
    nothing to fingerprint. ``close`` releases what the source holds (also on leaving a
    ``with`` block).

    The whole-table steps read through the source too, so that no adapter chooses the
    backend again: ``release_rows`` the rows Datafly generalizes (every column, or only
    ``columns``: a file's QIs as pandas Categoricals; a database table's values as the
    driver types them) and the SQL types of a database table's columns, which a release
    written back keeps (``{}`` for files, frames and queries); ``comparison_rows`` one side of
    Column Direct Match Protection, every column Arrow-backed (a file without records an
    empty frame: the engine names the empty side). Spark refuses the two: it runs Datafly
    and direct match where the data is (:mod:`~reident_airflow.sources.spark_release`).
    Another table beside this one (a population register, the previous release) is a
    capability of its own: :class:`HasSiblings`.

    For the identifier scan (issue 27): ``column_kinds`` gives every column's kind (of
    :data:`~reident_airflow.engine.identifiers.COLUMN_KINDS`; a CSV's are all ``string``; a
    name two columns share is refused), and ``profile`` counts each
    :class:`~reident_airflow.engine.identifiers.ColumnPlan` where the data is -- in one pass
    of aggregate queries, no row to the client -- into a
    :class:`~reident_airflow.engine.identifiers.ColumnProfile`: records, nulls, distinct
    values and singletons under the same exact equality as classes, the records matching
    each planned pattern, a bounded sample of matched values (kept in memory, never shown),
    values over 89, restricted ZIP3 codes. ``approximate`` (Spark only; refused elsewhere)
    estimates the distinct values and leaves ``singletons`` out.

    For the differencing risk (issue 28, docs/metrics.md §12): ``release_changes`` compares
    this source, the candidate release ``N``, with ``previous``, the release ``P`` it
    replaces, read by the same backend (two files or frames: one DuckDB; two tables or
    queries of one database: that database; two Spark DataFrames of one session: Spark; any
    other pair is refused). The arrivals ``N - P`` and departures ``P - N``, multiset
    differences on whole rows over the released ``columns`` (by default every column both
    hold, matched by name; the others are left out and named in a warning), are grouped on
    ``qis`` where the data is, under the exact equality of the reading contract, and only
    their class-size histograms come back, as a
    :class:`~reident_airflow.engine.differencing.ReleaseChanges`
    (:mod:`~reident_airflow.sources.release_changes`). The suppressed class (every QI ``*``)
    is left out of both histograms, as an assessment leaves it out.

    ``cancel`` stops the work the source runs now -- the database's statement, DuckDB's
    query, Spark's jobs -- from any thread, also from a signal handler that interrupted the
    reading (an operator's ``on_kill``): the reading then raises
    :class:`~reident_airflow.engine.errors.OperationCancelledError` (a database, DuckDB) or
    Spark's own error. Nothing running: nothing happens. It never raises
    (:mod:`~reident_airflow.sources.cancel`)."""

    @property
    def label(self) -> str: ...
    def count(self, options: AssessmentOptions) -> Counted: ...
    def class_table(self, qis: Sequence[str]) -> ClassTable: ...
    def release_rows(
        self, qis: Sequence[str], columns: Sequence[str] | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any]]: ...
    def comparison_rows(self) -> pd.DataFrame: ...
    def fingerprint(self, rows: int | None = None) -> InputFingerprint | None: ...
    def close(self) -> None: ...
    def cancel(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: Any) -> None: ...
    def column_kinds(self) -> dict[str, str]: ...
    def profile(
        self, plans: Sequence[ColumnPlan], *, approximate: bool = False
    ) -> tuple[ColumnProfile, ...]: ...
    def release_changes(
        self, previous: Source, qis: Sequence[str], columns: Sequence[str] | None = None
    ) -> ReleaseChanges: ...


@runtime_checkable
class HasSiblings(Protocol):
    """A source that reads another table beside itself, by the same backend: ``sibling``
    gives the source of ``name`` -- a file (or Parquet folder, or glob) read as this file is,
    a table of the same database (in the same schema, through the same engine), a table of
    the same Spark session's catalog or a Parquet path -- or ``None`` when there is no such
    table or file. Nothing is read but what tells whether it exists."""

    def sibling(self, name: str) -> Source | None: ...


@runtime_checkable
class HashesAhead(Protocol):
    """A source whose fingerprint is a file's hash, which ``hash_ahead`` starts now, beside
    the readings that follow rather than after them (files:
    :meth:`~reident_airflow.sources.files.FileSource.hash_ahead`)."""

    def hash_ahead(self) -> None: ...


def _sibling(source: Source, name: str) -> Source | None:
    """``source``'s sibling ``name`` (:class:`HasSiblings`); a source without is refused."""
    if not isinstance(source, HasSiblings):
        raise InvalidInputError(f"{source.label}: no other table is read beside it")
    return source.sibling(name)


def previous_release(source: Source, name: str, *, ledger: str | None = None) -> Source | None:
    """The release ``name`` that ``source`` replaces, read beside it by the same backend
    (:meth:`HasSiblings.sibling`), else -- the release gone -- its release ledger
    ``ledger``, when one is kept; ``None`` when there is neither (a first run). The one place
    a previous release is opened: the CLI, the operators and the GX metric call it."""
    found = _sibling(source, name)
    if found is None and ledger is not None:
        found = _sibling(source, ledger)
    return found


def population_register(source: Source, name: str) -> Source:
    """The population register ``name`` beside ``source`` (:meth:`HasSiblings.sibling`); one
    that does not exist is an input error."""
    found = _sibling(source, name)
    if found is None:
        raise InvalidInputError(f"population register {name!r}: no such table or file")
    return found


class ClassCounting:
    """What a source that groups into class tables counts for the options (files, frames,
    databases): the class aggregates with a weight or sensitive columns, else the class table
    when a measure needs it, else the class-size histogram. A subclass reads the three."""

    def count(self, options: AssessmentOptions) -> ClassSizes | ClassTable | ClassAggregates:
        """What ``options`` need, counted where the data is (the class docstring)."""
        qis = options.quasi_identifiers
        if options.weight or options.sensitive:
            return self.aggregates(qis, weight=options.weight, sensitive=options.sensitive)
        if options.needs_class_table:
            return self.class_table(qis)
        return self.histogram(qis)

    def histogram(self, qis: Sequence[str]) -> ClassSizes:
        raise NotImplementedError

    def class_table(self, qis: Sequence[str]) -> ClassTable:
        raise NotImplementedError

    def aggregates(
        self, qis: Sequence[str], *, weight: str | None = None, sensitive: Sequence[str] = ()
    ) -> ClassAggregates:
        raise NotImplementedError
