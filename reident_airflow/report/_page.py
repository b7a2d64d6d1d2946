"""The report's building blocks: verdicts, gate rows, parts, and the HTML pieces they render.

A report is a list of :class:`Part` (one per result: assessment, direct match, Datafly); each
holds its verdict, its rows of the threshold table (:class:`GateRow`) and its sections of
HTML. The helpers here write those sections; every text they put in the page goes through
:func:`~reident_airflow.report._format.esc`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reident_airflow.report import charts
from reident_airflow.report._format import NA, esc, is_number, number

__all__ = [
    "BREACHED",
    "KINDS",
    "PASSED",
    "UNGATED",
    "UNKNOWN",
    "VERDICT_WORDS",
    "GateRow",
    "Part",
    "badge",
    "cards",
    "details",
    "dl",
    "figure",
    "guarded",
    "na",
    "note",
    "plural",
    "schema_note",
    "table",
    "text",
]

#: The kinds of payload a report can show, and the schema prefix of each (contract.md).
KINDS: dict[str, str] = {
    "assessment": "reident.assessment/",
    "direct_match": "reident.direct_match/",
    "datafly": "reident.datafly/",
}
_KNOWN_VERSION = "v1"

PASSED, BREACHED, UNKNOWN, UNGATED = "passed", "breached", "unknown", "ungated"
#: The word the verdict box shows for each verdict.
VERDICT_WORDS = {
    PASSED: "PASSED",
    BREACHED: "BREACHED",
    UNKNOWN: "INCOMPLETE",
    UNGATED: "NOT GATED",
}


@dataclass(frozen=True)
class GateRow:
    """One row of the threshold table: a check, its observed value and its limit, as text."""

    check: str
    metric: str
    observed: str
    relation: str
    limit: str
    status: str  # PASSED / BREACHED / UNKNOWN


@dataclass
class Part:
    """One result's share of the report, filled in by its builder before the page is laid
    out: the verdict and its one-line reason, gate rows, notes for the verdict box (plain
    text) and the HTML sections of its body."""

    kind: str
    verdict: str
    headline: str
    gate: list[GateRow] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    thresholds_known: bool = True
    notes: list[str] = field(default_factory=list)


_SECTION_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError)


def guarded(title: str, anchor: str, build: Callable[[], str]) -> str:
    """A ``<section>``; should drawing it fail, a message in its place and the rest intact.

    The view has already checked the result's shape, so this guards the drawing itself (a
    chart that cannot be laid out); a missing matplotlib is not hidden.
    """
    try:
        inner = build()
    except charts.ChartUnavailableError:
        raise
    except _SECTION_ERRORS as exc:
        inner = na(
            f"This section could not be drawn: the result has an unexpected shape here "
            f"({type(exc).__name__}). The other sections are not affected."
        )
    return f'<section class="card" id="{esc(anchor)}"><h2>{esc(title)}</h2>\n{inner}</section>\n'


def schema_note(schema: str | None, kind: str) -> list[str]:
    """A note for the verdict box when the result is of a schema version this report does
    not know (it shows what the versions have in common)."""
    if schema is not None and not schema.endswith("/" + _KNOWN_VERSION):
        return [
            f"The result is schema {schema}; this report knows "
            f"{KINDS[kind]}{_KNOWN_VERSION} and shows the keys the two have in common."
        ]
    return []


def plural(n: int, word: str) -> str:
    """``word`` with an ``s`` unless ``n`` is 1."""
    return f"{word}{'s' if n != 1 else ''}"


def na(message: str) -> str:
    """A paragraph saying what the result does not hold."""
    return f'<p class="na">{esc(message)}</p>\n'


def note(message: str) -> str:
    """A paragraph explaining a section."""
    return f'<p class="note">{esc(message)}</p>\n'


def badge(status: str) -> str:
    """The result cell of a gate row."""
    cls, word = {
        PASSED: ("ok", "met"),
        BREACHED: ("bad", "breached"),
        UNKNOWN: ("unknown", "unknown"),
        UNGATED: ("none", "not gated"),
    }[status]
    return f'<span class="badge {cls}">{word}</span>'


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric: Sequence[int] = (),
    row_classes: Sequence[str] | None = None,
    escaped: bool = False,
) -> str:
    """A table; cells are escaped unless ``escaped`` (the caller built safe HTML)."""
    num = set(numeric)

    def cell(tag: str, i: int, content: str) -> str:
        return f'<{tag} class="num">{content}</{tag}>' if i in num else f"<{tag}>{content}</{tag}>"

    head = "".join(cell("th", i, esc(h)) for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        cls = row_classes[r] if row_classes else ""
        cells = "".join(cell("td", i, c if escaped else esc(c)) for i, c in enumerate(row))
        body.append(f'<tr class="{esc(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table>\n"
    )


def figure(svg: str, caption: str) -> str:
    """A chart with its caption."""
    return f'<figure class="chart">{svg}<figcaption>{esc(caption)}</figcaption></figure>\n'


def details(summary: str, html: str) -> str:
    """``html`` folded away under ``summary`` (a table behind a chart)."""
    return f"<details><summary>{esc(summary)}</summary>\n{html}</details>\n"


def cards(items: Sequence[tuple[str, str]]) -> str:
    """Headline figures as cards: the value large, its name under it."""
    cells = "".join(
        f'<div class="fig"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
        for k, v in items
    )
    return f'<div class="cards">{cells}</div>\n'


def dl(items: Sequence[tuple[str, str]]) -> str:
    """Name-value pairs (inputs, measures)."""
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
    return f'<dl class="inputs">{rows}</dl>\n'


def text(value: Any) -> str:
    """A value as one line of text (lists joined, dicts as JSON, ``None`` as n/a)."""
    if value is None:
        return NA
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if is_number(value):
        return number(value, 6)
    if isinstance(value, list | tuple):
        return ", ".join(text(v) for v in value)
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)
