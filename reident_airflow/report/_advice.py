"""The report's "What to do" block on a breach of ``min_k``, and what it says of the preset
applied: both read from the :class:`~reident_airflow.report.view.AssessmentView`.

The block shows the result's ``advice`` object (docs/metrics.md §10): how many classes, and
records in them, are smaller than k; the quasi-identifier that drives the risk; what Datafly
would do at that k. Aggregates only: counts, shares, column names and hierarchy levels.
"""

from __future__ import annotations

from reident_airflow.report._format import NA, count, esc, is_number, percent, share_text
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
    explained = (
        "Level 0 keeps a column as it is; each level up is one step coarser in its hierarchy."
    )
    if not outlook.labels:
        rows = [[name, count(level)] for name, level in outlook.levels]
        return table(["quasi-identifier", "hierarchy level"], rows, numeric=(1,)) + note(explained)
    rows = [[name, count(level), outlook.label(name) or NA] for name, level in outlook.levels]
    return table(["quasi-identifier", "hierarchy level", "meaning"], rows, numeric=(1,)) + note(
        explained + " The meaning is read from the hierarchy and names no value: the width "
        "of its intervals, the characters it masks, or how many groups the level has."
    )


def _tradeoff(outlook: DataflyOutlookView) -> str:
    """The trade-off table: the states on Datafly's path and the records below k at each."""
    if not outlook.tradeoff:
        return ""
    names = [name for name, _ in outlook.levels]
    limit = outlook.suppression_limit
    stop = next(
        (
            i
            for i, row in enumerate(outlook.tradeoff)
            if is_number(limit) and is_number(row.suppressed) and row.suppressed <= limit
        ),
        None,
    )
    labelled = any(row.labels for row in outlook.tradeoff)
    rows = []
    for i, row in enumerate(outlook.tradeoff):
        levels, labels = dict(row.levels), dict(row.labels)
        cells = []
        for name in names:
            level, label = levels.get(name), labels.get(name)
            shown = label is not None and is_number(level) and level > 0
            cells.append(f"{count(level)}: {label}" if shown else count(level))
        rows.append([*cells, count(row.suppressed), "Datafly stops here" if i == stop else ""])
    headers = [*names, "records below k", ""]
    first = len(names) if labelled else 0  # a level with its label is text, not a number
    return (
        "<h3>Trade-off: coarser levels against suppressed records</h3>\n"
        + table(
            headers,
            rows,
            numeric=tuple(range(first, len(names) + 1)),
            labels=[*names, "records below k", "Datafly"],
        )
        + note(
            "Each row is a state on Datafly's path, one generalization step after the other, "
            "with the level of each quasi-identifier and the records then in classes smaller "
            f"than k: those Datafly would suppress if it stopped there. It stops at the first "
            f"row within its suppression limit ({count(limit)} record(s)). With another limit "
            "it would stop at the first row within that one, or further along its path than "
            "the rows shown (the path does not depend on the limit)."
        )
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
    return lead + _levels(outlook) + _tradeoff(outlook)


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
