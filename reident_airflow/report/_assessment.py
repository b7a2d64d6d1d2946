"""The assessment's part of the report: its gate, its verdict and its headline sections.

The measures with charts and tables of their own (risk distribution, class sizes, ranking,
population, optional measures) are in :mod:`._measures`. Everything is read from an
:class:`~reident_airflow.report.view.AssessmentView`; what a threshold gates and in which
direction comes from :data:`~reident_airflow.engine.catalogue.THRESHOLDS`.
"""

from __future__ import annotations

from collections.abc import Callable

from reident_airflow.report._advice import advice_section, preset_items, preset_note
from reident_airflow.report._format import NA, count, number, percent
from reident_airflow.report._gate import gate_rows, verdict
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
from reident_airflow.report._page import Part
from reident_airflow.report._scan import identifier_scan_section
from reident_airflow.report._since import first_release_section, since_last_release_section
from reident_airflow.report.view import (
    AssessmentView,
    RiskMeasures,
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
    gate = gate_rows(view)
    status, headline = verdict(view, gate)
    part = Part.of("assessment", status, headline, gate, view.schema)
    part.thresholds_known = view.thresholds is not None or bool(gate)
    preset = preset_note(view)
    if preset is not None:
        part.notes.append(preset)
    if not view.complete:
        part.notes.append(
            "This assessment is incomplete: it does not say how many records and classes "
            "were measured, so it cannot support a release decision."
        )
    mismatch = _rows_mismatch(view)
    if mismatch is not None:
        part.notes.append(mismatch)
    sections: list[tuple[str, str, Callable[[], str]]] = []
    advice = view.advice
    if advice is not None:
        sections.append(("What to do", "advice", lambda: advice_section(advice)))
        part.links.append(("assessment-advice", "What to do"))
    scan = view.identifier_scan
    if scan is not None:
        sections.append(
            ("Identifier scan", "identifier-scan", lambda: identifier_scan_section(scan))
        )
        part.links.append(("assessment-identifier-scan", "Identifier scan"))
    since = view.since_last_release
    if since is not None:
        sections.append(
            (
                "Since the last release",
                "since-last-release",
                lambda: since_last_release_section(since),
            )
        )
        part.links.append(("assessment-since-last-release", "Since the last release"))
    elif view.release_compared:
        sections.append(("Since the last release", "since-last-release", first_release_section))
    sections += [
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
    extra = preset_items(view)
    if view.warn_thresholds:
        levels = ", ".join(f"{k} = {text(v)}" for k, v in view.warn_thresholds)
        extra.append(("warning levels", levels))
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
