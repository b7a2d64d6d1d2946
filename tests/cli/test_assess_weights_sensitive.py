"""`reident assess --weight / --sensitive / --suda`: JSON as docs/contract.md, gates, bad input.

Reference values: sdcMicro 5.8.0 on its ``testdata`` (``tests/_sdcmicro.py``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from tests._sdcmicro import sdcmicro_data, sdcmicro_summary
from tests.cli._cli import assess_json, one_line_error, run

TESTDATA = str(sdcmicro_data("testdata_data.csv"))
KEYS = ",".join(sdcmicro_summary()["testdata"]["keyVars"])


def test_weights_sensitive_and_suda_in_the_json() -> None:
    code, doc = assess_json(
        TESTDATA,
        "--qi",
        KEYS,
        "--weight",
        "sampling_weight",
        "--sensitive",
        "hhcivil,age",
        "--suda",
    )
    assert code == 0
    ref = sdcmicro_summary()["testdata"]
    ind = doc["individual_risk"]
    assert set(ind) >= {"weight", "global_risk", "global_risk_share", "highest"}
    assert "records_above_threshold" in ind
    assert ind["weight"] == "sampling_weight"
    assert math.isclose(ind["global_risk"], ref["measure_risk"]["global_risk_ER"], rel_tol=1e-12)
    assert math.isclose(ind["global_risk_share"], ref["measure_risk"]["global_risk"], rel_tol=1e-12)
    assert doc["journalist"]["basis"] == "sampling_weights"
    assert doc["journalist"]["highest_risk"] == ind["highest"]
    assert list(doc["l_diversity"]) == ["hhcivil", "age"]
    assert doc["l_diversity"]["hhcivil"] == {
        "distinct": 1,
        "entropy": 1.0,
        "recursive": 1,
        "c": 2.0,
        "homogeneous_records": pytest.approx(2466 / 4580),
    }
    suda = doc["suda"]
    assert suda["records_with_msu"] == ref["suda2"]["n_records_score_gt_0"]
    assert suda["max_score"] == ref["suda2"]["max_suda_score"]
    for key, value in ref["suda2"]["attribute_contributions"].items():
        assert math.isclose(suda["attribute_contributions"][key], value, rel_tol=1e-12)
    # without the flags the three keys stay null (docs/contract.md)
    _, plain = assess_json(TESTDATA, "--qi", KEYS)
    assert plain["individual_risk"] is None and plain["l_diversity"] is None
    assert plain["suda"] is None and plain["journalist"]["basis"] == "sample"


def test_gates_breach_with_exit_1_and_name_the_metric() -> None:
    code, out, _ = run(
        "assess",
        TESTDATA,
        "--qi",
        KEYS,
        "--weight",
        "sampling_weight",
        "--sensitive",
        "hhcivil",
        "--max-global-risk",
        "0.001",
        "--min-l",
        "2",
    )
    assert code == 1
    assert "BREACH individual_risk.global_risk_share: 0.00235334 > limit 0.001" in out
    assert "BREACH l_diversity.hhcivil.distinct: 1 < minimum 2" in out
    code, doc = assess_json(
        TESTDATA, "--qi", KEYS, "--weight", "sampling_weight", "--max-global-risk", "0.01"
    )
    assert code == 0 and doc["thresholds"] == {"max_global_risk": 0.01} and doc["passed"]
    code, doc = assess_json(TESTDATA, "--qi", "urbrur", "--sensitive", "sex", "--min-l", "2")
    assert code == 0 and doc["l_diversity"]["sex"]["distinct"] == 2


def test_recursive_c_is_used() -> None:
    _, two = assess_json(TESTDATA, "--qi", "urbrur,sex", "--sensitive", "relat")
    _, ten = assess_json(
        TESTDATA, "--qi", "urbrur,sex", "--sensitive", "relat", "--recursive-c", "10"
    )
    assert two["l_diversity"]["relat"]["c"] == 2.0 and ten["l_diversity"]["relat"]["c"] == 10.0
    assert ten["l_diversity"]["relat"]["recursive"] >= two["l_diversity"]["relat"]["recursive"]


def _write(tmp_path: Path, frame: pd.DataFrame) -> str:
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (["1", "", "3", "4"], "weight column 'w' has 1 missing value"),
        (["1", "two", "3", "4"], "weight column 'w' is not numeric: 1 value"),
        (["1", "0", "3", "4"], "weight column 'w' has 1 zero or negative weight"),
        (["1", "-2", "-3", "4"], "weight column 'w' has 2 zero or negative weight"),
        (["0.5", "0.5", "3", "4"], "sum to less than their number of records"),
    ],
)
def test_bad_weights_exit_2_with_one_line(tmp_path: Path, weights: list[str], message: str) -> None:
    path = _write(tmp_path, pd.DataFrame({"q": ["a", "a", "b", "c"], "w": weights}))
    line = one_line_error(*run("assess", path, "--qi", "q", "--weight", "w")[::2])
    assert message in line
    assert "two" not in line.replace("'w'", "")  # never a value of the data


def test_bad_columns_exit_2_with_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, pd.DataFrame({"q": ["a", "b"], "w": [1, 2], "s": ["x", "y"]}))
    cases = [
        (("--weight", "nope"), "unknown weight column 'nope'; available columns: 'q', 'w', 's'"),
        (("--sensitive", "q"), "sensitive column 'q' is also a quasi-identifier"),
        (("--sensitive", "s,zz"), "unknown sensitive column 'zz'"),
        (("--weight", "q"), "weight column 'q' is also a quasi-identifier"),
        (("--weight", "s", "--sensitive", "s"), "weight column 's' is also listed as sensitive"),
        (("--min-l", "2"), "--min-l gates l-diversity: give --sensitive"),
        (("--max-global-risk", "0.1"), "--max-global-risk gates the individual risk"),
        (("--sensitive", "s", "--recursive-c", "0"), "--recursive-c"),
        (("--suda-max-size", "2"), "--suda-max-size applies to --suda"),
        (("--sensitive", ""), "--sensitive"),
    ]
    for extra, message in cases:
        line = one_line_error(*run("assess", path, "--qi", "q", *extra)[::2])
        assert message in line, (extra, line)


def test_database_input_equals_file_input(tmp_path: Path) -> None:
    frame = pd.read_csv(TESTDATA)
    url = f"sqlite:///{tmp_path / 'testdata.db'}"
    engine = sa.create_engine(url)
    frame.to_sql("survey", engine, index=False)
    engine.dispose()
    flags = ("--qi", KEYS, "--weight", "sampling_weight", "--sensitive", "hhcivil", "--suda")
    _, from_file = assess_json(TESTDATA, *flags)
    _, from_db = assess_json(url, "--table", "survey", *flags)
    assert from_db == from_file


def test_parquet_input(tmp_path: Path) -> None:
    frame = pd.read_csv(TESTDATA)
    path = tmp_path / "testdata.parquet"
    frame.astype({"hhcivil": str}).to_parquet(path)
    flags = ("--qi", KEYS, "--weight", "sampling_weight", "--sensitive", "hhcivil")
    _, from_csv = assess_json(TESTDATA, *flags)
    _, from_parquet = assess_json(str(path), *flags)
    for key in ("individual_risk", "l_diversity", "journalist", "classes"):
        assert from_parquet[key] == from_csv[key]
