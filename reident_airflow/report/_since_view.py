"""The difference from the previous release as a reader of a result sees it (see
:mod:`.view`, which exports it).

An assessment compared with the release it replaces holds ``"since_last_release"`` (schema
``reident.differencing/v1``,
:meth:`~reident_airflow.engine.differencing.ReleaseDifference.to_dict`): the arrivals and
the departures, each with its counts, its smallest class and risks, and its class-size
histogram. ``null`` there means a previous release was named but none existed yet (a first
run). Counts and shares only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from reident_airflow.report._format import is_number
from reident_airflow.report._read import Checked, Number, mapping_or_none, string_or_none

__all__ = ["MovementView", "SinceLastReleaseView", "gained_qis_sentence"]


def _pairs(raw: Any) -> tuple[tuple[int, int], ...]:
    """``(size, classes)`` pairs, smallest size first; malformed pairs left out."""
    if not isinstance(raw, list | tuple):
        return ()
    pairs = (
        (int(item[0]), int(item[1]))
        for item in raw
        if isinstance(item, list | tuple)
        and len(item) == 2
        and is_number(item[0])
        and is_number(item[1])
    )
    return tuple(sorted(pairs))


def _names(raw: Any) -> tuple[str, ...]:
    """Column names (a list of strings; anything else left out)."""
    if not isinstance(raw, list | tuple):
        return ()
    return tuple(item for item in raw if isinstance(item, str))


@dataclass(frozen=True)
class MovementView(Checked):
    """One side of the difference: the arrivals, or the departures."""

    records: Number | None
    classes: Number | None
    k: Number | None
    highest_risk: Number | None
    average_risk: Number | None
    records_at_risk: Number | None
    record_threshold: Number | None
    histogram: tuple[tuple[int, int], ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(data, histogram=_pairs(data.get("histogram")))


_NOTHING = MovementView(None, None, None, None, None, None, None, ())


@dataclass(frozen=True)
class SinceLastReleaseView(Checked):
    """An assessment's ``since_last_release``: the records of the previous release and of
    this one, the measures of the ``arrivals`` and the ``departures``, and the columns only
    one of them holds (``gained_quasi_identifiers``: the gained columns that are QIs)."""

    schema: str | None
    previous_records: Number | None
    records: Number | None
    arrivals: MovementView
    departures: MovementView
    gained_columns: tuple[str, ...] = ()
    dropped_columns: tuple[str, ...] = ()
    gained_quasi_identifiers: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        def side(key: str) -> MovementView:
            found = mapping_or_none(data.get(key))
            return _NOTHING if found is None else MovementView.from_dict(found)

        return cls.read(
            data,
            schema=string_or_none(data.get("schema")),
            arrivals=side("arrivals"),
            departures=side("departures"),
            gained_columns=_names(data.get("gained_columns")),
            dropped_columns=_names(data.get("dropped_columns")),
            gained_quasi_identifiers=_names(data.get("gained_quasi_identifiers")),
        )

    def observed(self, metric: str) -> Number | None:
        """The number a limit on the difference reads (``arrivals.k``, ...), if given."""
        side, _, measure = metric.partition(".")
        part = {"arrivals": self.arrivals, "departures": self.departures}.get(side)
        value = getattr(part, measure, None) if part is not None else None
        return value if is_number(value) else None


def gained_qis_sentence(names: tuple[str, ...]) -> str:
    """What a gained quasi-identifier means, naming the columns (names only)."""
    return (
        f"Breach: this release gained the quasi-identifier(s) {', '.join(names)}, which the "
        "previous release did not hold. Every record's value there is new information to "
        "whoever keeps both releases, which no comparison measures; the rows were compared "
        "on the quasi-identifiers both releases hold. Leave the new column out of this "
        "release, or start a new series of releases with it (assessed with no previous "
        "release to compare with)."
    )
