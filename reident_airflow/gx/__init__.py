"""Great Expectations integration: re-identification risk as expectations (GE 1.20 to 1.24).

Importing this package registers, explicitly and once:

- the metrics ``reident.class_table``, ``reident.class_size_histogram``,
  ``reident.direct_match_counts``, ``reident.sensitive_value_counts`` (pandas and
  SQLAlchemy), ``reident.class_distributions``, ``reident.identifier_scan`` and
  ``reident.release_changes`` (also Spark, as are the histogram and the direct match
  counts), each returning one type on every engine (:mod:`reident_airflow.gx.metrics`);
- the expectations ``expect_table_reidentification_risk_to_be_below``,
  ``expect_table_to_be_k_anonymous``, ``expect_table_direct_match_protection_to_be_above``,
  ``expect_table_to_be_l_diverse``, ``expect_table_to_hold_no_direct_identifiers`` and
  ``expect_table_differencing_risk_to_be_below`` (:mod:`reident_airflow.gx.expectations`);
- the checkpoint action type ``reident_alert`` (:mod:`reident_airflow.gx.actions`);
- the suite-parameter function ``reident_expectations_loaded()`` of the guard expectation
  (:func:`~reident_airflow.gx.guard.guard_expectation`), which every suite holding a reident
  expectation gets, however it is built (:func:`~reident_airflow.gx.guard.attach_guard`): a
  saved suite raises in a process that did not import this package, instead of validating
  without the reident expectations GE dropped (GE has no hook to import this package).

:func:`register` checks that GE's registries hold them and returns their names; it is called
on import, so a suite that names these expectations loads as soon as this package is imported.
:func:`run_release_checkpoint` runs a release suite with its alert actions (for Airflow tasks),
on a DataFrame, a CSV file, a database URL or an Airflow connection (``conn_id``).
"""

from __future__ import annotations

import reident_airflow.gx._quiet  # noqa: F401  (before GE is first imported)
from reident_airflow.connections import connection_url
from reident_airflow.gx.actions import ReidentAlertAction, alert_document
from reident_airflow.gx.checkpoint import (
    ReleaseCheckpointResult,
    check_context,
    load_checkpoint_config,
    load_suite,
    run_release_checkpoint,
)
from reident_airflow.gx.expectations import (
    EXPECTATION_TYPES,
    EXPECTATIONS,
    L_DIVERSITY_MEASURES,
    MEASURES,
    ExpectTableDifferencingRiskToBeBelow,
    ExpectTableDirectMatchProtectionToBeAbove,
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
    ExpectTableToBeLDiverse,
    ExpectTableToHoldNoDirectIdentifiers,
)
from reident_airflow.gx.guard import (
    GUARD_FUNCTION,
    SuiteIncompleteError,
    attach_guard,
    check_result,
    guard_expectation,
    install_guard,
    is_guard,
)
from reident_airflow.gx.metrics import (
    CLASS_DISTRIBUTIONS_METRIC,
    CLASS_TABLE_METRIC,
    DIRECT_MATCH_METRIC,
    HISTOGRAM_METRIC,
    IDENTIFIER_SCAN_METRIC,
    RELEASE_CHANGES_METRIC,
    SENSITIVE_COUNTS_METRIC,
    ClassDistributionsMetric,
    ClassSizeHistogramMetric,
    ClassTableMetric,
    DirectMatchCountsMetric,
    IdentifierScanMetric,
    ReleaseChangesMetric,
    SensitiveValueCountsMetric,
)

__all__ = [
    "CLASS_DISTRIBUTIONS_METRIC",
    "CLASS_TABLE_METRIC",
    "DIRECT_MATCH_METRIC",
    "EXPECTATION_TYPES",
    "GUARD_FUNCTION",
    "HISTOGRAM_METRIC",
    "IDENTIFIER_SCAN_METRIC",
    "L_DIVERSITY_MEASURES",
    "MEASURES",
    "METRIC_NAMES",
    "RELEASE_CHANGES_METRIC",
    "SENSITIVE_COUNTS_METRIC",
    "ClassDistributionsMetric",
    "ClassSizeHistogramMetric",
    "ClassTableMetric",
    "DirectMatchCountsMetric",
    "ExpectTableDifferencingRiskToBeBelow",
    "ExpectTableDirectMatchProtectionToBeAbove",
    "ExpectTableReidentificationRiskToBeBelow",
    "ExpectTableToBeKAnonymous",
    "ExpectTableToBeLDiverse",
    "ExpectTableToHoldNoDirectIdentifiers",
    "IdentifierScanMetric",
    "ReidentAlertAction",
    "ReleaseChangesMetric",
    "ReleaseCheckpointResult",
    "SensitiveValueCountsMetric",
    "SuiteIncompleteError",
    "alert_document",
    "attach_guard",
    "check_context",
    "check_result",
    "connection_url",
    "guard_expectation",
    "install_guard",
    "is_guard",
    "load_checkpoint_config",
    "load_suite",
    "register",
    "run_release_checkpoint",
]

#: The metrics this package adds, each implemented for pandas and SQLAlchemy (some for Spark).
METRIC_NAMES: tuple[str, ...] = (
    CLASS_TABLE_METRIC,
    HISTOGRAM_METRIC,
    DIRECT_MATCH_METRIC,
    SENSITIVE_COUNTS_METRIC,
    CLASS_DISTRIBUTIONS_METRIC,
    IDENTIFIER_SCAN_METRIC,
    RELEASE_CHANGES_METRIC,
)
ACTION_TYPE = ReidentAlertAction.__fields__["type"].default


def register() -> dict[str, tuple[str, ...]]:
    """Make sure GE's registries hold our expectations, metrics and action; return their names.

    Defining a GE class registers it; this re-registers anything missing (a registry cleared
    by a test harness, say) and fails loudly if GE's registry API changed under us.
    """
    from great_expectations.checkpoint.actions import _VALIDATION_ACTION_REGISTRY
    from great_expectations.expectations import registry

    registered = set(registry.list_registered_expectation_implementations())
    for cls in EXPECTATIONS:
        if cls.expectation_type not in registered:
            registry.register_expectation(cls)
    for provider in (
        ClassTableMetric,
        ClassSizeHistogramMetric,
        DirectMatchCountsMetric,
        SensitiveValueCountsMetric,
        ClassDistributionsMetric,
        IdentifierScanMetric,
        ReleaseChangesMetric,
    ):
        if provider.metric_name not in registry._registered_metrics:
            provider._register_metric_functions()
    try:
        _VALIDATION_ACTION_REGISTRY.get(ACTION_TYPE)
    except Exception:
        _VALIDATION_ACTION_REGISTRY.register(
            action_type=ACTION_TYPE, action_class=ReidentAlertAction
        )
    for name in EXPECTATION_TYPES:
        registry.get_expectation_impl(name)
    for name in METRIC_NAMES:
        if name not in registry._registered_metrics:
            raise RuntimeError(f"Great Expectations did not register the metric {name!r}")
    install_guard(EXPECTATION_TYPES)
    return {"expectations": EXPECTATION_TYPES, "metrics": METRIC_NAMES, "actions": (ACTION_TYPE,)}


register()
