"""The report's "What to do" block on a breach of ``min_k``, and what it says of the preset
applied: both read from the :class:`~reident_airflow.report.view.AssessmentView`.

The block shows the result's ``advice`` object (docs/metrics.md §10): how many classes, and
records in them, are smaller than k; the quasi-identifier that drives the risk; what Datafly
would do at that k. Aggregates only: counts, shares, column names and hierarchy levels.
"""

from __future__ import annotations

from reident_airflow.report._format import NA, count, esc, percent, share_text
from reident_airflow.report._html import cards, na, note, table, text
from reident_airflow.report.view import AdviceView, AssessmentView, DataflyOutlookView

__all__ = ["advice_section", "preset_items", "preset_note"]


def _driver(advice: AdviceView) -> str:
    d = advice.driver
    if d is None:
        return note(
            "No column is named as the driver: the ranking of the quasi-identifiers does not "
            "hold every subset with one of them left out."
        )
    column = d.column or NA
    return (
        f"<p>Without <code>{esc(column)}</code> the distinction (distinct combinations per "
        f"record) falls from {esc(share_text(d.distinction))} to "
        f"{esc(share_text(d.distinction_without))}: it is the column to generalize or leave "
        "out first.</p>\n"
    )


def _levels(outlook: DataflyOutlookView) -> str:
    if not outlook.levels:
        return na("The result does not say which levels Datafly chose.")
    rows = [[name, count(level)] for name, level in outlook.levels]
    return table(["quasi-identifier", "hierarchy level"], rows, numeric=(1,)) + note(
        "Level 0 keeps a column as it is; each level up is one step coarser in its hierarchy."
    )


def _datafly(advice: AdviceView) -> str:
    outlook = advice.datafly
    if outlook is None:
        return note(
            "No Datafly outlook: it needs a generalization hierarchy for every quasi-identifier."
        )
    k, limit = count(outlook.k), count(outlook.suppression_limit)
    if outlook.feasible is True:
        lead = (
            f"<p>Datafly reaches k = {esc(k)} with these levels and suppresses "
            f"<strong>{esc(count(outlook.suppressed_records))}</strong> record(s) "
            f"(its limit: {esc(limit)}).</p>\n"
        )
    elif outlook.feasible is False:
        lead = na(
            f"Datafly cannot reach k = {k} within its suppression limit of {limit} record(s): "
            f"at its most generalized attempt, {count(outlook.below_k)} record(s) are still "
            "below k. Coarser hierarchies, fewer quasi-identifiers or a larger suppression "
            "limit are needed."
        )
    else:
        lead = na(f"The result does not say whether Datafly can reach k = {k}.")
    return lead + _levels(outlook)


def advice_section(advice: AdviceView) -> str:
    """The body of the "What to do" section."""
    k = count(advice.k)
    share = advice.share_below_k
    figures = [
        (
            f"classes smaller than k = {k}",
            f"{count(advice.classes_below_k)} of {count(advice.classes)}",
        ),
        ("records in them", f"{count(advice.records_below_k)} of {count(advice.records)}"),
        ("share of the records", percent(share) if share is not None else NA),
    ]
    return (
        note(
            f"The smallest class is below k = {k}. Every record in a class smaller than k "
            "must be generalized, suppressed or left out before the release."
        )
        + cards(figures)
        + "<h3>The column that drives the risk</h3>\n"
        + _driver(advice)
        + f"<h3>What Datafly would do at k = {esc(k)}</h3>\n"
        + _datafly(advice)
    )


def preset_note(view: AssessmentView) -> str | None:
    """The verdict box's sentence on the preset applied, with its release context."""
    if view.preset is None:
        return None
    entry = view.preset_entry
    context = f" ({entry.context})" if entry is not None else ""
    overrides = view.preset_overrides
    if not overrides:
        return f"The thresholds are those of the preset {view.preset!r}{context}."
    given = ", ".join(f"{name} = {text(g)} (the preset's {text(p)})" for name, g, p in overrides)
    return f"The thresholds are those of the preset {view.preset!r}{context}, but for {given}."


def preset_items(view: AssessmentView) -> list[tuple[str, str]]:
    """The "Inputs" rows on the preset: its name, and for a preset this version knows, its
    limits, release context and published source."""
    if view.preset is None:
        return []
    entry = view.preset_entry
    if entry is None:
        return [("preset", f"{view.preset} (not a preset this version knows)")]
    limits = ", ".join(f"{name} = {text(v)}" for name, v in entry.limits.items())
    return [
        ("preset", view.preset),
        ("preset limits", limits),
        ("release context", entry.context),
        ("preset source", entry.source),
    ]
