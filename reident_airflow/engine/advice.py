"""What to do about a k-anonymity breach: the aggregates a person needs to act on it.

A breach of ``min_k`` names a number; this module says where it comes from and what the
Datafly operator would do about it (docs/metrics.md §10):

- how many classes, and how many records in them, are smaller than k (from the class-size
  histogram);
- which quasi-identifier drives the risk: the one whose omission lowers the table's
  distinction the most, read from the QI ranking (the ranking holds every subset of the QIs
  with one column left out when it was computed with subsets of that size);
- what Datafly at that k would do with the given hierarchies: the levels it would choose and
  the records it would suppress, or that it cannot reach k within its suppression limit.

Aggregates only: column names, counts, levels — never a record's values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reident_airflow.engine.errors import AnonymizationInfeasibleError, InvalidInputError
from reident_airflow.engine.records import FieldRecord

if TYPE_CHECKING:
    from reident_airflow.engine.attributes import AttributeRisk
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.engine.datafly import DataflyResult

__all__ = ["BreachAdvice", "DataflyOutlook", "RiskDriver", "breach_advice", "datafly_outlook"]


@dataclass(frozen=True)
class RiskDriver(FieldRecord):
    """The QI whose omission lowers the distinction the most.

    ``distinction`` is the full QI set's (distinct combinations / records) and
    ``distinction_without`` the same for the other QIs alone.
    """

    column: str
    distinction: float
    distinction_without: float


@dataclass(frozen=True)
class DataflyOutlook(FieldRecord):
    """What Datafly at the breached k would do: ``feasible`` with its levels and suppressed
    records, or not (then ``levels`` and ``below_k`` are its most generalized attempt)."""

    k: int
    feasible: bool
    levels: Mapping[str, int]
    suppressed_records: int | None
    below_k: int | None
    suppression_limit: int | None

    def describe(self) -> str:
        levels = ", ".join(f"{name}→{level}" for name, level in self.levels.items())
        if self.feasible:
            return (
                f"Datafly at k={self.k} would generalize {levels} and suppress "
                f"{self.suppressed_records} record(s)"
            )
        return (
            f"Datafly cannot reach k={self.k} within its suppression limit of "
            f"{self.suppression_limit} record(s): at {levels}, {self.below_k} record(s) "
            "are still below k"
        )


def datafly_outlook(
    k: int, outcome: DataflyResult | AnonymizationInfeasibleError
) -> DataflyOutlook:
    """The outlook from a Datafly run at ``k``: its result, or the error it raised."""
    if isinstance(outcome, AnonymizationInfeasibleError):
        attempt = outcome.best_attempt
        if attempt is None:
            raise InvalidInputError("an infeasible Datafly outcome without its best attempt")
        return DataflyOutlook(
            k=k,
            feasible=False,
            levels=dict(attempt.levels),
            suppressed_records=None,
            below_k=int(attempt.below_k),
            suppression_limit=int(attempt.suppression_limit),
        )
    return DataflyOutlook(
        k=k,
        feasible=True,
        levels=dict(outcome.levels),
        suppressed_records=int(outcome.suppressed_records),
        below_k=0,
        suppression_limit=int(outcome.suppression_limit),
    )


@dataclass(frozen=True)
class BreachAdvice(FieldRecord):
    """The aggregates behind a breach of ``min_k = k`` (see the module's docstring)."""

    k: int
    records: int
    classes: int
    classes_below_k: int
    records_below_k: int
    driver: RiskDriver | None
    datafly: DataflyOutlook | None

    def describe(self) -> str:
        """One paragraph for a log line, an exception message or an alert."""
        parts = [
            f"{self.classes_below_k} of {self.classes} classes, holding "
            f"{self.records_below_k} of {self.records} records, are smaller than k={self.k}"
        ]
        if self.driver is not None:
            parts.append(
                f"'{self.driver.column}' drives the risk: without it the distinction falls "
                f"from {self.driver.distinction:.4g} to {self.driver.distinction_without:.4g}"
            )
        if self.datafly is not None:
            parts.append(self.datafly.describe())
        return "; ".join(parts) + "."


def _below(table: ClassSizes | ClassTable, k: int) -> tuple[int, int]:
    sizes, counts = table.histogram()
    small = sizes < k
    return int(counts[small].sum()), int((sizes[small] * counts[small]).sum())


def _driver(
    quasi_identifiers: Sequence[str], ranking: Sequence[AttributeRisk]
) -> RiskDriver | None:
    names = tuple(quasi_identifiers)
    if len(names) < 2:
        return None
    by_columns = {tuple(sorted(r.columns)): r.distinction for r in ranking}
    full = by_columns.get(tuple(sorted(names)))
    if full is None:
        return None
    without: dict[str, float] = {}
    for name in names:
        rest = tuple(sorted(n for n in names if n != name))
        if rest not in by_columns:
            return None  # the ranking did not go as far as the subsets of m - 1 columns
        without[name] = by_columns[rest]
    # the lowest remaining distinction; ties go to the earlier QI
    column = min(names, key=lambda n: (without[n], names.index(n)))
    return RiskDriver(column=column, distinction=full, distinction_without=without[column])


def breach_advice(
    table: ClassSizes | ClassTable,
    k: int,
    *,
    ranking: Sequence[AttributeRisk] | None = None,
    datafly: DataflyOutlook | None = None,
) -> BreachAdvice:
    """The advice for a breach of ``min_k = k`` on ``table``.

    ``ranking`` is the table's QI ranking (:func:`~.attributes.attribute_risks`); the driver
    is named only when it holds the full set and every subset with one QI left out.
    ``datafly`` is :func:`datafly_outlook` of a Datafly run at ``k`` when one was made.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise InvalidInputError(f"k must be a whole number of at least 1, got {k!r}")
    classes_below, records_below = _below(table, int(k))
    driver = None if ranking is None else _driver(table.quasi_identifiers, ranking)
    return BreachAdvice(
        k=int(k),
        records=table.records,
        classes=table.classes,
        classes_below_k=classes_below,
        records_below_k=records_below,
        driver=driver,
        datafly=datafly,
    )
