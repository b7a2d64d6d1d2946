"""One assessment of a table: every measure of docs/metrics.md §2-§7 and the release gate.

:func:`assess` takes what a source counted (however it was counted: DataFrame, file,
database, Spark) and returns an :class:`Assessment` whose ``to_dict()`` is the
``reident.assessment/v1`` JSON of docs/contract.md: a
:class:`~reident_airflow.engine.classes.ClassTable` (or only its
:class:`~reident_airflow.engine.classes.ClassSizes`), with its per-class aggregates
(:mod:`reident_airflow.engine.aggregates`: sampling weights for §6, sensitive value counts for
§7), or :class:`~reident_airflow.engine.distributions.Distributions` when the source hands over
no class table. Nothing here touches rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from reident_airflow.engine._arrays import IntArray
from reident_airflow.engine._parallel import submitter
from reident_airflow.engine.classes import ClassSizes, ClassTable
from reident_airflow.engine.distributions import (
    Distributions,
    SubsetHistograms,
    individual_risk_of,
    l_diversity_of,
    ranking_of,
)
from reident_airflow.engine.diversity import l_diversity
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions, Breach, Thresholds
from reident_airflow.engine.sample import RiskBand, SampleRisk, risk_distribution, sample_risk

if TYPE_CHECKING:
    # the measures beyond the sample's are imported when asked for: the verdict from a
    # class-size histogram loads neither pandas nor scipy
    from reident_airflow.engine.aggregates import ClassAggregates, ClassWeights, ValueCounts
    from reident_airflow.engine.attributes import AttributeRisk
    from reident_airflow.engine.differencing import ReleaseDifference
    from reident_airflow.engine.distributions import WeightPairs
    from reident_airflow.engine.diversity import LDiversity
    from reident_airflow.engine.identifiers import IdentifierScan
    from reident_airflow.engine.individual_risk import IndividualRisk
    from reident_airflow.engine.population import PopulationUniqueness
    from reident_airflow.engine.register import RegisterRisk
    from reident_airflow.engine.suda import SudaResult

__all__ = [
    "SCAN_FAILING",
    "SCAN_FLAGGED",
    "SCHEMA",
    "Assessment",
    "AssessmentOptions",
    "Breach",
    "JournalistRisk",
    "MeasureKeywords",
    "Thresholds",
    "arrival_advice",
    "assess",
    "check_gates",
    "options_for",
    "refuse_per_class",
    "with_identifier_scan",
    "with_release_difference",
]

SCHEMA = "reident.assessment/v1"


@dataclass(frozen=True)
class JournalistRisk:
    """Journalist measures and what they rest on.

    ``basis="sample"``: no population register was given, so, as ARX does, the journalist's
    measures fall back to the sample's (equal to the prosecutor's). Population estimates,
    when a population size was given, are in ``Assessment.population``.
    ``basis="population_table"``: measured on the register's class sizes (``register``).
    ``basis="sampling_weights"`` (no register, a weight column given): estimated from the
    individual risk of each record (docs/metrics.md §6, ``individual``).
    """

    measures: SampleRisk
    basis: str
    register: RegisterRisk | None = None
    individual: IndividualRisk | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.register is not None:
            return self.register.journalist_dict()
        if self.individual is not None:
            return self.individual.journalist_dict()
        return {**self.measures.to_dict(), "basis": self.basis}


@dataclass(frozen=True)
class Assessment:
    """The result of :func:`assess`; inputs (QIs, threshold, population, gate) are echoed."""

    quasi_identifiers: tuple[str, ...]
    records: int
    classes: int
    k: int
    excluded_records: int
    class_size_histogram: tuple[tuple[int, int], ...]
    prosecutor: SampleRisk
    journalist: JournalistRisk
    marketer_risk: float
    sample_uniques: float
    population: PopulationUniqueness | None
    risk_distribution: tuple[RiskBand, ...]
    attributes: tuple[AttributeRisk, ...]
    thresholds: Thresholds = field(default_factory=Thresholds)
    breaches: tuple[Breach, ...] = ()
    preset: str | None = None
    warn_thresholds: Thresholds = field(default_factory=Thresholds)
    warnings: tuple[Breach, ...] = ()
    individual_risk: IndividualRisk | None = None
    l_diversity: tuple[LDiversity, ...] | None = None
    suda: SudaResult | None = None
    identifier_scan: IdentifierScan | None = None
    #: The difference from the previous release (:func:`with_release_difference`); ``None``
    #: with ``release_compared``: asked for, but there was no previous release (a first run).
    since_last_release: ReleaseDifference | None = None
    release_compared: bool = False

    @property
    def passed(self) -> bool:
        return not self.breaches

    def to_dict(self) -> dict[str, Any]:
        """The ``reident.assessment/v1`` JSON (plain Python types, aggregates only); with an
        identifier scan attached (:func:`with_identifier_scan`), its
        ``reident.identifier_scan/v1`` object under ``identifier_scan`` (no key
        without one, so an assessment without a scan reads as it always has); compared with
        the previous release (:func:`with_release_difference`), its
        ``reident.differencing/v1`` object last, under ``since_last_release`` (``null`` when
        there was no previous release; no key when no comparison was asked for)."""
        document: dict[str, Any] = {
            "schema": SCHEMA,
            "quasi_identifiers": list(self.quasi_identifiers),
            "records": self.records,
            "classes": self.classes,
            "k": self.k,
            "excluded_records": self.excluded_records,
            "class_size_histogram": [[s, c] for s, c in self.class_size_histogram],
            "prosecutor": self.prosecutor.to_dict(),
            "journalist": self.journalist.to_dict(),
            "marketer": {"risk": self.marketer_risk},
            "uniqueness": {
                "sample_uniques": self.sample_uniques,
                "population": None if self.population is None else self.population.to_dict(),
            },
            "risk_distribution": [b.to_dict() for b in self.risk_distribution],
            "attributes": [a.to_dict() for a in self.attributes],
            "individual_risk": (
                None if self.individual_risk is None else self.individual_risk.to_dict()
            ),
            "l_diversity": (
                None
                if self.l_diversity is None
                else {item.column: item.to_dict() for item in self.l_diversity}
            ),
            "suda": None if self.suda is None else self.suda.to_dict(),
            "thresholds": self.thresholds.to_dict(),
            "breaches": [b.to_dict() for b in self.breaches],
            "passed": self.passed,
            "preset": self.preset,
            "warn_thresholds": self.warn_thresholds.to_dict(),
            "warnings": [b.to_dict() for b in self.warnings],
        }
        if self.identifier_scan is not None:
            document["identifier_scan"] = self.identifier_scan.to_dict()
        if self.release_compared:
            difference = self.since_last_release
            document["since_last_release"] = None if difference is None else difference.to_dict()
        return document


#: The metric of the breach a failing identifier scan adds under policy ``"fail"``.
SCAN_FAILING = "identifier_scan.failing_columns"
#: The metric of the warning flagged columns add.
SCAN_FLAGGED = "identifier_scan.flagged_columns"


def with_identifier_scan(assessment: Assessment, scan: IdentifierScan) -> Assessment:
    """``assessment`` with the identifier ``scan`` of the same table attached, gated by the
    scan's policy (docs/identifier-scan.md §9):

    - ``"fail"``: failing columns (verdicts ``identifier``, ``quasi-identifier not
      declared``) add the breach ``identifier_scan.failing_columns`` (observed: how many,
      limit 0), so the assessment no longer passes; columns flagged but not failing
      (``possible identifier``) add the warning ``identifier_scan.flagged_columns``
      (observed: every flagged column, limit 0);
    - ``"warn"``: flagged columns add that warning only; the verdict is the thresholds';
    - ``"off"``: no scan: ``assessment`` is returned as it is, nothing attached.
    """
    policy = scan.options.policy
    if policy == "off":
        return assessment
    breaches, warnings = assessment.breaches, assessment.warnings
    failing, flagged = len(scan.failing), len(scan.flagged)
    if policy == "fail" and failing:
        breaches = (*breaches, Breach(SCAN_FAILING, float(failing), 0.0))
    if flagged > (failing if policy == "fail" else 0):
        warnings = (*warnings, Breach(SCAN_FLAGGED, float(flagged), 0.0))
    return replace(assessment, identifier_scan=scan, breaches=breaches, warnings=warnings)


def with_release_difference(
    assessment: Assessment, difference: ReleaseDifference | None
) -> Assessment:
    """``assessment`` with the ``difference`` of the same table from the previous release
    attached (docs/metrics.md §12), and the limits on it checked: the failing levels of
    ``min_arrival_k``, ``max_arrival_risk``, ``min_departure_k`` and ``max_departure_risk``
    add breaches, their warning levels warnings (not for a metric that already breached).
    A side where nothing moved breaches nothing: no record is there to find.

    ``difference=None``: the comparison was asked for, but there is no previous release (the
    first run of a scheduled release): nothing to compare, so no limit on the difference is
    checked, and ``since_last_release`` is ``null`` in the JSON to say so. The difference
    is grouped on the assessment's quasi-identifiers (``source.release_changes``).
    """
    if difference is None:
        return replace(assessment, since_last_release=None, release_compared=True)
    breaches = assessment.thresholds.check_difference(difference)
    failed = {b.metric for b in breaches}
    warned = assessment.warn_thresholds.check_difference(difference)
    return replace(
        assessment,
        since_last_release=difference,
        release_compared=True,
        breaches=(*assessment.breaches, *breaches),
        warnings=(*assessment.warnings, *(w for w in warned if w.metric not in failed)),
    )


def arrival_advice(assessment: Assessment) -> str | None:
    """On a breach of ``min_arrival_k`` or ``max_arrival_risk``: which arrivals to hold back
    (:func:`~reident_airflow.engine.differencing.hold_back_advice`), else ``None``."""
    if assessment.since_last_release is None:
        return None
    from reident_airflow.engine.differencing import hold_back_advice

    gate = assessment.thresholds
    return hold_back_advice(
        assessment.since_last_release, gate.min_arrival_k, gate.max_arrival_risk
    )


class MeasureKeywords(TypedDict, total=False):
    """The options :func:`assess` also takes as keywords, for callers of the Python API that
    hold no :class:`AssessmentOptions` (``attributes`` is its ``rank_attributes``)."""

    record_threshold: float
    population_size: int | None
    sampling_fraction: float | None
    region: str | None
    thresholds: Thresholds | None
    attributes: bool
    max_subset_size: int | None
    recursive_c: float
    suda: bool
    suda_max_msu_size: int | None


def assess(
    table: ClassTable | ClassSizes | ClassAggregates | Distributions,
    options: AssessmentOptions | None = None,
    *,
    population_table: ClassTable | None = None,
    weights: ClassWeights | None = None,
    sensitive: Mapping[str, ValueCounts] | None = None,
    **keywords: Unpack[MeasureKeywords],
) -> Assessment:
    """Assess what a source counted: sample risks, attacker models, population models, QI
    ranking.

    ``options`` (:class:`~reident_airflow.engine.options.AssessmentOptions`) say what to
    compute and gate; beside them come what the sources counted for the columns they name.
    Without ``options``, the keywords of :class:`MeasureKeywords` build them (the table's QIs,
    the weight and sensitive columns of ``weights`` and ``sensitive``); giving both is an error.

    ``population_table`` is a register of the population on the same QIs: the journalist and
    marketer are then measured against it (``basis: "population_table"``) and, unless the
    options describe the population, its number of records is ``N``. ``table`` may be a
    :class:`ClassSizes` (the class-size histogram only) when no ranking, register, weights,
    sensitive columns or SUDA2 are asked for: the verdict needs no more. ``weights`` (the sums
    of the weight column per class, aligned with ``table``) add the individual risk of
    docs/metrics.md §6, also the journalist's basis without a register
    (``basis: "sampling_weights"``); ``sensitive`` (value counts per class of each sensitive
    column) adds l-diversity (§7).

    ``table`` may also hold its aggregates: a
    :class:`~reident_airflow.engine.aggregates.ClassAggregates` (its class table, weight sums
    and value counts), or :class:`~reident_airflow.engine.distributions.Distributions` (what a
    source counted without a class table: the measures are computed from the distributions,
    SUDA2 and a register are refused). ``weights`` and ``sensitive`` are then not given.
    """
    if options is None:
        options = _options_of_keywords(table, weights, sensitive, keywords)
    elif keywords:
        raise TypeError(f"assess() takes options or keywords, not both (got {sorted(keywords)})")
    if not isinstance(table, ClassTable | ClassSizes):
        if weights is not None or sensitive is not None:
            raise TypeError(
                f"assess() of {type(table).__name__} takes no weights or sensitive beside it: "
                "they are counted in it"
            )
        if isinstance(table, Distributions):
            return _of_distributions(table, options, register=population_table)
        table, weights, sensitive = _parts(table)
    _check_inputs(table, options, register=population_table, weights=weights, sensitive=sensitive)
    sizes, counts = table.histogram()
    prosecutor = sample_risk(sizes, counts, options.record_threshold)
    register, big_n = _register_and_population_size(
        table, population_table, prosecutor.records, options
    )
    measured = _measure(
        table,
        options,
        sizes=sizes,
        counts=counts,
        big_n=big_n,
        weights=weights,
        sensitive=sensitive,
    )
    return _assessment(table, sizes, counts, prosecutor, register, measured, options)


def options_for(
    counted: ClassTable | ClassSizes | ClassAggregates | Distributions, **fields: Any
) -> AssessmentOptions:
    """The :class:`~reident_airflow.engine.options.AssessmentOptions` of an assessment of
    ``counted``: its QIs, the weight and sensitive columns it holds, and ``fields`` (the
    other options)."""
    if isinstance(counted, ClassTable | ClassSizes):
        return AssessmentOptions(quasi_identifiers=counted.quasi_identifiers, **fields)
    weights: WeightPairs | ClassWeights | None
    names: Mapping[str, object]
    if isinstance(counted, Distributions):
        qis, weights, names = counted.quasi_identifiers, counted.weights, counted.profiles
    else:
        qis, weights, names = counted.table.quasi_identifiers, counted.weights, counted.sensitive
    return AssessmentOptions(
        quasi_identifiers=qis,
        weight=None if weights is None else weights.column,
        sensitive=tuple(names),
        **fields,
    )


def _parts(
    aggregates: ClassAggregates,
) -> tuple[ClassTable, ClassWeights | None, Mapping[str, ValueCounts] | None]:
    """The class table, weight sums and value counts (``None`` without any) of ``aggregates``."""
    return aggregates.table, aggregates.weights, aggregates.sensitive or None


def _options_of_keywords(
    table: ClassTable | ClassSizes | ClassAggregates | Distributions,
    weights: ClassWeights | None,
    sensitive: Mapping[str, ValueCounts] | None,
    keywords: MeasureKeywords,
) -> AssessmentOptions:
    """The options the keywords of :func:`assess` describe, with the columns of its inputs."""
    given: dict[str, Any] = dict(keywords)
    if "attributes" in given:
        given["rank_attributes"] = given.pop("attributes")
    if given.get("thresholds") is None:
        given.pop("thresholds", None)
    if not isinstance(table, ClassTable | ClassSizes):
        return options_for(table, **given)
    return AssessmentOptions(
        quasi_identifiers=table.quasi_identifiers,
        weight=None if weights is None else weights.column,
        sensitive=tuple(sensitive or ()),
        **given,
    )


def _check_inputs(
    table: ClassTable | ClassSizes,
    options: AssessmentOptions,
    *,
    register: ClassTable | None,
    weights: ClassWeights | None,
    sensitive: Mapping[str, ValueCounts] | None,
) -> None:
    """The counted inputs are those of the columns the options name, and a histogram alone
    is enough for what is asked."""
    if (options.weight is None) != (weights is None):
        raise InvalidInputError(
            f"the options name weight column {options.weight!r} but no weight sums were given"
            if weights is None
            else f"weight sums of {weights.column!r} were given but the options name no weight "
            "column"
        )
    if bool(options.sensitive) != bool(sensitive):
        raise InvalidInputError(
            f"the options name sensitive columns {list(options.sensitive)} but no value counts "
            "were given"
            if not sensitive
            else f"value counts of {list(sensitive)} were given but the options name no "
            "sensitive column"
        )
    if isinstance(table, ClassSizes):
        _refuse_beyond_the_histogram(
            attributes=options.rank_attributes,
            register=register is not None,
            weights=weights is not None,
            sensitive=bool(sensitive),
            suda=options.suda,
        )


def _of_distributions(
    counted: Distributions, options: AssessmentOptions, *, register: ClassTable | None
) -> Assessment:
    """The assessment of distributions under ``options``: the verdict on the histogram, then
    the ranking, individual risk and l-diversity from their distributions
    (:mod:`~reident_airflow.engine.distributions`), and the gate on them all."""
    refuse_per_class(options)
    _check_distributions(counted, options, register=register)
    # the verdict on the histogram alone: the limits of the measures computed below are
    # checked once those measures are there, at both levels
    verdict_options = replace(
        options,
        thresholds=replace(options.thresholds, max_global_risk=None, min_l=None),
        warn_thresholds=replace(options.warn_thresholds, max_global_risk=None, min_l=None),
        weight=None,
        sensitive=(),
        rank_attributes=False,
        max_subset_size=None,
    )
    table = counted.histogram
    base = assess(table, verdict_options)
    ranking: tuple[AttributeRisk, ...] = ()
    if options.rank_attributes:
        ranking = ranking_of(
            table.quasi_identifiers, table, counted.subsets or SubsetHistograms({})
        )
    individual = None
    if counted.weights is not None:
        individual = individual_risk_of(counted.weights, options.record_threshold)
    diversity = None
    if options.sensitive:
        diversity = tuple(
            l_diversity_of(counted.profiles[s], options.recursive_c) for s in options.sensitive
        )
    journalist = JournalistRisk(
        measures=base.prosecutor,
        basis="sample" if individual is None else "sampling_weights",
        individual=individual,
    )
    breaches, warnings = check_gates(
        options, base.prosecutor, base.k, individual=individual, diversity=diversity or ()
    )
    return replace(
        base,
        attributes=ranking,
        journalist=journalist,
        thresholds=options.thresholds,
        breaches=breaches,
        warn_thresholds=options.warn_thresholds,
        warnings=warnings,
        individual_risk=individual,
        l_diversity=diversity,
    )


def refuse_per_class(options: AssessmentOptions) -> None:
    """Refuse the options whose measures need one row per class (none can come from
    :class:`~reident_airflow.engine.distributions.Distributions`)."""
    if options.suda:
        raise InvalidInputError(
            "suda: SUDA2 needs one row per class (its minimal sample uniques are "
            "combinations of QI values); it is not computed on Spark: run it on a sample, "
            "or without suda"
        )
    if options.population_table:
        raise InvalidInputError(
            "population_table: a register is matched class by class; it is not read on "
            "Spark: describe the population with population_size, sampling_fraction or region"
        )


def _check_distributions(
    counted: Distributions, options: AssessmentOptions, *, register: ClassTable | None
) -> None:
    """The distributions hold those of the columns the options name; no register."""
    if register is not None:
        _refuse_beyond_the_histogram(
            attributes=False, register=True, weights=False, sensitive=False, suda=False
        )
    if (options.weight is None) != (counted.weights is None):
        raise InvalidInputError(
            f"the options name weight column {options.weight!r} but no weight pairs were counted"
            if counted.weights is None
            else f"weight pairs of {counted.weights.column!r} were counted but the options name "
            "no weight column"
        )
    missing = [s for s in options.sensitive if s not in counted.profiles]
    if missing:
        raise InvalidInputError(
            f"the options name sensitive columns {missing} but no value profiles were counted "
            "for them"
        )


def _register_and_population_size(
    table: ClassTable | ClassSizes,
    population_table: ClassTable | None,
    n: int,
    options: AssessmentOptions,
) -> tuple[RegisterRisk | None, int | None]:
    """The register's measures (with a register) and ``N`` of a sample of ``n`` records
    (when ``N`` is described, or a register gives it: the register is then the population)."""
    population_size = options.population_size
    sampling_fraction, region = options.sampling_fraction, options.region
    register = None
    if population_table is not None:
        from reident_airflow.engine.register import match_register, register_risk

        assert isinstance(table, ClassTable)  # checked by the caller
        register = register_risk(
            table.sizes, match_register(table, population_table), options.record_threshold
        )
    no_size = population_size is None and sampling_fraction is None and region is None
    if population_table is not None and no_size:
        population_size = population_table.records
    if population_size is None and sampling_fraction is None and region is None:
        return register, None
    from reident_airflow.engine.population import resolve_population_size

    big_n = resolve_population_size(
        n, population_size=population_size, sampling_fraction=sampling_fraction, region=region
    )
    return register, big_n


def _assessment(
    table: ClassTable | ClassSizes,
    sizes: IntArray,
    counts: IntArray,
    prosecutor: SampleRisk,
    register: RegisterRisk | None,
    measured: _Measured,
    options: AssessmentOptions,
) -> Assessment:
    """The :class:`Assessment` of the measures, with the gate's verdict and warnings."""
    n = prosecutor.records
    k = int(sizes[0])
    individual = measured.individual
    breaches, warnings = check_gates(
        options, prosecutor, k, individual=individual, diversity=measured.diversity or ()
    )
    return Assessment(
        quasi_identifiers=table.quasi_identifiers,
        records=n,
        classes=prosecutor.classes,
        k=k,
        excluded_records=table.excluded_records,
        class_size_histogram=tuple(
            (int(s), int(c)) for s, c in zip(sizes.tolist(), counts.tolist(), strict=True)
        ),
        prosecutor=prosecutor,
        journalist=JournalistRisk(
            measures=prosecutor,
            basis=(
                "population_table"
                if register is not None
                else "sample"
                if individual is None
                else "sampling_weights"
            ),
            register=register,
            individual=individual,
        ),
        marketer_risk=prosecutor.classes / n if register is None else register.marketer_risk,
        sample_uniques=prosecutor.sample_uniques,
        population=measured.population,
        risk_distribution=risk_distribution(sizes, counts),
        attributes=measured.ranking,
        thresholds=options.thresholds,
        breaches=breaches,
        preset=options.preset,
        warn_thresholds=options.warn_thresholds,
        warnings=warnings,
        individual_risk=individual,
        l_diversity=measured.diversity,
        suda=measured.suda,
    )


def check_gates(
    options: AssessmentOptions,
    prosecutor: SampleRisk,
    k: int,
    *,
    individual: IndividualRisk | None,
    diversity: tuple[LDiversity, ...],
) -> tuple[tuple[Breach, ...], tuple[Breach, ...]]:
    """``(breaches, warnings)``: the measures checked against the failing thresholds of
    ``options`` and against its warning thresholds (a metric breaching its failing limit is a
    breach only, not also a warning)."""
    breaches = options.thresholds.check(prosecutor, k, individual=individual, diversity=diversity)
    failed = {b.metric for b in breaches}
    warned = options.warn_thresholds.check(
        prosecutor, k, individual=individual, diversity=diversity
    )
    return breaches, tuple(b for b in warned if b.metric not in failed)


def _refuse_beyond_the_histogram(
    *, attributes: bool, register: bool, weights: bool, sensitive: bool, suda: bool
) -> None:
    """Refuse the measures that need the class table when only its histogram was given."""
    needs = [
        name
        for name, wanted in (
            ("the QI ranking", attributes),
            ("a population register", register),
            ("sampling weights", weights),
            ("sensitive columns", sensitive),
            ("SUDA2", suda),
        )
        if wanted
    ]
    if needs:
        raise InvalidInputError(
            f"{', '.join(needs)} need(s) the class table, not only its size histogram"
        )


@dataclass(frozen=True)
class _Measured:
    """The measures beyond the sample's, as :func:`_measure` computes them."""

    ranking: tuple[AttributeRisk, ...]
    population: PopulationUniqueness | None
    individual: IndividualRisk | None
    diversity: tuple[LDiversity, ...] | None
    suda: SudaResult | None


def _measure(
    table: ClassTable | ClassSizes,
    options: AssessmentOptions,
    *,
    sizes: IntArray,
    counts: IntArray,
    big_n: int | None,
    weights: ClassWeights | None,
    sensitive: Mapping[str, ValueCounts] | None,
) -> _Measured:
    """The QI ranking, population models, SUDA2, individual risk and l-diversity.

    The inputs are checked. On a large table the long array passes (during which numpy
    releases the GIL) are shared between a worker thread and this one: the QI ranking
    there, the population models (many small steps) here; with weights, the individual
    risk here and the l-diversity there before the ranking, else the l-diversity here.
    """
    full = table if isinstance(table, ClassTable) else None
    columns = list((sensitive or {}).values())
    there = columns if weights is not None else []
    beside = None
    if options.rank_attributes or there:
        beside = submitter(table.classes)(_diversity_then_ranking, full, options, there)
    population = None
    if big_n is not None:
        from reident_airflow.engine.population import population_uniqueness

        population = population_uniqueness(sizes, counts, big_n)
    special = None
    if options.suda and full is not None:
        from reident_airflow.engine.suda import suda2

        special = suda2(full, max_msu_size=options.suda_max_msu_size)
    individual = None
    here: list[LDiversity] = []
    if weights is not None and full is not None:
        from reident_airflow.engine.individual_risk import individual_risk

        individual = individual_risk(full.sizes, weights, record_threshold=options.record_threshold)
    elif full is not None:
        here = [l_diversity(v, full.sizes, c=options.recursive_c) for v in columns]
    ranking, done_there = ((), []) if beside is None else beside.result()
    return _Measured(
        ranking=ranking,
        population=population,
        individual=individual,
        diversity=None if sensitive is None else tuple(here or done_there),
        suda=special,
    )


def _diversity_then_ranking(
    full: ClassTable | None, options: AssessmentOptions, columns: list[ValueCounts]
) -> tuple[tuple[AttributeRisk, ...], list[LDiversity]]:
    """The l-diversity of ``columns`` then the QI ranking (if asked for): the worker
    thread's part of :func:`_measure` (nothing without the class table)."""
    if full is None:
        return (), []
    diverse = [l_diversity(v, full.sizes, c=options.recursive_c) for v in columns]
    if not options.rank_attributes:
        return (), diverse
    from reident_airflow.engine.attributes import attribute_risks

    return attribute_risks(full, options.max_subset_size), diverse
