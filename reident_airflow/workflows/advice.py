"""The advice on a breach of ``min_k``, from any source (docs/metrics.md §10).

The engine's :func:`~reident_airflow.engine.advice.breach_advice` needs the class sizes, the
QI ranking and a Datafly outcome. :func:`advise` fetches what is missing from the source the
assessment counted, only once a breach of ``min_k`` happened (a passing table costs
nothing; :func:`breached_k` is the one guard):

- a source that advises where the data is (:class:`AdvisesWhereTheDataIs`: Spark) counts
  the advice from its aggregates, Datafly run on histograms, never a row on the driver;
- any other source is read again: the ranking is the assessment's own when it ranked the
  QIs, else computed from the class table (read where the data is); Datafly at the breached
  ``k`` runs on the QI columns, with the hierarchies given for the QIs, or else those bundled
  with the package (:func:`~reident_airflow.sources.advice.hierarchies_for`), at the
  suppression limit the caller will run Datafly with (default: Sweeney's ``k`` records, the
  default of the ``DataflyOperator`` and of ``reident datafly``). Without a hierarchy that
  covers the data for every QI there is no Datafly outlook, and the advice names every QI
  that lacked one, at once (those without a hierarchy and those whose hierarchy misses a
  value of the data).

The command line and the risk operator both call :func:`advise` (through
:func:`~reident_airflow.workflows.assessment.run_assessment`), so they give the same advice
on every backend. Aggregates only, like everything it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast, runtime_checkable

from reident_airflow.engine.advice import BreachAdvice, breach_advice, datafly_outlook
from reident_airflow.engine.errors import AnonymizationInfeasibleError
from reident_airflow.sources.advice import hierarchies_for

if TYPE_CHECKING:
    import pandas as pd

    from reident_airflow.engine.assessment import Assessment
    from reident_airflow.engine.attributes import AttributeRisk
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.engine.hierarchies import Hierarchy
    from reident_airflow.sources import Counted, Source

__all__ = [
    "AdviceFound",
    "AdviceInputs",
    "AdvisesWhereTheDataIs",
    "HierarchiesOf",
    "advise",
    "advise_on_breach",
    "breached_k",
    "counted_table",
]

#: The advice on a k breach and the QIs no hierarchy was found for (then no Datafly outlook).
AdviceFound: TypeAlias = "tuple[BreachAdvice, tuple[str, ...]]"

#: The hierarchies of the QIs, given the loader of the source's QI columns (``None`` on a
#: source that advises where the data is: no row reaches the client). A caller whose
#: hierarchies are built from the data's own values reads them through the loader.
HierarchiesOf: TypeAlias = "Callable[[Callable[[], pd.DataFrame] | None], Mapping[str, Hierarchy]]"


@runtime_checkable
class AdvisesWhereTheDataIs(Protocol):
    """A source that counts the advice itself, from its aggregates (Spark:
    :meth:`~reident_airflow.sources.spark.SparkSource.advise`), instead of being read again."""

    def advise(
        self,
        result: Assessment,
        hierarchies: Mapping[str, Hierarchy],
        *,
        suppression_limit: int | float | None = None,
    ) -> AdviceFound: ...


def breached_k(result: Assessment) -> int | None:
    """The ``min_k`` that ``result`` breached, or ``None`` (no ``min_k`` given, or k
    reached): the one test of whether there is advice to give."""
    limit = result.thresholds.min_k
    if limit is None or result.k >= limit:
        return None
    return int(limit)


def _quiet(step: str) -> None:
    del step


def advise(
    source: Source,
    result: Assessment,
    counted: Counted,
    *,
    hierarchies: HierarchiesOf | Mapping[str, Hierarchy] | None = None,
    suppression_limit: int | float | None = None,
    progress: Callable[[str], None] = _quiet,
) -> AdviceFound | None:
    """The advice when ``result`` breached ``min_k`` (``None`` otherwise), its step told to
    ``progress``: counted where the data is by a source that can
    (:class:`AdvisesWhereTheDataIs`), else from ``source`` read again -- its class table
    where the data is, then its QI columns alone, once, for Datafly -- with ``hierarchies``
    (a mapping, or :data:`HierarchiesOf`), Datafly's outlook at ``suppression_limit``
    (``None``: k records). ``counted`` is what the source counted for ``result``."""
    limit = breached_k(result)
    if limit is None:
        return None
    given = hierarchies if callable(hierarchies) else _given(hierarchies or {})
    if isinstance(source, AdvisesWhereTheDataIs):
        progress(f"k = {result.k} < {limit}: counting the advice in Spark (Datafly on histograms)")
        return source.advise(result, given(None), suppression_limit=suppression_limit)
    progress(f"k = {result.k} < {limit}: reading {source.label} again for the advice")
    qis = result.quasi_identifiers
    frame: list[pd.DataFrame] = []

    def rows() -> pd.DataFrame:  # read once: for a hierarchy built from them, then Datafly
        if not frame:
            frame.append(source.release_rows(qis, qis)[0])
        return frame[0]

    inputs = AdviceInputs(
        class_table=lambda: source.class_table(qis),
        rows=rows,
        hierarchies=given(rows),
        suppression_limit=suppression_limit,
    )
    return advise_on_breach(result, counted_table(counted), inputs)


def _given(hierarchies: Mapping[str, Hierarchy]) -> HierarchiesOf:
    return lambda rows: hierarchies


def counted_table(counted: Counted) -> ClassSizes | ClassTable:
    """The class table or histogram of what a source counted (a ``ClassAggregates``'s)."""
    from reident_airflow.engine.aggregates import ClassAggregates

    if isinstance(counted, ClassAggregates):
        return counted.table
    return cast("ClassSizes | ClassTable", counted)


@dataclass(frozen=True)
class AdviceInputs:
    """How to reach what the advice needs beyond the assessment: loaders that read the class
    table and the rows from the adapter's source (each called at most once), the hierarchies
    given by the user and the suppression limit of the Datafly the user will run (a count or
    a fraction, as :func:`~reident_airflow.engine.datafly.datafly` takes it; default:
    Sweeney's, k records, the default of the ``DataflyOperator`` and ``reident datafly``)."""

    class_table: Callable[[], ClassTable] | None = None
    rows: Callable[[], pd.DataFrame] | None = None
    hierarchies: Mapping[str, Hierarchy] | None = None
    suppression_limit: int | float | None = None


def _ranking(
    assessment: Assessment, table: ClassSizes | ClassTable, inputs: AdviceInputs
) -> tuple[tuple[AttributeRisk, ...] | None, ClassSizes | ClassTable]:
    from reident_airflow.engine.attributes import attribute_risks
    from reident_airflow.engine.classes import ClassTable

    if assessment.attributes:
        return assessment.attributes, table
    full = table if isinstance(table, ClassTable) else None
    if full is None and inputs.class_table is not None:
        full = inputs.class_table()
    if full is None:
        return None, table
    return attribute_risks(full), full


def _uncovered(frame: pd.DataFrame, hierarchies: Mapping[str, Hierarchy]) -> list[str]:
    """The QIs whose hierarchy does not cover every value of their column in ``frame``."""
    from reident_airflow.engine.hierarchies import value_text

    uncovered = []
    for name, hierarchy in hierarchies.items():
        texts = [value_text(v) for v in frame[name].unique()]
        if (hierarchy.positions(texts) < 0).any():
            uncovered.append(name)
    return uncovered


def _datafly(k: int, qis: Sequence[str], inputs: AdviceInputs) -> tuple[Any, tuple[str, ...]]:
    from reident_airflow.engine.datafly import datafly

    hierarchies, missing = hierarchies_for(qis, inputs.hierarchies)
    if inputs.rows is None or (not hierarchies and missing):
        return None, missing
    frame = inputs.rows()
    # every QI without a hierarchy that fits, named at once: those without one and those
    # whose hierarchy (given or bundled) does not cover the data
    lacking = set(missing) | set(_uncovered(frame, hierarchies))
    if lacking:
        return None, tuple(q for q in qis if q in lacking)
    try:
        outcome: Any = datafly(frame, list(qis), hierarchies, k, inputs.suppression_limit)
    except AnonymizationInfeasibleError as exc:
        outcome = exc
    # the trade-off's first row, grouped as Datafly groups: with a limit of every record it
    # stops before its first step, suppressing the records then below k. Not the
    # assessment's records below k, which may differ: the assessment leaves out the records
    # whose QIs are all '*' (Datafly groups them as a class), and a database groups by its
    # own rules (a collation that ignores case or trailing spaces) where Datafly groups the
    # values' text (value_text), so the row would not be what the Datafly run suppresses
    start = datafly(frame, list(qis), hierarchies, k, len(frame)).suppressed_records
    return datafly_outlook(k, outcome, hierarchies=hierarchies, below_at_start=start), ()


def advise_on_breach(
    assessment: Assessment, table: ClassSizes | ClassTable, inputs: AdviceInputs
) -> AdviceFound | None:
    """The advice when ``assessment`` breached ``min_k`` (``None`` otherwise), and the QIs
    for which no hierarchy was available (then the advice has no Datafly outlook), from
    what ``inputs`` reach."""
    limit = breached_k(assessment)
    if limit is None:
        return None
    ranking, table = _ranking(assessment, table, inputs)
    outlook, missing = _datafly(limit, assessment.quasi_identifiers, inputs)
    return breach_advice(table, limit, ranking=ranking, datafly=outlook), missing
