"""Plain-text summaries of the JSON results, for terminals and task logs (aggregates only).

The result is read through its typed view (:class:`~reident_airflow.report.view.AssessmentView`),
the same one the HTML report reads, so a value the result does not hold prints as ``n/a``.
An assessment's summary starts with its verdict (PASSED, PASSED WITH WARNINGS, BREACHED, or
INCOMPLETE for a result without one); its gate names the preset applied and its source, each
breach, then each warning level crossed; a breach of ``min_k`` ends with what to do (the
result's ``advice``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from reident_airflow.engine.catalogue import THRESHOLDS
from reident_airflow.report.view import (
    AssessmentView,
    BreachView,
    DirectMatchView,
    Number,
    gained_qis_sentence,
    ranked_scope,
)

__all__ = ["assessment_summary", "direct_match_summary"]


def _pct(x: Number | None) -> str:
    return "n/a" if x is None else f"{100.0 * x:.4g}%"


def _num(x: Number | None) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def _count(x: Number | None) -> str:
    return "n/a" if x is None else f"{x:,}"


def assessment_summary(a: Mapping[str, Any] | AssessmentView, *, top_attributes: int = 5) -> str:
    """A readable report of a ``reident.assessment/v1`` dict (or of its view)."""
    view = a if isinstance(a, AssessmentView) else AssessmentView.from_dict(a)
    lines = [
        f"Re-identification risk: {_verdict(view)}",
        f"  quasi-identifiers : {', '.join(view.quasi_identifiers)}",
        f"  records           : {_count(view.records)}  in {_count(view.classes)} classes  "
        f"(k = {'n/a' if view.k is None else view.k})",
    ]
    if view.excluded_records:
        lines.append(f"  excluded          : {view.excluded_records:,} fully suppressed records")
    lines += _models(view)
    lines += _population(view)
    lines += _optional_measures(view)
    lines += _attributes(view, top_attributes)
    lines += _since_last_release(view)
    lines += _gate(view)
    lines += _warnings(view)
    if view.advice is not None:
        lines += textwrap.wrap(
            f"What to do: {view.advice.describe()}", width=96, subsequent_indent="  "
        )
    return "\n".join(lines) + "\n"


def _since_last_release(view: AssessmentView) -> list[str]:
    since = view.since_last_release
    if since is None:
        return []
    lines = [
        "Since the last release",
        f"  records           : {_count(since.previous_records)} before, "
        f"{_count(since.records)} now",
        f"  arrivals          : {_count(since.arrivals.records)} "
        f"(k = {'n/a' if since.arrivals.k is None else since.arrivals.k})",
        f"  departures        : {_count(since.departures.records)} "
        f"(k = {'n/a' if since.departures.k is None else since.departures.k})",
    ]
    if since.gained_columns:
        lines.append(f"  columns gained    : {', '.join(since.gained_columns)} (not compared)")
    if since.dropped_columns:
        lines.append(f"  columns dropped   : {', '.join(since.dropped_columns)} (not compared)")
    if since.gained_quasi_identifiers:
        lines += textwrap.wrap(
            gained_qis_sentence(since.gained_quasi_identifiers),
            width=96,
            initial_indent="  ",
            subsequent_indent="  ",
        )
    return lines


def _verdict(view: AssessmentView) -> str:
    if view.passed is True:
        return "PASSED WITH WARNINGS" if view.warnings else "PASSED"
    if view.passed is False:
        return "BREACHED"
    return "INCOMPLETE (the result holds no verdict)"


def _models(view: AssessmentView) -> list[str]:
    p, j = view.prosecutor, view.journalist
    lines = ["Prosecutor model"]
    if p is not None:
        lines += [
            f"  highest risk      : {_num(p.highest_risk)}",
            f"  average risk      : {_num(p.average_risk)}",
            f"  lowest risk       : {_num(view.lowest_risk)}",
            f"  records at risk   : {_pct(p.records_at_risk)} (record risk > "
            f"{_num(p.record_threshold)})",
        ]
    lines.append(f"  sample uniques    : {_pct(view.sample_uniques)}")
    basis = j.basis if j is not None else None
    if basis == "sample":
        basis = "the sample (no population register given)"
    elif basis == "sampling_weights":
        basis = f"sampling weights (column {j.weight if j else None!r})"
    lines.append(f"Journalist model    : based on {basis or 'n/a'}")
    ind = view.individual_risk
    if ind is not None:
        lines += [
            f"Individual risk (sampling weights in {ind.weight!r})",
            f"  expected re-identifications: {_num(ind.global_risk)} "
            f"({_pct(ind.global_risk_share)} of records)",
            f"  highest record risk       : {_num(ind.highest)}",
        ]
    marketer = view.marketer.risk if view.marketer is not None else None
    lines.append(f"Marketer risk       : {_num(marketer)}")
    return lines


def _population(view: AssessmentView) -> list[str]:
    pop = view.population
    if pop is None:
        return []
    lines = [
        f"Population uniques (N = {_count(pop.population_size)}, "
        f"sampling fraction {_num(pop.sampling_fraction)})"
    ]
    for model in ("pitman", "zayatz", "snb", "dankar"):
        est = pop.estimate(model)
        if est is None:
            lines.append(f"  {model:<8}: not available")
            continue
        extra = (
            f"  (model: {pop.dankar.model})" if pop.dankar is not None and model == "dankar" else ""
        )
        lines.append(
            f"  {model:<8}: {_num(est.uniques)} uniques = {_pct(est.fraction)} of N{extra}"
        )
    return lines


def _optional_measures(view: AssessmentView) -> list[str]:
    lines = []
    for ld in view.l_diversity or ():
        homogeneous = (
            f"; {_pct(ld.homogeneous_records)} of records in single-value classes"
            if ld.homogeneous_records
            else ""
        )
        lines.append(
            f"l-diversity of {ld.column!r}: distinct {ld.distinct}, entropy "
            f"{_num(ld.entropy)}, recursive (c={_num(ld.c)}) {ld.recursive}{homogeneous}"
        )
    suda = view.suda
    if suda is not None:
        contrib = sorted(suda.attribute_contributions, key=lambda kv: -(kv[1] or 0))
        top = ", ".join(f"{k} {v:.3g}%" if v is not None else f"{k} n/a" for k, v in contrib[:3])
        lines.append(
            f"Special uniques (SUDA2): {_count(suda.records_with_msu)} records with an MSU, "
            f"max score {_num(suda.max_score)}; top contributions: {top}"
        )
    return lines


def _attributes(view: AssessmentView, top: int) -> list[str]:
    if not view.ranked_attribute_sets:
        return []
    lines = [
        f"Most re-identifying column sets (of {view.ranked_attribute_sets} ranked: "
        f"{ranked_scope(view)})"
    ]
    for item in (view.attributes or ())[:top]:
        lines.append(
            f"  {', '.join(item.columns)}: distinction {_num(item.distinction)}, "
            f"separation {_num(item.separation)}"
        )
    return lines


def _crossing(b: BreachView, word: str, level: str) -> str:
    """One crossed limit: ``BREACH k: 1 < minimum 5``, ``WARNING ...: 0.06 > warning level
    0.05``."""
    if b.is_minimum and b.observed is not None and b.limit is not None:
        return f"  {word} {b.metric}: {int(b.observed)} < {level or 'minimum'} {int(b.limit)}"
    return f"  {word} {b.metric}: {_num(b.observed)} > {level or 'limit'} {_num(b.limit)}"


def _preset(view: AssessmentView) -> list[str]:
    if view.preset is None:
        return []
    entry = view.preset_entry
    if entry is None:
        return [f"  preset {view.preset} (not a preset this version knows)"]
    source = textwrap.wrap(
        f"source: {entry.source}", width=96, initial_indent="    ", subsequent_indent="    "
    )
    overrides = [
        f"    {name}={_num(given)} given beside it replaces the preset's {_num(own)}"
        for name, given, own in view.preset_overrides
    ]
    return [f"  preset {view.preset}: {entry.context}", *source, *overrides]


def _gate(view: AssessmentView) -> list[str]:
    if not view.thresholds and not view.breaches:
        return []
    lines = ["Gate", *_preset(view)]
    lines += [_crossing(b, "BREACH", "") for b in view.breaches]
    if not view.breaches:
        checked, unchecked = _checked_limits(view)
        limits = ", ".join(f"{k}={_num(view.limit(k))}" for k in checked)
        if checked:
            lines.append(f"  all thresholds met ({limits})")
        if unchecked:
            lines.append(
                f"  not checked (nothing to measure): {', '.join(unchecked)}"
                + (" -- no previous release, or nothing moved" if _compared(unchecked) else "")
            )
    return lines


def _compared(names: list[str]) -> bool:
    return any((t := THRESHOLDS.get(n)) is not None and t.compared for n in names)


def _checked_limits(view: AssessmentView) -> tuple[list[str], list[str]]:
    """The limits set, split into those the result holds a measure for (checked) and those
    it does not (e.g. ``min_arrival_k`` on a first release, or with no arrival)."""
    checked: list[str] = []
    unchecked: list[str] = []
    for name, _ in view.thresholds or ():
        threshold = THRESHOLDS.get(name)
        if threshold is None:
            checked.append(name)  # a limit this version does not know: as the JSON says
        elif name == "min_l":
            (checked if view.l_diversity else unchecked).append(name)
        elif view.observed(threshold.metric) is None:
            unchecked.append(name)
        else:
            checked.append(name)
    return checked, unchecked


def _warnings(view: AssessmentView) -> list[str]:
    if not view.warnings:
        return []
    return ["WARNINGS", *(_crossing(w, "WARNING", "warning level") for w in view.warnings)]


def direct_match_summary(result: Mapping[str, Any] | DirectMatchView, *, top: int = 10) -> str:
    """A readable report of a ``reident.direct_match/v1`` dict (or of its view)."""
    view = result if isinstance(result, DirectMatchView) else DirectMatchView.from_dict(result)
    aligned = f"aligned by key {view.key!r}" if view.key else "aligned by position"
    columns = view.columns or ()
    target = "n/a" if view.target is None else f"{view.target:g}"
    lines = [
        f"Column direct match protection: {'PASSED' if view.passed else 'BELOW TARGET'}",
        f"  records    : {_count(view.records)} ({aligned})",
        f"  protection : {_p(view.protection)} (target {target})",
        f"Columns, least protected first ({min(top, len(columns))} of {len(columns)}):",
        f"  {'protection':>10}  {'matches':>12}  {'distinct':>12}  column",
    ]
    for c in columns[:top]:
        lines.append(
            f"  {_p(c.protection):>10}  {_count(c.matches):>12}  "
            f"{_count(c.distinct_avatar_values):>12}  {c.column}"
        )
    below = view.below_target
    lines.append(f"Below target ({len(below)}): {', '.join(below) if below else 'none'}")
    for side, only in (("original", view.only_in_original), ("avatar", view.only_in_avatar)):
        if only:
            lines.append(f"Only in the {side} table, not compared: {', '.join(only)}")
    return "\n".join(lines) + "\n"


def _p(value: Number | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
