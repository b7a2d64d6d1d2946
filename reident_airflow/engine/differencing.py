"""The differencing risk between a release and the one it replaces (docs/metrics.md §12).

A scheduled release is rarely read alone: whoever keeps the previous release ``P`` and the
candidate ``N`` can subtract them. The rows of ``N`` that ``P`` does not hold are the
**arrivals**, the rows of ``P`` that ``N`` no longer holds the **departures** (multiset
differences on whole released rows: an updated record is one departure and one arrival). An
attacker who knows that a person arrived since the last release, and knows the person's
quasi-identifiers, looks only at the arrivals of the person's class ``c``: the record is found
with probability ``1 / a(c)``, however large the class is in ``N``. Departures read the same
way, ``1 / d(c)``.

So each side is a class-size histogram of its own -- the arrivals grouped on the QIs, the
departures grouped on the QIs -- and its measures are the prosecutor measures of §2 over that
histogram, as shares of the arriving (departing) records. A source counts the two histograms
where the data is (``EXCEPT ALL`` then ``GROUP BY``); this module only reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.defaults import DEFAULT_RECORD_THRESHOLD
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.records import field_dict
from reident_airflow.engine.sample import sample_risk, validate_threshold

__all__ = [
    "DIFFERENCING_SCHEMA",
    "Movement",
    "ReleaseChanges",
    "ReleaseDifference",
    "arrivals_to_hold_back",
    "differencing",
    "hold_back_advice",
]

#: The ``schema`` of :meth:`ReleaseDifference.to_dict`.
DIFFERENCING_SCHEMA = "reident.differencing/v1"


@dataclass(frozen=True)
class ReleaseChanges:
    """What a source counted comparing the candidate ``N`` with the previous release ``P``.

    ``previous_records`` and ``records`` are the record counts of ``P`` and ``N``;
    ``arrivals`` the class-size histogram, on ``quasi_identifiers``, of the rows of ``N``
    missing from ``P`` (``None``: no arrival), ``departures`` that of the rows of ``P``
    missing from ``N`` (``None``: no departure). Both are multiset differences: a row held
    three times in ``N`` and once in ``P`` makes two arrivals.

    ``gained_columns`` are the columns ``N`` holds and ``P`` did not, ``dropped_columns``
    those ``P`` held and ``N`` no longer does (names only; neither is compared).
    ``gained_quasi_identifiers`` are the QIs among the gained columns: the rows are then
    compared, and grouped, on the QIs both releases hold (``quasi_identifiers``), and every
    record's value of a gained QI is new information no comparison measures -- a breach
    (:func:`~reident_airflow.engine.assessment.with_release_difference`).
    """

    quasi_identifiers: tuple[str, ...]
    previous_records: int
    records: int
    arrivals: ClassSizes | None = None
    departures: ClassSizes | None = None
    gained_columns: tuple[str, ...] = ()
    dropped_columns: tuple[str, ...] = ()
    gained_quasi_identifiers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in (
            "quasi_identifiers",
            "gained_columns",
            "dropped_columns",
            "gained_quasi_identifiers",
        ):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        stray = set(self.gained_quasi_identifiers) - set(self.gained_columns)
        if stray:
            raise InvalidInputError(
                f"gained quasi-identifiers {sorted(stray)} are not among the gained columns"
            )
        if not self.quasi_identifiers:
            raise InvalidInputError("the release comparison needs at least one quasi-identifier")
        for name in ("previous_records", "records"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"{name} must be a whole number >= 0, got {value!r}")
        for name, within, total in (
            ("arrivals", self.arrivals, self.records),
            ("departures", self.departures, self.previous_records),
        ):
            if within is None:
                continue
            if tuple(within.quasi_identifiers) != self.quasi_identifiers:
                raise InvalidInputError(
                    f"the {name} were grouped on {list(within.quasi_identifiers)}, "
                    f"not on the quasi-identifiers {list(self.quasi_identifiers)}"
                )
            if within.records > total:
                raise InvalidInputError(
                    f"{within.records} {name} cannot come from a release of {total} records"
                )


@dataclass(frozen=True, kw_only=True)
class Movement:
    """The measures of one side of the difference (the arrivals, or the departures).

    ``records`` moved, in ``classes`` classes of the QIs; ``k`` is the fewest that moved in
    one class (``a(c)`` or ``d(c)``), ``highest_risk`` ``1 / k``, ``average_risk`` the mean of
    ``1 / a(c)`` over the moving records (``classes / records``), ``records_at_risk`` the share
    of moving records whose risk is strictly above ``record_threshold``, and ``histogram``
    the ``(size, classes)`` pairs. With nothing moving, ``records`` is 0 and every measure
    ``None``: there is no record to find.
    """

    records: int
    classes: int
    record_threshold: float
    k: int | None = None
    highest_risk: float | None = None
    average_risk: float | None = None
    records_at_risk: float | None = None
    histogram: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = field_dict(
            self,
            (
                "records",
                "classes",
                "k",
                "highest_risk",
                "average_risk",
                "records_at_risk",
                "record_threshold",
            ),
        )
        out["histogram"] = [list(pair) for pair in self.histogram]
        return out


def _movement(sizes: ClassSizes | None, record_threshold: float) -> Movement:
    if sizes is None:
        return Movement(records=0, classes=0, record_threshold=record_threshold)
    risk = sample_risk(sizes.sizes, sizes.counts, record_threshold)
    return Movement(
        records=risk.records,
        classes=risk.classes,
        record_threshold=record_threshold,
        k=sizes.k,
        highest_risk=risk.highest_risk,
        average_risk=risk.average_risk,
        records_at_risk=risk.records_at_risk,
        histogram=tuple((int(s), int(c)) for s, c in zip(sizes.sizes, sizes.counts, strict=True)),
    )


@dataclass(frozen=True)
class ReleaseDifference:
    """The differencing risk of a candidate against the release it replaces: the counted
    ``changes`` echoed, and the measures of the ``arrivals`` and the ``departures``."""

    changes: ReleaseChanges
    arrivals: Movement
    departures: Movement

    @property
    def unchanged(self) -> bool:
        """Whether the candidate holds exactly the rows (and columns) of the previous
        release."""
        return (
            self.arrivals.records == 0
            and self.departures.records == 0
            and not self.changes.gained_columns
            and not self.changes.dropped_columns
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``reident.differencing/v1`` JSON: counts and shares only."""
        return {
            "schema": DIFFERENCING_SCHEMA,
            "quasi_identifiers": list(self.changes.quasi_identifiers),
            "previous_records": self.changes.previous_records,
            "records": self.changes.records,
            "arrivals": self.arrivals.to_dict(),
            "departures": self.departures.to_dict(),
            "gained_columns": list(self.changes.gained_columns),
            "dropped_columns": list(self.changes.dropped_columns),
            "gained_quasi_identifiers": list(self.changes.gained_quasi_identifiers),
        }


def differencing(
    changes: ReleaseChanges, record_threshold: float = DEFAULT_RECORD_THRESHOLD
) -> ReleaseDifference:
    """The measures of §12 from the two histograms a source counted."""
    t = validate_threshold(record_threshold)
    return ReleaseDifference(
        changes=changes,
        arrivals=_movement(changes.arrivals, t),
        departures=_movement(changes.departures, t),
    )


def arrivals_to_hold_back(movement: Movement, k: int) -> tuple[int, int]:
    """``(records, classes)``: the arrivals of ``movement`` in classes where fewer than ``k``
    arrived -- those an attacker finds with a risk above ``1 / k``."""
    below = [(size, count) for size, count in movement.histogram if size < k]
    return sum(size * count for size, count in below), sum(count for _, count in below)


def hold_back_advice(
    difference: ReleaseDifference, min_arrival_k: int | None, max_arrival_risk: float | None
) -> str | None:
    """What to do when the arrivals breach ``min_arrival_k`` or ``max_arrival_risk``: hold
    back the arrivals of the classes where too few arrived, until enough have (a risk
    limit ``r`` asks for ``ceil(1 / r)`` arrivals in a class), or release arrivals in
    batches. ``None`` when neither limit is breached. Counts only."""
    needed = []
    if min_arrival_k is not None:
        needed.append(min_arrival_k)
    if max_arrival_risk is not None:
        # 1 / a <= r  <=>  a >= 1 / r; the tolerance keeps 1 / 0.2 at 5, not 6
        needed.append(math.ceil(1.0 / max_arrival_risk - 1e-9))
    arrivals = difference.arrivals
    if not needed or arrivals.k is None or arrivals.k >= max(needed):
        return None
    k = max(needed)
    records, classes = arrivals_to_hold_back(arrivals, k)
    return (
        f"hold back {records} of the {arrivals.records} arrivals ({classes} of "
        f"{arrivals.classes} classes) until their class has {k} arrivals, or release "
        "arrivals in batches"
    )
