"""A typed, read-only view of the results the report and the summaries show.

The JSON documents (``reident.assessment/v1``, ``reident.direct_match/v1``,
``reident.datafly/v1``; ``docs/contract.md``) arrive as dicts: from the engine in the same
process, or read back from a file written by another version, a hand-edited file, an XCom.
The adapters that show them -- the HTML report, the plain-text summary, the notifiers -- read
these views instead of walking the dict each on its own (the notifiers read
:class:`VerdictView`, the part of any check's result an alert may carry)::

    from reident_airflow.report.view import AssessmentView

    view = AssessmentView.from_dict(payload)
    view.prosecutor.highest_risk if view.prosecutor else None

Building a view is where the shape is checked, once: every field holds a value of its declared
type or ``None`` ("not in the result, or not of the expected type"), never a placeholder such
as 0 or -1. A mapping of the wrong kind where a whole object was expected gives ``None`` for
that object; a list's items of the wrong shape are left out. So holding a view proves every
field typed, and a reader never needs ``isinstance`` or ``.get`` again. The classes are frozen
dataclasses of tuples: a view cannot be changed after it is built, and a consumer cannot
change the dict it came from through it.

What the contract says about a metric that every reader needs -- which threshold gates it,
whether its limit is a minimum or a maximum -- is the engine's catalogue
(:data:`~reident_airflow.engine.catalogue.THRESHOLDS`,
:func:`~reident_airflow.engine.catalogue.threshold_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.presets import PRESETS, Preset
from reident_airflow.report._advice_view import AdviceView, DataflyOutlookView, DriverView
from reident_airflow.report._format import is_number
from reident_airflow.report._input_view import InputView
from reident_airflow.report._read import (
    Checked,
    Number,
    bool_or_none,
    mapping_or_none,
    name_or_none,
    names,
    number_or_none,
    optional_view,
    require_mapping,
    string_or_none,
    text_or_none,
    whole_or_none,
)
from reident_airflow.report._release_view import (
    ColumnProtection,
    DataflyOutput,
    DataflyStepView,
    DataflyView,
    DirectMatchView,
)
from reident_airflow.report._scan_view import (
    ContentShareView,
    IdentifierScanView,
    ScanColumnView,
)
from reident_airflow.report._since_view import (
    MovementView,
    SinceLastReleaseView,
    gained_qis_sentence,
)
from reident_airflow.report._thresholds import BreachView
from reident_airflow.report._verdict_view import MAX_NAME, ScanVerdict, VerdictView

__all__ = [
    "MAX_NAME",
    "MODEL_NAMES",
    "POPULATION_MODELS",
    "AdviceView",
    "AssessmentView",
    "AttributeSet",
    "BreachView",
    "ColumnProtection",
    "ContentShareView",
    "DankarView",
    "DataflyOutlookView",
    "DataflyOutput",
    "DataflyStepView",
    "DataflyView",
    "DirectMatchView",
    "DiversityView",
    "DriverView",
    "IdentifierScanView",
    "IndividualRiskView",
    "InputView",
    "MarketerView",
    "MovementView",
    "Number",
    "PopulationEstimateView",
    "PopulationView",
    "RiskBand",
    "RiskMeasures",
    "ScanColumnView",
    "ScanVerdict",
    "SinceLastReleaseView",
    "SudaView",
    "VerdictView",
    "gained_qis_sentence",
    "name_or_none",
    "ranked_scope",
    "whole_or_none",
]


# ------------------------------------------------------------------------ the assessment
@dataclass(frozen=True)
class RiskMeasures(Checked):
    """An attacker model's measures (``prosecutor``, ``journalist``): shares of records.

    ``basis`` (journalist only) is what the measures rest on: ``"sample"``,
    ``"population_table"`` or ``"sampling_weights"``; ``weight`` the weight column of the last.
    ``lowest_risk`` is ``None`` in results that predate it (see
    :attr:`AssessmentView.lowest_risk`).
    """

    highest_risk: Number | None
    average_risk: Number | None
    records_at_risk: Number | None
    records_affected_by_highest_risk: Number | None
    record_threshold: Number | None
    basis: str | None = None
    weight: str | None = None
    lowest_risk: Number | None = None

    @classmethod
    def missing(cls) -> Self:
        """Measures none of which the result holds (for reading a model that is absent)."""
        return cls(None, None, None, None, None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(data, weight=text_or_none(data.get("weight")))


@dataclass(frozen=True)
class MarketerView(Checked):
    """The marketer model: the expected share of records re-identified."""

    risk: Number | None


@dataclass(frozen=True)
class PopulationEstimateView(Checked):
    """One model's population uniques: a count and its share of the population N."""

    uniques: Number | None
    fraction: Number | None


@dataclass(frozen=True)
class DankarView(Checked):
    """Dankar et al.'s choice: the estimate and the model that gave it (``"pitman"``,
    ``"zayatz"``, ``"snb"``, or ``"dankar"`` when the sample has no unique)."""

    uniques: Number | None
    fraction: Number | None
    model: str | None

    @property
    def model_name(self) -> str | None:
        """The chosen model's display name; ``None`` for none of the three models."""
        return None if self.model is None else MODEL_NAMES.get(self.model)


#: The population models the contract names, with the label and source the report cites.
POPULATION_MODELS: tuple[tuple[str, str, str], ...] = (
    ("pitman", "Pitman", "Hoshino 2001"),
    ("zayatz", "Zayatz", "Zayatz 1991"),
    ("snb", "SNB", "Chen & McNulty 1998"),
)
#: Each population model's display name.
MODEL_NAMES: Mapping[str, str] = {key: label for key, label, _ in POPULATION_MODELS}


@dataclass(frozen=True)
class PopulationView(Checked):
    """Population uniqueness: N, the sampling fraction and each model's estimate."""

    population_size: Number | None
    sampling_fraction: Number | None
    pitman: PopulationEstimateView | None
    zayatz: PopulationEstimateView | None
    snb: PopulationEstimateView | None
    dankar: DankarView | None

    def estimate(self, model: str) -> PopulationEstimateView | DankarView | None:
        """The estimate of ``model`` (``"pitman"``, ``"zayatz"``, ``"snb"``, ``"dankar"``)."""
        if model not in {"pitman", "zayatz", "snb", "dankar"}:
            raise InvalidInputError(f"no population model {model!r}")
        estimate: PopulationEstimateView | DankarView | None = getattr(self, model)
        return estimate

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        def dankar(d: Mapping[str, Any]) -> DankarView:
            return DankarView.read(d, model=text_or_none(d.get("model") or None))

        models = {
            key: optional_view(PopulationEstimateView.read, data.get(key))
            for key, *_ in POPULATION_MODELS
        }
        return cls.read(data, dankar=optional_view(dankar, data.get("dankar")), **models)


@dataclass(frozen=True)
class RiskBand(Checked):
    """One of ARX's record-risk bands ``(lower, upper]`` and the share of records in it."""

    lower: Number
    upper: Number
    records: Number


@dataclass(frozen=True)
class AttributeSet(Checked):
    """A ranked quasi-identifier subset: distinction and separation (shares)."""

    columns: tuple[str, ...]
    distinction: Number | None
    separation: Number | None


@dataclass(frozen=True)
class IndividualRiskView(Checked):
    """Individual risk from sampling weights (``individual_risk``); ``lowest``,
    ``estimated_population`` and ``method`` are ``None`` in results that predate them."""

    weight: str | None
    global_risk: Number | None
    global_risk_share: Number | None
    highest: Number | None
    lowest: Number | None
    records_above_threshold: Number | None
    record_threshold: Number | None
    estimated_population: Number | None
    method: str | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.read(data, weight=text_or_none(data.get("weight")))


@dataclass(frozen=True)
class DiversityView(Checked):
    """l-diversity of one sensitive column (smallest l over the classes)."""

    column: str
    distinct: Number | None
    entropy: Number | None
    recursive: Number | None
    c: Number | None
    homogeneous_records: Number | None

    @classmethod
    def from_item(cls, column: Any, data: Any) -> Self:
        return cls.read(mapping_or_none(data) or {}, column=str(column))


@dataclass(frozen=True)
class SudaView(Checked):
    """SUDA2's special uniques: counts, scores and each column's contribution (%)."""

    records_with_msu: Number | None
    max_score: Number | None
    max_msu_size: Number | None
    msus_by_size: tuple[Number | None, ...]
    attribute_contributions: tuple[tuple[str, Number | None], ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        by_size = data.get("msus_by_size")
        contrib = mapping_or_none(data.get("attribute_contributions")) or {}
        return cls.read(
            data,
            msus_by_size=(
                tuple(number_or_none(n) for n in by_size) if isinstance(by_size, list) else ()
            ),
            attribute_contributions=tuple((str(k), number_or_none(v)) for k, v in contrib.items()),
        )


def _bands(raw: Any) -> tuple[RiskBand, ...]:
    """The bands with their lower bounds (each band starts where the previous one ended)."""
    if not isinstance(raw, list):
        return ()
    out: list[RiskBand] = []
    lower: Number = 0.0
    for band in raw:
        b = mapping_or_none(band) or {}
        upper, share = number_or_none(b.get("upper")), number_or_none(b.get("records"))
        if upper is None:
            continue
        out.append(RiskBand(lower, float(upper), 0.0 if share is None else float(share)))
        lower = float(upper)
    return tuple(out)


def _histogram(raw: Any) -> tuple[tuple[int, int], ...]:
    """``(class size, classes)`` pairs, smallest size first; malformed pairs left out."""
    if not isinstance(raw, list):
        return ()
    pairs = (
        (int(item[0]), int(item[1]))
        for item in raw
        if isinstance(item, list | tuple)
        and len(item) == 2
        and is_number(item[0])
        and is_number(item[1])
    )
    return tuple(sorted(pairs))


def _limits(raw: Any) -> tuple[tuple[str, Any], ...] | None:
    """A thresholds object as ``(name, limit)`` pairs; ``None`` when the result has none."""
    limits = mapping_or_none(raw)
    return None if limits is None else tuple((str(k), v) for k, v in limits.items())


def _breach_list(raw: Any) -> tuple[BreachView, ...]:
    """The breaches (or warnings) that are objects; anything else gives none."""
    if not isinstance(raw, list | tuple):
        return ()
    return tuple(BreachView.from_dict(b) for b in raw if isinstance(b, Mapping))


def _attributes(raw: Any) -> tuple[AttributeSet, ...] | None:
    """The ranking; ``None`` when the result holds none (missing or empty)."""
    if not isinstance(raw, list) or not raw:
        return None
    items = (mapping_or_none(item) or {} for item in raw)
    return tuple(
        AttributeSet(
            names(i.get("columns")),
            number_or_none(i.get("distinction")),
            number_or_none(i.get("separation")),
        )
        for i in items
        if names(i.get("columns"))
    )


@dataclass(frozen=True)
class AssessmentView(Checked):
    """A ``reident.assessment/v1`` result, read once (see the module's docstring).

    ``thresholds`` is ``None`` when the result does not say which thresholds were set (an
    empty tuple: none were); its values are kept as the JSON gives them, since a limit the
    report does not know is shown as written. ``attributes`` is ``None`` when the result
    holds no ranking; ``l_diversity`` ``None`` when no sensitive column was measured.
    ``ranked_attribute_sets`` is how many items the ranking had as written; ``fingerprint``
    the optional ``"input"`` object (what was assessed), ``None`` when the result has none.
    ``preset`` is the named gate applied; ``warn_thresholds`` and ``warnings`` the warning
    levels and those crossed (``None`` / empty in results that predate them); ``advice``
    what to do about a breach of ``min_k`` (``None`` when the result has none);
    ``identifier_scan`` the scan of every column (``None`` when no scan ran);
    ``since_last_release`` the difference from the previous release (``None`` when not
    compared), ``release_compared`` whether a comparison was asked for (with
    ``since_last_release`` ``None``: there was no previous release yet).
    """

    schema: str | None
    quasi_identifiers: tuple[str, ...]
    records: Number | None
    classes: Number | None
    k: Number | None
    excluded_records: Number | None
    prosecutor: RiskMeasures | None
    journalist: RiskMeasures | None
    marketer: MarketerView | None
    sample_uniques: Number | None
    population: PopulationView | None
    risk_bands: tuple[RiskBand, ...]
    class_size_histogram: tuple[tuple[int, int], ...]
    attributes: tuple[AttributeSet, ...] | None
    ranked_attribute_sets: int
    individual_risk: IndividualRiskView | None
    l_diversity: tuple[DiversityView, ...] | None
    suda: SudaView | None
    thresholds: tuple[tuple[str, Any], ...] | None
    breaches: tuple[BreachView, ...]
    passed: bool | None
    fingerprint: InputView | None = None
    preset: str | None = None
    warn_thresholds: tuple[tuple[str, Any], ...] | None = None
    warnings: tuple[BreachView, ...] = ()
    advice: AdviceView | None = None
    identifier_scan: IdentifierScanView | None = None
    since_last_release: SinceLastReleaseView | None = None
    release_compared: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The view of an assessment dict (:class:`InvalidInputError` if not a dict)."""
        a = require_mapping(data, "an assessment")
        uniqueness = mapping_or_none(a.get("uniqueness")) or {}
        diversity = mapping_or_none(a.get("l_diversity"))
        raw_attributes = a.get("attributes")
        return cls(
            schema=string_or_none(a.get("schema")),
            quasi_identifiers=names(a.get("quasi_identifiers")),
            records=number_or_none(a.get("records")),
            classes=number_or_none(a.get("classes")),
            k=number_or_none(a.get("k")),
            excluded_records=number_or_none(a.get("excluded_records")),
            prosecutor=optional_view(RiskMeasures.from_dict, a.get("prosecutor")),
            journalist=optional_view(RiskMeasures.from_dict, a.get("journalist")),
            marketer=optional_view(MarketerView.read, a.get("marketer")),
            sample_uniques=number_or_none(uniqueness.get("sample_uniques")),
            population=optional_view(PopulationView.from_dict, uniqueness.get("population")),
            risk_bands=_bands(a.get("risk_distribution")),
            class_size_histogram=_histogram(a.get("class_size_histogram")),
            attributes=_attributes(raw_attributes),
            ranked_attribute_sets=len(raw_attributes) if isinstance(raw_attributes, list) else 0,
            individual_risk=optional_view(IndividualRiskView.from_dict, a.get("individual_risk")),
            l_diversity=(
                None
                if diversity is None
                else tuple(DiversityView.from_item(c, v) for c, v in diversity.items())
            ),
            suda=optional_view(SudaView.from_dict, a.get("suda")),
            thresholds=_limits(a.get("thresholds")),
            breaches=_breach_list(a.get("breaches")),
            passed=bool_or_none(a.get("passed")),
            fingerprint=optional_view(InputView.from_dict, a.get("input")),
            preset=string_or_none(a.get("preset")),
            warn_thresholds=_limits(a.get("warn_thresholds")),
            warnings=_breach_list(a.get("warnings")),
            advice=optional_view(AdviceView.from_dict, a.get("advice")),
            identifier_scan=optional_view(IdentifierScanView.from_dict, a.get("identifier_scan")),
            since_last_release=optional_view(
                SinceLastReleaseView.from_dict, a.get("since_last_release")
            ),
            release_compared="since_last_release" in a,
        )

    @property
    def record_threshold(self) -> Number | None:
        """The record-risk threshold of the prosecutor's "records at risk"."""
        return None if self.prosecutor is None else self.prosecutor.record_threshold

    @property
    def lowest_risk(self) -> Number | None:
        """The prosecutor's lowest record risk: as the result gives it, else (a result that
        predates ``lowest_risk``) 1 / the largest class size of the class-size histogram,
        which is how ARX defines it; ``None`` when the result holds neither."""
        given = None if self.prosecutor is None else self.prosecutor.lowest_risk
        if given is not None or not self.class_size_histogram:
            return given
        return 1.0 / self.class_size_histogram[-1][0]

    @property
    def preset_entry(self) -> Preset | None:
        """The applied preset as :data:`~reident_airflow.engine.presets.PRESETS` lists it
        (its limits, release context and source); ``None`` without a preset or for a name
        this version does not know (shown as the result gives it)."""
        return None if self.preset is None else PRESETS.get(self.preset.strip().lower())

    @property
    def preset_overrides(self) -> tuple[tuple[str, Number, Number], ...]:
        """``(threshold, given limit, preset's limit)`` of each limit of the known preset
        that a limit given beside it replaced (the limits given win, one by one)."""
        entry = self.preset_entry
        if entry is None:
            return ()
        given = ((name, self.limit(name), limit) for name, limit in entry.limits.items())
        return tuple((n, g, p) for n, g, p in given if g is not None and g != p)

    @property
    def complete(self) -> bool:
        """Whether the result says how many records and classes were measured."""
        return self.records is not None and self.classes is not None

    def limit(self, name: str) -> Number | None:
        """The limit set for threshold ``name`` (e.g. ``"min_k"``), if it is a number."""
        value = dict(self.thresholds or ()).get(name)
        return value if is_number(value) else None

    def diversity_of(self, column: str) -> DiversityView | None:
        """The l-diversity of sensitive ``column``, if measured."""
        return next((d for d in self.l_diversity or () if d.column == column), None)

    def observed(self, metric: str) -> Number | None:
        """The observed value of a gated ``metric`` (the metric of a
        :class:`~reident_airflow.engine.catalogue.Threshold`, or
        ``l_diversity.<column>.distinct``); ``None`` when the result does not hold it."""
        if metric == "k":
            return self.k
        head, _, rest = metric.partition(".")
        if head == "l_diversity" and rest.endswith(".distinct"):
            diversity = self.diversity_of(rest.removesuffix(".distinct"))
            return None if diversity is None else diversity.distinct
        if head == "since_last_release":
            since = self.since_last_release
            return None if since is None else since.observed(rest)
        part = {"prosecutor": self.prosecutor, "individual_risk": self.individual_risk}.get(head)
        value = getattr(part, rest, None) if part is not None else None
        return value if is_number(value) else None


def ranked_scope(view: AssessmentView) -> str:
    """Which column sets the ranking holds, read from its items: every subset of the QIs,
    the default (each single column, each set with one QI left out, the full set), or every
    set up to a size and the full set."""
    m = len(view.quasi_identifiers)
    sizes = sorted({len(i.columns) for i in view.attributes or ()})
    count = len(view.attributes or ())
    if m and count == 2**m - 1:
        return f"every set of the {m} quasi-identifiers"
    if m > 3 and sizes == [1, m - 1, m] and count == 2 * m + 1:
        return "each single column, each set with one quasi-identifier left out, the full set"
    below = [s for s in sizes if s < m]
    if below and below == list(range(1, below[-1] + 1)):
        return f"every set of up to {below[-1]} columns and the full set"
    return "a selection of the column sets"
