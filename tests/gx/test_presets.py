"""Policy presets on the expectations: the preset's limit, as ``reident assess --preset``.

The reference is the command line on the same records with the same preset
(``test_engines.cli_document``): the document under ``details.assessment`` names the preset
and holds its limit; a limit given beside the preset wins on both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from great_expectations.compatibility import pydantic

from reident_airflow.gx import ExpectTableReidentificationRiskToBeBelow, ExpectTableToBeKAnonymous
from tests.gx.conftest import QIS
from tests.gx.test_engines import cli_document
from tests.gx.test_rendering import sentence

RISK = "expect_table_reidentification_risk_to_be_below"
K_ANONYMOUS = "expect_table_to_be_k_anonymous"


@pytest.mark.parametrize(
    ("expectation", "flags", "measure", "limit"),
    [
        (  # EMA Policy 0070: average prosecutor risk at most 0.09
            ExpectTableReidentificationRiskToBeBelow(
                quasi_identifiers=QIS, preset="ema-0070", rank_attributes=False
            ),
            ["--preset", "ema-0070"],
            "prosecutor.average_risk",
            0.09,
        ),
        (  # the explicit limit wins over the preset's 0.09, as --max-average-risk does
            ExpectTableReidentificationRiskToBeBelow(
                quasi_identifiers=QIS, preset="EMA-0070", max_value=0.01, rank_attributes=False
            ),
            ["--preset", "ema-0070", "--max-average-risk", "0.01"],
            "prosecutor.average_risk",
            0.01,
        ),
        (  # El Emam, public release: highest prosecutor risk at most 0.05
            ExpectTableReidentificationRiskToBeBelow(
                quasi_identifiers=QIS, preset="el-emam-public", rank_attributes=False
            ),
            ["--preset", "el-emam-public"],
            "prosecutor.highest_risk",
            0.05,
        ),
        (
            ExpectTableToBeKAnonymous(quasi_identifiers=QIS, preset="k11", rank_attributes=False),
            ["--preset", "k11"],
            "k",
            11,
        ),
    ],
    ids=["ema", "ema-overridden", "el-emam-public", "k11"],
)
def test_a_preset_gates_as_the_cli_preset(
    expectation: Any,
    flags: list[str],
    measure: str,
    limit: float,
    pandas_batch: Any,
    adult: pd.DataFrame,
    tmp_path: Path,
) -> None:
    result = pandas_batch(adult).validate(expectation)
    details = result.result["details"]
    expected = cli_document([*flags, "--no-ranking"], tmp_path)
    assert details["assessment"] == expected
    assert (details["measure"], details["limit"], details["preset"]) == (
        measure,
        limit,
        expected["preset"],
    )
    # Adult on sex, age, race: k = 1, highest risk 1, average 528 / 30162 = 0.0175
    assert result.success is (measure == "prosecutor.average_risk" and limit == 0.09)
    assert result.success is expected["passed"]


def test_without_a_preset_the_details_name_none() -> None:
    expectation = ExpectTableToBeKAnonymous(quasi_identifiers=QIS, k=2)
    assert expectation.preset is None
    assert "preset" not in expectation.configuration.kwargs


@pytest.mark.parametrize(
    ("cls", "kwargs", "words"),
    [
        (ExpectTableReidentificationRiskToBeBelow, {"preset": "k5"}, [K_ANONYMOUS, "'k5'"]),
        (
            ExpectTableReidentificationRiskToBeBelow,
            {"preset": "ema-0070", "measure": "prosecutor.highest_risk"},
            ["'ema-0070'", "prosecutor.average_risk"],
        ),
        (ExpectTableToBeKAnonymous, {"preset": "health-canada"}, [RISK, "'health-canada'"]),
        (ExpectTableToBeKAnonymous, {"preset": "k-11"}, ["did you mean 'k11'"]),
        (ExpectTableToBeKAnonymous, {}, ["k is required"]),
        (ExpectTableReidentificationRiskToBeBelow, {}, ["max_value is required"]),
    ],
    ids=["k-preset-on-risk", "other-measure", "risk-preset-on-k", "typo", "no-k", "no-limit"],
)
def test_a_preset_the_expectation_cannot_check_is_a_clear_error(
    cls: Any, kwargs: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        cls(quasi_identifiers=QIS, **kwargs)
    for word in words:
        assert word in str(caught.value)


def test_data_docs_name_the_preset_and_its_resolved_limit() -> None:
    risk = ExpectTableReidentificationRiskToBeBelow(quasi_identifiers=["sex"], preset="ema-0070")
    k = ExpectTableToBeKAnonymous(quasi_identifiers=["sex"], preset="k11")
    assert sentence(risk) == (
        "Average prosecutor re-identification risk on quasi-identifiers sex must be at most "
        "0.09 (policy preset ema-0070)."
    )
    assert sentence(k) == (
        "Must be k-anonymous for k = 11 on quasi-identifiers sex: every combination of their "
        "values must be shared by at least 11 records (policy preset k11)."
    )
