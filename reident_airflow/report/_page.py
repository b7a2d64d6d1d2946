"""The report's structure: verdicts, gate rows and parts.

A report is a list of :class:`Part` (one per result: assessment, direct match, Datafly); each
holds its verdict, its rows of the threshold table (:class:`GateRow`) and its sections of
HTML (written with :mod:`._html`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Self

from reident_airflow.report import charts
from reident_airflow.report._format import esc
from reident_airflow.report._html import na
from reident_airflow.report._input_view import InputView

__all__ = [
    "BREACHED",
    "KINDS",
    "PASSED",
    "UNGATED",
    "UNKNOWN",
    "VERDICT_WORDS",
    "WARNED",
    "GateRow",
    "Part",
    "badge",
    "plural",
]

#: The kinds of payload a report can show, and the schema prefix of each (docs/contract.md).
KINDS: dict[str, str] = {
    "assessment": "reident.assessment/",
    "direct_match": "reident.direct_match/",
    "datafly": "reident.datafly/",
    "identifier_scan": "reident.identifier_scan/",
}
_KNOWN_VERSION = "v1"

PASSED, BREACHED, UNKNOWN, UNGATED = "passed", "breached", "unknown", "ungated"
#: Passed, with a warning level crossed: the release goes ahead, the crossing is reported.
WARNED = "warned"
#: The word the verdict box shows for each verdict.
VERDICT_WORDS = {
    PASSED: "PASSED",
    WARNED: "WARNING",
    BREACHED: "BREACHED",
    UNKNOWN: "INCOMPLETE",
    UNGATED: "NOT GATED",
}


@dataclass(frozen=True)
class GateRow:
    """One row of the threshold table: a check, its observed value and its limit, as text;
    ``warning`` for a warning level's row (its crossing is :data:`WARNED`, not a breach)."""

    check: str
    metric: str
    observed: str
    relation: str
    limit: str
    status: str  # PASSED / BREACHED / WARNED / UNKNOWN
    warning: bool = False


@dataclass
class Part:
    """One result's share of the report, filled in by its builder before the page is laid
    out: the verdict and its one-line reason, gate rows, notes for the verdict box (plain
    text), the HTML sections of its body, the fingerprint of its input, if the result
    holds one, and ``(anchor, title)`` of the sections the navigation links to after the
    part itself."""

    kind: str
    verdict: str
    headline: str
    gate: list[GateRow] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    thresholds_known: bool = True
    notes: list[str] = field(default_factory=list)
    fingerprint: InputView | None = None
    links: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def of(
        cls, kind: str, verdict: str, headline: str, gate: list[GateRow], schema: str | None
    ) -> Self:
        """A part of ``kind``; a result of a schema version this report does not know gets a
        note saying the report shows what the versions have in common."""
        part = cls(kind, verdict, headline, gate)
        if schema is not None and not schema.endswith("/" + _KNOWN_VERSION):
            part.notes.append(
                f"The result is schema {schema}; this report knows "
                f"{KINDS[kind]}{_KNOWN_VERSION} and shows the keys the two have in common."
            )
        return part

    def add_sections(
        self, prefix: str, sections: Sequence[tuple[str, str, Callable[[], str]]]
    ) -> None:
        """Append a ``<section>`` per ``(title, anchor, build)``, its id ``prefix-anchor``."""
        self.body.extend(
            _guarded(title, f"{prefix}-{anchor}", build) for title, anchor, build in sections
        )


_SECTION_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError)


def _guarded(title: str, anchor: str, build: Callable[[], str]) -> str:
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


def plural(n: int, word: str) -> str:
    """``word`` with an ``s`` unless ``n`` is 1."""
    return f"{word}{'s' if n != 1 else ''}"


def badge(status: str) -> str:
    """The result cell of a gate row."""
    cls, word = {
        PASSED: ("ok", "met"),
        BREACHED: ("bad", "breached"),
        WARNED: ("warn", "warning"),
        UNKNOWN: ("unknown", "unknown"),
        UNGATED: ("none", "not gated"),
    }[status]
    return f'<span class="badge {cls}">{word}</span>'
