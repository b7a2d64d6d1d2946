"""Column Direct Match Protection (docs/metrics.md §8).

An original table ``X`` and its released ("avatar") table ``Y`` hold the same ``n``
individuals, row-aligned by position or by a key column. For each column ``c``::

    m_c = #{i : x_ic = y_ic}                 matches: the value was released unchanged
    u_c = #distinct values of c in Y         missing counts as one value
    P_c = 100 * (1 - m_c * u_c / n^2)

and the metric is ``min_c P_c``, with the columns ranked by ``P_c`` ascending and those below
the target listed.

Reading of the formula (it is what makes the target below defensible): an attacker who knows
an individual's true value ``x_ic`` looks it up in the released column and picks one of the
avatar rows carrying it. The individual's own avatar carries it with probability ``m_c / n``,
and a value is shared on average by ``n / u_c`` avatar rows, so the pick is right with
probability about ``u_c / n``. ``m_c * u_c / n^2`` is therefore the expected share of
individuals re-identified from column ``c`` alone, and ``P_c`` the percentage protected.
A forgotten identifier (``u_c = m_c = n``) gives exactly 0; a constant column gives
``100 * (1 - 1/n)``.

Equality is on values, not on their text: ``1``, ``1.0`` and a CSV's ``"1"`` are equal when the
two sides' types differ, or when both sides are text that parses as numbers; otherwise values
compare as they are. Missing equals missing (``NaN``, ``None``, ``pd.NA`` alike).

The arithmetic lives in :func:`column_protection` and the ranking in
:func:`direct_match_from_counts`, so that a database pushdown path that only *counts*
``(m_c, u_c)`` gives the same result as :func:`direct_match_protection` over DataFrames; the
checks such a path makes (same messages, same order) are :func:`count_keyed`'s, on what its
:class:`KeyedCounter` counts.

Source: Octopize, "Column Direct Match Protection" (avatar privacy metrics documentation);
see the references of docs/metrics.md.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np
import pandas as pd

from reident_airflow.engine._column_match import alignment, column_counts, label
from reident_airflow.engine.defaults import DEFAULT_TARGET
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError

__all__ = [
    "BREACH_METRIC",
    "DEFAULT_TARGET",
    "SCHEMA",
    "ColumnProtection",
    "DirectMatchCounts",
    "DirectMatchResult",
    "KeyCounts",
    "KeyedCounter",
    "check_record_counts",
    "column_protection",
    "columns_to_score",
    "count_keyed",
    "direct_match_from_counts",
    "direct_match_protection",
    "direct_match_report",
    "validate_target",
]

SCHEMA: Final = "reident.direct_match/v1"

#: The metric a breach names when the protection is below the target.
BREACH_METRIC: Final = "direct_match.protection"


@dataclass(frozen=True)
class ColumnProtection:
    """``P_c`` of one column with the counts it was computed from."""

    column: str
    protection: float
    matches: int
    distinct_avatar_values: int


@dataclass(frozen=True)
class DirectMatchResult:
    """Column Direct Match Protection of an avatar table against its original.

    ``columns`` is ranked by ``protection`` ascending (the most re-identifying column first;
    ties keep the column order of the original table); ``protection`` is the first one's.
    ``below_target`` lists, in the same order, the columns whose protection is below
    ``target``; ``passed`` is ``protection >= target``. ``only_in_original`` and
    ``only_in_avatar`` name the columns that could not be compared; ``key`` is the column the
    rows were aligned on (``None``: by position).
    """

    records: int
    protection: float
    target: float
    columns: tuple[ColumnProtection, ...]
    only_in_original: tuple[str, ...] = ()
    only_in_avatar: tuple[str, ...] = ()
    key: str | None = None

    @property
    def below_target(self) -> tuple[str, ...]:
        """The columns whose protection is below ``target``, most re-identifying first."""
        return tuple(c.column for c in self.columns if c.protection < self.target)

    @property
    def passed(self) -> bool:
        """Whether the lowest protection reaches ``target``."""
        return self.protection >= self.target

    def to_dict(self) -> dict[str, Any]:
        """The ``reident.direct_match/v1`` document (docs/contract.md), JSON-serialisable.

        Extends the contract with ``key``, ``only_in_original`` and ``only_in_avatar``.
        :func:`direct_match_report` adds the breaches.
        """
        return {
            "schema": SCHEMA,
            "records": int(self.records),
            "protection": float(self.protection),
            "target": float(self.target),
            "columns": [
                {
                    "column": c.column,
                    "protection": float(c.protection),
                    "matches": int(c.matches),
                    "distinct_avatar_values": int(c.distinct_avatar_values),
                }
                for c in self.columns
            ],
            "below_target": list(self.below_target),
            "passed": bool(self.passed),
            "key": self.key,
            "only_in_original": list(self.only_in_original),
            "only_in_avatar": list(self.only_in_avatar),
        }


# ---------------------------------------------------------------------------------------------
# The arithmetic and the ranking: shared by the DataFrame path and the database pushdown path.


def _count(value: object, name: str) -> int:
    if isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be an integer count, not a boolean")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(f"{name} must be an integer count") from None


def validate_target(target: object) -> float:
    """The protection target: a number between 0 and 100 (a percentage).

    Shared by every path that gates on it (DataFrame, SQL, operator), so that one rule and
    one message hold everywhere.
    """
    if isinstance(target, bool | np.bool_) or not isinstance(target, int | float | np.number):
        raise InvalidInputError("target must be a number between 0 and 100")
    value = float(target)
    if not math.isfinite(value) or not 0.0 <= value <= 100.0:
        raise InvalidInputError(f"target must be between 0 and 100, got {value}")
    return value


def column_protection(matches: int, distinct_avatar_values: int, records: int) -> float:
    """``P_c = 100 * (1 - m_c * u_c / n^2)`` for one column.

    ``matches`` is ``m_c`` (rows whose released value equals the original one),
    ``distinct_avatar_values`` is ``u_c`` (distinct released values, missing counted once) and
    ``records`` is ``n``. The product is formed on integers, so a leaked identifier
    (``m_c = u_c = n``) gives exactly ``0.0``.
    """
    n = _count(records, "records")
    m = _count(matches, "matches")
    u = _count(distinct_avatar_values, "distinct_avatar_values")
    if n <= 0:
        raise EmptyDatasetError("direct match protection needs at least one record")
    if not 0 <= m <= n:
        raise InvalidInputError(f"matches must be between 0 and {n} records, got {m}")
    if not 1 <= u <= n:
        raise InvalidInputError(
            f"distinct_avatar_values must be between 1 and {n} records, got {u}"
        )
    n2 = n * n
    return 100.0 * (n2 - m * u) / n2


def direct_match_from_counts(
    records: int,
    counts: Mapping[str, tuple[int, int]],
    *,
    target: float = DEFAULT_TARGET,
    key: str | None = None,
    only_in_original: Sequence[str] = (),
    only_in_avatar: Sequence[str] = (),
) -> DirectMatchResult:
    """Rank columns from their counts: ``counts`` maps a column to ``(m_c, u_c)``.

    The database pushdown path counts in SQL and calls this, so that it ranks and passes
    exactly as :func:`direct_match_protection`. Ties in protection keep the mapping's order.
    """
    target_value = validate_target(target)
    n = _count(records, "records")
    if n <= 0:
        raise EmptyDatasetError("direct match protection needs at least one record")
    if not counts:
        raise InvalidInputError("no column to compare: counts is empty")
    scored = []
    for column, pair in counts.items():
        try:
            m, u = pair
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"counts of column {column!r} must be a pair (matches, distinct_avatar_values)"
            ) from None
        m = _count(m, f"matches of column {column!r}")
        u = _count(u, f"distinct_avatar_values of column {column!r}")
        scored.append(ColumnProtection(str(column), column_protection(m, u, n), m, u))
    ranked = tuple(sorted(scored, key=lambda c: c.protection))  # stable: ties keep order
    lowest = ranked[0].protection
    return DirectMatchResult(
        records=n,
        protection=lowest,
        target=target_value,
        columns=ranked,
        only_in_original=tuple(str(c) for c in only_in_original),
        only_in_avatar=tuple(str(c) for c in only_in_avatar),
        key=key,
    )


def _check_table(table: object, name: str) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise InvalidInputError(f"the {name} table must be a pandas DataFrame")
    if table.columns.has_duplicates:
        repeated = sorted({label(c) for c in table.columns[table.columns.duplicated()]})
        raise InvalidInputError(f"the {name} table has duplicated column names: {repeated}")
    return table


def columns_to_score(
    original: Sequence[Any], avatar: Sequence[Any], key: str | None, columns: Sequence[Any] | None
) -> tuple[tuple[str, ...], tuple[str, ...], list[Any]]:
    """From the two tables' column names: the columns of one table only (original's,
    avatar's), and the columns to score: ``columns`` checked, or every column of both tables
    but the key. Raises :class:`InvalidInputError` with the messages every path shares."""
    avatar_columns = set(avatar)
    original_columns = set(original)
    only_in_original = tuple(label(c) for c in original if c not in avatar_columns)
    only_in_avatar = tuple(label(c) for c in avatar if c not in original_columns)
    if columns is None:
        selected = [c for c in original if c in avatar_columns and c != key]
    else:
        if isinstance(columns, str):
            raise InvalidInputError("columns must be a sequence of column names, not one string")
        selected = list(dict.fromkeys(columns))
        if key is not None and key in selected:
            raise InvalidInputError(f"the key column {key!r} cannot also be scored")
        for name, present in (("original", original_columns), ("avatar", avatar_columns)):
            absent = [label(c) for c in selected if c not in present]
            if absent:
                raise InvalidInputError(f"columns missing from the {name} table: {absent}")
    if not selected:
        raise InvalidInputError(
            "no column to compare: the tables have no column in common"
            + ("" if key is None else f" besides the key {key!r}")
        )
    return only_in_original, only_in_avatar, selected


def check_record_counts(original: int, avatar: int) -> int:
    """Both tables have records, as many of them (the first checks of every path); returns
    that number."""
    for name, records in (("original", original), ("avatar", avatar)):
        if records == 0:
            raise EmptyDatasetError(f"the {name} table has no records")
    if original != avatar:
        raise InvalidInputError(
            f"the tables have different numbers of records: the original table has "
            f"{original}, the avatar table has {avatar}"
        )
    return original


# ---------------------------------------------------------------------------------------------
# The key checks from counts: shared by the paths that count where the data is (SQL, Spark).


@dataclass(frozen=True)
class KeyCounts:
    """What a counting backend found in one table (``name``: ``"original"`` or ``"avatar"``)
    for the key checks: its records, and whether it has the key column, how many of its
    records have a key value and how many distinct key values there are."""

    name: str
    records: int
    has_key: bool
    present: int
    distinct: int


def _check_key_counts(
    key: str,
    original: KeyCounts,
    avatar: KeyCounts,
    repeated: Callable[[str], tuple[int, int]],
) -> int:
    """The DataFrame path's checks of two tables aligned on ``key``, from counts and in its
    order: records in both, as many of them, the key column in both, then per table no
    missing key value and no repeated one. ``repeated(name)`` counts, for the message, the
    key values of that table occurring more than once and the records holding them; it is
    called only on a repeated key. Returns the number of records."""
    n = check_record_counts(original.records, avatar.records)
    for side in (original, avatar):
        if not side.has_key:
            raise InvalidInputError(f"key column {key!r} is missing from the {side.name} table")
    for side in (original, avatar):
        if side.present < side.records:
            raise InvalidInputError(
                f"key column {key!r} has {side.records - side.present} missing values in the "
                f"{side.name} table"
            )
        if side.distinct != side.present:
            keys, rows = repeated(side.name)
            raise InvalidInputError(
                f"key column {key!r} is not unique in the {side.name} table: {keys} key values "
                f"occur more than once, on {rows} records"
            )
    return n


def _check_key_matches(key: str, records: int, matched: int) -> None:
    """Every key of one table is in the other: the join on the key has ``records`` rows."""
    if matched != records:
        # Both keys are unique and the tables have n records each: as many avatar keys are
        # missing from the original table as the other way round.
        missing = records - matched
        raise InvalidInputError(
            f"key column {key!r} does not match between the tables: {missing} key values of "
            f"the original table are not in the avatar table, and {missing} key values of "
            f"the avatar table are not in the original table"
        )


def _keyed_columns_to_score(
    original: Sequence[str],
    avatar: Sequence[str],
    key: str,
    columns: Sequence[Any] | None,
    *,
    records: int,
    joined_rows: Callable[[], int],
) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    """Columns to score for tables whose column names are text (a database's, Spark's):
    ``columns`` are read as text. As on the DataFrame path a key mismatch is reported before a
    refused column: on a refusal ``joined_rows()`` counts the join on the key first."""
    given = columns if columns is None or isinstance(columns, str) else [str(c) for c in columns]
    try:
        return columns_to_score(original, avatar, key, given)
    except InvalidInputError:
        _check_key_matches(key, records, joined_rows())
        raise


def _match_counts(
    selected: Sequence[str], joined: Sequence[Any], distinct: Sequence[Any]
) -> dict[str, tuple[int, int]]:
    """``(m_c, u_c)`` per selected column from a counting backend's two aggregate rows:
    ``joined`` = the join's rows, then each column's matches; ``distinct`` = per column its
    distinct values, then 1 if it has a missing value (missing counts as one value). An
    aggregate that is NULL (no row) counts 0."""
    return {
        c: (int(joined[1 + i] or 0), int(distinct[2 * i] or 0) + int(distinct[2 * i + 1] or 0))
        for i, c in enumerate(selected)
    }


@dataclass(frozen=True)
class DirectMatchCounts:
    """What a counting backend counted: ``n``, ``(m_c, u_c)`` per column and the column
    layout."""

    records: int
    counts: dict[str, tuple[int, int]]
    only_in_original: tuple[str, ...]
    only_in_avatar: tuple[str, ...]

    def result(
        self, *, target: float = DEFAULT_TARGET, key: str | None = None
    ) -> DirectMatchResult:
        """Ranked and gated by :func:`direct_match_from_counts`."""
        return direct_match_from_counts(
            self.records,
            self.counts,
            target=target,
            key=key,
            only_in_original=self.only_in_original,
            only_in_avatar=self.only_in_avatar,
        )


class KeyedCounter(Protocol):
    """A backend counting two tables aligned on a key where they are (a database, Spark).
    ``name`` is ``"original"`` or ``"avatar"``; ``columns`` gives a table's column names,
    ``key_counts`` its records and key counts, ``repeated_keys`` its key values occurring more
    than once and the records holding them, ``joined_rows`` the rows of the join on the key;
    ``matches`` one row: the join's rows, then each selected column's matches; ``distinct``
    one row of the avatar table: per column its distinct values, then 1 if one is missing."""

    def columns(self, name: str) -> Sequence[str]: ...
    def key_counts(self, name: str) -> KeyCounts: ...
    def repeated_keys(self, name: str) -> tuple[int, int]: ...
    def joined_rows(self) -> int: ...
    def matches(self, selected: Sequence[str]) -> Sequence[Any]: ...
    def distinct(self, selected: Sequence[str]) -> Sequence[Any]: ...


def count_keyed(
    counter: KeyedCounter, key: str, columns: Sequence[Any] | None
) -> DirectMatchCounts:
    """The checks of the DataFrame path (same messages, same order) and ``(m_c, u_c)`` per
    column, from what ``counter`` counts: one pass per table, one over the join, one over
    the avatar table (a repeated key or a refused column costs one more)."""
    n = _check_key_counts(
        key, counter.key_counts("original"), counter.key_counts("avatar"), counter.repeated_keys
    )
    only_in_original, only_in_avatar, selected = _keyed_columns_to_score(
        counter.columns("original"),
        counter.columns("avatar"),
        key,
        columns,
        records=n,
        joined_rows=counter.joined_rows,
    )
    row = counter.matches(selected)
    _check_key_matches(key, n, int(row[0]))
    counts = _match_counts(selected, row, counter.distinct(selected))
    return DirectMatchCounts(n, counts, only_in_original, only_in_avatar)


def direct_match_protection(
    original: pd.DataFrame,
    avatar: pd.DataFrame,
    *,
    key: str | None = None,
    target: float = DEFAULT_TARGET,
    columns: Sequence[str] | None = None,
) -> DirectMatchResult:
    """Column Direct Match Protection of ``avatar`` against ``original`` (docs/metrics.md §8).

    Rows are aligned by position, or by ``key`` (a column of both tables, unique in each, and
    not scored). Every column present in both tables is scored, or only ``columns`` if given;
    columns present in one table only are reported in ``only_in_original`` /
    ``only_in_avatar``.

    Raises :class:`EmptyDatasetError` for a table without records and
    :class:`InvalidInputError` for different row counts, a missing, incomplete, non-unique or
    non-matching key, unknown ``columns``, or no column to compare. Messages carry counts and
    column names, never a record's values.
    """
    original = _check_table(original, "original")
    avatar = _check_table(avatar, "avatar")
    target_value = validate_target(target)
    n = check_record_counts(len(original), len(avatar))
    positions = None if key is None else alignment(original, avatar, key)

    only_in_original, only_in_avatar, selected = columns_to_score(
        list(original.columns), list(avatar.columns), key, columns
    )
    counts: dict[str, tuple[int, int]] = {}
    for column in selected:
        y = avatar[column]
        if positions is not None:
            y = y.take(positions)
        counts[label(column)] = column_counts(original[column], y, label(column))
    return direct_match_from_counts(
        n,
        counts,
        target=target_value,
        key=key,
        only_in_original=only_in_original,
        only_in_avatar=only_in_avatar,
    )


def direct_match_report(result: DirectMatchResult) -> dict[str, Any]:
    """The ``reident.direct_match/v1`` JSON the command line writes and the operator pushes:
    :meth:`DirectMatchResult.to_dict` with ``breaches``
    (``[{"metric": BREACH_METRIC, "observed": P, "limit": target}]`` below the target, else
    ``[]``), the shape every reident gate reports and breach alerts read."""
    report = result.to_dict()
    below = {"metric": BREACH_METRIC, "observed": report["protection"], "limit": report["target"]}
    report["breaches"] = [] if result.passed else [below]
    return report
