"""The assessment's "Since the last release" section: what a reader holding both releases
learns by subtracting them (docs/metrics.md §12).

Read from :class:`~reident_airflow.report.view.SinceLastReleaseView`: how many records
arrived and departed, in how many classes, the fewest in one class (arrival k, departure k),
the risks of an arriving and a departing record, and the class-size histogram of each side.
Counts and shares only.
"""

from __future__ import annotations

from reident_airflow.report._format import count, number, percent
from reident_airflow.report._html import dl, note, table
from reident_airflow.report.view import MovementView, SinceLastReleaseView, gained_qis_sentence

__all__ = ["first_release_section", "since_last_release_section"]

_ABOUT = (
    "Whoever keeps the previous release can subtract it from this one. The rows this "
    "release adds are the arrivals, the rows it no longer holds the departures (an updated "
    "record is one of each). An attacker who knows that a person arrived since the last "
    "release looks only at the arrivals of that person's class: with a(c) arrivals there, "
    "the record is found with probability 1 / a(c), however large the class is in the "
    "release. Departures read the same way."
)


def _side_row(name: str, side: MovementView) -> list[str]:
    return [
        name,
        count(side.records),
        count(side.classes),
        count(side.k),
        number(side.highest_risk),
        number(side.average_risk),
        percent(side.records_at_risk),
    ]


def _histogram(since: SinceLastReleaseView) -> str:
    """One row per size: how many classes received (lost) that many records."""
    arrivals = dict(since.arrivals.histogram)
    departures = dict(since.departures.histogram)
    sizes = sorted(set(arrivals) | set(departures))
    if not sizes:
        return note("Nothing arrived and nothing departed: the two releases hold the same rows.")
    rows = [
        [str(size), count(arrivals.get(size, 0)), count(departures.get(size, 0))] for size in sizes
    ]
    return note(
        "How many classes received (lost) each number of records; a class with one arrival "
        "gives that record away to anyone who knows the person arrived."
    ) + table(
        ["records moved in a class", "classes (arrivals)", "classes (departures)"],
        rows,
        numeric=(0, 1, 2),
    )


def since_last_release_section(since: SinceLastReleaseView) -> str:
    """The section's HTML (every text escaped by the helpers it is written with)."""
    items = [
        ("records in the previous release", count(since.previous_records)),
        ("records in this release", count(since.records)),
        ("arrivals", count(since.arrivals.records)),
        ("departures", count(since.departures.records)),
        ("arrival k (fewest arrivals in a class)", count(since.arrivals.k)),
        ("departure k (fewest departures in a class)", count(since.departures.k)),
    ]
    threshold = since.arrivals.record_threshold
    at_risk = "records at risk" + (f" (risk > {number(threshold)})" if threshold else "")
    measures = table(
        ["", "records", "classes", "k", "highest risk", "average risk", at_risk],
        [_side_row("arrivals", since.arrivals), _side_row("departures", since.departures)],
        numeric=(1, 2, 3, 4, 5, 6),
    )
    return note(_ABOUT) + _columns(since) + dl(items) + measures + _histogram(since)


def _columns(since: SinceLastReleaseView) -> str:
    """The columns only one release holds (names only), a gained QI first: a breach."""
    out = ""
    if since.gained_quasi_identifiers:
        out += note(gained_qis_sentence(since.gained_quasi_identifiers))
    items = []
    if since.gained_columns:
        items.append(("columns gained (not compared)", ", ".join(since.gained_columns)))
    if since.dropped_columns:
        items.append(("columns dropped (not compared)", ", ".join(since.dropped_columns)))
    return out + (dl(items) if items else "")


def first_release_section() -> str:
    """The section when a previous release was named but none existed yet."""
    return note(
        "No previous release to compare with: this is the first release. The limits on the "
        "difference from the previous release were not checked."
    )
