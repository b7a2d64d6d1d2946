"""What to do about a k-anonymity breach: the aggregates a person needs to act on it.

A breach of ``min_k`` names a number; this module says where it comes from and what the
Datafly operator would do about it (docs/metrics.md §10):

- how many classes, and how many records in them, are smaller than k (from the class-size
  histogram);
- which quasi-identifier drives the risk: the one whose omission lowers the table's
  distinction the most, read from the QI ranking (the ranking holds every subset of the QIs
  with one column left out when it was computed with subsets of that size);
- what Datafly at that k would do with the given hierarchies: the levels it would choose and
  the records it would suppress, or that it cannot reach k within its suppression limit;
  each level with a label read from its hierarchy (:func:`level_label`), and the trade-off
  along Datafly's path: the records below k (those it would suppress if it stopped there) at
  each of its first steps.

Aggregates only: column names, counts, levels and labels that name no value — never a
record's values, nor a hierarchy's (a hierarchy may be built from the data it generalizes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from reident_airflow.engine.errors import AnonymizationInfeasibleError, InvalidInputError
from reident_airflow.engine.records import FieldRecord

if TYPE_CHECKING:
    from reident_airflow.engine.attributes import AttributeRisk
    from reident_airflow.engine.classes import ClassSizes, ClassTable
    from reident_airflow.engine.datafly import DataflyResult
    from reident_airflow.engine.datafly_search import DataflyStep
    from reident_airflow.engine.hierarchies import Hierarchy

__all__ = [
    "TRADEOFF_ROWS",
    "BreachAdvice",
    "DataflyOutlook",
    "RiskDriver",
    "TradeoffRow",
    "breach_advice",
    "datafly_outlook",
    "level_label",
]

#: The most rows of the trade-off table: the state before Datafly's first step and the states
#: after its first ``TRADEOFF_ROWS - 1`` steps.
TRADEOFF_ROWS = 8

_INTERVAL = re.compile(r"^(-?\d+)-(-?\d+)$")
_MONTH = re.compile(r"^\d{4}-\d{2}$")
_YEAR = re.compile(r"^\d{4}$")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _intervals(labels: Sequence[str]) -> str | None:
    widths = set()
    for label in labels:
        found = _INTERVAL.match(label)
        if found is None:
            return None
        lo, hi = int(found.group(1)), int(found.group(2))
        if hi < lo:
            return None
        widths.add(hi - lo + 1)
    low, high = min(widths), max(widths)
    return f"intervals of width {low}" if low == high else f"intervals of width {low} to {high}"


def _masked(values: Sequence[str], labels: Sequence[str]) -> str | None:
    """``last N characters masked`` when every label is its value with the same number of
    trailing characters replaced by one mask character (all of a shorter value)."""
    mask = labels[0][-1:] if labels[0] else ""
    if not mask or mask.isalnum():
        return None
    masked = []
    for value, label in zip(values, labels, strict=True):
        n = len(label) - len(label.rstrip(mask))
        if len(label) != len(value) or n == 0 or label[: len(label) - n] != value[: len(value) - n]:
            return None
        masked.append((n, len(value)))
    most = max(n for n, _ in masked)
    if any(n != min(most, length) for n, length in masked):
        return None
    unit = "digit" if all(v.isdigit() for v in values) else "character"
    return f"last {unit} masked" if most == 1 else f"last {most} {unit}s masked"


def _dates(values: Sequence[str], labels: Sequence[str]) -> str | None:
    for pattern, text in ((_MONTH, "dates to the month"), (_YEAR, "dates to the year")):
        if all(pattern.match(b) and a.startswith(b) for a, b in zip(values, labels, strict=True)):
            return text
    return None


def level_label(hierarchy: Hierarchy, level: int) -> str:
    """A short label for ``level`` of ``hierarchy``, read from the hierarchy's rows; it names
    no value (docs/metrics.md §10). The first rule that fits, over every row:

    - level 0: ``as is``;
    - a single label at that level: ``all in one group``;
    - every label an integer interval ``lo-hi``: ``intervals of width W`` (``hi - lo + 1``;
      ``of width W1 to W2`` when they differ);
    - every label its value with its last ``N`` characters replaced by one mask character (all
      of a shorter value): ``last N digits masked`` (``last digit masked`` for one;
      ``characters`` unless every value is digits);
    - every label the ``YYYY-MM`` (``YYYY``) its value starts with: ``dates to the month``
      (``year``);
    - else the number of groups: ``7 groups``.
    """
    labels = [str(x) for x in hierarchy.level_column(level)]
    if level == 0:
        return "as is"
    if len(set(labels)) == 1:
        return "all in one group"
    values = list(hierarchy.values)
    found = _intervals(labels) or _masked(values, labels) or _dates(values, labels)
    return found or _plural(len(set(labels)), "group")


@dataclass(frozen=True)
class TradeoffRow(FieldRecord):
    """A state on Datafly's path: the level of each QI, the records then in classes smaller
    than k, which Datafly would suppress if it stopped there, and each level's label
    (:func:`level_label`; ``None`` without the hierarchies)."""

    levels: Mapping[str, int]
    suppressed: int
    labels: Mapping[str, str] | None = None


def _labels(
    levels: Mapping[str, int], hierarchies: Mapping[str, Hierarchy] | None
) -> dict[str, str] | None:
    if hierarchies is None:
        return None
    return {q: level_label(hierarchies[q], lv) for q, lv in levels.items() if q in hierarchies}


def _tradeoff(
    names: Sequence[str],
    steps: Sequence[DataflyStep],
    below_at_start: int | None,
    hierarchies: Mapping[str, Hierarchy] | None,
) -> tuple[TradeoffRow, ...]:
    def row(levels: Mapping[str, int], suppressed: int) -> TradeoffRow:
        return TradeoffRow(dict(levels), int(suppressed), _labels(levels, hierarchies))

    levels = dict.fromkeys(names, 0)
    rows = [] if below_at_start is None else [row(levels, below_at_start)]
    for step in steps[: TRADEOFF_ROWS - len(rows)]:
        levels[step.generalized] = int(step.level)
        rows.append(row(levels, step.below_k))
    return tuple(rows)


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
    records, or not (then ``levels`` and ``below_k`` are its most generalized attempt).

    ``level_labels`` names each level in words (:func:`level_label`; ``None`` without the
    hierarchies); ``tradeoff`` lists the states on Datafly's path up to where it stopped, at
    most :data:`TRADEOFF_ROWS` (``None`` when not computed)."""

    k: int
    feasible: bool
    levels: Mapping[str, int]
    suppressed_records: int | None
    below_k: int | None
    suppression_limit: int | None
    level_labels: Mapping[str, str] | None = None
    tradeoff: tuple[TradeoffRow, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.tradeoff is not None:
            out["tradeoff"] = [row.to_dict() for row in self.tradeoff]
        return out

    def level_text(self, name: str, level: int) -> str:
        """``age → intervals of width 10 (level 2)``; ``age→2`` without a label."""
        label = (self.level_labels or {}).get(name)
        return f"{name}→{level}" if label is None else f"{name} → {label} (level {level})"

    def describe(self) -> str:
        levels = ", ".join(self.level_text(name, level) for name, level in self.levels.items())
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
    k: int,
    outcome: DataflyResult | AnonymizationInfeasibleError,
    *,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    below_at_start: int | None = None,
) -> DataflyOutlook:
    """The outlook from a Datafly run at ``k``: its result, or the error it raised.

    With the run's ``hierarchies`` each level gets its label (:func:`level_label`), in the
    outlook and in each row of the trade-off;
    ``below_at_start``, the records in classes smaller than ``k`` before any
    generalization, opens the trade-off table (else it starts after the first step).
    """
    if isinstance(outcome, AnonymizationInfeasibleError):
        attempt = outcome.best_attempt
        if attempt is None:
            raise InvalidInputError("an infeasible Datafly outcome without its best attempt")
        levels, steps = dict(attempt.levels), attempt.steps
        feasible, suppressed, below = False, None, int(attempt.below_k)
        limit = int(attempt.suppression_limit)
    else:
        levels, steps = dict(outcome.levels), outcome.steps
        feasible, suppressed, below = True, int(outcome.suppressed_records), 0
        limit = int(outcome.suppression_limit)
    return DataflyOutlook(
        k=k,
        feasible=feasible,
        levels=levels,
        suppressed_records=suppressed,
        below_k=below,
        suppression_limit=limit,
        level_labels=_labels(levels, hierarchies),
        tradeoff=_tradeoff(list(levels), steps, below_at_start, hierarchies),
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
