"""One self-contained HTML page per assessment or release (the JSON of ``docs/contract.md``
in, HTML out).

The page holds its CSS and its charts (inline SVG drawn by :mod:`.charts`); it loads nothing
from anywhere (a ``Content-Security-Policy`` of ``default-src 'none'`` says so to the browser
as well), so it reads the same offline, in a mail attachment or filed with a data-sharing
agreement. It shows what the JSON holds -- aggregates only: counts, shares, class sizes,
column names -- and nothing else; every string is HTML-escaped.

Each result is read once into its typed view (:mod:`.view`); a payload with missing keys or
``null`` where a number was expected renders a clear message in place of the section it
would feed, never a broken page. The parts are built by :mod:`._assessment` and
:mod:`._release`; this module lays out the page around them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.report._assessment import build_assessment
from reident_airflow.report._css import CSS
from reident_airflow.report._format import NA, esc
from reident_airflow.report._html import dl, na, note, table, text
from reident_airflow.report._input_view import InputView
from reident_airflow.report._page import (
    BREACHED,
    KINDS,
    PASSED,
    UNGATED,
    UNKNOWN,
    VERDICT_WORDS,
    WARNED,
    Part,
    badge,
)
from reident_airflow.report._provenance import input_section, sign_off_section
from reident_airflow.report._read import optional_view
from reident_airflow.report._release import (
    build_datafly,
    build_direct_match,
    build_identifier_scan,
)
from reident_airflow.report.signoff import SignOff
from reident_airflow.report.view import (
    AssessmentView,
    DataflyView,
    DirectMatchView,
    IdentifierScanView,
)

__all__ = ["KINDS", "infer_kind", "render_release_report", "render_report", "sign_report"]

_TITLES = {
    "assessment": "Re-identification risk",
    "direct_match": "Column direct match protection",
    "datafly": "Datafly k-anonymization",
    "identifier_scan": "Identifier scan",
}
_ANCHORS = {
    "assessment": "assessment",
    "direct_match": "direct-match",
    "datafly": "datafly",
    "identifier_scan": "scan",
}

#: How each kind's part is built from its payload (and the ranking's length).
_BUILDERS: dict[str, Callable[[Mapping[str, Any], int], Part]] = {
    "assessment": lambda p, top: build_assessment(AssessmentView.from_dict(p), top),
    "direct_match": lambda p, _: build_direct_match(DirectMatchView.from_dict(p)),
    "datafly": lambda p, _: build_datafly(DataflyView.from_dict(p)),
    "identifier_scan": lambda p, _: build_identifier_scan(IdentifierScanView.from_dict(p)),
}


# ---------------------------------------------------------------------------------- kinds
def infer_kind(payload: Mapping[str, Any]) -> str:
    """The kind of ``payload`` from its ``schema`` (or, without one, from its keys).

    Raises :class:`InvalidInputError` for a schema of another tool.
    """
    schema = payload.get("schema")
    if isinstance(schema, str) and schema:
        for kind, prefix in KINDS.items():
            if schema.startswith(prefix):
                return kind
        raise InvalidInputError(
            f"cannot draw a report for schema {schema!r}: expected one of "
            + ", ".join(f"{p}v1" for p in KINDS.values())
        )
    if "protection" in payload or "below_target" in payload:
        return "direct_match"
    if "levels" in payload or "achieved_k" in payload or "steps" in payload:
        return "datafly"
    return "assessment"


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    return kind


# ------------------------------------------------------------------------------ entry points
def render_report(
    payload: Mapping[str, Any],
    *,
    kind: str | None = None,
    extra: Mapping[str, Any] | None = None,
    top_attributes: int = 10,
    sign_off: SignOff | None = None,
) -> str:
    """The HTML report of one result: an assessment, a direct-match or a Datafly JSON.

    ``kind`` (``"assessment"``, ``"direct_match"``, ``"datafly"``) is inferred from
    ``payload["schema"]`` when not given. ``extra`` describes the run for the "Inputs" part
    of the report (e.g. ``{"source": "staging.patients", "region": "usa", "dag_id": ...}``);
    its values are shown as text, escaped; its ``run_url`` (the task run's page in Airflow)
    is also the header's link back to the run, when it is an ``http(s)`` URL.
    ``top_attributes`` is how many column sets the quasi-identifier ranking shows.
    ``sign_off`` pre-fills the sign-off block (blank lines to fill in by hand without it).
    A result's optional ``"input"`` object (:mod:`reident_airflow.sources.fingerprint`) is
    shown under "What was assessed".
    """
    if not isinstance(payload, Mapping):
        raise InvalidInputError(
            f"a report is drawn from a result dict (the JSON), got {type(payload).__name__}"
        )
    chosen = _check_kind(kind) if kind is not None else infer_kind(payload)
    given: dict[str, Mapping[str, Any] | None] = dict.fromkeys(KINDS)
    given[chosen] = payload
    return render_release_report(
        assessment=given["assessment"],
        direct_match=given["direct_match"],
        datafly=given["datafly"],
        identifier_scan=given["identifier_scan"],
        context=extra,
        top_attributes=top_attributes,
        sign_off=sign_off,
    )


def render_release_report(
    *,
    assessment: Mapping[str, Any] | None = None,
    direct_match: Mapping[str, Any] | None = None,
    datafly: Mapping[str, Any] | None = None,
    identifier_scan: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    title: str | None = None,
    top_attributes: int = 10,
    sign_off: SignOff | None = None,
) -> str:
    """One HTML report for a release: any of an assessment, a direct-match, a Datafly and an
    identifier-scan JSON (the scan of ``reident scan``; an assessment's own scan is a section of
    the assessment).

    The overall verdict comes first: BREACHED if any part breached its thresholds (or Datafly
    could not reach k), INCOMPLETE if a part's verdict is missing, PASSED otherwise (NOT GATED
    when no part had a threshold). Then every threshold against its observed value, what
    was assessed (each result's ``"input"`` fingerprint), each part's charts and tables, the
    sign-off block (pre-filled from ``sign_off``, else blank) and the tool version.
    """
    if isinstance(top_attributes, bool) or not isinstance(top_attributes, int):
        raise InvalidInputError(f"top_attributes must be a whole number, got {top_attributes!r}")
    if top_attributes < 1:
        raise InvalidInputError(f"top_attributes must be >= 1, got {top_attributes}")
    if context is not None and not isinstance(context, Mapping):
        raise InvalidInputError(f"context must be a dict, got {type(context).__name__}")
    if sign_off is not None and not isinstance(sign_off, SignOff):
        raise InvalidInputError(f"sign_off must be a SignOff, got {type(sign_off).__name__}")
    given = {
        "assessment": assessment,
        "direct_match": direct_match,
        "datafly": datafly,
        "identifier_scan": identifier_scan,
    }
    ctx = dict(context or {})
    parts: list[Part] = []
    for kind, payload in given.items():
        if payload is None:
            continue
        if not isinstance(payload, Mapping):
            raise InvalidInputError(
                f"{kind} must be the result dict (the JSON), got {type(payload).__name__}"
            )
        part = _BUILDERS[kind](payload, top_attributes)
        part.fingerprint = optional_view(InputView.from_dict, payload.get("input"))
        parts.append(part)
    return _document(parts, ctx, title, sign_off)


# --------------------------------------------------------------------------------- document
_CONTEXT_LABELS = {
    "source": "data source",
    "table": "table",
    "region": "population preset",
    "population_table": "population register",
    "dag_id": "DAG",
    "task_id": "task",
    "run_id": "DAG run",
    "logical_date": "logical date",
    "try_number": "try",
    "run_url": "in Airflow",
}


_ROW_CLASSES = {BREACHED: "breach", WARNED: "warned"}


def _overall(parts: Sequence[Part]) -> str:
    verdicts = {p.verdict for p in parts}
    if not parts:
        return UNKNOWN
    if BREACHED in verdicts:
        return BREACHED
    if UNKNOWN in verdicts:
        return UNKNOWN
    if WARNED in verdicts:
        return WARNED
    if PASSED in verdicts:
        return PASSED
    return UNGATED


def _verdict_box(parts: Sequence[Part]) -> str:
    overall = _overall(parts)
    if not parts:
        why = (
            "<p><strong>No result to report.</strong> The report was given no assessment, "
            "direct-match or Datafly result, so it cannot support a release decision.</p>"
        )
    else:
        items = []
        for p in parts:
            word = VERDICT_WORDS[p.verdict].lower()
            items.append(
                f'<li><a href="#{_ANCHORS[p.kind]}">{esc(_TITLES[p.kind])}</a>: '
                f"<strong>{esc(word)}</strong> — {esc(p.headline)}"
                + "".join(f"<br><span>{esc(n)}</span>" for n in p.notes)
                + "</li>"
            )
        lead = {
            PASSED: "The release may proceed as far as these checks go.",
            BREACHED: "The release does not meet its thresholds.",
            WARNED: "The release may proceed; some measures crossed their warning levels.",
            UNKNOWN: "The result is incomplete: do not sign off a release on it.",
            UNGATED: "Risk was measured; no threshold was set, so nothing was gated.",
        }[overall]
        why = f"<p><strong>{esc(lead)}</strong></p><ul>{''.join(items)}</ul>"
    return (
        f'<div class="verdict {overall}" id="verdict">'
        f'<div class="word">{VERDICT_WORDS[overall]}</div>'
        f'<div class="why">{why}</div></div>\n'
    )


def _gate_section(parts: Sequence[Part]) -> str:
    rows = [g for p in parts for g in p.gate]
    if not rows:
        if not parts:
            inner = na("No result, no thresholds.")
        elif all(p.thresholds_known for p in parts):
            inner = note("No thresholds were given: nothing was gated.")
        else:
            inner = na("The result does not say which thresholds were set.")
    else:
        inner = table(
            ["check", "observed", "", "limit", "result"],
            [
                [
                    f"{esc(g.check)}<br><code>{esc(g.metric)}</code>",
                    esc(g.observed),
                    esc(g.relation),
                    esc(g.limit),
                    badge(g.status),
                ]
                for g in rows
            ],
            numeric=(1, 3),
            row_classes=[_ROW_CLASSES.get(g.status, "") for g in rows],
            escaped=True,
            labels=["check", "observed", "must be", "limit", "result"],
        )
    return f'<section class="card" id="gate"><h2>Thresholds</h2>\n{inner}</section>\n'


def _about(parts: Sequence[Part], ctx: Mapping[str, Any], generated: str) -> str:
    from reident_airflow import __version__

    items: list[tuple[str, str]] = []
    for key, label in _CONTEXT_LABELS.items():
        if key in ctx and ctx[key] is not None:
            items.append((label, text(ctx[key])))
    for key, value in ctx.items():
        if key not in _CONTEXT_LABELS and key != "title" and value is not None:
            items.append((str(key), text(value)))
    items.append(("reports of", ", ".join(_TITLES[p.kind] for p in parts) or NA))
    items.append(("generated", generated))
    items.append(("tool", f"reident-airflow {__version__}"))
    return (
        '<section class="card" id="about"><h2>About this report</h2>\n'
        + dl(items)
        + note(
            "The report holds aggregates only: counts, shares, class sizes and column names "
            "— never a record's values. It loads nothing from the network."
        )
        + "</section>\n"
    )


def _run_link(url: Any) -> str:
    """The link back to the Airflow task run the report comes from (``run_url`` of the
    context: the task instance's page, never a record's value); none unless it is an
    absolute ``http(s)`` URL with a host and no control character."""
    if not isinstance(url, str) or any(ord(c) < 32 or ord(c) == 127 for c in url):
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return ""
    return f'<p class="sub"><a href="{esc(url)}">Open this run in Airflow</a></p>'


#: Where the sign-off block of a page starts; it ends at the first ``</section>`` after it.
_SIGN_OFF_START = '<section class="card sign-off" id="sign-off">'
_SECTION_END = "</section>\n"


def sign_report(html: str, sign_off: SignOff, *, lead: str | None = None) -> str:
    """``html``, a page this module rendered, with its sign-off block filled in from
    ``sign_off`` (``lead``: the sentence above the fields) and nothing else changed: the
    verdict, the figures and the time the page was generated stay those the reviewer saw.

    Raises :class:`InvalidInputError` when ``html`` does not hold exactly one sign-off block
    (not a reident report)."""
    if not isinstance(sign_off, SignOff):
        raise InvalidInputError(f"sign_off must be a SignOff, got {type(sign_off).__name__}")
    if not isinstance(html, str) or html.count(_SIGN_OFF_START) != 1:
        raise InvalidInputError("not a reident report: no single sign-off block to fill in")
    start = html.index(_SIGN_OFF_START)
    end = html.find(_SECTION_END, start)
    if end < 0:
        raise InvalidInputError("not a reident report: its sign-off block is not closed")
    block = sign_off_section(sign_off, lead=lead)
    return html[:start] + block + html[end + len(_SECTION_END) :]


def _document(
    parts: list[Part], ctx: Mapping[str, Any], title: str | None, sign_off: SignOff | None
) -> str:
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if title is None:
        title = ctx.get("title") if isinstance(ctx.get("title"), str) else None
    if title is None:
        title = _TITLES[parts[0].kind] + " report" if len(parts) == 1 else "Release risk report"
    source = ctx.get("source", ctx.get("table"))
    sub = " · ".join(
        x
        for x in (
            text(source) if source is not None else "",
            f"generated {generated}",
        )
        if x
    )
    toc = ['<a href="#verdict">Verdict</a>', '<a href="#gate">Thresholds</a>']
    toc += ['<a href="#input">Input</a>'] if parts else []
    for p in parts:
        toc.append(f'<a href="#{_ANCHORS[p.kind]}">{esc(_TITLES[p.kind])}</a>')
        toc += [f'<a href="#{esc(anchor)}">{esc(title)}</a>' for anchor, title in p.links]
    toc += ['<a href="#sign-off">Sign-off</a>', '<a href="#about">About</a>']
    body = [
        f'<header class="report-head"><h1>{esc(title)}</h1><p class="sub">{esc(sub)}</p>'
        + _run_link(ctx.get("run_url"))
        + "</header>\n",
        f'<nav class="toc">{"".join(toc)}</nav>\n',
        _verdict_box(parts),
        _gate_section(parts),
        input_section(parts, _TITLES),
    ]
    for p in parts:
        body.append(
            f'<section class="part" id="{_ANCHORS[p.kind]}">'
            f'<h2 class="part-title">{esc(_TITLES[p.kind])}</h2>\n'
            + "".join(p.body)
            + "</section>\n"
        )
    body.append(sign_off_section(sign_off))
    body.append(_about(parts, ctx, generated))
    from reident_airflow import __version__

    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
        f'<meta name="generator" content="reident-airflow {esc(__version__)}">\n'
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        + "".join(body)
        + f"<footer>reident-airflow {esc(__version__)} · {esc(generated)}</footer>\n"
        "</main>\n</body>\n</html>\n"
    )
