"""Comparing a candidate release with the one it replaces: what every backend shares.

The differencing measures (docs/metrics.md §12, :mod:`~reident_airflow.engine.differencing`)
need the arrivals ``N - P`` and the departures ``P - N`` of two releases, multiset differences
on whole released rows, grouped on the QIs. Each backend counts them where the data is, in
one statement of the same shape (files and frames: DuckDB; databases: the database; Spark:
Spark):

1. both releases, their compared columns grouped exactly (the grouping expressions of the
   reading contract, ``docs/reading.md``), as one ``UNION ALL`` tagged by side;
2. ``GROUP BY`` every compared column: per distinct row, ``n`` (held by the candidate) and
   ``p`` (held by the previous release). The row arrives ``max(n - p, 0)`` times and departs
   ``max(p - n, 0)`` times: exactly ``EXCEPT ALL`` both ways, under the equality of
   ``GROUP BY`` (``NULL`` one value, ``-0.0 = 0.0``, every NaN one value), which a
   ``NULL``-blind join or a collation could not give;
3. ``GROUP BY`` the QIs: per class, ``a(c)`` and ``d(c)``, its records in each release, and
   whether it is the suppressed class (every QI the text ``*``);
4. ``GROUP BY (a, d, suppressed)``: how many classes have each pair. Only these rows reach
   the client -- a few dozen, never a row or a class.

This module holds what does not depend on the backend: which columns are compared
(:func:`compared_columns`), that both sides type them alike (:func:`check_kinds`), and the
fold of the counted rows into a :class:`~reident_airflow.engine.differencing.ReleaseChanges`
(:func:`changes_from_counts`). It imports no backend.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.differencing import ReleaseChanges
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.file_source import resolve_columns

__all__ = [
    "ComparedColumns",
    "changes_from_counts",
    "check_kinds",
    "compared_columns",
    "other_backend",
]

_LOG = logging.getLogger(__name__)

#: Kinds of one family: MySQL/MariaDB ``FLOAT`` is grouped as the ``DOUBLE`` it converts to.
_KIND_FAMILIES = {"float32": "float"}
#: The kinds (of every backend) whose values are numbers.
_NUMBERS = frozenset({"integer", "float", "decimal", "number"})


@dataclass(frozen=True)
class ComparedColumns:
    """The columns two releases are compared on: ``candidate`` and ``previous`` are their
    positions in each release, pairwise (the same column), ``names`` as the candidate spells
    them, ``qis`` the positions of the QIs in ``names``; ``left_out`` the columns only one
    release holds (names only), not compared: ``gained`` those only the candidate holds,
    ``dropped`` those only the previous release held, ``gained_qis`` the QIs among
    ``gained`` (the comparison is then grouped on the QIs both hold)."""

    names: tuple[str, ...]
    candidate: tuple[int, ...]
    previous: tuple[int, ...]
    qis: tuple[int, ...]
    left_out: tuple[str, ...] = ()
    gained: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    gained_qis: tuple[str, ...] = ()

    @property
    def qi_names(self) -> tuple[str, ...]:
        return tuple(self.names[i] for i in self.qis)


def _unique(names: Sequence[str], label: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidInputError(
                f"{label}: column {name!r} appears twice: rename the columns before comparing "
                "releases"
            )
        seen.add(name)


def compared_columns(
    candidate: Sequence[str],
    previous: Sequence[str],
    qis: Sequence[str],
    columns: Sequence[str] | None = None,
    *,
    labels: tuple[str, str] = ("the candidate", "the previous release"),
) -> ComparedColumns:
    """The released columns two releases are compared on.

    By default every column both hold, matched by exact name (the order of the columns does
    not matter); a column only one of them holds is left out, named (names only) in
    ``gained`` / ``dropped`` for the verdict and in a warning of this module's logger: an
    attacker holding both releases can only subtract them on the columns they share. A QI
    the candidate gained is named in ``gained_qis`` and the rows are grouped on the QIs both
    hold (the verdict makes the gained QI a breach); the previous release must hold at least
    one QI. ``columns`` chooses the compared columns instead, each looked up in each release
    as a QI is (exactly, then without surrounding spaces); the QIs must then be among them.
    A header that repeats a name is refused.
    """
    if isinstance(qis, str) or not list(qis):
        raise InvalidInputError("no quasi-identifiers given: name at least one column")
    _unique(candidate, labels[0])
    _unique(previous, labels[1])
    if columns is None:
        shared = set(previous)
        chosen = tuple(c for c in candidate if c in shared)
        left_out = tuple(
            [c for c in candidate if c not in shared] + [c for c in previous if c not in chosen]
        )
        if not chosen:
            raise InvalidInputError(
                f"{labels[0]} and {labels[1]} share no column: there is nothing to compare"
            )
        if left_out:
            _LOG.warning(
                "the releases are compared on the %d columns both hold; left out, held by one "
                "release only: %s",
                len(chosen),
                ", ".join(repr(c) for c in left_out),
            )
        n_pos = tuple(candidate.index(c) for c in chosen)
        p_pos = tuple(previous.index(c) for c in chosen)
    else:
        if isinstance(columns, str):
            columns = [columns]
        n_pos = resolve_columns(columns, candidate, kind=f"compared column of {labels[0]}")
        p_pos = resolve_columns(columns, previous, kind=f"compared column of {labels[1]}")
        chosen = tuple(candidate[i] for i in n_pos)
        left_out = ()
    in_candidate = resolve_columns(qis, candidate)
    gained_qis: tuple[str, ...] = ()
    if columns is None:
        gained_qis = tuple(candidate[i] for i in in_candidate if i not in n_pos)
        if len(gained_qis) == len(in_candidate):
            raise InvalidInputError(
                f"{labels[1]} holds none of the quasi-identifiers "
                f"({', '.join(repr(q) for q in gained_qis)}): the releases cannot be compared "
                "on them; every record's quasi-identifiers are new information"
            )
        in_candidate = tuple(i for i in in_candidate if i in n_pos)
    try:
        qi_pos = tuple(n_pos.index(i) for i in in_candidate)
    except ValueError:
        missing = next(candidate[i] for i in in_candidate if i not in n_pos)
        raise InvalidInputError(
            f"quasi-identifier {missing!r} is not among the compared columns "
            f"({labels[1]} does not hold it, or columns= leaves it out)"
        ) from None
    gained = tuple(c for c in candidate if c not in chosen) if columns is None else ()
    dropped = tuple(c for c in previous if c not in chosen) if columns is None else ()
    return ComparedColumns(chosen, n_pos, p_pos, qi_pos, left_out, gained, dropped, gained_qis)


def check_kinds(
    compared: ComparedColumns,
    candidate: Mapping[int, str] | Sequence[str],
    previous: Mapping[int, str] | Sequence[str],
    *,
    labels: tuple[str, str] = ("the candidate", "the previous release"),
) -> None:
    """Each compared column holds values of one kind in both releases (``candidate`` and
    ``previous``: the kind of each release's column by its position). A value of one kind
    never equals one of another (``"1"`` is not ``1``), and a backend putting two kinds in
    one column would cast one to the other: such a column is refused, naming it and both
    kinds. Numbers of two types (an integer and a float, a decimal and a float) are refused
    too, with that reason: equal by value they would be equal, but no backend here compares
    them exactly (a float64 cannot hold every int64: converting merges ``2**53`` and
    ``2**53 + 1``). An empty kind (a SQLite column holding only ``NULL``) is alike any."""
    for name, i, j in zip(compared.names, compared.candidate, compared.previous, strict=True):
        a, b = candidate[i], previous[j]
        if not a or not b or _KIND_FAMILIES.get(a, a) == _KIND_FAMILIES.get(b, b):
            continue
        family_a, family_b = _KIND_FAMILIES.get(a, a), _KIND_FAMILIES.get(b, b)
        if family_a in _NUMBERS and family_b in _NUMBERS:
            raise InvalidInputError(
                f"column {name!r} holds {a} numbers in {labels[0]} and {b} numbers in "
                f"{labels[1]}: numbers of two types are not compared, as no exact comparison "
                "of them is made (converting one type to the other can merge different "
                "values); release both with one type (or leave the column out with columns=)"
            )
        raise InvalidInputError(
            f"column {name!r} holds {_said(a)} values in {labels[0]} and {_said(b)} values "
            f"in {labels[1]}: values of different kinds never compare equal (the text '1' "
            "is not the number 1); release both with one type (or leave the column out with "
            "columns=)"
        )


def _said(kind: str) -> str:
    """A kind as a message says it (a SQLite column's storage classes joined by ``or``)."""
    return " or ".join(kind.split("+"))


def other_backend(label: str, previous: object, kind: str) -> InvalidInputError:
    """The error for a previous release that is not of the candidate's backend."""
    return InvalidInputError(
        f"{label}: the previous release must be read by the same backend as the candidate "
        f"({kind}), to be compared where the data is; got {type(previous).__name__}. Two "
        "releases on different backends (or in two databases) cannot be compared yet"
    )


def _sizes(qis: tuple[str, ...], tally: Mapping[int, int]) -> ClassSizes | None:
    if not tally:
        return None
    order = sorted(tally)
    return ClassSizes(
        qis,
        np.array(order, dtype=np.int64),
        np.array([tally[s] for s in order], dtype=np.int64),
    )


def changes_from_counts(
    qis: Sequence[str],
    rows: Iterable[Sequence[Any]],
    compared: ComparedColumns | None = None,
) -> ReleaseChanges:
    """The :class:`ReleaseChanges` of the counted rows ``(a, d, suppressed, classes, n, p)``:
    ``classes`` classes had ``a`` arrivals and ``d`` departures (the suppressed class, every
    QI ``*``, flagged) and held ``n`` records of the candidate and ``p`` of the previous
    release. A pair may come in several rows (they add up).

    The suppressed class's arrivals and departures are not counted in either histogram, as
    the records of that class are not in an assessment's: all their QIs are ``*``, so the QIs
    find none of them. ``compared`` (the columns compared) names the columns only one
    release holds in the result."""
    names = tuple(qis)
    arrivals: dict[int, int] = {}
    departures: dict[int, int] = {}
    records = previous = 0
    for a, d, suppressed, classes, n, p in rows:
        records += int(n or 0)
        previous += int(p or 0)
        if int(suppressed or 0):
            continue
        size_a, size_d, count = int(a), int(d), int(classes)
        if size_a > 0:
            arrivals[size_a] = arrivals.get(size_a, 0) + count
        if size_d > 0:
            departures[size_d] = departures.get(size_d, 0) + count
    return ReleaseChanges(
        quasi_identifiers=names,
        previous_records=previous,
        records=records,
        arrivals=_sizes(names, arrivals),
        departures=_sizes(names, departures),
        gained_columns=() if compared is None else compared.gained,
        dropped_columns=() if compared is None else compared.dropped,
        gained_quasi_identifiers=() if compared is None else compared.gained_qis,
    )
