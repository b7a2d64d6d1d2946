"""HTML pieces of the report: tables, figures, cards, definition lists and messages.

Every text they put in the page goes through :func:`~reident_airflow.report._format.esc`
(a table's cells too, unless its caller built them as HTML).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from reident_airflow.report._format import NA, esc, is_number, number

__all__ = ["cards", "details", "dl", "figure", "na", "note", "table", "text"]


def na(message: str) -> str:
    """A paragraph saying what the result does not hold."""
    return f'<p class="na">{esc(message)}</p>\n'


def note(message: str) -> str:
    """A paragraph explaining a section."""
    return f'<p class="note">{esc(message)}</p>\n'


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric: Sequence[int] = (),
    row_classes: Sequence[str] | None = None,
    escaped: bool = False,
    labels: Sequence[str] | None = None,
) -> str:
    """A table; cells are escaped unless ``escaped`` (the caller built safe HTML).

    Each cell carries its column's name (``data-label``: the header, or ``labels`` where a
    header is blank), which a narrow screen shows beside the value when the rows are stacked
    (the stylesheet's small-screen rules).
    """
    num = set(numeric)
    names = [esc(n) for n in (labels if labels is not None else headers)]

    def cell(tag: str, i: int, content: str) -> str:
        attrs = ' class="num"' if i in num else ""
        if tag == "td" and i < len(names):
            attrs += f' data-label="{names[i]}"'
        return f"<{tag}{attrs}>{content}</{tag}>"

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
    """A chart with its caption; the chart scrolls sideways inside its own box on a screen
    too narrow for its smallest text to stay legible (the stylesheet's ``min-width``)."""
    return (
        f'<figure class="chart"><div class="chart-box">{svg}</div>'
        f"<figcaption>{esc(caption)}</figcaption></figure>\n"
    )


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
