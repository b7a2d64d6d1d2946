"""The risk engine: measures over class-size histograms, class aggregates and distributions.

Pure Python over numpy and scipy: no Airflow, Great Expectations, SQLAlchemy or file I/O. A
source (:mod:`reident_airflow.sources`) counts the rows where they are; the engine turns the
counts into risks, a verdict and anonymized generalizations; the adapters (CLI, operators,
expectations, report) present the result.

The names below are the engine's public API. Each is loaded from its module when first used
(:pep:`562`), so that ``import reident_airflow.engine`` costs nothing: a verdict from a
class-size histogram never loads pandas or scipy.

Module rules: every engine module declares ``__all__``; no module imports a name starting
with ``_`` from another module. Modules whose own name starts with ``_`` (``_exact``,
``_parallel``, ``_model_input``, ``_pitman_sums``) are internal to the engine: their names
carry no underscore and only engine modules (and the engine's tests) import them.

Three functions share their module's name and are imported from it: ``datafly`` from
:mod:`reident_airflow.engine.datafly`, ``differencing`` from
:mod:`reident_airflow.engine.differencing` and ``individual_risk`` from
:mod:`reident_airflow.engine.individual_risk` (as a package attribute the name is the module).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The modules (under ``reident_airflow.engine``) and the public names each one defines.
_EXPORTS: dict[str, str] = {
    "advice": "BreachAdvice DataflyOutlook RiskDriver breach_advice datafly_outlook",
    "aggregates": (
        "ClassAggregates ClassWeights PairCounts ValueCounts aggregate_arrow aggregate_grouped "
        "build_aggregates check_extra_columns check_weight_counts"
    ),
    "assessment": (
        "Assessment JournalistRisk assess options_for with_identifier_scan with_release_difference"
    ),
    "attributes": "AttributeRisk attribute_risks",
    "classes": "ClassSizes ClassTable class_table_from_grouped",
    "datafly": "DataflyResult DataflySummary",
    "datafly_search": "DataflyAttempt DataflyStep",
    "differencing": "DIFFERENCING_SCHEMA Movement ReleaseChanges ReleaseDifference",
    "defaults": "DEFAULT_RECORD_THRESHOLD DEFAULT_RECURSIVE_C DEFAULT_TARGET REGIONS",
    "direct_match": (
        "ColumnProtection DirectMatchResult column_protection direct_match_from_counts "
        "direct_match_protection validate_target"
    ),
    "distributions": "Distributions SubsetHistograms ValueProfiles WeightPairs distributions_of",
    "diversity": "LDiversity l_diversity validate_recursive_c",
    "encoding": "SUPPRESSION_MARKER encode_arrow_column encoded_columns validate_quasi_identifiers",
    "errors": (
        "AnonymizationInfeasibleError EmptyDatasetError HierarchyError InvalidInputError "
        "ReidentError ThresholdBreached"
    ),
    "hierarchies": "Hierarchy date_hierarchy interval_hierarchy load_hierarchy masking_hierarchy",
    "identifiers": (
        "NAME_RULES ColumnPlan ColumnProfile ColumnVerdict ContentShare IdentifierScan NameRule "
        "ScanOptions match_name scan scan_columns scan_plan"
    ),
    "individual_risk": "IndividualRisk",
    "options": "AssessmentOptions Breach OptionError Thresholds",
    "presets": "PRESETS Preset find_preset",
    "population": (
        "DankarEstimate PopulationEstimate PopulationUniqueness pitman "
        "population_uniqueness resolve_population_size snb zayatz"
    ),
    "register": "RegisterRisk match_register register_risk",
    "sample": "RiskBand SampleRisk risk_distribution sample_risk validate_threshold",
    "suda": "SudaResult suda2",
}

#: Each public name and the module that defines it.
_HOMES: dict[str, str] = {
    name: module for module, names in _EXPORTS.items() for name in names.split()
}

__all__ = sorted(_HOMES)

if TYPE_CHECKING:  # what a type checker sees; at run time __getattr__ loads each name
    from reident_airflow.engine.aggregates import ClassAggregates as ClassAggregates
    from reident_airflow.engine.aggregates import ClassWeights as ClassWeights
    from reident_airflow.engine.aggregates import PairCounts as PairCounts
    from reident_airflow.engine.aggregates import ValueCounts as ValueCounts
    from reident_airflow.engine.aggregates import aggregate_arrow as aggregate_arrow
    from reident_airflow.engine.aggregates import aggregate_grouped as aggregate_grouped
    from reident_airflow.engine.aggregates import build_aggregates as build_aggregates
    from reident_airflow.engine.aggregates import check_extra_columns as check_extra_columns
    from reident_airflow.engine.aggregates import check_weight_counts as check_weight_counts
    from reident_airflow.engine.assessment import Assessment as Assessment
    from reident_airflow.engine.assessment import JournalistRisk as JournalistRisk
    from reident_airflow.engine.assessment import assess as assess
    from reident_airflow.engine.assessment import options_for as options_for
    from reident_airflow.engine.assessment import with_identifier_scan as with_identifier_scan
    from reident_airflow.engine.assessment import (
        with_release_difference as with_release_difference,
    )
    from reident_airflow.engine.attributes import AttributeRisk as AttributeRisk
    from reident_airflow.engine.attributes import attribute_risks as attribute_risks
    from reident_airflow.engine.classes import ClassSizes as ClassSizes
    from reident_airflow.engine.classes import ClassTable as ClassTable
    from reident_airflow.engine.classes import class_table_from_grouped as class_table_from_grouped
    from reident_airflow.engine.datafly import DataflyResult as DataflyResult
    from reident_airflow.engine.datafly import DataflySummary as DataflySummary
    from reident_airflow.engine.datafly_search import DataflyAttempt as DataflyAttempt
    from reident_airflow.engine.datafly_search import DataflyStep as DataflyStep
    from reident_airflow.engine.defaults import DEFAULT_RECORD_THRESHOLD as DEFAULT_RECORD_THRESHOLD
    from reident_airflow.engine.defaults import DEFAULT_RECURSIVE_C as DEFAULT_RECURSIVE_C
    from reident_airflow.engine.defaults import DEFAULT_TARGET as DEFAULT_TARGET
    from reident_airflow.engine.defaults import REGIONS as REGIONS
    from reident_airflow.engine.differencing import DIFFERENCING_SCHEMA as DIFFERENCING_SCHEMA
    from reident_airflow.engine.differencing import Movement as Movement
    from reident_airflow.engine.differencing import ReleaseChanges as ReleaseChanges
    from reident_airflow.engine.differencing import ReleaseDifference as ReleaseDifference
    from reident_airflow.engine.direct_match import ColumnProtection as ColumnProtection
    from reident_airflow.engine.direct_match import DirectMatchResult as DirectMatchResult
    from reident_airflow.engine.direct_match import column_protection as column_protection
    from reident_airflow.engine.direct_match import (
        direct_match_from_counts as direct_match_from_counts,
    )
    from reident_airflow.engine.direct_match import (
        direct_match_protection as direct_match_protection,
    )
    from reident_airflow.engine.direct_match import validate_target as validate_target
    from reident_airflow.engine.distributions import Distributions as Distributions
    from reident_airflow.engine.distributions import SubsetHistograms as SubsetHistograms
    from reident_airflow.engine.distributions import ValueProfiles as ValueProfiles
    from reident_airflow.engine.distributions import WeightPairs as WeightPairs
    from reident_airflow.engine.distributions import distributions_of as distributions_of
    from reident_airflow.engine.diversity import LDiversity as LDiversity
    from reident_airflow.engine.diversity import l_diversity as l_diversity
    from reident_airflow.engine.diversity import validate_recursive_c as validate_recursive_c
    from reident_airflow.engine.encoding import SUPPRESSION_MARKER as SUPPRESSION_MARKER
    from reident_airflow.engine.encoding import encode_arrow_column as encode_arrow_column
    from reident_airflow.engine.encoding import encoded_columns as encoded_columns
    from reident_airflow.engine.encoding import (
        validate_quasi_identifiers as validate_quasi_identifiers,
    )
    from reident_airflow.engine.errors import (
        AnonymizationInfeasibleError as AnonymizationInfeasibleError,
    )
    from reident_airflow.engine.errors import EmptyDatasetError as EmptyDatasetError
    from reident_airflow.engine.errors import HierarchyError as HierarchyError
    from reident_airflow.engine.errors import InvalidInputError as InvalidInputError
    from reident_airflow.engine.errors import ReidentError as ReidentError
    from reident_airflow.engine.errors import ThresholdBreached as ThresholdBreached
    from reident_airflow.engine.hierarchies import Hierarchy as Hierarchy
    from reident_airflow.engine.hierarchies import date_hierarchy as date_hierarchy
    from reident_airflow.engine.hierarchies import interval_hierarchy as interval_hierarchy
    from reident_airflow.engine.hierarchies import load_hierarchy as load_hierarchy
    from reident_airflow.engine.hierarchies import masking_hierarchy as masking_hierarchy
    from reident_airflow.engine.identifiers import NAME_RULES as NAME_RULES
    from reident_airflow.engine.identifiers import ColumnPlan as ColumnPlan
    from reident_airflow.engine.identifiers import ColumnProfile as ColumnProfile
    from reident_airflow.engine.identifiers import ColumnVerdict as ColumnVerdict
    from reident_airflow.engine.identifiers import ContentShare as ContentShare
    from reident_airflow.engine.identifiers import IdentifierScan as IdentifierScan
    from reident_airflow.engine.identifiers import NameRule as NameRule
    from reident_airflow.engine.identifiers import ScanOptions as ScanOptions
    from reident_airflow.engine.identifiers import match_name as match_name
    from reident_airflow.engine.identifiers import scan as scan
    from reident_airflow.engine.identifiers import scan_columns as scan_columns
    from reident_airflow.engine.identifiers import scan_plan as scan_plan
    from reident_airflow.engine.individual_risk import IndividualRisk as IndividualRisk
    from reident_airflow.engine.options import AssessmentOptions as AssessmentOptions
    from reident_airflow.engine.options import Breach as Breach
    from reident_airflow.engine.options import OptionError as OptionError
    from reident_airflow.engine.options import Thresholds as Thresholds
    from reident_airflow.engine.population import DankarEstimate as DankarEstimate
    from reident_airflow.engine.population import PopulationEstimate as PopulationEstimate
    from reident_airflow.engine.population import PopulationUniqueness as PopulationUniqueness
    from reident_airflow.engine.population import pitman as pitman
    from reident_airflow.engine.population import population_uniqueness as population_uniqueness
    from reident_airflow.engine.population import resolve_population_size as resolve_population_size
    from reident_airflow.engine.population import snb as snb
    from reident_airflow.engine.population import zayatz as zayatz
    from reident_airflow.engine.register import RegisterRisk as RegisterRisk
    from reident_airflow.engine.register import match_register as match_register
    from reident_airflow.engine.register import register_risk as register_risk
    from reident_airflow.engine.sample import RiskBand as RiskBand
    from reident_airflow.engine.sample import SampleRisk as SampleRisk
    from reident_airflow.engine.sample import risk_distribution as risk_distribution
    from reident_airflow.engine.sample import sample_risk as sample_risk
    from reident_airflow.engine.sample import validate_threshold as validate_threshold
    from reident_airflow.engine.suda import SudaResult as SudaResult
    from reident_airflow.engine.suda import suda2 as suda2


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (:pep:`562`)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
