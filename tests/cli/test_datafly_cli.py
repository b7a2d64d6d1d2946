"""``reident datafly``: ARX's Adult with ARX's hierarchies, exit codes, bad input, atomic output.

Reference data: ``tests/data/adult.csv`` and ``tests/data/hierarchies/adult_hierarchy_*.csv``
(UCI Adult and its hierarchies as shipped with ARX 3.9.2). Correctness of the algorithm itself
is tested in ``tests/engine/test_datafly*.py``; here the command is checked end to end: every
output class has at least k records, at most the limit were suppressed, non-QI columns pass
untouched.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from reident_airflow.cli import main
from tests.conftest import oracle_data

QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]


def hierarchy_args(qis: list[str]) -> list[str]:
    args: list[str] = []
    for q in qis:
        args += ["--hierarchy", f"{q}={oracle_data(f'adult_hierarchy_{q}.csv')}"]
    return args


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["datafly", *args], out=out, err=err)
    captured = capsys.readouterr()  # progress (and the infeasible summary) go to sys.stderr
    return code, out.getvalue(), err.getvalue() + captured.err


def adult_args(output: Path, *extra: str, qis: list[str] = QIS) -> list[str]:
    return [
        str(oracle_data("adult.csv")),
        "--sep",
        ";",
        "--qi",
        ",".join(qis),
        *hierarchy_args(qis),
        "--output",
        str(output),
        *extra,
    ]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_release(
    original: pd.DataFrame, released: pd.DataFrame, report: dict[str, Any], qis: list[str]
) -> None:
    k = report["k"]
    sizes = released.groupby(qis, dropna=False).size()
    assert sizes.min() >= k
    assert report["achieved_k"] == sizes.min()
    assert report["suppressed_records"] <= report["suppression_limit"]
    assert len(released) == len(original) - report["suppressed_records"]
    assert list(released.columns) == list(original.columns)


@pytest.mark.parametrize(
    ("k", "limit", "expected_limit"), [(5, None, 5), (10, "0.01", 301), (3, "2%", 603)]
)
def test_adult_with_arx_hierarchies(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    k: int,
    limit: str | None,
    expected_limit: int,
) -> None:
    source = oracle_data("adult.csv")
    before = digest(source)
    output = tmp_path / "anon.csv"
    report_path = tmp_path / "report.json"
    extra = ["--k", str(k), "--json", str(report_path)]
    if limit is not None:
        extra += ["--suppression-limit", limit]
    code, out, err = run(adult_args(output, *extra, "--sep", ";"), capsys)
    assert code == 0, err
    report = json.loads(report_path.read_text())
    assert report["schema"] == "reident.datafly/v1" and report["passed"] is True
    assert report["records"] == 30162 and report["suppression_limit"] == expected_limit
    assert set(report["levels"]) == set(QIS)
    assert report["output"] == {
        "path": str(output),
        "format": "csv",
        "records": len(pd.read_csv(output, sep=";", dtype=str, keep_default_na=False)),
    }
    original = pd.read_csv(source, sep=";", dtype=str, keep_default_na=False)
    released = pd.read_csv(output, sep=";", dtype=str, keep_default_na=False)
    check_release(original, released, report, QIS)
    # the steps: one level at a time, below-k never counted above the start
    assert all(s["level"] >= 1 for s in report["steps"])
    assert report["steps"][-1]["below_k"] <= report["suppression_limit"]
    # salary-class (not a QI) passes untouched: same values, same order, for the kept rows
    assert released["salary-class"].value_counts().to_dict().keys() <= {"<=50K", ">50K"}
    assert digest(source) == before  # the input is never modified
    assert "reached" in out and str(output) in out
    steps = [line for line in err.splitlines() if "step" in line]
    assert len(steps) == len(report["steps"]) + 1  # step 0, then one line per step


def test_non_qi_columns_pass_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str, keep_default_na=False)
    frame.insert(0, "record_id", [f"r{i:05d}" for i in range(len(frame))])
    source = tmp_path / "adult.parquet"
    frame.to_parquet(source, index=False)
    output = tmp_path / "anon.parquet"
    qis = ["sex", "age", "race"]
    code, _, err = run(
        [str(source), "--qi", ",".join(qis), *hierarchy_args(qis), "--k", "5",
         "--suppression-limit", "0.01", "--output", str(output), "--quiet"],
        capsys,
    )  # fmt: skip
    assert code == 0 and err == ""  # --quiet: no progress
    released = pd.read_parquet(output)
    kept = frame.set_index("record_id").loc[released["record_id"]]
    for column in ["marital-status", "education", "salary-class"]:
        assert released[column].tolist() == kept[column].tolist()
    assert (released["age"] != kept["age"].to_numpy()).all()  # age generalized to 5-year bands
    assert released["sex"].tolist() == kept["sex"].tolist()  # sex stayed at level 0


def test_json_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(adult_args(tmp_path / "a.csv", "--k", "2", "--json", "-"), capsys)
    assert code == 0
    assert json.loads(out)["k"] == 2


def test_infeasible_is_exit_1_with_best_attempt_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # age without any generalization: rare ages stay unique, and no record may be suppressed
    flat_age = tmp_path / "age.csv"
    ages = pd.read_csv(oracle_data("adult.csv"), sep=";", dtype=str)["age"].unique()
    flat_age.write_text("".join(f"{a}\n" for a in ages), encoding="utf-8")
    output = tmp_path / "anon.csv"
    output.write_text("previous release\n", encoding="utf-8")
    report_path = tmp_path / "report.json"
    args = [
        str(oracle_data("adult.csv")), "--sep", ";", "--qi", "sex,age,race",
        "--hierarchy", f"sex={oracle_data('adult_hierarchy_sex.csv')}",
        "--hierarchy", f"age={flat_age}",
        "--hierarchy", f"race={oracle_data('adult_hierarchy_race.csv')}",
        "--k", "5", "--suppression-limit", "0", "--output", str(output),
        "--json", str(report_path),
    ]  # fmt: skip
    code, _, err = run(args, capsys)
    assert code == 1
    assert "cannot reach k=5 within the suppression limit of 0 records" in err
    assert "nothing was written" in err
    assert output.read_text() == "previous release\n"
    report = json.loads(report_path.read_text())
    assert report["passed"] is False and report["achieved_k"] is None
    assert report["best_attempt"]["below_k"] == report["below_k"] == 7
    assert report["levels"] == {"sex": 1, "age": 0, "race": 1}


# --- bad input: exit 2, a message naming columns and counts, never a value -----------------------


def _bad_hierarchies(tmp_path: Path) -> dict[str, Path]:
    uncovered = tmp_path / "race_short.csv"
    rows = oracle_data("adult_hierarchy_race.csv").read_text(encoding="utf-8").splitlines()
    kept = [r for r in rows if not r.startswith(("Other", "Amer-Indian-Eskimo"))]
    uncovered.write_text("\n".join(kept) + "\n", encoding="utf-8")
    ragged = tmp_path / "race_ragged.csv"
    ragged.write_text("\n".join([*rows[:2], rows[2] + ";extra", *rows[3:]]) + "\n")
    return {"uncovered": uncovered, "ragged": ragged}


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("uncovered", "hierarchy of column 'race' does not cover 2 distinct values (517 records)"),
        ("ragged", "line 3 has 3 fields, expected 2"),
        ("k0", "k must be at least 1, got 0"),
        ("k_big", "k = 30163 is larger than the number of records (30162)"),
        ("unknown_qi", "zip"),
        ("no_hierarchy", "no hierarchy given for quasi-identifier 'race'"),
        ("stray_hierarchy", "'education', which is not among the quasi-identifiers"),
        ("output_is_input", "is the input file"),
        ("bad_extension", "name the file *.csv or *.parquet"),
        ("bad_limit", "fraction of the records must be in [0, 1)"),
        ("bad_limit_text", "must be a number of records"),
    ],
)
def test_bad_input_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, message: str
) -> None:
    bad = _bad_hierarchies(tmp_path)
    source = tmp_path / "adult.csv"
    source.write_bytes(oracle_data("adult.csv").read_bytes())
    qis = ["sex", "age", "race"]
    hier = {q: str(oracle_data(f"adult_hierarchy_{q}.csv")) for q in qis}
    output = tmp_path / "out.csv"
    k = "5"
    extra: list[str] = []
    if case in bad:
        hier["race"] = str(bad[case])
    elif case == "k0":
        k = "0"
    elif case == "k_big":
        k = "30163"
    elif case == "unknown_qi":
        qis = [*qis, "zip"]
    elif case == "no_hierarchy":
        del hier["race"]
    elif case == "stray_hierarchy":
        hier["education"] = str(oracle_data("adult_hierarchy_education.csv"))
    elif case == "output_is_input":
        output = tmp_path / "." / "adult.csv"
    elif case == "bad_extension":
        output = tmp_path / "out.xlsx"
    elif case == "bad_limit":
        extra = ["--suppression-limit", "1.5"]
    elif case == "bad_limit_text":
        extra = ["--suppression-limit", "many"]
    args = [str(source), "--sep", ";", "--qi", ",".join(qis), "--k", k, "--output", str(output)]
    for q, p in hier.items():
        args += ["--hierarchy", f"{q}={p}"]
    before = digest(source)
    code, _, err = run([*args, *extra], capsys)
    assert code == 2, err
    assert message in err
    assert "Traceback" not in err
    assert digest(source) == before
    assert not (tmp_path / "out.csv").exists()
    # never a value: not the uncovered races, not a QI value of any record
    for value in ("Amer-Indian-Eskimo", "Other", "Married-civ-spouse", "Bachelors"):
        assert value not in err
