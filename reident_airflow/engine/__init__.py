"""The risk engine: measures over class-size histograms and class aggregates.

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

Two functions share their module's name and are imported from it: ``datafly`` from
:mod:`reident_airflow.engine.datafly` and ``individual_risk`` from
:mod:`reident_airflow.engine.individual_risk` (as a package attribute the name is the module).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reident_airflow.engine.aggregates import (
        ClassAggregates,
        ClassWeights,
        PairCounts,
        ValueCounts,
        aggregate_grouped,
        build_aggregates,
        check_extra_columns,
        check_weight_counts,
    )
    from reident_airflow.engine.assessment import (
        Assessment,
        Breach,
        JournalistRisk,
        Thresholds,
        assess,
    )
    from reident_airflow.engine.attributes import AttributeRisk, attribute_risks
    from reident_airflow.engine.classes import ClassSizes, ClassTable, class_table_from_grouped
    from reident_airflow.engine.datafly import DataflyAttempt, DataflyResult, DataflyStep
    from reident_airflow.engine.defaults import (
        DEFAULT_RECORD_THRESHOLD,
        DEFAULT_RECURSIVE_C,
        DEFAULT_TARGET,
    )
    from reident_airflow.engine.direct_match import (
        ColumnProtection,
        DirectMatchResult,
        column_protection,
        direct_match_from_counts,
        direct_match_protection,
        validate_target,
    )
    from reident_airflow.engine.diversity import LDiversity, l_diversity, validate_recursive_c
    from reident_airflow.engine.encoding import (
        SUPPRESSION_MARKER,
        encode_arrow_column,
        encoded_columns,
        validate_quasi_identifiers,
    )
    from reident_airflow.engine.errors import (
        AnonymizationInfeasibleError,
        EmptyDatasetError,
        HierarchyError,
        InvalidInputError,
        ReidentError,
        ThresholdBreached,
    )
    from reident_airflow.engine.hierarchies import (
        Hierarchy,
        date_hierarchy,
        interval_hierarchy,
        load_hierarchy,
        masking_hierarchy,
    )
    from reident_airflow.engine.individual_risk import IndividualRisk
    from reident_airflow.engine.population import (
        REGIONS,
        DankarEstimate,
        PopulationEstimate,
        PopulationUniqueness,
        pitman,
        population_uniqueness,
        resolve_population_size,
        snb,
        zayatz,
    )
    from reident_airflow.engine.register import RegisterRisk, match_register, register_risk
    from reident_airflow.engine.sample import (
        RiskBand,
        SampleRisk,
        risk_distribution,
        sample_risk,
        validate_threshold,
    )
    from reident_airflow.engine.suda import SudaResult, suda2

#: Each public name and the module (under ``reident_airflow.engine``) that defines it.
_HOMES: dict[str, str] = {
    **dict.fromkeys(
        (
            "ClassAggregates",
            "ClassWeights",
            "PairCounts",
            "ValueCounts",
            "aggregate_grouped",
            "build_aggregates",
            "check_extra_columns",
            "check_weight_counts",
        ),
        "aggregates",
    ),
    **dict.fromkeys(
        ("Assessment", "Breach", "JournalistRisk", "Thresholds", "assess"), "assessment"
    ),
    **dict.fromkeys(("AttributeRisk", "attribute_risks"), "attributes"),
    **dict.fromkeys(("ClassSizes", "ClassTable", "class_table_from_grouped"), "classes"),
    **dict.fromkeys(
        (
            "SUPPRESSION_MARKER",
            "encode_arrow_column",
            "encoded_columns",
            "validate_quasi_identifiers",
        ),
        "encoding",
    ),
    **dict.fromkeys(("DataflyAttempt", "DataflyResult", "DataflyStep"), "datafly"),
    **dict.fromkeys(
        ("DEFAULT_RECORD_THRESHOLD", "DEFAULT_RECURSIVE_C", "DEFAULT_TARGET"), "defaults"
    ),
    **dict.fromkeys(
        (
            "ColumnProtection",
            "DirectMatchResult",
            "column_protection",
            "direct_match_from_counts",
            "direct_match_protection",
            "validate_target",
        ),
        "direct_match",
    ),
    **dict.fromkeys(("LDiversity", "l_diversity", "validate_recursive_c"), "diversity"),
    **dict.fromkeys(
        (
            "AnonymizationInfeasibleError",
            "EmptyDatasetError",
            "HierarchyError",
            "InvalidInputError",
            "ReidentError",
            "ThresholdBreached",
        ),
        "errors",
    ),
    **dict.fromkeys(
        (
            "Hierarchy",
            "date_hierarchy",
            "interval_hierarchy",
            "load_hierarchy",
            "masking_hierarchy",
        ),
        "hierarchies",
    ),
    **dict.fromkeys(("IndividualRisk",), "individual_risk"),
    **dict.fromkeys(
        (
            "REGIONS",
            "DankarEstimate",
            "PopulationEstimate",
            "PopulationUniqueness",
            "pitman",
            "population_uniqueness",
            "resolve_population_size",
            "snb",
            "zayatz",
        ),
        "population",
    ),
    **dict.fromkeys(("RegisterRisk", "match_register", "register_risk"), "register"),
    **dict.fromkeys(
        ("RiskBand", "SampleRisk", "risk_distribution", "sample_risk", "validate_threshold"),
        "sample",
    ),
    **dict.fromkeys(("SudaResult", "suda2"), "suda"),
}

__all__ = [
    "DEFAULT_RECORD_THRESHOLD",
    "DEFAULT_RECURSIVE_C",
    "DEFAULT_TARGET",
    "REGIONS",
    "SUPPRESSION_MARKER",
    "AnonymizationInfeasibleError",
    "Assessment",
    "AttributeRisk",
    "Breach",
    "ClassAggregates",
    "ClassSizes",
    "ClassTable",
    "ClassWeights",
    "ColumnProtection",
    "DankarEstimate",
    "DataflyAttempt",
    "DataflyResult",
    "DataflyStep",
    "DirectMatchResult",
    "EmptyDatasetError",
    "Hierarchy",
    "HierarchyError",
    "IndividualRisk",
    "InvalidInputError",
    "JournalistRisk",
    "LDiversity",
    "PairCounts",
    "PopulationEstimate",
    "PopulationUniqueness",
    "RegisterRisk",
    "ReidentError",
    "RiskBand",
    "SampleRisk",
    "SudaResult",
    "ThresholdBreached",
    "Thresholds",
    "ValueCounts",
    "aggregate_grouped",
    "assess",
    "attribute_risks",
    "build_aggregates",
    "check_extra_columns",
    "check_weight_counts",
    "class_table_from_grouped",
    "column_protection",
    "date_hierarchy",
    "direct_match_from_counts",
    "direct_match_protection",
    "encode_arrow_column",
    "encoded_columns",
    "interval_hierarchy",
    "l_diversity",
    "load_hierarchy",
    "masking_hierarchy",
    "match_register",
    "pitman",
    "population_uniqueness",
    "register_risk",
    "resolve_population_size",
    "risk_distribution",
    "sample_risk",
    "snb",
    "suda2",
    "validate_quasi_identifiers",
    "validate_recursive_c",
    "validate_target",
    "validate_threshold",
    "zayatz",
]


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
