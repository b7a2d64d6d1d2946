"""``import reident_airflow.gx`` registers the expectations, metrics and action, explicitly."""

from __future__ import annotations

from typing import Any

import reident_airflow.gx as rgx


def test_import_registers_everything(fresh_process: dict[str, Any]) -> None:
    """In a fresh interpreter GE knows none of them until ``import reident_airflow.gx``."""
    assert fresh_process["registries_before"] == "([], {}, None)"
    engines = ["PandasExecutionEngine", "SparkDFExecutionEngine", "SqlAlchemyExecutionEngine"]
    # a metric of one row per class has no Spark implementation (one type on every engine)
    per_class = (rgx.CLASS_TABLE_METRIC, rgx.SENSITIVE_COUNTS_METRIC)
    expected = (
        list(rgx.EXPECTATION_TYPES),
        {
            name: [e for e in engines if name not in per_class or "Spark" not in e]
            for name in rgx.METRIC_NAMES
        },
        "ReidentAlertAction",
    )
    assert fresh_process["registries_after"] == repr(expected)


def test_register_is_idempotent_and_names_what_it_registered() -> None:
    assert (
        rgx.register()
        == rgx.register()
        == {
            "expectations": (
                "expect_table_reidentification_risk_to_be_below",
                "expect_table_to_be_k_anonymous",
                "expect_table_direct_match_protection_to_be_above",
                "expect_table_to_be_l_diverse",
                "expect_table_to_hold_no_direct_identifiers",
                "expect_table_differencing_risk_to_be_below",
            ),
            "metrics": (
                "reident.class_table",
                "reident.class_size_histogram",
                "reident.direct_match_counts",
                "reident.sensitive_value_counts",
                "reident.class_distributions",
                "reident.identifier_scan",
                "reident.release_changes",
            ),
            "actions": ("reident_alert",),
        }
    )


def test_exported_members_exist() -> None:
    for module in (rgx, rgx.metrics, rgx.expectations, rgx.actions, rgx.checkpoint):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.__all__ names missing {name}"


def test_only_the_concrete_expectations_are_registered() -> None:
    """The shared bases are abstract: GE's registry holds the six expectations, no base."""
    from great_expectations.expectations import registry

    from reident_airflow.gx.expectations import base

    bases = (base.ReidentExpectation, base.QuasiIdentifierExpectation, base.ClassSizeExpectation)
    assert all(cls.is_abstract() for cls in bases)
    ours = [
        name
        for name, cls in registry._registered_expectations.items()
        if isinstance(cls, type) and issubclass(cls, base.ReidentExpectation)
    ]
    assert sorted(ours) == sorted(rgx.EXPECTATION_TYPES)


def test_every_gx_module_exports_what_it_lists() -> None:
    from reident_airflow.gx import guard, parameters
    from reident_airflow.gx.expectations import (
        base,
        differencing,
        direct_match,
        identifiers,
        k_anonymity,
        l_diversity,
        risk,
    )

    modules = (
        guard,
        parameters,
        base,
        differencing,
        direct_match,
        identifiers,
        k_anonymity,
        l_diversity,
        risk,
    )
    for module in modules:
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.__all__ names missing {name}"


def test_each_expectation_declares_its_own_and_inherits_the_rest() -> None:
    """Success keys, field checks and cross checks: the inherited ones first, then its own."""
    from reident_airflow.gx import parameters as p

    qi = ("quasi_identifiers", "max_subset_size", "rank_attributes")
    population = ("population_size", "sampling_fraction", "region")
    assert rgx.ExpectTableToBeKAnonymous.success_keys == (*qi, "k", "preset")
    assert rgx.ExpectTableReidentificationRiskToBeBelow.success_keys == (
        *qi,
        *("measure", "max_value", "record_threshold", *population, "preset"),
    )
    assert rgx.ExpectTableToBeLDiverse.success_keys == (
        *qi,
        *("sensitive", "min_l", "measure", "recursive_c"),
    )
    assert rgx.ExpectTableDirectMatchProtectionToBeAbove.success_keys == (
        *("original_table", "original_schema", "key", "columns", "target", "sep"),
    )
    assert list(rgx.ExpectTableToBeKAnonymous.field_checks) == [*qi, "k", "preset"]
    assert rgx.ExpectTableToBeKAnonymous.field_checks["k"] is p.check_k
    assert rgx.ExpectTableToBeLDiverse.cross_checks == (p.check_ranking, p.check_l_required)
    assert rgx.ExpectTableDirectMatchProtectionToBeAbove.cross_checks == ()
    assert rgx.ExpectTableToBeKAnonymous.schema()["title"] == "Expect table to be k-anonymous"
