"""Real results to draw reports from: Adult (ARX's reference data) assessed, anonymized with
Datafly and compared column by column -- the JSON the CLI and the operators produce."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine.advice import breach_advice, datafly_outlook
from reident_airflow.engine.assessment import Thresholds, assess
from reident_airflow.engine.attributes import attribute_risks
from reident_airflow.engine.datafly import datafly
from reident_airflow.engine.direct_match import direct_match_protection
from reident_airflow.engine.hierarchies import load_hierarchy
from reident_airflow.sources.files import class_table_from_file
from tests.conftest import ROOT, oracle_data

ADULT_QIS = ["sex", "age", "race"]
#: Thresholds the Adult assessment on sex, age, race breaches (highest risk 1, k 1).
BREACHING = Thresholds(max_highest_risk=0.5, max_records_at_risk=0.01, min_k=5)
ARTIFACTS = ROOT / "test-artifacts"


def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def adult_frame() -> pd.DataFrame:
    return pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)


@pytest.fixture(scope="session")
def breaching_assessment() -> dict[str, Any]:
    table = class_table_from_file(oracle_data("adult.csv"), ADULT_QIS, sep=";")
    return assess(table, region="usa", thresholds=BREACHING).to_dict()


@pytest.fixture(scope="session")
def adult_advice(adult_frame: pd.DataFrame) -> dict[str, Any]:
    """The advice on the breach of min_k = 5 of :func:`breaching_assessment`, as the engine
    computes it: the ranking names the driver, Datafly at k = 5 with the bundled hierarchies
    gives the outlook (the counts are hand-checked in ``tests/engine/test_advice.py``)."""
    table = class_table_from_file(oracle_data("adult.csv"), ADULT_QIS, sep=";")
    hierarchies = {
        q: load_hierarchy(oracle_data(f"adult_hierarchy_{q}.csv"), column=q) for q in ADULT_QIS
    }
    outlook = datafly_outlook(5, datafly(adult_frame, ADULT_QIS, hierarchies, 5))
    return breach_advice(table, 5, ranking=attribute_risks(table), datafly=outlook).to_dict()


@pytest.fixture(scope="session")
def passing_assessment() -> dict[str, Any]:
    table = class_table_from_file(oracle_data("adult.csv"), ["sex", "race"], sep=";")
    return assess(
        table,
        sampling_fraction=0.2,
        thresholds=Thresholds(max_highest_risk=0.05, max_average_risk=0.01, min_k=20),
    ).to_dict()


@pytest.fixture(scope="session")
def direct_match_result(adult_frame: pd.DataFrame) -> dict[str, Any]:
    """Adult with two made-up high-cardinality columns (a record number and a postcode)
    against a release that shuffled some columns, kept the record number and 60 % of the
    postcodes: the record number and the postcode fall below the target."""
    rng = np.random.default_rng(7)
    original = adult_frame.copy()
    n = len(original)
    original["record_no"] = np.arange(n).astype(str)
    original["postcode"] = rng.integers(10_000, 99_999, n).astype(str)
    avatar = original.copy()
    for column in ("age", "education", "occupation", "native-country"):
        avatar[column] = rng.permutation(avatar[column].to_numpy())
    changed = rng.random(n) < 0.4
    avatar.loc[changed, "postcode"] = rng.integers(10_000, 99_999, int(changed.sum())).astype(str)
    return direct_match_protection(original, avatar, target=90.0).to_dict()


@pytest.fixture(scope="session")
def datafly_result(adult_frame: pd.DataFrame) -> dict[str, Any]:
    qis = ["sex", "age", "race", "marital-status"]
    hierarchies = {
        q: load_hierarchy(oracle_data(f"adult_hierarchy_{q}.csv"), column=q) for q in qis
    }
    return datafly(adult_frame, qis, hierarchies, k=10, suppression_limit=0.01).to_dict()
