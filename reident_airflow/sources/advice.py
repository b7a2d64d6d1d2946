"""Advice on a k breach, from what an adapter has at hand (docs/metrics.md §10).

The engine's :func:`~reident_airflow.engine.advice.breach_advice` needs the class sizes, the
QI ranking and a Datafly outcome. The command line and the operators have a source: this
module fetches what is missing from it, only once a breach of ``min_k`` happened (a passing
table costs nothing):

- the ranking: the assessment's own when it ranked the QIs, else computed from the class table
  (the caller's loader reads it where the data is);
- Datafly at the breached ``k``: on the rows (the caller's loader), with the hierarchies given
  for the QIs, or else those bundled with the package (ARX's hierarchies for the Adult columns,
  ``reident_airflow/data/hierarchies/``) when one exists for a QI of that name. Without a
  hierarchy for every QI there is no Datafly outlook, and the advice says which QIs lacked one.

Aggregates only, like everything it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from reident_airflow.engine.advice import BreachAdvice, breach_advice, datafly_outlook
from reident_airflow.engine.errors import AnonymizationInfeasibleError, HierarchyError

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
    given by the user and Datafly's suppression limit (default: Sweeney's, k records)."""

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


def _datafly(k: int, qis: Sequence[str], inputs: AdviceInputs) -> tuple[Any, tuple[str, ...]]:
    from reident_airflow.engine.datafly import datafly

    hierarchies, missing = hierarchies_for(qis, inputs.hierarchies)
    if missing or inputs.rows is None:
        return None, missing
    try:
        outcome: Any = datafly(inputs.rows(), list(qis), hierarchies, k, inputs.suppression_limit)
    except AnonymizationInfeasibleError as exc:
        outcome = exc
    except HierarchyError:
        # a bundled hierarchy that does not cover this table's values: no outlook, and the
        # QIs are named as lacking a hierarchy that fits
        return None, tuple(q for q in qis if q not in (inputs.hierarchies or {}))
    return datafly_outlook(k, outcome), ()


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
