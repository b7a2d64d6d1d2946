"""The assessment's rows of the threshold table and its verdict: every failing threshold and
every warning level the result lists, against the observed value.

A failing threshold crossed is a breach (the release stops); a warning level crossed is a
warning (the release goes ahead, the crossing is reported). A metric that crosses its failing
limit has crossed its warning level too (a warning level is never laxer), though the result
lists it as a breach only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from reident_airflow.engine.catalogue import THRESHOLDS, Threshold, threshold_of
from reident_airflow.report._format import NA, count, number, share_text
from reident_airflow.report._html import text
from reident_airflow.report._page import (
    BREACHED,
    PASSED,
    UNGATED,
    UNKNOWN,
    WARNED,
    GateRow,
    plural,
)
from reident_airflow.report.view import AssessmentView, BreachView

__all__ = ["gate_rows", "verdict"]

#: The identifier scan's crossings (an assessment's ``breaches`` under the ``"fail"``
#: policy, its ``warnings`` under ``"warn"``): columns counted against a limit of 0.
_SCAN_CHECKS = {
    "identifier_scan.failing_columns": "Identifier scan: failing columns",
    "identifier_scan.flagged_columns": "Identifier scan: flagged columns",
}


@dataclass(frozen=True)
class _Level:
    """One level of the gate: its limits, the crossings the result lists, the status of a
    crossed row and what the row's check says after the threshold's label."""

    limits: tuple[tuple[str, Any], ...]
    crossings: tuple[BreachView, ...]
    crossed: Collection[str]  # metrics shown as crossed
    hit: str
    suffix: str


def _relation(spec: Threshold | None) -> str:
    if spec is None:
        return ""
    return "≥" if spec.minimum else "≤"


def _formatter(spec: Threshold | None) -> Callable[[Any], str]:
    if spec is None:
        return number
    return share_text if spec.share else count


def _status(metric: str, level: _Level, observed: Any, passed: bool | None) -> str:
    if metric in level.crossed:
        return level.hit
    if passed is True or (passed is False and observed is not None):
        return PASSED  # the result says this limit was not crossed
    return UNKNOWN


def _label(spec: Threshold, view: AssessmentView, metric: str) -> str:
    """A gate row's check: the threshold's label, with the record-risk threshold or the
    sensitive column it applies to."""
    if spec.name == "min_l":
        return f"{spec.label} of {metric.removeprefix('l_diversity.').removesuffix('.distinct')}"
    t = view.record_threshold
    if spec.name == "max_records_at_risk" and t is not None:
        return f"Records at risk (record risk > {number(t)})"
    return spec.label


def _row(
    check: str, metric: str, observed: str, spec: Threshold | None, limit: Any
) -> tuple[str, str, str, str, str]:
    """The cells of a row but its status: ``(check, metric, observed, relation, limit)``."""
    return check, metric, observed, _relation(spec), _formatter(spec)(limit)


def _level_rows(view: AssessmentView, level: _Level) -> list[GateRow]:
    """Every limit of ``level`` against its observed value, then any crossing of a limit the
    result does not list."""
    warning = level.hit == WARNED
    rows: list[GateRow] = []
    seen: set[str] = set()
    for name, limit in level.limits:
        if limit is None:
            continue
        spec = THRESHOLDS.get(name)
        if spec is None:  # a threshold this report does not know: show it as given
            status = PASSED if view.passed is True else UNKNOWN
            rows.append(GateRow(name + level.suffix, name, NA, "", text(limit), status, warning))
            continue
        metrics = _metrics(view, spec)
        seen.update(metrics)
        for metric in metrics:
            observed = view.observed(metric)
            cells = _row(
                _label(spec, view, metric) + level.suffix,
                metric,
                _formatter(spec)(observed),
                spec,
                limit,
            )
            rows.append(GateRow(*cells, _status(metric, level, observed, view.passed), warning))
        if not metrics:  # min_l without a sensitive column in the result
            check = f"{spec.label} (no sensitive column in the result){level.suffix}"
            status = PASSED if view.passed is True else UNKNOWN
            rows.append(GateRow(check, spec.metric, NA, "≥", count(limit), status, warning))
    for b in level.crossings:
        if b.metric in _SCAN_CHECKS:
            check = _SCAN_CHECKS[b.metric] + level.suffix
            cells = (check, b.metric, count(b.observed), "≤", count(b.limit))
            rows.append(GateRow(*cells, level.hit, warning))
        elif b.metric not in seen:
            spec = threshold_of(b.metric)
            spec = None if spec is not None and spec.name == "min_l" else spec
            label = (b.metric if spec is None else spec.label) + level.suffix
            fmt = _formatter(spec)
            rows.append(GateRow(*_row(label, b.metric, fmt(b.observed), spec, b.limit), level.hit))
    return rows


def _metrics(view: AssessmentView, spec: Threshold) -> list[str]:
    """The metrics a threshold gates: one per sensitive column for ``min_l``."""
    if spec.name != "min_l":
        return [spec.metric]
    return [f"l_diversity.{d.column}.distinct" for d in view.l_diversity or ()]


def gate_rows(view: AssessmentView) -> list[GateRow]:
    """The failing thresholds' rows, then the warning levels' rows."""
    breached = {b.metric for b in view.breaches}
    fail = _Level(view.thresholds or (), view.breaches, breached, BREACHED, "")
    warned = breached | {w.metric for w in view.warnings}
    warn = _Level(view.warn_thresholds or (), view.warnings, warned, WARNED, " — warning level")
    return _level_rows(view, fail) + _level_rows(view, warn)


def verdict(view: AssessmentView, gate: list[GateRow]) -> tuple[str, str]:
    """The part's verdict and its one-line reason."""
    failing = [g for g in gate if not g.warning]
    breached = [g for g in failing if g.status == BREACHED]
    n = len(failing)
    if view.passed is False or breached:
        return BREACHED, f"{len(breached)} of {n} {plural(n, 'threshold')} breached"
    if view.passed is not True:
        return UNKNOWN, "the result holds no verdict (“passed” is missing)"
    if not gate:
        return UNGATED, "no thresholds were given: risk measured, nothing gated"
    if any(g.status == UNKNOWN for g in gate):
        return UNKNOWN, "some thresholds could not be checked against the result"
    warned = [g for g in gate if g.status == WARNED]
    met = f"all {n} {plural(n, 'threshold')} met" if n else "no failing threshold"
    if warned:
        w = len(gate) - n
        return WARNED, f"{met}; {len(warned)} of {w} warning {plural(w, 'level')} crossed"
    return PASSED, met
