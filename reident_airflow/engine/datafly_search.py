"""Datafly's search (Sweeney 1997/98; docs/metrics.md §9), apart from where the records are.

:func:`datafly_search` is the greedy loop of :mod:`reident_airflow.engine.datafly` (steps 1-4 of
its docstring) on class-size histograms: the pandas entry point
(:func:`~reident_airflow.engine.datafly.datafly`) and the Spark one
(:mod:`reident_airflow.sources.spark_release_datafly`) each give it a :data:`HistogramAt`
counted where their records are, so both take the same steps on the same data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from reident_airflow.engine.errors import AnonymizationInfeasibleError
from reident_airflow.engine.records import FieldRecord

__all__ = [
    "DataflyAttempt",
    "DataflyStep",
    "Histogram",
    "HistogramAt",
    "SearchSpace",
    "datafly_search",
    "records_below",
]

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class DataflyStep(FieldRecord):
    """One generalization: QI ``generalized`` went to ``level``, after which ``below_k``
    records were in classes smaller than k."""

    generalized: str
    level: int
    below_k: int


@dataclass(frozen=True)
class DataflyAttempt:
    """A state Datafly reached: the levels of the QIs and the records then below k.

    Carried by :class:`AnonymizationInfeasibleError` as ``best_attempt`` (the state with the
    fewest records below k; ties go to the later state). Aggregates only.
    """

    levels: dict[str, int]
    below_k: int
    suppression_limit: int
    steps: tuple[DataflyStep, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "levels": dict(self.levels),
            "below_k": self.below_k,
            "suppression_limit": self.suppression_limit,
            "steps": [s.to_dict() for s in self.steps],
        }


#: A class-size histogram: the distinct class sizes (ascending) and how many classes have each.
Histogram: TypeAlias = tuple[IntArray, IntArray]
#: The seam of the search: the class-size histogram the records form when each QI is at the
#: given level (one level per QI, in QI order). Called once per step, each call one level
#: above the previous one on one QI; wherever the records are (pandas here, Spark in
#: :mod:`reident_airflow.sources.spark_release_datafly`).
HistogramAt: TypeAlias = Callable[[Sequence[int]], Histogram]


@dataclass(frozen=True)
class SearchSpace:
    """What Datafly's search needs of the QIs besides the histograms: their names (in
    tie-breaking order) and, per QI and level, the distinct labels of the values present."""

    names: tuple[str, ...]
    cards: tuple[tuple[int, ...], ...]  # cards[i][level]; len(cards[i]) - 1 is the top level

    def top(self, i: int) -> int:
        return len(self.cards[i]) - 1


def records_below(histogram: Histogram, k: int) -> int:
    """The records in classes of fewer than ``k`` records."""
    sizes, counts = histogram
    small = sizes < k
    return int((sizes[small] * counts[small]).sum())


def datafly_search(
    space: SearchSpace,
    histogram_at: HistogramAt,
    *,
    k: int,
    limit: int,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[int], list[DataflyStep]]:
    """Sweeney's greedy search: generalize the QI with the most distinct values one level at
    a time until at most ``limit`` records are in classes below ``k``.

    ``histogram_at`` gives the class-size histogram at each state (:data:`HistogramAt`).
    Returns the final level of every QI and the steps taken; raises
    :class:`AnonymizationInfeasibleError` (with the best attempt) when every QI is at its top
    level and still too many records are below ``k``.
    """
    m = len(space.names)
    levels = [0] * m
    first = histogram_at(levels)
    below = records_below(first, k)
    steps: list[DataflyStep] = []
    best = (below, 0, list(levels))  # records below k, steps, levels of the best state
    if progress is not None:
        records, classes = int((first[0] * first[1]).sum()), int(first[1].sum())
        progress(
            f"step 0: {records:,} records in {classes:,} classes; "
            f"{below:,} records in classes below k={k} (limit {limit:,})"
        )
    while below > limit:
        candidates = [i for i in range(m) if levels[i] < space.top(i)]
        if not candidates:
            raise _infeasible(k, limit, below, _attempt(space, best, steps, limit))
        # The QI with the most distinct values in the current generalized table; ties: the
        # first given. Generalization never drops a record, so a QI's distinct values at its
        # level are the distinct labels of the values present: ``cards[level]``.
        chosen = max(candidates, key=lambda i: (space.cards[i][levels[i]], -i))
        levels[chosen] += 1
        below = records_below(histogram_at(levels), k)
        name = space.names[chosen]
        steps.append(DataflyStep(generalized=name, level=levels[chosen], below_k=below))
        if below <= best[0]:
            best = (below, len(steps), list(levels))
        if progress is not None:
            progress(
                f"step {len(steps)}: generalized {name} to level {levels[chosen]}; "
                f"{below:,} records in classes below k"
            )
    return levels, steps


def _attempt(
    space: SearchSpace, best: tuple[int, int, list[int]], steps: list[DataflyStep], limit: int
) -> DataflyAttempt:
    below, taken, levels = best
    return DataflyAttempt(
        levels=dict(zip(space.names, levels, strict=True)),
        below_k=below,
        suppression_limit=limit,
        steps=tuple(steps[:taken]),
    )


def _infeasible(
    k: int, limit: int, below: int, attempt: DataflyAttempt
) -> AnonymizationInfeasibleError:
    """The error for a search that ended with every QI at its top level."""
    return AnonymizationInfeasibleError(
        f"cannot reach k={k} within the suppression limit of {limit:,} records: with "
        f"every quasi-identifier at its top level, {below:,} records remain in classes "
        f"smaller than k (best attempt: {attempt.below_k:,} records below k at levels "
        f"{', '.join(f'{q}={lv}' for q, lv in attempt.levels.items())})",
        best_attempt=attempt,
    )
