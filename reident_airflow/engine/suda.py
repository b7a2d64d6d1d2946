"""Special uniques: SUDA2 scores and attribute contributions (docs/metrics.md §6).

A record's *minimal sample uniques* (MSUs) are the smallest sets of its key values that no
other record shares (Elliot et al. 2002, "SUDA: a program for detecting special uniques";
Manning, Haglin & Keane 2008, "A recursive search algorithm for statistical disclosure
assessment" — SUDA2). A record unique on one rare value is more exposed than one unique only on
a long combination: its SUDA score sums ``(M - k)!`` over its MSUs (``k`` the MSU's size, ``M``
the number of keys). The contribution of key ``i`` to a record's score is the part of the
score that comes from MSUs containing ``i``, over the score; the contribution of key ``i`` to
the table is ``100 * sum_r score_r * contribution_ri / sum_r score_r`` (percent; a record's
MSUs overlap, so the percentages do not add up to 100).

Conventions of sdcMicro 5.8.0's ``suda2`` (``original_scores = TRUE``), reproduced here:

- a missing value (``NA``) is no value at all: it is never part of an MSU, and a record with a
  missing key matches nobody on that key. The suppression marker ``*`` is treated the same way
  (a suppressed cell identifies nothing);
- fewer than 3 keys are padded by sdcMicro with constant columns, so ``M = max(m, 3)``;
- scores and contributions per record equal sdcMicro's ``score`` and ``contributionPercent``,
  and the table's contributions its ``attribute_contributions``
  (``tests/engine/test_suda.py``). DIS-SUDA is not computed.

Algorithm. Only a record that is unique on all its keys (a class of size 1 of the class table)
can have an MSU, and every key set of a record whose class has 2 or more records is shared. The
search runs over the class table, level by level on the size ``k`` of the key set, keeping for
every key set ``S`` of the current level the set of still-open unique records that are unique
on ``S`` (boolean arrays over those records). For a key set ``S`` of size ``k``:

- a record is a *candidate* if it has no missing value in ``S`` and is not unique on any of the
  ``k`` subsets ``S - {i}`` (uniqueness is inherited by supersets, so checking the immediate
  subsets is enough: this is the minimality test);
- only the candidates and the classes of size >= 2 are grouped on ``S`` (a unique record that
  is unique on some subset of ``S`` cannot share its values on ``S`` with a candidate); a
  candidate alone in its group has ``S`` as an MSU;
- a key set with no candidate is not grouped at all, and a record that is non-unique on fewer
  than ``k + 1`` key sets of size ``k`` cannot be a candidate at level ``k + 1`` and is dropped
  (Apriori-style pruning; it keeps what SUDA2's recursion keeps, in a form numpy can run).

Bound: at most ``sum_{k<=K} C(m, k)`` key sets (``K`` the largest MSU size searched, ``m``
keys: 4,095 for 12 keys), each grouping at most ``u_2 + u_1`` rows (``u_2`` classes of size
>= 2, ``u_1`` unique records), i.e. time ``O(2^m * (u_2 + u_1) * m)`` in the worst case and far
less once most unique records have found their small MSUs; memory ``O(C(m, m/2) * u_1)``
booleans for one level. Without a limit on the MSU size the number of keys is capped at
:data:`MAX_KEYS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from reident_airflow.engine._arrays import BoolArray, FloatArray, IntArray
from reident_airflow.engine.classes import ClassTable
from reident_airflow.engine.encoding import SUPPRESSION_MARKER
from reident_airflow.engine.errors import InvalidInputError

__all__ = ["MAX_KEYS", "SudaResult", "missing_codes", "suda2"]


#: Most keys searched exhaustively (``2^m - 1`` key sets); more need ``max_msu_size``.
MAX_KEYS = 16

# Key space up to which a key set is grouped with a direct bincount instead of a sort.
_BINCOUNT_LIMIT = 1 << 20


@dataclass(frozen=True)
class SudaResult:
    """SUDA2 of a class table.

    Per class (aligned with the class table): ``scores`` (0 for classes of size >= 2 and for
    unique records without an MSU) and ``contributions`` (shape ``(u, m)``: the share of the
    score coming from MSUs that contain each key, as sdcMicro's ``contributionPercent``).
    ``msus_by_size[k-1]`` is the number of MSUs of size ``k``.
    """

    keys: tuple[str, ...]
    records_with_msu: int
    max_score: float
    total_score: float
    attribute_contributions: tuple[float, ...]
    msus_by_size: tuple[int, ...]
    max_msu_size: int
    scores: FloatArray = field(repr=False, compare=False)
    contributions: FloatArray = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``suda`` object of the assessment JSON (docs/contract.md)."""
        return {
            "records_with_msu": self.records_with_msu,
            "max_score": self.max_score,
            "attribute_contributions": dict(
                zip(self.keys, self.attribute_contributions, strict=True)
            ),
            "msus_by_size": list(self.msus_by_size),
            "max_msu_size": self.max_msu_size,
        }


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value == SUPPRESSION_MARKER


def missing_codes(table: ClassTable) -> tuple[tuple[int, ...], ...]:
    """For each key, the codes that stand for a missing value or the marker ``*``.

    Read from the class table's dictionaries; a table without dictionaries (rebuilt from
    codes alone) has none.
    """
    if table.dictionaries is None:
        return tuple(() for _ in table.quasi_identifiers)
    out: list[tuple[int, ...]] = []
    for dictionary in table.dictionaries:
        values = dictionary.to_pylist() if isinstance(dictionary, pa.Array) else list(dictionary)
        out.append(tuple(i for i, v in enumerate(values) if _is_missing(v)))
    return tuple(out)


def _keys(columns: Sequence[IntArray], cards: Sequence[int], rows: IntArray | None) -> IntArray:
    """Mixed-radix key of some code columns (of the rows ``rows``, or of all rows)."""
    first = columns[0] if rows is None else columns[0][rows]
    key = first.astype(np.int64, copy=True)
    for col, card in zip(columns[1:], cards[1:], strict=True):
        key *= card
        key += col if rows is None else col[rows]
    return key


def _alone(shared: IntArray, own: IntArray, product: int) -> BoolArray:
    """Which keys of ``own`` occur once in ``own`` and not at all in ``shared``."""
    total = shared.shape[0] + own.shape[0]
    if product <= max(_BINCOUNT_LIMIT, 4 * total):
        counts = np.bincount(own, minlength=product)
        if shared.shape[0]:
            counts[shared] = 2
        alone: BoolArray = counts[own] == 1
        return alone
    # sorted candidates: alone if no equal neighbour and not among the shared classes' keys
    # (searched in ascending order, which keeps the binary searches in cache)
    order = np.argsort(own)
    sorted_own = own[order]
    same = sorted_own[1:] == sorted_own[:-1]
    alone_sorted = np.ones(own.shape[0], dtype=np.bool_)
    alone_sorted[1:] &= ~same
    alone_sorted[:-1] &= ~same
    if shared.shape[0]:
        shared = np.sort(shared)
        at = np.minimum(np.searchsorted(shared, sorted_own), shared.shape[0] - 1)
        alone_sorted &= shared[at] != sorted_own
    alone = np.empty(own.shape[0], dtype=np.bool_)
    alone[order] = alone_sorted
    return alone


class _Search(NamedTuple):
    """What every level of the MSU search reads (the unique records' codes and which of them
    are values, the shared classes' codes per key, the cardinalities, the score of an MSU of
    each size) and the arrays it adds to in place (per unique record its score and the part
    of it from MSUs containing each key; MSUs found per size)."""

    uniq_codes: IntArray
    valid: BoolArray
    any_missing: bool
    shared: list[IntArray]
    cards: list[int]
    weight: list[float]
    score: FloatArray
    raw: FloatArray
    msus: IntArray


def suda2(
    table: ClassTable,
    *,
    max_msu_size: int | None = None,
    missing: Sequence[Sequence[int]] | None = None,
) -> SudaResult:
    """SUDA2 scores and attribute contributions of a class table (sdcMicro-compatible).

    ``max_msu_size`` limits the search to MSUs of at most that many keys (default: all keys,
    as sdcMicro; required above :data:`MAX_KEYS` keys). ``missing`` gives, per key, the codes
    that are no value (default: :func:`missing_codes`).
    """
    keys = table.quasi_identifiers
    limit = _msu_limit(max_msu_size, len(keys))
    unique_idx = np.flatnonzero(table.sizes == 1)
    search = _search_of(table, unique_idx, missing)
    alive = np.arange(unique_idx.shape[0], dtype=np.int64)  # may still get an MSU
    previous: dict[tuple[int, ...], BoolArray] = {}
    for k in range(1, limit + 1):
        if alive.shape[0] == 0:
            break
        current, open_sets = _search_level(search, k, alive, previous)
        if k == limit:
            break
        # a candidate at level k + 1 is open on all k + 1 of its subsets of size k
        keep = open_sets >= k + 1
        if not keep.all():
            alive = alive[keep]
            current = {s: a[keep] for s, a in current.items()}
        previous = current
    return _result(
        tuple(keys), table.classes, unique_idx, search.score, search.raw, search.msus, limit
    )


def _search_of(
    table: ClassTable, unique_idx: IntArray, missing: Sequence[Sequence[int]] | None
) -> _Search:
    """The search over the unique records ``unique_idx`` of ``table``, nothing found yet."""
    m = len(table.quasi_identifiers)
    big_m = max(m, 3)  # sdcMicro pads 1 or 2 keys with constant columns
    shared_rows = table.codes[table.sizes >= 2]
    uniq_codes = table.codes[unique_idx]
    u1 = int(unique_idx.shape[0])
    miss = missing_codes(table) if missing is None else tuple(tuple(x) for x in missing)
    valid = _valid_values(miss, uniq_codes)
    return _Search(
        uniq_codes=uniq_codes,
        valid=valid,
        any_missing=not bool(valid.all()),
        shared=[np.ascontiguousarray(shared_rows[:, i]) for i in range(m)],
        cards=[max(int(c), 1) for c in table.cardinalities],
        weight=[0.0] + [float(math.factorial(big_m - k)) for k in range(1, m + 1)],
        score=np.zeros(u1, dtype=np.float64),
        raw=np.zeros((u1, m), dtype=np.float64),
        msus=np.zeros(m, dtype=np.int64),
    )


def _search_level(
    search: _Search, k: int, alive: IntArray, previous: dict[tuple[int, ...], BoolArray]
) -> tuple[dict[tuple[int, ...], BoolArray], IntArray]:
    """Level ``k``: the MSUs of size ``k`` of the open records ``alive`` scored into
    ``search``; returns, per key set of size ``k``, which open records are unique on it, and
    per open record on how many of these key sets it is still open (valid, not unique)."""
    m = search.uniq_codes.shape[1]
    alive_codes = [np.ascontiguousarray(search.uniq_codes[alive, i]) for i in range(m)]
    alive_valid = search.valid[alive]
    current: dict[tuple[int, ...], BoolArray] = {}
    open_sets = np.zeros(alive.shape[0], dtype=np.int64)
    for subset in combinations(range(m), k):
        cols = list(subset)
        valid_s = alive_valid[:, cols].all(axis=1) if search.any_missing else None
        inherited = _inherited(previous, subset, alive.shape[0])
        cand = ~inherited if valid_s is None else valid_s & ~inherited
        unique_s = inherited
        pos = np.flatnonzero(cand)
        if pos.shape[0]:
            hit = pos[_unique_on(cols, alive_codes, search.shared, search.cards, pos)]
            if hit.shape[0]:
                unique_s = inherited.copy()
                unique_s[hit] = True
                target = alive[hit]
                search.score[target] += search.weight[k]
                for c in cols:
                    search.raw[target, c] += search.weight[k]
                search.msus[k - 1] += int(hit.shape[0])
        current[subset] = unique_s
        open_sets += ~unique_s if valid_s is None else valid_s & ~unique_s
    return current, open_sets


def _inherited(
    previous: dict[tuple[int, ...], BoolArray], subset: tuple[int, ...], alive: int
) -> BoolArray:
    """Which open records are already unique on a subset of ``subset`` one key smaller
    (a fresh array: none for a single key)."""
    if len(subset) == 1:
        return np.zeros(alive, dtype=np.bool_)
    parents = [previous[subset[:i] + subset[i + 1 :]] for i in range(len(subset))]
    inherited = parents[0].copy()
    for p in parents[1:]:
        inherited |= p
    return inherited


def _msu_limit(max_msu_size: int | None, m: int) -> int:
    """The largest MSU searched: ``max_msu_size`` checked, or every key up to :data:`MAX_KEYS`."""
    if max_msu_size is None:
        if m > MAX_KEYS:
            raise InvalidInputError(
                f"SUDA2 over {m} keys searches up to 2^{m} key sets: give a maximum MSU size "
                f"(at most {MAX_KEYS} keys are searched exhaustively)"
            )
        return m
    if isinstance(max_msu_size, bool) or int(max_msu_size) != max_msu_size:
        raise InvalidInputError(f"max MSU size must be a whole number, got {max_msu_size!r}")
    if int(max_msu_size) < 1:
        raise InvalidInputError(f"max MSU size must be >= 1, got {max_msu_size}")
    return min(int(max_msu_size), m)


def _valid_values(miss: Sequence[Sequence[int]], uniq_codes: IntArray) -> BoolArray:
    """Which key values of each unique record are values (not one of ``miss``'s codes)."""
    u1, m = uniq_codes.shape
    if len(miss) != m:
        raise InvalidInputError(f"missing codes given for {len(miss)} of {m} keys")
    valid = np.ones((u1, m), dtype=np.bool_)
    for i, codes_i in enumerate(miss):
        if codes_i:
            valid[:, i] = ~np.isin(uniq_codes[:, i], np.asarray(codes_i, dtype=np.int64))
    return valid


def _unique_on(
    cols: list[int],
    alive_codes: list[IntArray],
    shared: list[IntArray],
    cards: list[int],
    pos: IntArray,
) -> BoolArray:
    """Which candidates (``pos`` among the open unique records) are unique on the key set
    ``cols``: their code tuple occurs in no shared class (size >= 2)."""
    sub_cards = [cards[c] for c in cols]
    product = math.prod(sub_cards)
    if product < 1 << 62:
        own = _keys([alive_codes[c] for c in cols], sub_cards, pos)
        others = _keys([shared[c] for c in cols], sub_cards, None)
    else:  # the key would overflow: number the distinct tuples first
        stacked = np.stack([np.concatenate([shared[c], alive_codes[c][pos]]) for c in cols], axis=1)
        _, dense = np.unique(stacked, axis=0, return_inverse=True)
        dense = dense.reshape(-1).astype(np.int64)
        product = int(dense.max()) + 1
        others, own = dense[: -pos.shape[0]], dense[-pos.shape[0] :]
    return _alone(others, own, product)


def _result(
    keys: tuple[str, ...],
    u: int,
    unique_idx: IntArray,
    score: FloatArray,
    raw: FloatArray,
    msus: IntArray,
    limit: int,
) -> SudaResult:
    """The :class:`SudaResult` of the unique records' scores and per-key raw scores."""
    m = len(keys)
    u1 = int(unique_idx.shape[0])
    scores = np.zeros(u, dtype=np.float64)
    scores[unique_idx] = score
    contributions = np.zeros((u, m), dtype=np.float64)
    has = score > 0
    contributions[unique_idx[has]] = raw[has] / score[has][:, None]
    total = float(score.sum())
    per_key = raw.sum(axis=0)
    attribute = tuple((100.0 * float(per_key[i]) / total) if total > 0 else 0.0 for i in range(m))
    return SudaResult(
        keys=keys,
        records_with_msu=int(has.sum()),
        max_score=float(score.max()) if u1 else 0.0,
        total_score=total,
        attribute_contributions=attribute,
        msus_by_size=tuple(int(x) for x in msus),
        max_msu_size=limit,
        scores=scores,
        contributions=contributions,
    )
