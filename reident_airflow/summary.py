"""Plain-text summaries of the JSON results, for terminals and task logs (aggregates only)."""

from __future__ import annotations

from typing import Any

__all__ = ["assessment_summary"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100.0 * x:.4g}%"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def assessment_summary(a: dict[str, Any], *, top_attributes: int = 5) -> str:
    """A readable report of a ``reident.assessment/v1`` dict."""
    lines: list[str] = []
    verdict = "PASSED" if a["passed"] else "BREACHED"
    lines.append(f"Re-identification risk: {verdict}")
    lines.append(f"  quasi-identifiers : {', '.join(a['quasi_identifiers'])}")
    lines.append(
        f"  records           : {a['records']:,}  in {a['classes']:,} classes  (k = {a['k']})"
    )
    if a.get("excluded_records"):
        lines.append(f"  excluded          : {a['excluded_records']:,} fully suppressed records")
    p = a["prosecutor"]
    lines.append("Prosecutor model")
    lines.append(f"  highest risk      : {_num(p['highest_risk'])}")
    lines.append(f"  average risk      : {_num(p['average_risk'])}")
    lines.append(
        f"  records at risk   : {_pct(p['records_at_risk'])} (record risk > "
        f"{_num(p['record_threshold'])})"
    )
    lines.append(f"  sample uniques    : {_pct(a['uniqueness']['sample_uniques'])}")
    j = a["journalist"]
    basis = "the sample (no population register given)" if j["basis"] == "sample" else j["basis"]
    if j["basis"] == "sampling_weights":
        basis = f"sampling weights (column {j.get('weight')!r})"
    lines.append(f"Journalist model    : based on {basis}")
    ind = a.get("individual_risk")
    if ind:
        lines.append(f"Individual risk (sampling weights in {ind['weight']!r})")
        lines.append(
            f"  expected re-identifications: {ind['global_risk']:.6g} "
            f"({_pct(ind['global_risk_share'])} of records)"
        )
        lines.append(f"  highest record risk       : {_num(ind['highest'])}")
    lines.append(f"Marketer risk       : {_num(a['marketer']['risk'])}")
    pop = a["uniqueness"]["population"]
    if pop is not None:
        lines.append(
            f"Population uniques (N = {pop['population_size']:,}, "
            f"sampling fraction {_num(pop['sampling_fraction'])})"
        )
        for model in ("pitman", "zayatz", "snb", "dankar"):
            est = pop.get(model)
            if est is None:
                lines.append(f"  {model:<8}: not available")
                continue
            extra = f"  (model: {est['model']})" if model == "dankar" else ""
            lines.append(
                f"  {model:<8}: {est['uniques']:.6g} uniques = {_pct(est['fraction'])} of N{extra}"
            )
    diversity = a.get("l_diversity") or {}
    for column, ld in diversity.items():
        lines.append(
            f"l-diversity of {column!r}: distinct {ld['distinct']}, entropy "
            f"{_num(ld['entropy'])}, recursive (c={_num(ld['c'])}) {ld['recursive']}"
            + (
                f"; {_pct(ld['homogeneous_records'])} of records in single-value classes"
                if ld.get("homogeneous_records")
                else ""
            )
        )
    suda = a.get("suda")
    if suda:
        contrib = sorted(suda["attribute_contributions"].items(), key=lambda kv: -kv[1])
        top = ", ".join(f"{k} {v:.3g}%" for k, v in contrib[:3])
        lines.append(
            f"Special uniques (SUDA2): {suda['records_with_msu']:,} records with an MSU, "
            f"max score {_num(suda['max_score'])}; top contributions: {top}"
        )
    attrs = a.get("attributes") or []
    if attrs:
        lines.append(f"Most re-identifying column sets (of {len(attrs)} ranked)")
        for item in attrs[:top_attributes]:
            lines.append(
                f"  {', '.join(item['columns'])}: distinction {_num(item['distinction'])}, "
                f"separation {_num(item['separation'])}"
            )
    if a["thresholds"]:
        lines.append("Gate")
        breached = {b["metric"]: b for b in a["breaches"]}
        for b in a["breaches"]:
            minimum = b["metric"] == "k" or b["metric"].startswith("l_diversity.")
            lines.append(
                f"  BREACH {b['metric']}: {_num(b['observed'])} > limit {_num(b['limit'])}"
                if not minimum
                else f"  BREACH {b['metric']}: {int(b['observed'])} < minimum {int(b['limit'])}"
            )
        if not breached:
            limits = ", ".join(f"{k}={_num(v)}" for k, v in a["thresholds"].items())
            lines.append(f"  all thresholds met ({limits})")
    return "\n".join(lines) + "\n"
