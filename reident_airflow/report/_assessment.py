"""The assessment's part of the report: its gate, its verdict and its headline sections.

The measures with charts and tables of their own (risk distribution, class sizes, ranking,
population, optional measures) are in :mod:`._measures`. Everything is read from an
:class:`~reident_airflow.report.view.AssessmentView`; what a threshold gates and in which
direction comes from :data:`~reident_airflow.report.view.THRESHOLDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reident_airflow.report._format import NA, count, number, percent, share_text
from reident_airflow.report._html import cards, dl, na, note, table, text
from reident_airflow.report._measures import (
    attributes,
    class_sizes,
    individual_risk,
    l_diversity,
    population,
    risk_distribution,
    suda,
)
from reident_airflow.report._page import BREACHED, PASSED, UNGATED, UNKNOWN, GateRow, Part, plural
from reident_airflow.report.view import (
    THRESHOLDS,
    AssessmentView,
    BreachView,
    Number,
    RiskMeasures,
    ThresholdSpec,
    threshold_of,
)

__all__ = ["build_assessment"]

#: What each journalist basis means, in the report's words.
_BASIS = {
    "sample": "the sample (no population register: as prosecutor)",
    "population_table": "the population register",
    "sampling_weights": "the sampling weights (individual risk)",
}


def build_assessment(view: AssessmentView, top: int) -> Part:
    """The assessment's part: verdict, gate rows, notes and sections (``top`` column sets)."""
    gate = _gate(view)
    verdict, headline = _verdict(view, gate)
    part = Part.of("assessment", verdict, headline, gate, view.schema)
    part.thresholds_known = view.thresholds is not None or bool(gate)
    if not view.complete:
        part.notes.append(
            "This assessment is incomplete: it does not say how many records and classes "
            "were measured, so it cannot support a release decision."
        )
    mismatch = _rows_mismatch(view)
    if mismatch is not None:
        part.notes.append(mismatch)
    sections: list[tuple[str, str, Callable[[], str]]] = [
        ("At a glance", "glance", lambda: _glance(view)),
        ("Attacker models", "models", lambda: _attacker_models(view)),
        ("Risk distribution", "distribution", lambda: risk_distribution(view)),
        ("Class sizes", "classes", lambda: class_sizes(view)),
        ("Which columns re-identify", "attributes", lambda: attributes(view, top)),
        ("Population uniqueness", "population", lambda: population(view)),
    ]
    optional: list[tuple[object, str, str, Callable[[], str]]] = [
        (
            view.individual_risk,
            "Individual risk (sampling weights)",
            "individual-risk",
            lambda: individual_risk(view),
        ),
        (
            view.l_diversity,
            "Sensitive values (l-diversity)",
            "l-diversity",
            lambda: l_diversity(view),
        ),
        (view.suda, "Special uniques (SUDA)", "suda", lambda: suda(view)),
    ]
    sections += [
        (title, anchor, build) for value, title, anchor, build in optional if value is not None
    ]
    sections.append(("Inputs", "inputs", lambda: _inputs(view)))
    part.add_sections("assessment", sections)
    return part


def _rows_mismatch(view: AssessmentView) -> str | None:
    """A note when the input's fingerprint counted other rows than the assessment measured
    (records + excluded records: every row is one or the other, docs/reading.md)."""
    fp = view.fingerprint
    if fp is None or fp.rows is None or view.records is None:
        return None
    measured = view.records + (view.excluded_records or 0)
    if measured == fp.rows:
        return None
    return (
        f"The input's fingerprint counted {count(fp.rows)} rows but the assessment measured "
        f"{count(measured)}: the two may not describe the same data."
    )


# ------------------------------------------------------------------------------------ gate
def _relation(spec: ThresholdSpec | None) -> str:
    if spec is None:
        return ""
    return "≥" if spec.minimum else "≤"


def _formatter(spec: ThresholdSpec | None) -> Callable[[Any], str]:
    if spec is None:
        return number
    return share_text if spec.share else count


def _status(
    metric: str, breached: Mapping[str, BreachView], observed: Number | None, passed: bool | None
) -> str:
    if metric in breached:
        return BREACHED
    if passed is True or (passed is False and observed is not None):
        return PASSED  # the result says no threshold, or not this one, was breached
    return UNKNOWN


def _label(spec: ThresholdSpec, view: AssessmentView, metric: str) -> str:
    """A gate row's check: the threshold's label, with the record-risk threshold or the
    sensitive column it applies to."""
    if spec.name == "min_l":
        return f"{spec.label} of {metric.removeprefix('l_diversity.').removesuffix('.distinct')}"
    t = view.record_threshold
    if spec.name == "max_records_at_risk" and t is not None:
        return f"Records at risk (record risk > {number(t)})"
    return spec.label


def _gate(view: AssessmentView) -> list[GateRow]:
    """Every threshold the result lists against its observed value, then any breach of a
    threshold it does not list."""
    breached = {b.metric: b for b in view.breaches}
    rows: list[GateRow] = []
    seen: set[str] = set()
    for name, limit in view.thresholds or ():
        if limit is None:
            continue
        spec = THRESHOLDS.get(name)
        if spec is None:  # a threshold this report does not know: show it as given
            status = PASSED if view.passed is True else UNKNOWN
            rows.append(GateRow(name, name, NA, "", text(limit), status))
            continue
        if spec.name == "min_l":
            rows.extend(_l_diversity_gate(view, spec, limit, breached, seen))
            continue
        seen.add(spec.metric)
        observed = view.observed(spec.metric)
        fmt = _formatter(spec)
        status = _status(spec.metric, breached, observed, view.passed)
        label = _label(spec, view, spec.metric)
        rows.append(GateRow(label, spec.metric, fmt(observed), _relation(spec), fmt(limit), status))
    for metric, b in breached.items():
        if metric in seen:
            continue
        spec = threshold_of(metric)
        if spec is not None and spec.name == "min_l":
            spec = None  # without min_l in the thresholds: shown as the result names it
        fmt = _formatter(spec)
        label = metric if spec is None else spec.label
        rows.append(
            GateRow(label, metric, fmt(b.observed), _relation(spec), fmt(b.limit), BREACHED)
        )
    return rows


def _l_diversity_gate(
    view: AssessmentView,
    spec: ThresholdSpec,
    limit: Any,
    breached: Mapping[str, BreachView],
    seen: set[str],
) -> list[GateRow]:
    """``min_l``: one row per sensitive column (metric ``l_diversity.<column>.distinct``)."""
    if not view.l_diversity:
        status = PASSED if view.passed is True else UNKNOWN
        check = f"{spec.label} (no sensitive column in the result)"
        return [GateRow(check, spec.metric, NA, "≥", count(limit), status)]
    rows = []
    for column in view.l_diversity:
        metric = f"l_diversity.{column.column}.distinct"
        seen.add(metric)
        status = _status(metric, breached, column.distinct, view.passed)
        label = _label(spec, view, metric)
        rows.append(GateRow(label, metric, count(column.distinct), "≥", count(limit), status))
    return rows


def _verdict(view: AssessmentView, gate: list[GateRow]) -> tuple[str, str]:
    breached = [g for g in gate if g.status == BREACHED]
    n = len(gate)
    if view.passed is False or breached:
        return BREACHED, f"{len(breached)} of {n} {plural(n, 'threshold')} breached"
    if view.passed is True:
        if not gate:
            return UNGATED, "no thresholds were given: risk measured, nothing gated"
        if any(g.status == UNKNOWN for g in gate):
            return UNKNOWN, "some thresholds could not be checked against the result"
        return PASSED, f"all {n} {plural(n, 'threshold')} met"
    return UNKNOWN, "the result holds no verdict (“passed” is missing)"


# -------------------------------------------------------------------------------- sections
def _glance(view: AssessmentView) -> str:
    p = view.prosecutor or RiskMeasures.missing()
    t = view.record_threshold
    items = [
        ("records", count(view.records)),
        ("equivalence classes", count(view.classes)),
        ("k (smallest class)", count(view.k)),
        ("highest risk", percent(p.highest_risk)),
        ("average risk", percent(p.average_risk)),
        ("lowest risk", percent(view.lowest_risk)),
        (
            f"records at risk (risk > {number(t)})" if t is not None else "records at risk",
            percent(p.records_at_risk),
        ),
        ("sample uniques", percent(view.sample_uniques)),
    ]
    dankar = view.population.dankar if view.population is not None else None
    if dankar is not None:
        name = dankar.model_name
        label = f"population uniques ({name})" if name is not None else "population uniques"
        items.append((label, number(dankar.uniques, 3)))
    out = cards(items)
    if view.excluded_records:
        out += note(
            f"{count(view.excluded_records)} records whose quasi-identifiers are all "
            "suppressed (*) are excluded from every measure (ARX behaviour)."
        )
    if all(v == NA for _, v in items):
        return na("The result holds none of the headline figures (records, classes, risks).")
    return out


def _attacker_models(view: AssessmentView) -> str:
    if view.prosecutor is None and view.journalist is None and view.marketer is None:
        return na("The result holds no attacker-model risks (prosecutor, journalist, marketer).")
    rows = []
    for model, m in (("prosecutor", view.prosecutor), ("journalist", view.journalist)):
        if m is None:
            rows.append([model, NA, NA, NA, NA, NA, "not in the result"])
            continue
        basis = m.basis if model == "journalist" else "the sample"
        lowest = view.lowest_risk if model == "prosecutor" else m.lowest_risk
        measures = (
            m.highest_risk,
            m.average_risk,
            lowest,
            m.records_at_risk,
            m.records_affected_by_highest_risk,
        )
        rows.append([model, *map(percent, measures), text(_BASIS.get(basis or "", basis))])
    marketer = view.marketer.risk if view.marketer is not None else None
    rows.append(["marketer", NA, percent(marketer), NA, NA, NA, "success rate"])
    headers = [
        "model",
        "highest risk",
        "average risk",
        "lowest risk",
        "records at risk",
        "affected by highest",
        "measured on",
    ]
    return note(
        "Prosecutor: the attacker knows the person is in the table. Journalist: the "
        "attacker links to a wider register. Marketer: the attacker re-identifies as many "
        "records as possible (expected share)."
    ) + table(headers, rows, numeric=(1, 2, 3, 4, 5))


def _inputs(view: AssessmentView) -> str:
    pop = view.population
    if pop is not None:
        population = (
            f"N = {count(pop.population_size)} "
            f"(sampling fraction {number(pop.sampling_fraction, 6)})"
        )
    else:
        population = "none given (the table is taken as the whole population)"
    basis = view.journalist.basis if view.journalist is not None else None
    models = "prosecutor, journalist" + (f" (on {basis})" if basis is not None else "")
    models += ", marketer"
    if view.thresholds:
        limits = ", ".join(f"{k} = {text(v)}" for k, v in view.thresholds)
    else:
        limits = "none (risk measured, nothing gated)"
    extra = []
    if view.individual_risk is not None and view.individual_risk.weight is not None:
        extra.append(("sampling weights", view.individual_risk.weight))
    if view.l_diversity:
        extra.append(("sensitive columns", ", ".join(d.column for d in view.l_diversity)))
    qis = view.quasi_identifiers
    return dl(
        [
            ("quasi-identifiers", ", ".join(qis) if qis else NA),
            ("records measured", count(view.records)),
            ("attacker models", models),
            ("population", population),
            ("record-risk threshold", number(view.record_threshold)),
            ("thresholds", limits),
            *extra,
            ("schema", text(view.schema)),
        ]
    )
