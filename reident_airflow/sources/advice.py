"""Advice on a k breach, from what an adapter has at hand (docs/metrics.md §10).

The engine's :func:`~reident_airflow.engine.advice.breach_advice` needs the class sizes, the
QI ranking and a Datafly outcome. The command line and the operators have a source: this
module fetches what is missing from it, only once a breach of ``min_k`` happened (a passing
table costs nothing):

- the ranking: the assessment's own when it ranked the QIs, else computed from the class table
  (the caller's loader reads it where the data is);
- Datafly at the breached ``k``: on the rows (the caller's loader), with the hierarchies given
  for the QIs, or else those bundled with the package (ARX's hierarchies for the Adult columns,
  ``reident_airflow/data/hierarchies/``) when one exists for a QI of that name, and at the
  suppression limit the caller will run Datafly with (default: Sweeney's ``k`` records, the
  default of the ``DataflyOperator`` and of ``reident datafly``). Without a hierarchy that
  covers the data for every QI there is no Datafly outlook, and the advice names every QI
  that lacked one, at once (those without a hierarchy and those whose hierarchy misses a
  value of the data).

Aggregates only, like everything it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.advice import BreachAdvice, breach_advice, datafly_outlook
from reident_airflow.engine.errors import AnonymizationInfeasibleError

if TYPE_CHECKING:
    import pandas as pd

    from reident_airflow.engine.assessment import Assessment
    from reident_airflow.engine.attributes import AttributeRisk
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.engine.hierarchies import Hierarchy

__all__ = ["AdviceInputs", "advise_on_breach", "bundled_hierarchy", "hierarchies_for"]


def bundled_hierarchy(column: str) -> Hierarchy | None:
    """The hierarchy bundled for a column of this name, if the package has one."""
    from reident_airflow.engine.hierarchies import load_hierarchy

    resource = files("reident_airflow").joinpath(f"data/hierarchies/adult_hierarchy_{column}.csv")
    if "/" in column or "\\" in column or not resource.is_file():
        return None
    return load_hierarchy(str(resource), column=column)


def hierarchies_for(
    quasi_identifiers: Sequence[str], given: Mapping[str, Hierarchy] | None = None
) -> tuple[dict[str, Hierarchy], tuple[str, ...]]:
    """The hierarchy of each QI (given first, bundled next) and the QIs that have none."""
    found: dict[str, Hierarchy] = {}
    missing: list[str] = []
    for name in quasi_identifiers:
        hierarchy = (given or {}).get(name) or bundled_hierarchy(name)
        if hierarchy is None:
            missing.append(name)
        else:
            found[name] = hierarchy
    return found, tuple(missing)


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
) -> tuple[BreachAdvice, tuple[str, ...]] | None:
    """The advice when ``assessment`` breached ``min_k`` (``None`` otherwise), and the QIs
    for which no hierarchy was available (then the advice has no Datafly outlook)."""
    limit = assessment.thresholds.min_k
    if limit is None or assessment.k >= limit:
        return None
    ranking, table = _ranking(assessment, table, inputs)
    outlook, missing = _datafly(limit, assessment.quasi_identifiers, inputs)
    return breach_advice(table, limit, ranking=ranking, datafly=outlook), missing
