"""The assessment's measures as charts and tables: risk bands, class sizes, the ranking of
column sets, population uniqueness, individual risk, l-diversity and SUDA.

Each function reads an :class:`~reident_airflow.report.view.AssessmentView` and returns the
inner HTML of one section, or a message saying what the result does not hold.
"""

from __future__ import annotations

from reident_airflow.report import charts
from reident_airflow.report._format import NA, count, number, percent, share_text
from reident_airflow.report._html import details, dl, figure, na, note, table, text
from reident_airflow.report.view import (
    POPULATION_MODELS,
    AssessmentView,
    DankarView,
    ranked_scope,
)

__all__ = [
    "attributes",
    "class_sizes",
    "individual_risk",
    "l_diversity",
    "population",
    "risk_distribution",
    "suda",
]

#: How many rows of the full class-size histogram the report lists.
_HISTOGRAM_ROWS = 400
_SIZE_HEADERS = ["class size", "classes", "records", "share of records"]


def risk_distribution(view: AssessmentView) -> str:
    """ARX's risk bands, drawn from the first that holds records, and all of them as a table."""
    bands = view.risk_bands
    if not bands:
        return na("The result holds no risk distribution (risk_distribution is missing).")
    first = next((i for i, b in enumerate(bands) if b.records > 0), None)
    if first is None:
        return na("The risk distribution holds no records.")
    t = view.record_threshold
    svg = charts.risk_distribution_chart(
        [(b.lower, b.upper, b.records) for b in bands[first:]],
        None if t is None else float(t),
    )
    caption = (
        "Share of records per re-identification risk band (ARX's bands; record risk = 1 / "
        "class size, prosecutor model)."
    )
    if first > 0:
        caption += f" Bands up to {bands[first - 1].upper:g} hold no records and are not drawn."
    rows = [[f"({b.lower:g}, {b.upper:g}]", percent(b.records)] for b in reversed(bands)]
    return figure(svg, caption) + details(
        "Every band as a table", table(["risk band", "share of records"], rows, numeric=(1,))
    )


def _risky_below(view: AssessmentView) -> tuple[int | None, str]:
    """Class sizes below which classes are flagged: min_k of the gate, else the size whose
    record risk 1/size is above the record threshold."""
    min_k = view.limit("min_k")
    if min_k is not None:
        return int(min_k), "the gate's minimum k"
    t = view.record_threshold
    if t is not None and 0 < float(t) <= 1:
        size = 1
        while 1.0 / size > float(t) and size < 10**9:
            size += 1
        return size, f"record risk above {float(t):g}"
    return None, ""


def class_sizes(view: AssessmentView) -> str:
    """Classes per size bucket (chart and table) and the whole histogram."""
    hist = view.class_size_histogram
    if not hist:
        return na("The result holds no class-size histogram (class_size_histogram is missing).")
    risky, why = _risky_below(view)
    svg = charts.class_size_chart(hist, risky, why)
    records = sum(s * c for s, c in hist) or 1
    bucket_rows = [
        [charts.bucket_label(lo, hi), count(c), count(r), percent(r / records)]
        for lo, hi, c, r in charts.class_size_buckets(hist)
    ]
    full_rows = [[count(s), count(c), count(s * c), percent(s * c / records)] for s, c in hist]
    full = table(_SIZE_HEADERS, full_rows[:_HISTOGRAM_ROWS], numeric=(0, 1, 2, 3))
    if len(full_rows) > _HISTOGRAM_ROWS:
        full += note(f"The first {_HISTOGRAM_ROWS} of {len(full_rows)} class sizes are listed.")
    caption = (
        "Equivalence classes by size: the records in a class share all their "
        "quasi-identifier values; small classes are the re-identifiable ones. Bar labels: "
        "number of classes and (on a wide screen) the share of records in them."
    )
    return (
        figure(svg, caption)
        + details("The chart as a table", table(_SIZE_HEADERS, bucket_rows, numeric=(1, 2, 3)))
        + details("The full class-size histogram", full)
    )


def attributes(view: AssessmentView, top: int) -> str:
    """The ``top`` most re-identifying column sets (chart and table), all of them folded."""
    if view.attributes is None:
        return na("The result holds no quasi-identifier ranking (attributes is missing or empty).")
    items = view.attributes
    if not items:
        return na("The quasi-identifier ranking lists no column sets.")
    shown = items[:top]
    svg = charts.attribute_chart(
        [(" + ".join(i.columns), _float(i.distinction), _float(i.separation)) for i in shown]
    )
    rows = [
        [str(n + 1), ", ".join(i.columns), percent(i.distinction), percent(i.separation)]
        for n, i in enumerate(items)
    ]
    headers = ["rank", "columns", "distinction", "separation"]
    caption = (
        f"The {len(shown)} most re-identifying column sets of {len(items)} ranked "
        f"({ranked_scope(view)}). "
        "Distinction: share of records told apart by the set alone (classes / records); "
        "separation: share of record pairs that differ on it."
    )
    out = figure(svg, caption) + table(headers, rows[:top], numeric=(0, 2, 3))
    if len(items) > top:
        out += details(f"All {len(items)} column sets", table(headers, rows, numeric=(0, 2, 3)))
    return out


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _dankar_row(dankar: DankarView | None) -> list[str]:
    if dankar is None:
        return ["Dankar's rule", "", NA, NA, "no model was available"]
    if dankar.model_name is not None:
        uses = f"uses {dankar.model_name}"
    elif dankar.uniques == 0:
        uses = "no sample uniques: every estimate is 0"
    else:
        uses = f"model: {text(dankar.model)}"
    return [
        "Dankar's rule",
        uses,
        number(dankar.uniques, 6),
        percent(dankar.fraction, 4),
        "the estimate the report uses",
    ]


def population(view: AssessmentView) -> str:
    """Sample uniques, then each population model's estimate and Dankar's choice."""
    head = note(
        f"Sample uniques (records alone in their class): {share_text(view.sample_uniques)}."
    )
    pop = view.population
    if pop is None:
        return head + na(
            "No population was given (population size, sampling fraction or region), so "
            "population uniqueness was not estimated."
        )
    chosen = pop.dankar.model if pop.dankar is not None else None
    rows, classes = [], []
    for key, label, source in POPULATION_MODELS:
        est = pop.estimate(key)
        if est is not None:
            choice = "chosen by Dankar's rule" if chosen == key else ""
            rows.append([label, source, number(est.uniques, 6), percent(est.fraction, 4), choice])
        else:
            rows.append([label, source, NA, NA, "not available for this table"])
        classes.append("chosen" if chosen == key else "")
    rows.append(_dankar_row(pop.dankar))
    classes.append("")
    facts = note(
        f"Population N = {count(pop.population_size)}, sampling fraction n / N = "
        f"{number(pop.sampling_fraction, 6)}. Dankar's rule: Pitman at sampling fractions up "
        "to 0.1 (Zayatz if Pitman is unavailable); above, the smaller of Zayatz and SNB."
    )
    return (
        head
        + facts
        + table(
            ["model", "source", "population uniques", "share of N", ""],
            rows,
            numeric=(2, 3),
            row_classes=classes,
        )
    )


def individual_risk(view: AssessmentView) -> str:
    """The individual-risk figures from the sampling weights."""
    r = view.individual_risk
    if r is None:
        return na("No individual risk in the result.")
    t = r.record_threshold
    items = [
        ("sampling weight column", text(r.weight)),
        ("expected re-identifications", number(r.global_risk, 6)),
        ("as a share of the records", percent(r.global_risk_share)),
        ("highest individual risk", number(r.highest)),
    ]
    if r.lowest is not None:
        items.append(("lowest individual risk", number(r.lowest)))
    at_risk = f"records with individual risk > {number(t)}" if t is not None else "records at risk"
    items.append((at_risk, percent(r.records_above_threshold)))
    if r.estimated_population is not None:
        items.append(("estimated population (sum of weights)", count(r.estimated_population)))
    if r.method is not None:
        items.append(("method", r.method))
    return note(
        "Each class's population size is estimated from the sampling weights of its records; "
        "a record's risk follows from its class's sample and estimated population sizes."
    ) + dl(items)


def l_diversity(view: AssessmentView) -> str:
    """Distinct, entropy and recursive l per sensitive column."""
    if not view.l_diversity:
        return na("No l-diversity in the result.")
    homogeneous = any(d.homogeneous_records is not None for d in view.l_diversity)
    headers = ["sensitive column", "distinct l", "entropy l", "recursive l", "c"]
    if homogeneous:
        headers.append("records in classes of one value")  # a share (diversity.py)
    rows = []
    for d in view.l_diversity:
        row = [d.column, *map(number, (d.distinct, d.entropy, d.recursive, d.c))]
        if homogeneous:
            row.append(percent(d.homogeneous_records))
        rows.append(row)
    return note(
        "The smallest l over all classes: a class whose records all share one sensitive value "
        "(l = 1) discloses it to anyone who can place a person in that class."
    ) + table(headers, rows, numeric=tuple(range(1, len(headers))))


def suda(view: AssessmentView) -> str:
    """SUDA2's counts and each column's contribution."""
    s = view.suda
    if s is None:
        return na("No SUDA result.")
    items = [
        ("records with a minimal sample unique", count(s.records_with_msu)),
        ("highest SUDA score", number(s.max_score)),
    ]
    if s.max_msu_size is not None:
        items.append(("largest MSU size searched", count(s.max_msu_size)))
    if s.msus_by_size:
        by_size = ", ".join(f"{i + 1}: {count(n)}" for i, n in enumerate(s.msus_by_size))
        items.append(("minimal sample uniques by size", by_size))
    out = dl(items)
    if s.attribute_contributions:
        out += table(
            ["column", "contribution (%)"],
            [[k, number(v)] for k, v in s.attribute_contributions],
            numeric=(1,),
        )
    return out
