"""The catalogue of the gate's thresholds and the risk measures: one declaration each.

Every reader of an assessment that names, gates or labels one of its numbers reads it here:
:class:`~reident_airflow.engine.options.Thresholds` checks and converts its limits by it, the
report lists the gate by it, the OpenLineage assertions and the Great Expectations
expectations find the number in the ``reident.assessment/v1`` JSON (``docs/contract.md`` §2)
by it.

- :data:`THRESHOLDS`: each limit of the gate, in the order of the fields of ``Thresholds``:
  the metric it reads (the dotted path of the number in the JSON, the name a breach
  carries), whether the number must be at least the limit (``min_``) or at most, whether it
  is a whole number (a count) or a share of records, and what the report calls the check.
  The last four (``compared``) read the difference from the previous release.
- :data:`SCAN_GATES`: the two metrics the identifier scan adds to an assessment's breaches
  and warnings (``engine.assessment.with_identifier_scan``): counts of columns, limit 0.
  They are no field of ``Thresholds`` and have no limit to set: the scan's policy gates.
- :data:`MEASURES`: the risk measures every assessment reports (shares of records; the
  population ones when a population is described), by their dotted path, each with how it
  reads in a sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "COMPARED_THRESHOLDS",
    "MEASURES",
    "SCAN_GATES",
    "THRESHOLDS",
    "Measure",
    "Threshold",
    "threshold_of",
]


@dataclass(frozen=True)
class Threshold:
    """One limit of the release gate (a field of ``Thresholds``, a command-line flag).

    ``metric`` is the dotted path of the number it reads in the assessment JSON and the
    metric its breaches carry; ``min_l`` reads one number per sensitive column
    (``l_diversity.<column>.distinct``), so its ``metric`` is only their prefix.
    ``minimum``: the number must be at least the limit (``k``, l-diversity) rather than at
    most (the risks); ``whole``: the limit is a whole number (a count) rather than a share of
    records; ``zero_allowed``: a share limit may be 0 (no record at risk), where the other
    shares are in ``(0, 1]`` (no table has a risk of 0). ``label`` is what the report calls
    the check. ``compared``: the number is read on the difference from the previous release
    (``since_last_release``, docs/metrics.md §12), so the limit needs a previous release to
    compare with and is checked by ``engine.assessment.with_release_difference``.
    """

    name: str
    metric: str
    label: str
    minimum: bool = False
    whole: bool = False
    zero_allowed: bool = False
    compared: bool = False

    @property
    def path(self) -> tuple[str, ...]:
        """The keys that lead to the number in the assessment JSON."""
        return tuple(self.metric.split("."))

    @property
    def share(self) -> bool:
        """Whether the limit is a share of records (the risks) rather than a count."""
        return not self.whole

    def crossed(self, observed: float, limit: float) -> bool:
        """Whether ``observed`` is on the wrong side of ``limit``."""
        return observed < limit if self.minimum else observed > limit


_GLOBAL_RISK = "Expected re-identifications (sampling weights), share of records"

#: The gate's thresholds, in the order of the fields of ``Thresholds`` (and of the report).
THRESHOLDS: Mapping[str, Threshold] = {
    t.name: t
    for t in (
        Threshold(
            "max_highest_risk",
            "prosecutor.highest_risk",
            "Highest re-identification risk (prosecutor)",
        ),
        Threshold(
            "max_average_risk",
            "prosecutor.average_risk",
            "Average re-identification risk (prosecutor)",
        ),
        Threshold(
            "max_records_at_risk",
            "prosecutor.records_at_risk",
            "Records at risk",
            zero_allowed=True,
        ),
        Threshold("min_k", "k", "Smallest class size k", minimum=True, whole=True),
        Threshold("max_global_risk", "individual_risk.global_risk_share", _GLOBAL_RISK),
        Threshold("min_l", "l_diversity", "Distinct l-diversity", minimum=True, whole=True),
        Threshold(
            "min_arrival_k",
            "since_last_release.arrivals.k",
            "Smallest count of arrivals in a class (arrival k)",
            minimum=True,
            whole=True,
            compared=True,
        ),
        Threshold(
            "max_arrival_risk",
            "since_last_release.arrivals.highest_risk",
            "Highest risk of an arriving record",
            compared=True,
        ),
        Threshold(
            "min_departure_k",
            "since_last_release.departures.k",
            "Smallest count of departures in a class (departure k)",
            minimum=True,
            whole=True,
            compared=True,
        ),
        Threshold(
            "max_departure_risk",
            "since_last_release.departures.highest_risk",
            "Highest risk of a departing record",
            compared=True,
        ),
    )
}

#: The limits read on the difference from the previous release (``compared``).
COMPARED_THRESHOLDS = tuple(t.name for t in THRESHOLDS.values() if t.compared)


#: The identifier scan's breach and warning (docs/identifier-scan.md §9), by metric: how
#: many columns failed the scan (a breach under policy ``"fail"``) and how many it flagged
#: (a warning). Both are counts of columns at most 0; ``name`` is the operator parameter
#: whose policy sets them, and the number is the length of the scan's ``failing`` or
#: ``flagged`` list (``identifier_scan.failing`` / ``.flagged`` in the JSON).
SCAN_GATES: Mapping[str, Threshold] = {
    t.metric: t
    for t in (
        Threshold(
            "identifier_scan",
            "identifier_scan.failing_columns",
            "Columns failing the identifier scan",
            whole=True,
        ),
        Threshold(
            "identifier_scan",
            "identifier_scan.flagged_columns",
            "Columns flagged by the identifier scan",
            whole=True,
        ),
    )
}


#: The breach of a candidate that gained a quasi-identifier the previous release did not
#: hold (``since_last_release.gained_quasi_identifiers`` in the JSON lists them): every
#: record's value of that column is new information to whoever keeps both releases, which no
#: comparison of the two measures. Observed: how many such QIs, limit 0; checked whenever a
#: previous release is compared, whatever limits are set (``name``: the option that asks
#: for the comparison).
GAINED_QIS = Threshold(
    "previous_release",
    "since_last_release.gained_quasi_identifiers",
    "Quasi-identifiers the previous release did not hold",
    whole=True,
)


def threshold_of(metric: str) -> Threshold | None:
    """The threshold that gates ``metric`` (a breach's metric name: of :data:`THRESHOLDS`,
    :data:`SCAN_GATES` or :data:`GAINED_QIS`), or ``None``."""
    if metric.startswith("l_diversity.") and metric.endswith(".distinct"):
        return THRESHOLDS["min_l"]
    if metric == GAINED_QIS.metric:
        return GAINED_QIS
    found = next((t for t in THRESHOLDS.values() if t.metric == metric), None)
    return found if found is not None else SCAN_GATES.get(metric)


@dataclass(frozen=True)
class Measure:
    """A risk measure: where it sits in the assessment JSON and how it reads in a sentence.

    ``name`` is its dotted path; ``needs_population``: it is estimated only when the
    population the table was drawn from is described (a size, a sampling fraction or a
    region).
    """

    name: str
    label: str
    needs_population: bool = False

    @property
    def path(self) -> tuple[str, ...]:
        """The keys that lead to the number in the assessment JSON."""
        return tuple(self.name.split("."))

    @property
    def gate(self) -> str | None:
        """The threshold (a field of ``Thresholds``, a command-line flag) that gates the same
        number, if there is one."""
        threshold = threshold_of(self.name)
        return None if threshold is None else threshold.name


def _population_measure(model: str) -> Measure:
    return Measure(
        f"uniqueness.population.{model}.fraction",
        f"estimated share of population uniques ({model} model)",
        needs_population=True,
    )


#: The risk measures of an assessment, by name (their dotted path in the JSON).
MEASURES: Mapping[str, Measure] = {
    m.name: m
    for m in (
        Measure("prosecutor.highest_risk", "highest prosecutor re-identification risk"),
        Measure("prosecutor.average_risk", "average prosecutor re-identification risk"),
        Measure("prosecutor.records_at_risk", "share of records at risk (prosecutor)"),
        Measure("journalist.highest_risk", "highest journalist re-identification risk"),
        Measure("journalist.average_risk", "average journalist re-identification risk"),
        Measure("journalist.records_at_risk", "share of records at risk (journalist)"),
        Measure("marketer.risk", "marketer re-identification risk"),
        Measure("uniqueness.sample_uniques", "share of records unique in the table"),
        _population_measure("dankar"),
        _population_measure("pitman"),
        _population_measure("zayatz"),
        _population_measure("snb"),
    )
}
