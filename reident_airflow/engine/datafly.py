"""Datafly k-anonymization (Sweeney 1997/98; docs/metrics.md §9).

The algorithm, exactly:

1. group the records on the current generalization of the quasi-identifiers (QIs);
2. ``below`` = records in classes of size ``< k``; if ``below <= limit`` (the suppression
   limit), remove those records and stop;
3. otherwise generalize by one level the QI with the most distinct values in the current
   generalized table, among the QIs not yet at their top level (ties: the QI given first);
   go to 1;
4. if every QI is at its top level and 2. still fails, raise
   :class:`~reident_airflow.engine.errors.AnonymizationInfeasibleError` with the best attempt.

References: L. Sweeney, "Guaranteeing anonymity when sharing medical data, the Datafly
system", Proc. AMIA Annual Fall Symposium, 1997; L. Sweeney, "Achieving k-anonymity privacy
protection using generalization and suppression", IJUFKS 10(5), 2002 (precision metric);
R. J. Bayardo and R. Agrawal, "Data privacy through optimal k-anonymization", ICDE 2005
(discernibility metric).

How it runs (rows are touched twice, at the start and at the end):

- each QI column is encoded once to integer codes (:func:`~.encoding.encode_series`), and each
  distinct value is looked up once in its hierarchy: for every QI and level an int array maps
  a level-0 code to the code of its generalization;
- the rows are grouped once into the base class table (:func:`~.classes.group_codes`);
- each step works on the class table only: the generalized QI's column is mapped to the next
  level and the table regrouped with ``weights=sizes``. When a hierarchy is not a tree (a
  label with two different parents, which ARX's files never have) the step regroups the
  base class table instead, which is always exact;
- at the end the final levels are applied to the rows (codes -> labels) and the suppressed
  rows dropped.

Deterministic: the same input gives the same output (no randomness, no hash-order dependence).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from reident_airflow.engine.classes import group_codes
from reident_airflow.engine.datafly_search import (
    DataflyAttempt,
    DataflyStep,
    Histogram,
    SearchSpace,
    datafly_search,
)
from reident_airflow.engine.encoding import encode_series, validate_quasi_identifiers
from reident_airflow.engine.errors import (
    AnonymizationInfeasibleError,
    EmptyDatasetError,
    HierarchyError,
    InvalidInputError,
)
from reident_airflow.engine.hierarchies import Hierarchy, uncovered_error, value_text
from reident_airflow.engine.numbers import check_suppression_limit, parse_suppression_limit

__all__ = [
    "SCHEMA",
    "DataflyResult",
    "DataflySummary",
    "InformationLoss",
    "datafly",
    "datafly_inputs",
    "datafly_summary",
    "empty_release_error",
    "infeasible_report",
    "parse_suppression_limit",
    "resolve_suppression_limit",
]

SCHEMA = "reident.datafly/v1"

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class InformationLoss:
    """How much the generalization and suppression cost.

    - ``precision``: Sweeney's Prec (2002) for a full-domain generalization,
      ``1 - mean_i(level_i / top_i)`` over the QIs (1 = nothing generalized, 0 = every QI at
      its top level). A QI whose hierarchy has a single level contributes 0 to the mean.
      Suppression is not part of this metric (it is reported as ``suppressed_records``).
    - ``discernibility``: Bayardo & Agrawal's discernibility metric (ICDE 2005),
      ``C_DM = sum_{output classes E} |E|^2 + suppressed * n``: every record is charged the size
      of the class it is indistinguishable in, a suppressed record the whole table.
    """

    precision: float
    discernibility: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class DataflySummary:
    """What a Datafly run reached, in aggregates: the fields every backend's result shares
    (:class:`DataflyResult` adds the pandas table, the Spark result a Spark DataFrame).
    ``achieved_k`` is the smallest output class (``None`` when every record was suppressed,
    which only a suppression limit of at least ``n`` allows)."""

    records: int
    k: int
    achieved_k: int | None
    suppression_limit: int
    suppressed_records: int
    quasi_identifiers: tuple[str, ...]
    levels: dict[str, int]
    top_levels: dict[str, int]
    steps: tuple[DataflyStep, ...]
    information_loss: InformationLoss

    @property
    def released_records(self) -> int:
        return self.records - self.suppressed_records

    def to_dict(self) -> dict[str, Any]:
        """The ``reident.datafly/v1`` JSON of docs/contract.md (aggregates only)."""
        return {
            "schema": SCHEMA,
            "records": self.records,
            "k": self.k,
            "achieved_k": self.achieved_k,
            "suppression_limit": self.suppression_limit,
            "suppressed_records": self.suppressed_records,
            "levels": dict(self.levels),
            "steps": [s.to_dict() for s in self.steps],
            "information_loss": self.information_loss.to_dict(),
        }

    def summary_fields(self) -> dict[str, Any]:
        """The fields, by name (not deep-copied), to build a backend's result from."""
        return {f.name: getattr(self, f.name) for f in fields(DataflySummary)}


@dataclass(frozen=True, eq=False)
class DataflyResult(DataflySummary):
    """The outcome of :func:`datafly`.

    ``table`` is the generalized DataFrame: the input's rows minus the suppressed ones, in the
    input's order and with its index; non-QI columns untouched; each QI column holds the
    generalized labels as strings. ``to_dict()`` is the ``reident.datafly/v1`` JSON of
    docs/contract.md (aggregates only: the table is not in it). ``achieved_k`` is the smallest
    output class (``None`` when every record was suppressed, which only a suppression limit
    of at least ``n`` allows).
    """

    table: pd.DataFrame = field(repr=False)


def datafly_summary(
    space: SearchSpace,
    levels: Sequence[int],
    steps: Sequence[DataflyStep],
    final: Histogram,
    *,
    k: int,
    limit: int,
) -> DataflySummary:
    """The summary of a finished search from the class-size histogram at its final levels:
    classes below ``k`` are suppressed; Prec and C_DM as :class:`InformationLoss` defines."""
    sizes, counts = final
    n = int((sizes * counts).sum())
    small = sizes < k
    suppressed = int((sizes[small] * counts[small]).sum())
    kept_sizes, kept_counts = sizes[~small], counts[~small]
    m = len(space.names)
    tops = [space.top(i) for i in range(m)]
    ratios = [levels[i] / tops[i] if tops[i] else 0.0 for i in range(m)]
    return DataflySummary(
        records=n,
        k=k,
        achieved_k=int(kept_sizes.min()) if kept_sizes.size else None,
        suppression_limit=limit,
        suppressed_records=suppressed,
        quasi_identifiers=space.names,
        levels=dict(zip(space.names, levels, strict=True)),
        top_levels=dict(zip(space.names, tops, strict=True)),
        steps=tuple(steps),
        information_loss=InformationLoss(
            precision=1.0 - sum(ratios) / m,
            discernibility=int((kept_sizes**2 * kept_counts).sum()) + suppressed * n,
        ),
    )


def resolve_suppression_limit(limit: int | float | None, k: int, records: int) -> int:
    """The suppression limit in records.

    ``None`` -> ``k`` records (Sweeney's default); an integer -> that many records (``>= 0``);
    a float in ``[0, 1)`` -> that fraction of ``records``, rounded down
    (:func:`~.numbers.check_suppression_limit`).
    """
    if limit is None:
        return k
    checked = check_suppression_limit(limit)
    if isinstance(checked, int):
        return checked
    # round() first so that 0.29 * 100 = 28.999999999999996 counts as 29 records
    return math.floor(round(checked * records, 9))


def empty_release_error(summary: DataflySummary) -> AnonymizationInfeasibleError | None:
    """The error that stops a run releasing no record (None when it releases some): every
    class stayed below ``k`` and the suppression limit let them all go. An empty table is
    never published; the error carries the run's state as its best attempt."""
    if summary.records == 0 or summary.released_records > 0:
        return None
    attempt = DataflyAttempt(
        levels=dict(summary.levels),
        below_k=summary.suppressed_records,
        suppression_limit=summary.suppression_limit,
        steps=tuple(summary.steps),
    )
    levels = ", ".join(f"{q}={lv}" for q, lv in summary.levels.items())
    return AnonymizationInfeasibleError(
        f"every record ({summary.records:,}) would be suppressed: at levels {levels} no class "
        f"reaches k={summary.k}, and the suppression limit "
        f"({summary.suppression_limit:,}) lets them all go; an empty release is not written. "
        "Give hierarchies that generalize further, a smaller k, or a suppression limit below "
        "the record count (Datafly then generalizes instead; a larger limit cannot help)",
        best_attempt=attempt,
    )


def infeasible_report(error: AnonymizationInfeasibleError, records: int, k: int) -> dict[str, Any]:
    """The ``reident.datafly/v1`` JSON of a run that could not reach k (aggregates only).

    The contract's keys that only a finished run has are ``null``; ``levels`` and ``steps`` are
    those of the best attempt (fewest records below k), also given whole in ``best_attempt``.
    """
    best = error.best_attempt if isinstance(error.best_attempt, DataflyAttempt) else None
    attempt = best.to_dict() if best is not None else None
    return {
        "schema": SCHEMA,
        "records": records,
        "k": k,
        "achieved_k": None,
        "suppression_limit": best.suppression_limit if best is not None else None,
        "suppressed_records": None,
        "levels": dict(best.levels) if best is not None else None,
        "steps": attempt["steps"] if attempt is not None else None,
        "information_loss": None,
        "passed": False,
        "below_k": best.below_k if best is not None else None,
        "best_attempt": attempt,
        "message": str(error),
    }


def _validate_k(k: Any, records: int) -> int:
    if isinstance(k, bool | np.bool_) or not isinstance(k, numbers.Integral):
        raise InvalidInputError(f"k must be a whole number, got {type(k).__name__}")
    if int(k) < 1:
        raise InvalidInputError(f"k must be at least 1, got {int(k)}")
    if int(k) > records:
        raise InvalidInputError(f"k = {int(k)} is larger than the number of records ({records})")
    return int(k)


@dataclass(frozen=True, eq=False)
class _Column:
    """One QI, encoded: row codes at level 0 and, per level, level-0 code -> level code."""

    name: str
    row_codes: IntArray  # level-0 code of every row
    level_maps: tuple[IntArray, ...]  # level_maps[l][level-0 code] = code at level l
    cards: tuple[int, ...]  # distinct labels at each level among the values present
    labels: tuple[Any, ...]  # labels[l][code at level l] = label text (a "str" array)
    # transitions[l][code at level l] = code at level l + 1, or None if not a function
    transitions: tuple[IntArray | None, ...]

    @property
    def top(self) -> int:
        return len(self.level_maps) - 1


def _texts(dictionary: Any) -> NDArray[Any]:
    """The lookup text of every dictionary entry (:func:`~.hierarchies.value_text`)."""
    if isinstance(getattr(dictionary, "dtype", None), pd.StringDtype):
        return np.asarray(pd.array(dictionary).fillna(""), dtype=object)
    return np.array([value_text(v) for v in dictionary], dtype=object)


def _encode_column(name: str, values: pd.Series, hierarchy: Hierarchy) -> _Column:
    codes, card, dictionary = encode_series(values)
    texts = _texts(dictionary)
    positions = hierarchy.positions(texts)  # hierarchy row of each dictionary entry
    uncovered = positions < 0
    if uncovered.any():
        records = int(np.bincount(codes, minlength=card)[uncovered].sum())
        distinct = len(set(texts[uncovered].tolist()))
        raise uncovered_error(name, distinct, records)
    # Level-0 codes: one per hierarchy row present, in dictionary order. Entries with the
    # same text (39 and "39" in one object column) share a code; without such entries the
    # level-0 codes are the dictionary codes themselves.
    dict_to_level0, used_rows = pd.factorize(positions)
    dict_to_level0 = dict_to_level0.astype(np.int64, copy=False)
    u0 = len(used_rows)
    row_codes = codes if u0 == card else dict_to_level0[codes]

    level_maps: list[IntArray] = [np.arange(u0, dtype=np.int64)]
    cards: list[int] = [u0]
    labels: list[Any] = [pd.array(hierarchy.level_column(0)[used_rows], dtype="str")]
    for level in range(1, hierarchy.levels):
        # label codes numbered in order of first appearance among the used rows
        level_codes, uniques = pd.factorize(hierarchy.level_column(level)[used_rows])
        level_maps.append(level_codes.astype(np.int64, copy=False))
        cards.append(len(uniques))
        labels.append(pd.array(np.asarray(uniques, dtype=object), dtype="str"))

    transitions: list[IntArray | None] = []
    for level in range(hierarchy.levels - 1):
        here, there = level_maps[level], level_maps[level + 1]
        step = np.full(cards[level], -1, dtype=np.int64)
        step[here] = there
        # a function iff every level-0 code agrees with the one its level-l label got
        transitions.append(step if np.array_equal(step[here], there) else None)
    return _Column(
        name=name,
        row_codes=row_codes,
        level_maps=tuple(level_maps),
        cards=tuple(cards),
        labels=tuple(labels),
        transitions=tuple(transitions),
    )


def datafly_inputs(
    columns: Sequence[Any],
    qis: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    records: int,
    k: Any,
    suppression_limit: int | float | None,
) -> tuple[tuple[str, ...], int, int]:
    """Datafly's checks of its inputs, shared by every backend: the QIs (checked against the
    table's ``columns``), ``k`` and the suppression limit in records. Raises as
    :func:`datafly` documents."""
    names = validate_quasi_identifiers(qis, [str(c) for c in columns])
    missing = [q for q in names if q not in hierarchies]
    if missing:
        raise HierarchyError(
            f"no hierarchy given for quasi-identifier{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}: Datafly needs one for every QI"
        )
    if records == 0:
        raise EmptyDatasetError("the table has no records: there is nothing to anonymize")
    k = _validate_k(k, records)
    return names, k, resolve_suppression_limit(suppression_limit, k, records)


def datafly(
    frame: pd.DataFrame,
    qis: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    k: int,
    suppression_limit: int | float | None = None,
    progress: Callable[[str], None] | None = None,
) -> DataflyResult:
    """k-anonymize ``frame`` on ``qis`` with Sweeney's Datafly (docs/metrics.md §9).

    ``hierarchies[qi]`` is the generalization hierarchy of each QI (values matched as text,
    see :func:`~.hierarchies.value_text`); ``qis`` order breaks ties. ``suppression_limit`` is
    the most records that may be removed: ``None`` for ``k`` records (Sweeney's default), a
    whole number of records, or a fraction in ``[0, 1)`` of the records (rounded down).
    ``progress``, if given, is called once per step with a one-line message (column names and
    counts only).

    Raises :class:`InvalidInputError` (unknown QI, k < 1 or k > records, bad limit),
    :class:`HierarchyError` (a QI without a hierarchy, values a hierarchy does not cover),
    :class:`EmptyDatasetError` (no records) and :class:`AnonymizationInfeasibleError` (every QI
    at its top level and still more records below k than the limit).
    """
    names, k, limit = datafly_inputs(
        list(frame.columns), qis, hierarchies, len(frame), k, suppression_limit
    )
    columns = [_encode_column(q, frame[q], hierarchies[q]) for q in names]
    # The base class table: every row grouped once on its level-0 codes.
    base_codes, base_sizes, row_class = group_codes(
        [c.row_codes for c in columns], [c.cards[0] for c in columns], return_inverse=True
    )
    assert row_class is not None
    base = _Base(base_codes, base_sizes, row_class)
    space = SearchSpace(names=names, cards=tuple(c.cards for c in columns))
    levels, steps = datafly_search(
        space, _PandasHistograms(columns, base), k=k, limit=limit, progress=progress
    )
    return _release(frame, columns, base, space, levels, k=k, limit=limit, steps=steps)


@dataclass(frozen=True, eq=False)
class _Base:
    """The base class table: level-0 code tuples, their sizes, and each row's class."""

    codes: IntArray
    sizes: IntArray
    row_class: IntArray


class _PandasHistograms:
    """:data:`~reident_airflow.engine.datafly_search.HistogramAt` on the encoded columns: each
    step regroups the current class table (the generalized QI mapped one level up) or, where
    the hierarchy is not a tree at that level, the base class table (always exact)."""

    def __init__(self, columns: list[_Column], base: _Base) -> None:
        self._columns = columns
        self._base = base
        self._levels = [0] * len(columns)
        self._codes, self._sizes = base.codes, base.sizes

    def __call__(self, levels: Sequence[int]) -> Histogram:
        columns, m = self._columns, len(self._columns)
        moved = [i for i in range(m) if levels[i] != self._levels[i]]
        cards = [columns[i].cards[levels[i]] for i in range(m)]
        if len(moved) == 1 and levels[moved[0]] == self._levels[moved[0]] + 1:
            chosen = moved[0]
            transition = columns[chosen].transitions[self._levels[chosen]]
        else:
            chosen, transition = -1, None
        if transition is not None:
            mapped = [
                transition[self._codes[:, i]] if i == chosen else self._codes[:, i]
                for i in range(m)
            ]
            self._codes, self._sizes, _ = group_codes(mapped, cards, weights=self._sizes)
        elif moved:
            base = self._base
            mapped = [columns[i].level_maps[levels[i]][base.codes[:, i]] for i in range(m)]
            self._codes, self._sizes, _ = group_codes(mapped, cards, weights=base.sizes)
        self._levels = list(levels)
        sizes, counts = np.unique(self._sizes, return_counts=True)
        return sizes.astype(np.int64, copy=False), counts.astype(np.int64, copy=False)


def _release(
    frame: pd.DataFrame,
    columns: list[_Column],
    base: _Base,
    space: SearchSpace,
    levels: list[int],
    *,
    k: int,
    limit: int,
    steps: list[DataflyStep],
) -> DataflyResult:
    """Apply the final levels: base classes -> final classes -> which rows survive; the
    generalized table without the records of classes below ``k``, and its information loss."""
    m = len(columns)
    final = [columns[i].level_maps[levels[i]][base.codes[:, i]] for i in range(m)]
    _, final_sizes, base_to_final = group_codes(
        final,
        [columns[i].cards[levels[i]] for i in range(m)],
        weights=base.sizes,
        return_inverse=True,
    )
    assert base_to_final is not None
    suppressed_class = final_sizes < k
    sizes, counts = np.unique(final_sizes.astype(np.int64, copy=False), return_counts=True)
    summary = datafly_summary(space, levels, steps, (sizes, counts), k=k, limit=limit)

    keep_rows = ~suppressed_class[base_to_final][base.row_class]
    suppressed = summary.suppressed_records
    # pandas copy-on-write: neither form lets a change to ``table`` reach ``frame``
    table = frame.loc[keep_rows] if suppressed else frame.copy(deep=False)
    for i, col in enumerate(columns):
        row_codes = col.row_codes[keep_rows] if suppressed else col.row_codes
        table[col.name] = col.labels[levels[i]].take(col.level_maps[levels[i]][row_codes])
    return DataflyResult(**summary.summary_fields(), table=table)
