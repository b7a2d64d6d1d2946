"""One self-contained HTML page per assessment or release (contract.md JSON in, HTML out).

The page holds its CSS and its charts (inline SVG drawn by :mod:`.charts`); it loads nothing
from anywhere (a ``Content-Security-Policy`` of ``default-src 'none'`` says so to the browser
as well), so it reads the same offline, in a mail attachment or filed with a data-sharing
agreement. It shows what the JSON holds -- aggregates only: counts, shares, class sizes,
column names -- and nothing else; every string is HTML-escaped.

A payload with missing keys or ``null`` where a number was expected renders a clear message
in place of the section it would feed, never a broken page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.report import charts
from reident_airflow.report._css import CSS
from reident_airflow.report._format import (
    NA,
    count,
    dig,
    esc,
    is_number,
    number,
    percent,
    share_text,
)

__all__ = ["KINDS", "infer_kind", "render_release_report", "render_report"]

#: The kinds of payload a report can show, and the schema prefix of each (contract.md).
KINDS: dict[str, str] = {
    "assessment": "reident.assessment/",
    "direct_match": "reident.direct_match/",
    "datafly": "reident.datafly/",
}
_KNOWN_VERSION = "v1"
_TITLES = {
    "assessment": "Re-identification risk",
    "direct_match": "Column direct match protection",
    "datafly": "Datafly k-anonymization",
}
_ANCHORS = {"assessment": "assessment", "direct_match": "direct-match", "datafly": "datafly"}

PASSED, BREACHED, UNKNOWN, UNGATED = "passed", "breached", "unknown", "ungated"
_VERDICT_WORDS = {
    PASSED: "PASSED",
    BREACHED: "BREACHED",
    UNKNOWN: "INCOMPLETE",
    UNGATED: "NOT GATED",
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
) -> str:
    """The HTML report of one result: an assessment, a direct-match or a Datafly JSON.

    ``kind`` (``"assessment"``, ``"direct_match"``, ``"datafly"``) is inferred from
    ``payload["schema"]`` when not given. ``extra`` describes the run for the "Inputs" part
    of the report (e.g. ``{"source": "staging.patients", "region": "usa", "dag_id": ...}``);
    its values are shown as text, escaped. ``top_attributes`` is how many column sets the
    quasi-identifier ranking shows.
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
        context=extra,
        top_attributes=top_attributes,
    )


def render_release_report(
    *,
    assessment: Mapping[str, Any] | None = None,
    direct_match: Mapping[str, Any] | None = None,
    datafly: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    title: str | None = None,
    top_attributes: int = 10,
) -> str:
    """One HTML report for a release: any of an assessment, a direct-match and a Datafly JSON.

    The overall verdict comes first: BREACHED if any part breached its thresholds (or Datafly
    could not reach k), INCOMPLETE if a part's verdict is missing, PASSED otherwise (NOT GATED
    when no part had a threshold). Then every threshold against its observed value, then each
    part's charts and tables, then the inputs and the tool version.
    """
    if isinstance(top_attributes, bool) or not isinstance(top_attributes, int):
        raise InvalidInputError(f"top_attributes must be a whole number, got {top_attributes!r}")
    if top_attributes < 1:
        raise InvalidInputError(f"top_attributes must be >= 1, got {top_attributes}")
    if context is not None and not isinstance(context, Mapping):
        raise InvalidInputError(f"context must be a dict, got {type(context).__name__}")
    given = {"assessment": assessment, "direct_match": direct_match, "datafly": datafly}
    ctx = dict(context or {})
    parts: list[_Part] = []
    for kind, payload in given.items():
        if payload is None:
            continue
        if not isinstance(payload, Mapping):
            raise InvalidInputError(
                f"{kind} must be the result dict (the JSON), got {type(payload).__name__}"
            )
        parts.append(_BUILDERS[kind](payload, top_attributes))
    return _document(parts, ctx, title)


# ------------------------------------------------------------------------------- structures
@dataclass
class _GateRow:
    check: str
    metric: str
    observed: str
    relation: str
    limit: str
    status: str  # PASSED / BREACHED / UNKNOWN


@dataclass
class _Part:
    kind: str
    verdict: str
    headline: str
    gate: list[_GateRow] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    thresholds_known: bool = True
    notes: list[str] = field(default_factory=list)  # plain text, shown in the verdict box


_SECTION_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError)


def _guarded(title: str, anchor: str, build: Callable[[], str]) -> str:
    """A ``<section>``; if the JSON has an unexpected shape, a message in its place."""
    try:
        inner = build()
    except charts.ChartUnavailableError:
        raise
    except _SECTION_ERRORS as exc:
        inner = _na(
            f"This section could not be drawn: the result has an unexpected shape here "
            f"({type(exc).__name__}). The other sections are not affected."
        )
    return f'<section class="card" id="{esc(anchor)}"><h2>{esc(title)}</h2>\n{inner}</section>\n'


def _na(text: str) -> str:
    return f'<p class="na">{esc(text)}</p>\n'


def _note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>\n'


def _badge(status: str) -> str:
    cls, word = {
        PASSED: ("ok", "met"),
        BREACHED: ("bad", "breached"),
        UNKNOWN: ("unknown", "unknown"),
        UNGATED: ("none", "not gated"),
    }[status]
    return f'<span class="badge {cls}">{word}</span>'


def _table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric: Sequence[int] = (),
    row_classes: Sequence[str] | None = None,
    escaped: bool = False,
) -> str:
    """A table; cells are escaped unless ``escaped`` (the caller built safe HTML)."""
    num = set(numeric)
    head = "".join(
        f'<th class="num">{esc(h)}</th>' if i in num else f"<th>{esc(h)}</th>"
        for i, h in enumerate(headers)
    )
    body = []
    for r, row in enumerate(rows):
        cls = row_classes[r] if row_classes else ""
        cells = "".join(
            (f'<td class="num">{c if escaped else esc(c)}</td>')
            if i in num
            else f"<td>{c if escaped else esc(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f'<tr class="{esc(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table>\n"
    )


def _figure(svg: str, caption: str) -> str:
    return f'<figure class="chart">{svg}<figcaption>{esc(caption)}</figcaption></figure>\n'


def _details(summary: str, html: str) -> str:
    return f"<details><summary>{esc(summary)}</summary>\n{html}</details>\n"


def _cards(items: Sequence[tuple[str, str]]) -> str:
    cells = "".join(
        f'<div class="fig"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
        for k, v in items
    )
    return f'<div class="cards">{cells}</div>\n'


def _dl(items: Sequence[tuple[str, str]]) -> str:
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
    return f'<dl class="inputs">{rows}</dl>\n'


def _text(value: Any) -> str:
    """A context value as one line of text (lists joined, dicts as JSON)."""
    if value is None:
        return NA
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if is_number(value):
        return number(value, 6)
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _names(value: Any) -> list[str]:
    """A list of column names (anything else: empty)."""
    if not isinstance(value, list | tuple):
        return []
    return [str(v) for v in value]


# ------------------------------------------------------------------------------- assessment
_THRESHOLDS: dict[str, tuple[str, str, tuple[str, ...], str, Callable[[Any], str]]] = {
    "max_highest_risk": (
        "Highest re-identification risk (prosecutor)",
        "prosecutor.highest_risk",
        ("prosecutor", "highest_risk"),
        "≤",
        share_text,
    ),
    "max_average_risk": (
        "Average re-identification risk (prosecutor)",
        "prosecutor.average_risk",
        ("prosecutor", "average_risk"),
        "≤",
        share_text,
    ),
    "max_records_at_risk": (
        "Records at risk",
        "prosecutor.records_at_risk",
        ("prosecutor", "records_at_risk"),
        "≤",
        share_text,
    ),
    "min_k": ("Smallest class size k", "k", ("k",), "≥", count),
    "max_global_risk": (
        "Expected re-identifications (sampling weights), share of records",
        "individual_risk.global_risk_share",
        ("individual_risk", "global_risk_share"),
        "≤",
        share_text,
    ),
}
_METRIC_TO_THRESHOLD = {spec[1]: name for name, spec in _THRESHOLDS.items()}


def _status(metric: str, breached: Mapping[str, Any], observed: Any, passed: Any) -> str:
    if metric in breached:
        return BREACHED
    if passed is True or (passed is False and is_number(observed)):
        return PASSED  # the result says no threshold, or not this one, was breached
    return UNKNOWN


def _assessment_gate(a: Mapping[str, Any]) -> list[_GateRow]:
    thresholds = a.get("thresholds") if isinstance(a.get("thresholds"), dict) else {}
    assert isinstance(thresholds, dict)
    breaches = [b for b in a.get("breaches") or [] if isinstance(b, dict)]
    breached = {str(b.get("metric")): b for b in breaches}
    passed = a.get("passed")
    rows: list[_GateRow] = []
    seen: set[str] = set()
    for name, limit in thresholds.items():
        if limit is None:
            continue
        if name == "min_l":
            rows.extend(_l_diversity_gate(a, limit, breached, seen))
            continue
        spec = _THRESHOLDS.get(str(name))
        if spec is None:  # a threshold this report does not know: show it as given
            status = PASSED if passed is True else UNKNOWN
            rows.append(_GateRow(str(name), str(name), NA, "", _text(limit), status))
            continue
        label, metric, path, rel, fmt = spec
        seen.add(metric)
        observed = dig(a, *path)
        if metric == "prosecutor.records_at_risk":
            t = dig(a, "prosecutor", "record_threshold")
            label = f"Records at risk (record risk > {number(t)})" if is_number(t) else label
        status = _status(metric, breached, observed, passed)
        rows.append(_GateRow(label, metric, fmt(observed), rel, fmt(limit), status))
    for metric, b in breached.items():  # a breach of a threshold not listed above
        if metric in seen:
            continue
        name = _METRIC_TO_THRESHOLD.get(metric)
        fmt = _THRESHOLDS[name][4] if name else number
        label = _THRESHOLDS[name][0] if name else metric
        rel = _THRESHOLDS[name][3] if name else ""
        rows.append(
            _GateRow(label, metric, fmt(b.get("observed")), rel, fmt(b.get("limit")), BREACHED)
        )
    return rows


def _l_diversity_gate(
    a: Mapping[str, Any], limit: Any, breached: Mapping[str, Any], seen: set[str]
) -> list[_GateRow]:
    """``min_l``: one row per sensitive column (metric ``l_diversity.<column>.distinct``)."""
    diversity = a.get("l_diversity")
    if not isinstance(diversity, dict) or not diversity:
        return [
            _GateRow(
                "Distinct l-diversity (no sensitive column in the result)",
                "l_diversity",
                NA,
                "≥",
                count(limit),
                PASSED if a.get("passed") is True else UNKNOWN,
            )
        ]
    rows = []
    for column, values in diversity.items():
        metric = f"l_diversity.{column}.distinct"
        seen.add(metric)
        observed = dig(values, "distinct")
        rows.append(
            _GateRow(
                f"Distinct l-diversity of {column}",
                metric,
                count(observed),
                "≥",
                count(limit),
                _status(metric, breached, observed, a.get("passed")),
            )
        )
    return rows


def _assessment_verdict(a: Mapping[str, Any], gate: list[_GateRow]) -> tuple[str, str]:
    passed = a.get("passed")
    breached = [g for g in gate if g.status == BREACHED]
    if passed is False or breached:
        n = len(gate)
        return BREACHED, f"{len(breached)} of {n} threshold{'s' if n != 1 else ''} breached"
    if passed is True:
        if not gate:
            return UNGATED, "no thresholds were given: risk measured, nothing gated"
        if any(g.status == UNKNOWN for g in gate):
            return UNKNOWN, "some thresholds could not be checked against the result"
        return PASSED, f"all {len(gate)} threshold{'s' if len(gate) != 1 else ''} met"
    return UNKNOWN, "the result holds no verdict (“passed” is missing)"


def _build_assessment(a: Mapping[str, Any], top: int) -> _Part:
    gate = _assessment_gate(a)
    verdict, headline = _assessment_verdict(a, gate)
    part = _Part("assessment", verdict, headline, gate)
    part.thresholds_known = isinstance(a.get("thresholds"), dict) or bool(gate)
    if not is_number(a.get("records")) or not is_number(a.get("classes")):
        part.notes.append(
            "This assessment is incomplete: it does not say how many records and classes "
            "were measured, so it cannot support a release decision."
        )
    part.notes.extend(_schema_note(a, "assessment"))
    anchor = "assessment"
    part.body = [
        _guarded("At a glance", f"{anchor}-glance", lambda: _glance(a)),
        _guarded("Attacker models", f"{anchor}-models", lambda: _attacker_models(a)),
        _guarded("Risk distribution", f"{anchor}-distribution", lambda: _risk_distribution(a)),
        _guarded("Class sizes", f"{anchor}-classes", lambda: _class_sizes(a)),
        _guarded("Which columns re-identify", f"{anchor}-attributes", lambda: _attributes(a, top)),
        _guarded("Population uniqueness", f"{anchor}-population", lambda: _population(a)),
    ]
    for key, title, build in (
        ("individual_risk", "Individual risk (sampling weights)", _individual_risk),
        ("l_diversity", "Sensitive values (l-diversity)", _l_diversity),
        ("suda", "Special uniques (SUDA)", _suda),
    ):
        if a.get(key) is not None:
            part.body.append(
                _guarded(title, f"{anchor}-{key.replace('_', '-')}", partial(build, a))
            )
    part.body.append(_guarded("Inputs", f"{anchor}-inputs", lambda: _assessment_inputs(a)))
    return part


def _schema_note(payload: Mapping[str, Any], kind: str) -> list[str]:
    schema = payload.get("schema")
    if isinstance(schema, str) and not schema.endswith("/" + _KNOWN_VERSION):
        return [
            f"The result is schema {schema}; this report knows "
            f"{KINDS[kind]}{_KNOWN_VERSION} and shows the keys the two have in common."
        ]
    return []


def _glance(a: Mapping[str, Any]) -> str:
    p = a.get("prosecutor") if isinstance(a.get("prosecutor"), dict) else {}
    t = dig(a, "prosecutor", "record_threshold")
    items = [
        ("records", count(a.get("records"))),
        ("equivalence classes", count(a.get("classes"))),
        ("k (smallest class)", count(a.get("k"))),
        ("highest risk", percent(dig(p, "highest_risk"))),
        ("average risk", percent(dig(p, "average_risk"))),
        (
            f"records at risk (risk > {number(t)})" if is_number(t) else "records at risk",
            percent(dig(p, "records_at_risk")),
        ),
        ("sample uniques", percent(dig(a, "uniqueness", "sample_uniques"))),
    ]
    dankar = dig(a, "uniqueness", "population", "dankar")
    if isinstance(dankar, dict):
        model = dankar.get("model")
        items.append(
            (
                f"population uniques ({_MODEL_NAMES[model]})"
                if model in _MODEL_NAMES
                else "population uniques",
                number(dankar.get("uniques"), 3),
            )
        )
    excluded = a.get("excluded_records")
    out = _cards(items)
    if is_number(excluded) and excluded:
        out += _note(
            f"{count(excluded)} records whose quasi-identifiers are all suppressed (*) are "
            "excluded from every measure (ARX behaviour)."
        )
    if all(v == NA for _, v in items):
        return _na("The result holds none of the headline figures (records, classes, risks).")
    return out


def _attacker_models(a: Mapping[str, Any]) -> str:
    if not any(isinstance(a.get(m), dict) for m in ("prosecutor", "journalist", "marketer")):
        return _na("The result holds no attacker-model risks (prosecutor, journalist, marketer).")
    rows = []
    for model in ("prosecutor", "journalist"):
        m = a.get(model)
        if not isinstance(m, dict):
            rows.append([model, NA, NA, NA, NA, "not in the result"])
            continue
        basis = m.get("basis") if model == "journalist" else "the sample"
        if basis == "sample":
            basis = "the sample (no population register: as prosecutor)"
        elif basis == "population_table":
            basis = "the population register"
        elif basis == "sampling_weights":
            basis = "the sampling weights (individual risk)"
        rows.append(
            [
                model,
                percent(m.get("highest_risk")),
                percent(m.get("average_risk")),
                percent(m.get("records_at_risk")),
                percent(m.get("records_affected_by_highest_risk")),
                _text(basis),
            ]
        )
    rows.append(["marketer", NA, percent(dig(a, "marketer", "risk")), NA, NA, "success rate"])
    return _note(
        "Prosecutor: the attacker knows the person is in the table. Journalist: the "
        "attacker links to a wider register. Marketer: the attacker re-identifies as many "
        "records as possible (expected share)."
    ) + _table(
        [
            "model",
            "highest risk",
            "average risk",
            "records at risk",
            "affected by highest",
            "measured on",
        ],
        rows,
        numeric=(1, 2, 3, 4),
    )


def _bands(a: Mapping[str, Any]) -> list[tuple[float, float, float]]:
    raw = a.get("risk_distribution")
    if not isinstance(raw, list):
        return []
    out: list[tuple[float, float, float]] = []
    lower = 0.0
    for band in raw:
        upper, share = dig(band, "upper"), dig(band, "records")
        if not is_number(upper):
            continue
        out.append((lower, float(upper), float(share) if is_number(share) else 0.0))
        lower = float(upper)
    return out


def _risk_distribution(a: Mapping[str, Any]) -> str:
    bands = _bands(a)
    if not bands:
        return _na("The result holds no risk distribution (risk_distribution is missing).")
    first = next((i for i, (_, _, s) in enumerate(bands) if s > 0), None)
    if first is None:
        return _na("The risk distribution holds no records.")
    shown = bands[first:]
    t = dig(a, "prosecutor", "record_threshold")
    threshold = float(t) if is_number(t) else None
    svg = charts.risk_distribution_chart(shown, threshold)
    caption = (
        "Share of records per re-identification risk band (ARX's bands; record risk = 1 / "
        "class size, prosecutor model)."
    )
    if first > 0:
        caption += f" Bands up to {bands[first - 1][1]:g} hold no records and are not drawn."
    table = _table(
        ["risk band", "share of records"],
        [[f"({lo:g}, {hi:g}]", percent(s)] for lo, hi, s in reversed(bands)],
        numeric=(1,),
    )
    return _figure(svg, caption) + _details("Every band as a table", table)


def _histogram(a: Mapping[str, Any]) -> list[tuple[int, int]]:
    raw = a.get("class_size_histogram")
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if (
            isinstance(item, list | tuple)
            and len(item) == 2
            and is_number(item[0])
            and is_number(item[1])
        ):
            out.append((int(item[0]), int(item[1])))
    return sorted(out)


def _risky_below(a: Mapping[str, Any]) -> tuple[int | None, str]:
    """Class sizes below which classes are flagged: min_k of the gate, else the size whose
    record risk 1/size is above the record threshold."""
    min_k = dig(a, "thresholds", "min_k")
    if is_number(min_k):
        return int(min_k), "the gate's minimum k"
    t = dig(a, "prosecutor", "record_threshold")
    if is_number(t) and 0 < float(t) <= 1:
        size = 1
        while 1.0 / size > float(t) and size < 10**9:
            size += 1
        return size, f"record risk above {float(t):g}"
    return None, ""


def _class_sizes(a: Mapping[str, Any]) -> str:
    hist = _histogram(a)
    if not hist:
        return _na("The result holds no class-size histogram (class_size_histogram is missing).")
    risky, why = _risky_below(a)
    svg = charts.class_size_chart(hist, risky, why)
    records = sum(s * c for s, c in hist) or 1
    buckets = charts.class_size_buckets(hist)
    bucket_rows = [
        [charts.bucket_label(lo, hi), count(c), count(r), percent(r / records)]
        for lo, hi, c, r in buckets
    ]
    full_rows = [[count(s), count(c), count(s * c), percent(s * c / records)] for s, c in hist]
    limit = 400
    full = _table(
        ["class size", "classes", "records", "share of records"],
        full_rows[:limit],
        numeric=(0, 1, 2, 3),
    )
    if len(full_rows) > limit:
        full += _note(f"The first {limit} of {len(full_rows)} class sizes are listed.")
    return (
        _figure(
            svg,
            "Equivalence classes by size: the records in a class share all their "
            "quasi-identifier values; small classes are the re-identifiable ones. Bar labels: "
            "number of classes and the share of records in them.",
        )
        + _details(
            "The chart as a table",
            _table(
                ["class size", "classes", "records", "share of records"],
                bucket_rows,
                numeric=(1, 2, 3),
            ),
        )
        + _details("The full class-size histogram", full)
    )


def _attributes(a: Mapping[str, Any], top: int) -> str:
    raw = a.get("attributes")
    if not isinstance(raw, list) or not raw:
        return _na("The result holds no quasi-identifier ranking (attributes is missing or empty).")
    items = []
    for item in raw:
        cols = _names(dig(item, "columns"))
        if not cols:
            continue
        d, s = dig(item, "distinction"), dig(item, "separation")
        items.append(
            (
                cols,
                float(d) if is_number(d) else None,
                float(s) if is_number(s) else None,
            )
        )
    if not items:
        return _na("The quasi-identifier ranking lists no column sets.")
    shown = items[:top]
    svg = charts.attribute_chart([(" + ".join(c), d, s) for c, d, s in shown])
    rows = [[str(i + 1), ", ".join(c), percent(d), percent(s)] for i, (c, d, s) in enumerate(items)]
    caption = (
        f"The {len(shown)} most re-identifying column sets of {len(items)} ranked. "
        "Distinction: share of records told apart by the set alone (classes / records); "
        "separation: share of record pairs that differ on it."
    )
    return (
        _figure(svg, caption)
        + _table(["rank", "columns", "distinction", "separation"], rows[:top], numeric=(0, 2, 3))
        + (
            _details(
                f"All {len(items)} column sets",
                _table(["rank", "columns", "distinction", "separation"], rows, numeric=(0, 2, 3)),
            )
            if len(items) > top
            else ""
        )
    )


_MODELS = (
    ("pitman", "Pitman", "Hoshino 2001"),
    ("zayatz", "Zayatz", "Zayatz 1991"),
    ("snb", "SNB", "Chen & McNulty 1998"),
)
_MODEL_NAMES = {key: label for key, label, _ in _MODELS}


def _population(a: Mapping[str, Any]) -> str:
    u = a.get("uniqueness")
    sample = dig(u, "sample_uniques")
    head = _note(f"Sample uniques (records alone in their class): {share_text(sample)}.")
    pop = dig(u, "population")
    if not isinstance(pop, dict):
        return head + _na(
            "No population was given (population size, sampling fraction or region), so "
            "population uniqueness was not estimated."
        )
    n_pop = pop.get("population_size")
    sf = pop.get("sampling_fraction")
    dankar = pop.get("dankar") if isinstance(pop.get("dankar"), dict) else None
    chosen = str(dankar.get("model")) if dankar and dankar.get("model") else None
    rows, classes = [], []
    for key, label, source in _MODELS:
        est = pop.get(key)
        is_chosen = chosen == key
        if isinstance(est, dict):
            rows.append(
                [
                    label,
                    source,
                    number(est.get("uniques"), 6),
                    percent(est.get("fraction"), 4),
                    "chosen by Dankar's rule" if is_chosen else "",
                ]
            )
        else:
            rows.append([label, source, NA, NA, "not available for this table"])
        classes.append("chosen" if is_chosen else "")
    if dankar:
        if chosen in _MODEL_NAMES:
            uses = f"uses {_MODEL_NAMES[chosen]}"
        elif is_number(dankar.get("uniques")) and dankar["uniques"] == 0:
            uses = "no sample uniques: every estimate is 0"
        else:
            uses = f"model: {_text(chosen)}"
        rows.append(
            [
                "Dankar's rule",
                uses,
                number(dankar.get("uniques"), 6),
                percent(dankar.get("fraction"), 4),
                "the estimate the report uses",
            ]
        )
    else:
        rows.append(["Dankar's rule", "", NA, NA, "no model was available"])
    classes.append("")
    facts = _note(
        f"Population N = {count(n_pop)}, sampling fraction n / N = {number(sf, 6)}. "
        "Dankar's rule: Pitman at sampling fractions up to 0.1 (Zayatz if Pitman is "
        "unavailable); above, the smaller of Zayatz and SNB."
    )
    return (
        head
        + facts
        + _table(
            ["model", "source", "population uniques", "share of N", ""],
            rows,
            numeric=(2, 3),
            row_classes=classes,
        )
    )


def _individual_risk(a: Mapping[str, Any]) -> str:
    r = a.get("individual_risk")
    if not isinstance(r, dict):
        return _na("No individual risk in the result.")
    t = r.get("record_threshold")
    items = [
        ("sampling weight column", _text(r.get("weight"))),
        ("expected re-identifications", number(r.get("global_risk"), 6)),
        ("as a share of the records", percent(r.get("global_risk_share"))),
        ("highest individual risk", number(r.get("highest"))),
    ]
    if "lowest" in r:
        items.append(("lowest individual risk", number(r.get("lowest"))))
    items.append(
        (
            f"records with individual risk > {number(t)}" if is_number(t) else "records at risk",
            percent(r.get("records_above_threshold")),
        )
    )
    if "estimated_population" in r:
        items.append(("estimated population (sum of weights)", count(r["estimated_population"])))
    if isinstance(r.get("method"), str):
        items.append(("method", r["method"]))
    return _note(
        "Each class's population size is estimated from the sampling weights of its records; "
        "a record's risk follows from its class's sample and estimated population sizes."
    ) + _dl(items)


def _l_diversity(a: Mapping[str, Any]) -> str:
    ld = a.get("l_diversity")
    if not isinstance(ld, dict) or not ld:
        return _na("No l-diversity in the result.")
    homogeneous = any(isinstance(v, dict) and "homogeneous_records" in v for v in ld.values())
    headers = ["sensitive column", "distinct l", "entropy l", "recursive l", "c"]
    if homogeneous:
        headers.append("records in classes of one value")  # a share (diversity.py)
    rows = []
    for col, v in ld.items():
        row = [
            str(col),
            number(dig(v, "distinct")),
            number(dig(v, "entropy")),
            number(dig(v, "recursive")),
            number(dig(v, "c")),
        ]
        if homogeneous:
            row.append(percent(dig(v, "homogeneous_records")))
        rows.append(row)
    return _note(
        "The smallest l over all classes: a class whose records all share one sensitive value "
        "(l = 1) discloses it to anyone who can place a person in that class."
    ) + _table(headers, rows, numeric=tuple(range(1, len(headers))))


def _suda(a: Mapping[str, Any]) -> str:
    s = a.get("suda")
    if not isinstance(s, dict):
        return _na("No SUDA result.")
    items = [
        ("records with a minimal sample unique", count(s.get("records_with_msu"))),
        ("highest SUDA score", number(s.get("max_score"))),
    ]
    if "max_msu_size" in s:
        items.append(("largest MSU size searched", count(s.get("max_msu_size"))))
    by_size = s.get("msus_by_size")
    if isinstance(by_size, list) and by_size:
        items.append(
            (
                "minimal sample uniques by size",
                ", ".join(f"{i + 1}: {count(n)}" for i, n in enumerate(by_size)),
            )
        )
    out = _dl(items)
    contrib = s.get("attribute_contributions")
    if isinstance(contrib, dict) and contrib:
        out += _table(
            ["column", "contribution (%)"],
            [[str(k), number(v)] for k, v in contrib.items()],
            numeric=(1,),
        )
    return out


def _assessment_inputs(a: Mapping[str, Any]) -> str:
    qis = _names(a.get("quasi_identifiers"))
    pop = dig(a, "uniqueness", "population")
    if isinstance(pop, dict):
        population = (
            f"N = {count(pop.get('population_size'))} "
            f"(sampling fraction {number(pop.get('sampling_fraction'), 6)})"
        )
    else:
        population = "none given (the table is taken as the whole population)"
    basis = dig(a, "journalist", "basis")
    models = "prosecutor, journalist"
    models += f" (on {basis})" if isinstance(basis, str) else ""
    models += ", marketer"
    thresholds = a.get("thresholds")
    if isinstance(thresholds, dict) and thresholds:
        limits = ", ".join(f"{k} = {_text(v)}" for k, v in thresholds.items())
    else:
        limits = "none (risk measured, nothing gated)"
    extra = []
    ir = dig(a, "individual_risk", "weight")
    if ir is not None:
        extra.append(("sampling weights", _text(ir)))
    ld = a.get("l_diversity")
    if isinstance(ld, dict) and ld:
        extra.append(("sensitive columns", ", ".join(map(str, ld))))
    return _dl(
        [
            ("quasi-identifiers", ", ".join(qis) if qis else NA),
            ("records measured", count(a.get("records"))),
            ("attacker models", models),
            ("population", population),
            ("record-risk threshold", number(dig(a, "prosecutor", "record_threshold"))),
            ("thresholds", limits),
            *extra,
            ("schema", _text(a.get("schema"))),
        ]
    )


# ----------------------------------------------------------------------------- direct match
def _build_direct_match(d: Mapping[str, Any], top: int) -> _Part:
    del top
    protection, target, passed = d.get("protection"), d.get("target"), d.get("passed")
    if passed is True:
        status = PASSED
    elif passed is False:
        status = BREACHED
    else:
        status = UNKNOWN
    gate = [
        _GateRow(
            "Direct match protection (least protected column)",
            "direct_match.protection",
            number(protection, 6),
            "≥",
            number(target, 6),
            status,
        )
    ]
    below = _names(d.get("below_target"))
    if status == BREACHED:
        headline = f"protection {number(protection, 6)} is below the target {number(target, 6)}" + (
            f" ({len(below)} column{'s' if len(below) != 1 else ''})" if below else ""
        )
    elif status == PASSED:
        headline = f"every column at or above the target {number(target, 6)}"
    else:
        headline = "the result holds no verdict (“passed” is missing)"
    part = _Part("direct_match", status, headline, gate)
    part.notes.extend(_schema_note(d, "direct_match"))
    part.body = [
        _guarded("Protection per column", "direct-match-columns", lambda: _dm_columns(d)),
        _guarded("Inputs", "direct-match-inputs", lambda: _dm_inputs(d)),
    ]
    return part


def _dm_columns(d: Mapping[str, Any]) -> str:
    raw = d.get("columns")
    if not isinstance(raw, list) or not raw:
        return _na("The result lists no columns (columns is missing or empty).")
    cols = [
        c
        for c in raw
        if isinstance(c, dict) and c.get("column") is not None and is_number(c.get("protection"))
    ]
    if not cols:
        return _na("The result lists no column with a protection value.")
    target = d.get("target")
    t = float(target) if is_number(target) else None
    cols.sort(key=lambda c: float(c.get("protection") or 0.0))
    limit = 40
    shown = cols[:limit]
    svg = charts.direct_match_chart([(str(c["column"]), float(c["protection"])) for c in shown], t)
    caption = (
        "P = 100 × (1 − matches × distinct released values / n²) per column, least protected "
        "first: a column whose released values often equal the original values, and that has "
        "many distinct values, is close to 0."
    )
    if len(cols) > limit:
        caption += f" The {limit} least protected of {len(cols)} columns are drawn."
    rows = [
        [
            str(c["column"]),
            number(c.get("protection"), 6),
            count(c.get("matches")),
            count(c.get("distinct_avatar_values")),
            "below target" if t is not None and float(c["protection"]) < t else "",
        ]
        for c in cols
    ]
    classes = ["breach" if r[4] else "" for r in rows]
    return _figure(svg, caption) + _table(
        ["column", "protection", "matching values", "distinct released values", ""],
        rows,
        numeric=(1, 2, 3),
        row_classes=classes,
    )


def _dm_inputs(d: Mapping[str, Any]) -> str:
    key = d.get("key")
    items = [
        ("records compared", count(d.get("records"))),
        ("rows aligned", f"by key column {key}" if key else "by position"),
        ("target protection", number(d.get("target"), 6)),
    ]
    for side in ("original", "avatar"):
        only = _names(d.get(f"only_in_{side}"))
        if only:
            items.append((f"only in the {side} table (not compared)", ", ".join(only)))
    items.append(("schema", _text(d.get("schema"))))
    return _dl(items)


# ---------------------------------------------------------------------------------- Datafly
def _build_datafly(d: Mapping[str, Any], top: int) -> _Part:
    del top
    k, achieved = d.get("k"), d.get("achieved_k")
    passed = d.get("passed")
    if passed is None and is_number(k) and d.get("levels") is not None:
        # the engine's own JSON has no "passed": k is reached when the smallest class is >= k
        passed = bool(is_number(achieved) and achieved >= k)
    suppressed, limit = d.get("suppressed_records"), d.get("suppression_limit")
    status = PASSED if passed is True else BREACHED if passed is False else UNKNOWN
    gate = [
        _GateRow(
            "k reached within the suppression limit (smallest class after Datafly)",
            "datafly.achieved_k",
            count(achieved),
            "≥",
            count(k),
            status,
        )
    ]
    if status == PASSED:
        headline = (
            f"k = {count(k)} reached (smallest class {count(achieved)}), "
            f"{count(suppressed)} records suppressed of {count(limit)} allowed"
        )
    elif status == BREACHED:
        headline = f"k = {count(k)} cannot be reached within the suppression limit"
    else:
        headline = "the result does not say whether k was reached"
    part = _Part("datafly", status, headline, gate)
    part.notes.extend(_schema_note(d, "datafly"))
    message = d.get("message")
    if status == BREACHED and isinstance(message, str):
        part.notes.append(message)
    part.body = [
        _guarded("Generalization and suppression", "datafly-levels", lambda: _df_levels(d)),
        _guarded("Steps", "datafly-steps", lambda: _df_steps(d)),
        _guarded("Inputs", "datafly-inputs", lambda: _df_inputs(d)),
    ]
    return part


def _df_levels(d: Mapping[str, Any]) -> str:
    out = ""
    loss = d.get("information_loss")
    records, suppressed = d.get("records"), d.get("suppressed_records")
    out += _cards(
        [
            ("records in", count(records)),
            ("k asked", count(d.get("k"))),
            ("smallest class after", count(d.get("achieved_k"))),
            ("records suppressed", count(suppressed)),
            ("suppression limit", count(d.get("suppression_limit"))),
            ("precision (1 = unchanged)", number(dig(loss, "precision"))),
            ("discernibility", count(dig(loss, "discernibility"))),
        ]
    )
    if is_number(records) and is_number(suppressed) and records:
        out += _note(f"Suppressed: {percent(suppressed / records)} of the records.")
    levels = d.get("levels")
    if not isinstance(levels, dict) or not levels:
        return out + _na("The result holds no generalization levels.")
    tops = d.get("top_levels") if isinstance(d.get("top_levels"), dict) else {}
    assert isinstance(tops, dict)
    title = "Levels of the best attempt" if d.get("passed") is False else "Levels reached"
    headers = ["quasi-identifier", "level (0 = original values)"]
    rows = [[str(qi), count(level)] for qi, level in levels.items()]
    if tops:
        headers.append("top level")
        for row, qi in zip(rows, levels, strict=True):
            row.append(count(tops.get(qi)))
    return out + f"<h3>{esc(title)}</h3>\n" + _table(headers, rows, numeric=(1, 2))


def _df_steps(d: Mapping[str, Any]) -> str:
    raw = d.get("steps")
    if not isinstance(raw, list):
        return _na("The result holds no Datafly steps.")
    steps = [
        (str(s.get("generalized")), s.get("level"), s.get("below_k"))
        for s in raw
        if isinstance(s, dict)
    ]
    if not steps:
        return _note(
            "No generalization was needed: the table was k-anonymous as given "
            "(after suppressing at most the allowed records)."
        )
    limit = d.get("suppression_limit")
    k = d.get("k")
    drawable = [(f"{col} → {count(lv)}", int(b)) for col, lv, b in steps if is_number(b)]
    html = ""
    if drawable:
        svg = charts.datafly_steps_chart(
            drawable,
            int(limit) if is_number(limit) else None,
            int(k) if is_number(k) else None,
        )
        html += _figure(
            svg,
            "Records in classes smaller than k after each step. Datafly generalizes the "
            "column with the most distinct values by one level until those records fit in the "
            "suppression limit, then suppresses them.",
        )
    rows = [[str(i + 1), col, count(lv), count(b)] for i, (col, lv, b) in enumerate(steps)]
    return html + _table(
        ["step", "generalized column", "to level", "records below k"], rows, numeric=(0, 2, 3)
    )


def _df_inputs(d: Mapping[str, Any]) -> str:
    levels = d.get("levels")
    items = [
        ("quasi-identifiers", ", ".join(map(str, levels)) if isinstance(levels, dict) else NA),
        ("records", count(d.get("records"))),
        ("k", count(d.get("k"))),
        ("suppression limit (records)", count(d.get("suppression_limit"))),
    ]
    output = d.get("output")
    if isinstance(output, dict):
        items.append(
            (
                "output",
                f"{_text(output.get('path'))} ({_text(output.get('format'))}, "
                f"{count(output.get('records'))} records)",
            )
        )
    items.append(("schema", _text(d.get("schema"))))
    return _dl(items)


_BUILDERS: dict[str, Callable[[Mapping[str, Any], int], _Part]] = {
    "assessment": _build_assessment,
    "direct_match": _build_direct_match,
    "datafly": _build_datafly,
}


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
}


def _overall(parts: Sequence[_Part]) -> str:
    verdicts = {p.verdict for p in parts}
    if not parts:
        return UNKNOWN
    if BREACHED in verdicts:
        return BREACHED
    if UNKNOWN in verdicts:
        return UNKNOWN
    if PASSED in verdicts:
        return PASSED
    return UNGATED


def _verdict_box(parts: Sequence[_Part]) -> str:
    overall = _overall(parts)
    if not parts:
        why = (
            "<p><strong>No result to report.</strong> The report was given no assessment, "
            "direct-match or Datafly result, so it cannot support a release decision.</p>"
        )
    else:
        items = []
        for p in parts:
            word = _VERDICT_WORDS[p.verdict].lower()
            items.append(
                f'<li><a href="#{_ANCHORS[p.kind]}">{esc(_TITLES[p.kind])}</a>: '
                f"<strong>{esc(word)}</strong> — {esc(p.headline)}"
                + "".join(f"<br><span>{esc(n)}</span>" for n in p.notes)
                + "</li>"
            )
        lead = {
            PASSED: "The release may proceed as far as these checks go.",
            BREACHED: "The release does not meet its thresholds.",
            UNKNOWN: "The result is incomplete: do not sign off a release on it.",
            UNGATED: "Risk was measured; no threshold was set, so nothing was gated.",
        }[overall]
        why = f"<p><strong>{esc(lead)}</strong></p><ul>{''.join(items)}</ul>"
    return (
        f'<div class="verdict {overall}" id="verdict">'
        f'<div class="word">{_VERDICT_WORDS[overall]}</div>'
        f'<div class="why">{why}</div></div>\n'
    )


def _gate_section(parts: Sequence[_Part]) -> str:
    rows = [g for p in parts for g in p.gate]
    if not rows:
        if not parts:
            inner = _na("No result, no thresholds.")
        elif all(p.thresholds_known for p in parts):
            inner = _note("No thresholds were given: nothing was gated.")
        else:
            inner = _na("The result does not say which thresholds were set.")
    else:
        inner = _table(
            ["check", "observed", "", "limit", "result"],
            [
                [
                    f"{esc(g.check)}<br><code>{esc(g.metric)}</code>",
                    esc(g.observed),
                    esc(g.relation),
                    esc(g.limit),
                    _badge(g.status),
                ]
                for g in rows
            ],
            numeric=(1, 3),
            row_classes=["breach" if g.status == BREACHED else "" for g in rows],
            escaped=True,
        )
    return f'<section class="card" id="gate"><h2>Thresholds</h2>\n{inner}</section>\n'


def _about(parts: Sequence[_Part], ctx: Mapping[str, Any], generated: str) -> str:
    from reident_airflow import __version__

    items: list[tuple[str, str]] = []
    for key, label in _CONTEXT_LABELS.items():
        if key in ctx and ctx[key] is not None:
            items.append((label, _text(ctx[key])))
    for key, value in ctx.items():
        if key not in _CONTEXT_LABELS and key != "title" and value is not None:
            items.append((str(key), _text(value)))
    items.append(("reports of", ", ".join(_TITLES[p.kind] for p in parts) or NA))
    items.append(("generated", generated))
    items.append(("tool", f"reident-airflow {__version__}"))
    return (
        '<section class="card" id="about"><h2>About this report</h2>\n'
        + _dl(items)
        + _note(
            "The report holds aggregates only: counts, shares, class sizes and column names "
            "— never a record's values. It loads nothing from the network."
        )
        + "</section>\n"
    )


def _document(parts: list[_Part], ctx: Mapping[str, Any], title: str | None) -> str:
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if title is None:
        title = ctx.get("title") if isinstance(ctx.get("title"), str) else None
    if title is None:
        title = _TITLES[parts[0].kind] + " report" if len(parts) == 1 else "Release risk report"
    source = ctx.get("source", ctx.get("table"))
    sub = " · ".join(
        x
        for x in (
            _text(source) if source is not None else "",
            f"generated {generated}",
        )
        if x
    )
    toc = ['<a href="#verdict">Verdict</a>', '<a href="#gate">Thresholds</a>']
    toc += [f'<a href="#{_ANCHORS[p.kind]}">{esc(_TITLES[p.kind])}</a>' for p in parts]
    toc.append('<a href="#about">About</a>')
    body = [
        f'<header class="report-head"><h1>{esc(title)}</h1><p class="sub">{esc(sub)}</p>'
        "</header>\n",
        f'<nav class="toc">{"".join(toc)}</nav>\n',
        _verdict_box(parts),
        _gate_section(parts),
    ]
    for p in parts:
        body.append(
            f'<section class="part" id="{_ANCHORS[p.kind]}">'
            f'<h2 class="part-title">{esc(_TITLES[p.kind])}</h2>\n'
            + "".join(p.body)
            + "</section>\n"
        )
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
