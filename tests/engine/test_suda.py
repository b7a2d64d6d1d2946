"""SUDA2 special uniques (metrics.md §6) against sdcMicro 5.8.0 and a brute-force search.

Reference: ``suda2(x, variables = keyVars)`` of sdcMicro 5.8.0 (``missing = -999``,
``original_scores = TRUE``) on ``testdata`` and ``francdat``: per-record scores and
contributions in ``*_suda2.csv``, the table's attribute contributions in
``francdat_suda2_attribute_contributions.csv`` and ``summary.json``.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd
import pytest

from reident_airflow.engine.classes import ClassTable
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.suda import MAX_KEYS, missing_codes, suda2
from reident_airflow.sources.frames import class_table_from_frame
from tests._sdcmicro import sdcmicro_data, sdcmicro_summary
from tests.conftest import oracle_data
from tests.engine._records import record_classes


@pytest.mark.parametrize("name", ["testdata", "francdat"])
def test_scores_and_contributions_equal_sdcmicro(name: str) -> None:
    info = sdcmicro_summary()[name]
    keys = list(info["keyVars"])
    frame = pd.read_csv(sdcmicro_data(info["data_file"]))
    table = class_table_from_frame(frame, keys)
    result = suda2(table)
    ref = pd.read_csv(sdcmicro_data(f"{name}_suda2.csv"))
    rows = record_classes(table, frame)  # each record's class, by its QI values
    assert (rows >= 0).all()
    np.testing.assert_array_equal(result.scores[rows], ref["suda_score"].to_numpy())
    for i, key in enumerate(keys):
        np.testing.assert_allclose(
            result.contributions[rows, i], ref[f"contrib_{key}"].to_numpy(), rtol=1e-12, atol=0
        )
    expected = info["suda2"]
    assert result.records_with_msu == expected["n_records_score_gt_0"]
    assert result.total_score == expected["sum_suda_score"]
    assert result.max_score == expected["max_suda_score"]
    for key, value in zip(keys, result.attribute_contributions, strict=True):
        assert math.isclose(value, expected["attribute_contributions"][key], rel_tol=1e-12), key
    doc = result.to_dict()
    assert set(doc) >= {"records_with_msu", "max_score", "attribute_contributions"}
    assert list(doc["attribute_contributions"]) == keys


def test_francdat_attribute_contributions_file() -> None:
    frame = pd.read_csv(sdcmicro_data("francdat_data.csv"))
    result = suda2(class_table_from_frame(frame, ["Key1", "Key2", "Key3", "Key4"]))
    ref = pd.read_csv(sdcmicro_data("francdat_suda2_attribute_contributions.csv"))
    got = dict(zip(result.keys, result.attribute_contributions, strict=True))
    for variable, contribution in zip(ref["variable"], ref["contribution"], strict=True):
        assert math.isclose(got[variable], contribution, rel_tol=1e-12, abs_tol=1e-300)


def test_francdat_by_hand() -> None:
    # record 4 (3,3,1,5): Key1=3 is unique (size 1: (4-1)! = 6), and {Key2=3, Key4=5} (2! = 2)
    frame = pd.read_csv(sdcmicro_data("francdat_data.csv"))
    table = class_table_from_frame(frame, ["Key1", "Key2", "Key3", "Key4"])
    result = suda2(table)
    row = record_classes(table, frame)[3]
    assert result.scores[row] == 8
    np.testing.assert_allclose(result.contributions[row], [6 / 8, 2 / 8, 0, 2 / 8])
    assert result.msus_by_size == (3, 4, 0, 0)


# ------------------------------------------------------------------------------ brute force
def _brute_force(frame: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every key set of every record, checked directly (missing and '*' are no value)."""
    values = frame[keys].to_numpy(dtype=object)
    n, m = values.shape
    big_m = max(m, 3)

    def absent(v: object) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v)) or v == "*"

    missing = np.array([[absent(v) for v in row] for row in values], dtype=bool)

    def matches(r: int, subset: tuple[int, ...]) -> int:
        return sum(
            all(not missing[q, i] and values[q, i] == values[r, i] for i in subset)
            for q in range(n)
        )

    score = np.zeros(n)
    raw = np.zeros((n, m))
    for r in range(n):
        for k in range(1, m + 1):
            for subset in itertools.combinations(range(m), k):
                if missing[r, list(subset)].any() or matches(r, subset) != 1:
                    continue
                if k > 1 and any(matches(r, subset[:i] + subset[i + 1 :]) == 1 for i in range(k)):
                    continue
                weight = math.factorial(big_m - k)
                score[r] += weight
                raw[r, list(subset)] += weight
    contrib = np.divide(raw, score[:, None], out=np.zeros_like(raw), where=score[:, None] > 0)
    return score, contrib


@pytest.mark.parametrize("seed", range(40))
def test_equals_brute_force_on_random_tables(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    m = int(rng.integers(1, 6))

    def value() -> object:
        u = rng.random()
        # text: a column of one kind of value (the reading contract refuses 1 beside "*")
        return None if u < 0.08 else "*" if u < 0.12 else str(int(rng.integers(0, 3)))

    frame = pd.DataFrame({f"k{i}": [value() for _ in range(n)] for i in range(m)})
    keys = list(frame.columns)
    table = class_table_from_frame(frame, keys)
    result = suda2(table)
    score, contrib = _brute_force(frame, keys)
    classes = record_classes(table, frame)
    kept = classes >= 0  # records '*' in every key are excluded (they have no MSU)
    assert not score[~kept].any()
    rows = classes[kept]
    np.testing.assert_array_equal(result.scores[rows], score[kept])
    np.testing.assert_allclose(result.contributions[rows], contrib[kept], rtol=1e-12, atol=0)


def test_max_msu_size_limits_the_search() -> None:
    frame = pd.read_csv(sdcmicro_data("testdata_data.csv"))
    keys = list(sdcmicro_summary()["testdata"]["keyVars"])
    table = class_table_from_frame(frame, keys)
    full = suda2(table)
    small = suda2(table, max_msu_size=2)
    assert small.msus_by_size[:2] == full.msus_by_size[:2]
    assert sum(small.msus_by_size[2:]) == 0
    assert small.max_msu_size == 2
    for bad in (0, 1.5):
        with pytest.raises(InvalidInputError, match="max MSU size"):
            suda2(table, max_msu_size=bad)  # type: ignore[arg-type]


def test_too_many_keys_need_a_limit() -> None:
    m = MAX_KEYS + 1
    table = ClassTable(
        quasi_identifiers=tuple(f"k{i}" for i in range(m)),
        sizes=np.array([1, 1], dtype=np.int64),
        codes=np.array([[0] * m, [1] * m], dtype=np.int64),
        cardinalities=(2,) * m,
    )
    with pytest.raises(InvalidInputError, match="give a maximum MSU size"):
        suda2(table)
    assert suda2(table, max_msu_size=1).msus_by_size[0] == 2 * m
    assert missing_codes(table) == ((),) * m


def test_adult_nine_keys_is_fast() -> None:
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    table = class_table_from_frame(frame, list(frame.columns)[:9])
    start = time.perf_counter()
    result = suda2(table)
    elapsed = time.perf_counter() - start
    assert result.records_with_msu == int((table.sizes == 1).sum())
    assert sum(result.msus_by_size) > 0
    assert elapsed < 10, elapsed
