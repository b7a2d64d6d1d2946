"""What every source shares in counting column profiles for the identifier scan (issue 27).

A source counts a :class:`~reident_airflow.engine.identifiers.ColumnPlan` where the data is
and returns a :class:`~reident_airflow.engine.identifiers.ColumnProfile`
(:meth:`~reident_airflow.sources.Source.profile`); each backend writes its own statement (DuckDB
in :mod:`~reident_airflow.sources.files`, SQL in :mod:`~reident_airflow.sources.sql`, Spark in
:mod:`~reident_airflow.sources.spark`). What they share is here: the plans checked the same
way, the conditions that are the same on every backend (a number over 89 written as text,
the restricted ZIP3 areas as ranges of integer ZIP codes), and the profile built from the
counts. Nothing here reads data; a message names columns and counts, never a value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.identifiers import (
    COLUMN_KINDS,
    CONTENT_PATTERNS,
    RESTRICTED_ZIP3,
    ColumnPlan,
    ColumnProfile,
)

__all__ = [
    "NUMBER_KINDS",
    "OVER_89_TEXT",
    "RESTRICTED_ZIP3_SORTED",
    "check_plans",
    "profile_from_counts",
    "zip3_ranges",
]

#: Column kinds compared with 89 as numbers (a float's NaN and infinities never count).
NUMBER_KINDS = frozenset({"integer", "decimal", "float"})

#: Text that is a number over 89 (optional spaces and ``+``, leading zeros, a decimal part):
#: ``90``, ``097``, ``89.5``, ``120.0``; not ``89``, ``89.0``, ``-97`` or ``97 years``. The
#: same portable regular-expression subset as the content patterns, matched in full.
OVER_89_TEXT = (
    "^ *[+]?0*(9[0-9]|[1-9][0-9][0-9]+)([.][0-9]*)? *$|^ *[+]?0*89[.][0-9]*[1-9][0-9]* *$"
)

#: The restricted three-digit ZIP prefixes, in order (for stable statements).
RESTRICTED_ZIP3_SORTED = tuple(sorted(RESTRICTED_ZIP3))


def zip3_ranges() -> tuple[tuple[int, int], ...]:
    """The restricted ZIP3 areas as ranges of five-digit ZIP codes stored as integers
    (``036`` is ``3600`` to ``3699``: an integer column has lost the leading zeros)."""
    return tuple((int(z) * 100, int(z) * 100 + 99) for z in RESTRICTED_ZIP3_SORTED)


def check_plans(
    plans: Sequence[ColumnPlan], *, approximate: bool = False, exact_only: str | None = None
) -> tuple[ColumnPlan, ...]:
    """The plans, checked before anything is read: a known kind, known patterns, sampled
    kinds among the counted ones, a sample size not negative, each column once. With
    ``exact_only`` (the source's label), ``approximate`` is refused: that source always
    counts exactly."""
    plans = tuple(plans)
    if approximate and exact_only is not None:
        raise InvalidInputError(
            f"{exact_only}: approximate counts are only made on Spark; this source counts "
            "exactly (leave approximate off)"
        )
    seen: set[str] = set()
    for plan in plans:
        if plan.column in seen:
            raise InvalidInputError(f"column {plan.column!r} is planned twice for the profile")
        seen.add(plan.column)
        if plan.kind not in COLUMN_KINDS:
            raise InvalidInputError(
                f"column {plan.column!r}: unknown column kind {plan.kind!r} "
                f"(one of {', '.join(COLUMN_KINDS)})"
            )
        unknown = [p for p in plan.patterns if p not in CONTENT_PATTERNS]
        if unknown:
            raise InvalidInputError(
                f"column {plan.column!r}: unknown content pattern(s) {', '.join(unknown)}"
            )
        if len(set(plan.patterns)) != len(plan.patterns):
            raise InvalidInputError(f"column {plan.column!r}: a content pattern is planned twice")
        extra = [s for s in plan.sample if s not in plan.patterns]
        if extra:
            raise InvalidInputError(
                f"column {plan.column!r}: sampled kind(s) {', '.join(extra)} are not counted"
            )
        if plan.sample_size < 0:
            raise InvalidInputError(f"column {plan.column!r}: a negative sample size")
    return plans


def profile_from_counts(
    plan: ColumnPlan,
    *,
    records: int,
    nulls: int,
    distinct: int | None,
    singletons: int | None,
    matches: Mapping[str, int],
    samples: Mapping[str, Sequence[tuple[str, int]]],
    matched_distinct: Mapping[str, int | None],
    over_89: int | None,
    zip3: int | None,
    approximate: bool = False,
) -> ColumnProfile:
    """The :class:`ColumnProfile` of what a backend counted for ``plan``.

    ``samples`` holds up to ``sample_size`` matched values per sampled kind (the first in the
    order of their bytes: every backend picks the same ones), ``matched_distinct`` the
    distinct matched values (``complete`` when they all fit; ``None`` when not counted, then
    complete only if fewer than asked came back)."""
    kept: dict[str, tuple[tuple[str, int], ...]] = {}
    complete: dict[str, bool] = {}
    for kind in plan.sample:
        pairs = tuple((str(v), int(n)) for v, n in samples.get(kind, ()))
        kept[kind] = pairs[: plan.sample_size]
        total = matched_distinct.get(kind)
        complete[kind] = (
            len(pairs) <= plan.sample_size if total is None else int(total) <= plan.sample_size
        )
    return ColumnProfile(
        column=plan.column,
        kind=plan.kind,
        records=int(records),
        nulls=int(nulls),
        distinct=None if distinct is None else int(distinct),
        singletons=None if singletons is None else int(singletons),
        approximate=approximate,
        matches={p: int(matches.get(p) or 0) for p in plan.patterns},
        samples=kept,
        complete=complete,
        over_89=(int(over_89 or 0) if plan.over_89 else None),
        zip3=(int(zip3 or 0) if plan.zip3 else None),
    )
