"""The direct-match, Datafly and identifier-scan parts of the report, read from their typed
views."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reident_airflow.report import charts
from reident_airflow.report._format import NA, count, esc, number, percent
from reident_airflow.report._html import cards, dl, figure, na, note, table, text
from reident_airflow.report._input_view import InputView
from reident_airflow.report._page import BREACHED, PASSED, UNKNOWN, WARNED, GateRow, Part, plural
from reident_airflow.report._provenance import fingerprint_rows
from reident_airflow.report._release_view import DataflySide
from reident_airflow.report._scan import identifier_scan_section
from reident_airflow.report.view import DataflyView, DirectMatchView, IdentifierScanView

__all__ = ["build_datafly", "build_direct_match", "build_identifier_scan"]

#: How many of the least protected columns the direct-match chart draws.
_CHART_COLUMNS = 40


def _status(passed: bool | None) -> str:
    return PASSED if passed is True else BREACHED if passed is False else UNKNOWN


def _part(kind: str, gate: GateRow, headlines: dict[str, str], schema: str | None) -> Part:
    """A part whose verdict is its one gate row's, with the headline for that verdict."""
    return Part.of(kind, gate.status, headlines[gate.status], [gate], schema)


# ----------------------------------------------------------------------------- direct match
def build_direct_match(view: DirectMatchView) -> Part:
    """The direct-match part: the least protected column against the target."""
    target = number(view.target, 6)
    gate = GateRow(
        "Direct match protection (least protected column)",
        "direct_match.protection",
        number(view.protection, 6),
        "≥",
        target,
        _status(view.passed),
    )
    n = len(view.below_target)
    below = f" ({n} {plural(n, 'column')})" if n else ""
    part = _part(
        "direct_match",
        gate,
        {
            BREACHED: f"protection {gate.observed} is below the target {target}{below}",
            PASSED: f"every column at or above the target {target}",
            UNKNOWN: "the result holds no verdict (“passed” is missing)",
        },
        view.schema,
    )
    part.add_sections(
        "direct-match",
        [
            ("Protection per column", "columns", lambda: _dm_columns(view)),
            ("Inputs", "inputs", lambda: _dm_inputs(view)),
        ],
    )
    return part


def _dm_columns(view: DirectMatchView) -> str:
    if view.columns is None:
        return na("The result lists no columns (columns is missing or empty).")
    if not view.columns:
        return na("The result lists no column with a protection value.")
    t = None if view.target is None else float(view.target)
    cols = sorted(view.columns, key=lambda c: float(c.protection))
    shown = cols[:_CHART_COLUMNS]
    svg = charts.direct_match_chart([(c.column, float(c.protection)) for c in shown], t)
    caption = (
        "P = 100 × (1 − matches × distinct released values / n²) per column, least protected "
        "first: a column whose released values often equal the original values, and that has "
        "many distinct values, is close to 0."
    )
    if len(cols) > _CHART_COLUMNS:
        caption += f" The {_CHART_COLUMNS} least protected of {len(cols)} columns are drawn."
    rows = [
        [
            c.column,
            number(c.protection, 6),
            count(c.matches),
            count(c.distinct_avatar_values),
            "below target" if t is not None and float(c.protection) < t else "",
        ]
        for c in cols
    ]
    return figure(svg, caption) + table(
        ["column", "protection", "matching values", "distinct released values", ""],
        rows,
        numeric=(1, 2, 3),
        row_classes=["breach" if r[4] else "" for r in rows],
    )


def _dm_inputs(view: DirectMatchView) -> str:
    items = [
        ("records compared", count(view.records)),
        ("rows aligned", f"by key column {view.key}" if view.key else "by position"),
        ("target protection", number(view.target, 6)),
    ]
    for side, only in (("original", view.only_in_original), ("avatar", view.only_in_avatar)):
        if only:
            items.append((f"only in the {side} table (not compared)", ", ".join(only)))
    items.append(("schema", text(view.schema)))
    return dl(items)


# ---------------------------------------------------------------------------------- Datafly
def build_datafly(view: DataflyView) -> Part:
    """The Datafly part: whether k was reached within the suppression limit."""
    k = count(view.k)
    gate = GateRow(
        "k reached within the suppression limit (smallest class after Datafly)",
        "datafly.achieved_k",
        count(view.achieved_k),
        "≥",
        k,
        _status(view.reached),
    )
    part = _part(
        "datafly",
        gate,
        {
            PASSED: (
                f"k = {k} reached (smallest class {gate.observed}), "
                f"{count(view.suppressed_records)} records suppressed of "
                f"{count(view.suppression_limit)} allowed"
            ),
            BREACHED: f"k = {k} cannot be reached within the suppression limit",
            UNKNOWN: "the result does not say whether k was reached",
        },
        view.schema,
    )
    if part.verdict == BREACHED and view.message is not None:
        part.notes.append(view.message)
    part.add_sections(
        "datafly",
        [
            ("Before and after", "before-after", lambda: _df_before_after(view)),
            ("Generalization and suppression", "levels", lambda: _df_levels(view)),
            ("Steps", "steps", lambda: _df_steps(view)),
            ("Inputs", "inputs", lambda: _df_inputs(view)),
        ],
    )
    return part


def _df_levels(view: DataflyView) -> str:
    records, suppressed = view.records, view.suppressed_records
    out = cards(
        [
            ("records in", count(records)),
            ("k asked", count(view.k)),
            ("smallest class after", count(view.achieved_k)),
            ("records suppressed", count(suppressed)),
            ("suppression limit", count(view.suppression_limit)),
            ("precision (1 = unchanged)", number(view.precision)),
            ("discernibility", count(view.discernibility)),
        ]
    )
    if records and suppressed is not None:
        out += note(f"Suppressed: {percent(suppressed / records)} of the records.")
    if not view.levels:
        return out + na("The result holds no generalization levels.")
    tops = dict(view.top_levels)
    title = "Levels of the best attempt" if view.passed is False else "Levels reached"
    headers = ["quasi-identifier", "level (0 = original values)"]
    rows = [[qi, count(level)] for qi, level in view.levels]
    if tops:
        headers.append("top level")
        for row, (qi, _) in zip(rows, view.levels, strict=True):
            row.append(count(tops.get(qi)))
    return out + f"<h3>{esc(title)}</h3>\n" + table(headers, rows, numeric=(1, 2))


#: The before/after table's rows: label, field of :class:`DataflySide`, how it is shown.
_SIDE_ROWS = (
    ("records", "records", count),
    ("equivalence classes", "classes", count),
    ("k (smallest class)", "smallest_class", count),
    ("prosecutor risk (highest, 1 / k)", "prosecutor_risk", number),
    ("journalist risk (highest; no register: the prosecutor's)", "journalist_risk", number),
    ("marketer risk (classes / records)", "marketer_risk", number),
    ("records at risk (risk above 0.2)", "records_at_risk", percent),
    ("records suppressed", "suppressed_records", count),
    ("precision (1 = unchanged)", "precision", number),
    ("discernibility", "discernibility", count),
)


def _df_before_after(view: DataflyView) -> str:
    """The input as staged beside the release, and the fingerprints of both."""
    before, after = view.before, view.after
    if before is None and after is None:
        out = na("The result holds no before/after figures.")
    else:
        rows = [
            [label, _side(before, name, show), _side(after, name, show)]
            for label, name, show in _SIDE_ROWS
        ]
        headers = ["measure", "before (input as staged)", "after (release)"]
        out = table(headers, rows, numeric=(1, 2))
        out += note(
            "Both columns are computed from the class sizes Datafly counted: before, the "
            "quasi-identifiers' original values; after, the released classes (suppressed "
            "records left out). Discernibility charges a suppressed record the whole table."
        )
    out += "<h3>Fingerprints</h3>\n" + dl(
        [
            ("input", _fingerprint_text(view.fingerprint)),
            ("output", _fingerprint_text(view.output_fingerprint)),
        ]
    )
    return out


def _side(side: DataflySide | None, name: str, show: Callable[[Any], str]) -> str:
    return NA if side is None else show(getattr(side, name))


def _fingerprint_text(fp: InputView | None) -> str:
    """A fingerprint on one line: its fields as the "What was assessed" card names them."""
    if fp is None:
        return "not taken"
    return "; ".join(f"{name}: {value}" for name, value, _ in fingerprint_rows(fp))


def _df_steps(view: DataflyView) -> str:
    if view.steps is None:
        return na("The result holds no Datafly steps.")
    if not view.steps:
        return note(
            "No generalization was needed: the table was k-anonymous as given "
            "(after suppressing at most the allowed records)."
        )
    limit, k = view.suppression_limit, view.k
    drawable = [
        (f"{s.generalized} → {count(s.level)}", int(s.below_k))
        for s in view.steps
        if s.below_k is not None
    ]
    html = ""
    if drawable:
        svg = charts.datafly_steps_chart(
            drawable, None if limit is None else int(limit), None if k is None else int(k)
        )
        html += figure(
            svg,
            "Records in classes smaller than k after each step. Datafly generalizes the "
            "column with the most distinct values by one level until those records fit in the "
            "suppression limit, then suppresses them.",
        )
    rows = [
        [str(i + 1), s.generalized, count(s.level), count(s.below_k)]
        for i, s in enumerate(view.steps)
    ]
    return html + table(
        ["step", "generalized column", "to level", "records below k"], rows, numeric=(0, 2, 3)
    )


def _df_inputs(view: DataflyView) -> str:
    levels = view.levels
    items = [
        ("quasi-identifiers", ", ".join(q for q, _ in levels) if levels is not None else NA),
        ("records", count(view.records)),
        ("k", count(view.k)),
        ("suppression limit (records)", count(view.suppression_limit)),
    ]
    output = view.output
    if output is not None:
        items.append(
            (
                "output",
                f"{text(output.path)} ({text(output.format)}, {count(output.records)} records)",
            )
        )
    items.append(("schema", text(view.schema)))
    return dl(items)


# --------------------------------------------------------------------------- identifier scan
def build_identifier_scan(view: IdentifierScanView) -> Part:
    """The part of a scan on its own (``reident scan --report``): the failing columns against
    0 under the ``"fail"`` policy (under ``"warn"``, flagged columns warn), then the scan's
    section as an assessment's report shows it."""
    failing, flagged = len(view.failing), len(view.flagged)
    status = _status(view.passed)
    if status == PASSED and flagged:
        status = WARNED
    gate = GateRow(
        "Identifier scan: failing columns",
        "identifier_scan.failing_columns",
        count(failing),
        "≤",
        "0",
        status,
    )
    columns = len(view.columns)
    part = _part(
        "identifier_scan",
        gate,
        {
            BREACHED: f"{failing} of {columns} {plural(columns, 'column')} failed the scan",
            WARNED: f"{flagged} of {columns} {plural(columns, 'column')} flagged "
            f"(policy {view.policy}): reported, not failing",
            PASSED: f"no column of {columns} flagged",
            UNKNOWN: "the result holds no verdict (“passed” is missing)",
        },
        view.schema,
    )
    part.add_sections(
        "identifier-scan",
        [("Every column", "columns", lambda: identifier_scan_section(view))],
    )
    return part
