"""Policy presets and two-level (warn / fail) thresholds in AssessmentOptions (metrics.md §11)."""

from __future__ import annotations

import numpy as np
import pytest

from reident_airflow.engine.assessment import assess
from reident_airflow.engine.classes import ClassSizes
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.identifiers import ScanOptions
from reident_airflow.engine.options import AssessmentOptions, OptionError, Thresholds
from reident_airflow.engine.presets import PRESETS, find_preset

QIS = ("sex", "age")


def test_every_preset_has_limits_a_context_and_a_source() -> None:
    for name, preset in PRESETS.items():
        assert preset.name == name
        assert preset.limits and preset.context and preset.source
        Thresholds(**preset.limits)  # each set of limits is a valid gate


def test_preset_values_are_the_published_ones() -> None:
    # EMA Policy 0070 guidance and Health Canada PRCI: 0.09; El Emam: 0.05 / 0.2 / 0.33;
    # CMS cell size rule: 11
    assert PRESETS["ema-0070"].limits == {"max_average_risk": 0.09}
    assert PRESETS["health-canada"].limits == {"max_average_risk": 0.09}
    assert [
        PRESETS[f"el-emam-{c}"].limits["max_highest_risk"]
        for c in ("public", "controlled", "trusted")
    ] == [0.05, 0.2, 0.33]
    assert PRESETS["k11"].limits == {"min_k": 11}


def test_a_preset_fills_the_gate_and_given_limits_win() -> None:
    options = AssessmentOptions(QIS, preset="EMA-0070")
    assert options.preset == "ema-0070"
    assert options.thresholds == Thresholds(max_average_risk=0.09)
    mixed = AssessmentOptions(
        QIS, thresholds=Thresholds(max_average_risk=0.05, min_k=3), preset="ema-0070"
    )
    assert mixed.thresholds == Thresholds(max_average_risk=0.05, min_k=3)


def test_unknown_preset_suggests_the_closest() -> None:
    with pytest.raises(
        InvalidInputError, match=r"unknown preset 'ema-070' \(did you mean 'ema-0070'\?\)"
    ):
        find_preset("ema-070")
    with pytest.raises(InvalidInputError, match="known presets: ema-0070, health-canada"):
        AssessmentOptions.from_mapping({"quasi_identifiers": "a", "preset": "nothing-alike"})


def test_warn_levels_from_a_mapping() -> None:
    options = AssessmentOptions.from_mapping(
        {
            "quasi_identifiers": "sex,age",
            "max_average_risk": "0.09",
            "warn_max_average_risk": "0.05",
            "min_k": 3,
            "warn_min_k": "5",
        }
    )
    assert options.thresholds == Thresholds(max_average_risk=0.09, min_k=3)
    assert options.warn_thresholds == Thresholds(max_average_risk=0.05, min_k=5)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"max_average_risk": 0.05, "warn_max_average_risk": 0.09},
            "warn_max_average_risk \\(0.09\\) is laxer than max_average_risk \\(0.05\\)",
        ),
        ({"min_k": 5, "warn_min_k": 3}, "warn_min_k \\(3\\) is laxer than min_k \\(5\\)"),
        ({"warn_min_l": 2}, "warn_min_l gates l-diversity: give sensitive columns"),
        (
            {"warn_max_global_risk": 0.1},
            "warn_max_global_risk gates the individual risk: give weight",
        ),
    ],
)
def test_warn_level_rules(values: dict[str, float], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        AssessmentOptions.from_mapping({"quasi_identifiers": "sex", **values})


def test_equal_levels_are_allowed_and_a_warn_level_alone_too() -> None:
    AssessmentOptions.from_mapping({"quasi_identifiers": "a", "min_k": 5, "warn_min_k": 5})
    alone = AssessmentOptions.from_mapping({"quasi_identifiers": "a", "warn_min_k": 5})
    assert alone.thresholds == Thresholds() and alone.warn_thresholds == Thresholds(min_k=5)


def test_assess_reports_warnings_apart_from_breaches() -> None:
    # classes of sizes 2, 2, 4 (8 records): k = 2, highest risk 1/2, average risk 3/8
    # (three classes over eight records)
    sizes = ClassSizes(("a",), np.array([2, 4]), np.array([2, 1]))
    options = AssessmentOptions(
        ("a",),
        thresholds=Thresholds(min_k=2, max_highest_risk=0.4),
        warn_thresholds=Thresholds(min_k=3, max_highest_risk=0.3, max_average_risk=0.5),
        rank_attributes=False,
    )
    result = assess(sizes, options).to_dict()
    # highest risk 0.5 breaches its failing limit 0.4: a breach, not also a warning; k = 2
    # passes min_k 2 but not warn_min_k 3; the average 0.375 is within 0.5
    assert [b["metric"] for b in result["breaches"]] == ["prosecutor.highest_risk"]
    assert result["warnings"] == [{"metric": "k", "observed": 2.0, "limit": 3.0}]
    assert result["warn_thresholds"] == {
        "max_highest_risk": 0.3,
        "max_average_risk": 0.5,
        "min_k": 3,
    }
    assert result["preset"] is None and result["passed"] is False
    with_preset = assess(sizes, AssessmentOptions(("a",), preset="k5", rank_attributes=False))
    assert with_preset.to_dict()["preset"] == "k5"
    assert with_preset.to_dict()["thresholds"] == {"min_k": 5}


def test_each_preset_names_its_identifier_scan_policy() -> None:
    # docs/metrics.md §11: a release to the public fails on a forgotten identifier, with the
    # Safe Harbor checks; a release under an agreement warns
    public = {"ema-0070", "health-canada", "el-emam-public"}
    for name, preset in PRESETS.items():
        expected = ("fail", True) if name in public else ("warn", False)
        assert (preset.scan_policy, preset.safe_harbor) == expected, name
        assert preset.to_dict()["scan_policy"] == expected[0]
        options = ScanOptions.from_mapping({}, preset=name.upper())
        assert (options.policy, options.safe_harbor) == expected, name
    # a policy given wins over the preset's, one option at a time; no preset: warn
    given = ScanOptions.from_mapping({"policy": "warn", "safe_harbor": None}, preset="ema-0070")
    assert (given.policy, given.safe_harbor) == ("warn", True)
    assert ScanOptions.from_mapping({"policy": ""}, preset="none").policy == "warn"
    with pytest.raises(InvalidInputError, match="unknown preset"):
        ScanOptions.from_mapping({}, preset="el-emam-publik")
