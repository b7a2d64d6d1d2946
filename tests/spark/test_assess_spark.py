"""`assess_spark_frame` on Spark DataFrames equals `reident assess` on the same records.

The records are read from the reference CSV files by the project's own reader (the reading
contract: every field text) and handed to Spark as an Arrow table, on a classic session and
over Spark Connect; the JSON of the Spark assessment must equal the command line's JSON on the
CSV file, key for key and bit for bit (the ARX configurations of tests/data/arx, sdcMicro's
testdata with its sampling weights and sensitive columns).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError
from reident_airflow.engine.options import AssessmentOptions
from reident_airflow.sources.files import read_columns
from reident_airflow.sources.spark import (
    aggregates_from_spark,
    assess_spark_frame,
    histogram_from_spark,
)
from tests._sdcmicro import sdcmicro_data, sdcmicro_summary
from tests.cli._cli import assess_json
from tests.conftest import load_reference, oracle_data, reference_files

#: Per ARX configuration, the options of the comparison beside the QIs (one set each, so
#: that population models, gates, a bounded ranking and thresholds are all covered).
ARX_OPTIONS: dict[str, tuple[str, ...]] = {
    "arx_C1": ("--sampling-fraction", "0.1"),
    "arx_C2": ("--region", "usa", "--max-highest-risk", "0.5"),
    "arx_C4": ("--max-subset-size", "2", "--record-threshold", "0.05", "--min-k", "3"),
    "arx_C7": ("--population-size", "100000", "--max-records-at-risk", "0.01"),
}
_PYTHON = {
    "--sampling-fraction": ("sampling_fraction", float),
    "--region": ("region", str),
    "--max-highest-risk": ("max_highest_risk", float),
    "--max-subset-size": ("max_subset_size", int),
    "--record-threshold": ("record_threshold", float),
    "--min-k": ("min_k", int),
    "--population-size": ("population_size", int),
    "--max-records-at-risk": ("max_records_at_risk", float),
}
TESTDATA_WEIGHT = "sampling_weight"
TESTDATA_SENSITIVE = ("hhcivil", "age")


def spark_frame(session: Any, path: Any, columns: list[str], sep: str) -> Any:
    """The CSV file's records as a Spark DataFrame (read under the reading contract)."""
    return session.createDataFrame(read_columns(path, columns, sep=sep))


def options_of(qis: list[str], flags: tuple[str, ...]) -> AssessmentOptions:
    """The options the command-line flags describe (``--flag value`` pairs)."""
    mapping: dict[str, Any] = {"quasi_identifiers": ",".join(qis)}
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        name, _ = _PYTHON[flag]
        mapping[name] = value
    return AssessmentOptions.from_mapping(mapping)


@pytest.mark.parametrize("ref", reference_files(), ids=lambda p: p.stem)
def test_arx_configurations_equal_the_cli(session: Any, ref: Any) -> None:
    data = load_reference(ref)
    qis = list(data["quasi_identifiers"])
    flags = ARX_OPTIONS[ref.stem]
    path = oracle_data(data["dataset"])
    _, want = assess_json(str(path), "--sep", data["sep"], "--qi", ",".join(qis), *flags)
    df = spark_frame(session, path, qis, data["sep"])
    got = assess_spark_frame(df, options_of(qis, flags)).to_dict()
    assert got == want
    assert got["class_size_histogram"] == data["class_size_histogram"]  # and ARX's


def test_weights_and_sensitive_columns_equal_the_cli(session: Any) -> None:
    keys = list(sdcmicro_summary()["testdata"]["keyVars"])
    path = sdcmicro_data("testdata_data.csv")
    flags = ("--weight", TESTDATA_WEIGHT, "--sensitive", ",".join(TESTDATA_SENSITIVE))
    # the ranking (7 QIs: 127 subsets) is compared on the ARX configurations
    gate = ("--max-global-risk", "0.01", "--no-ranking")
    _, want = assess_json(str(path), "--qi", ",".join(keys), *flags, *gate)
    df = spark_frame(session, path, [*keys, TESTDATA_WEIGHT, *TESTDATA_SENSITIVE], ",")
    options = AssessmentOptions.from_mapping(
        {
            "quasi_identifiers": keys,
            "weight": TESTDATA_WEIGHT,
            "sensitive": list(TESTDATA_SENSITIVE),
            "max_global_risk": 0.01,
            "rank_attributes": False,
        }
    )
    got = assess_spark_frame(df, options).to_dict()
    assert got == want
    assert got["journalist"]["basis"] == "sampling_weights"


def test_per_class_measures_are_refused(spark: Any) -> None:
    df = spark.createDataFrame([("a", "x"), ("b", "y")], ["q", "s"])
    with pytest.raises(InvalidInputError, match=r"^suda: "):
        assess_spark_frame(df, AssessmentOptions(quasi_identifiers=("q",), suda=True))
    with pytest.raises(InvalidInputError, match=r"^population_table: "):
        assess_spark_frame(df, AssessmentOptions(quasi_identifiers=("q",), population_table="p"))


def test_bad_input_names_the_column(spark: Any) -> None:
    df = spark.createDataFrame([("a", 1.0, True), ("b", 2.0, False)], ["q", "w", "b"])
    with pytest.raises(InvalidInputError, match="'nope'"):
        histogram_from_spark(df, ["nope"])
    with pytest.raises(InvalidInputError, match="weight column 'b' is not numeric"):
        aggregates_from_spark(df, ["q"], weight="b")
    with pytest.raises(InvalidInputError, match=r"expected a pyspark\.sql\.DataFrame"):
        histogram_from_spark([("a", 1.0)], ["q"])
    with pytest.raises(EmptyDatasetError):
        histogram_from_spark(df.limit(0), ["q"])


def test_weights_are_checked_as_the_file_reader_checks_them(spark: Any) -> None:
    """One text weight that is no number, one missing: the error is the DataFrame reader's."""
    import pandas as pd

    from reident_airflow.sources.frames import aggregates_from_frame

    rows = [("a", "2"), ("a", "x"), ("b", None)]
    with pytest.raises(InvalidInputError) as on_spark:
        aggregates_from_spark(spark.createDataFrame(rows, "q string, w string"), ["q"], weight="w")
    with pytest.raises(InvalidInputError) as on_frame:
        aggregates_from_frame(pd.DataFrame(rows, columns=["q", "w"]), ["q"], weight="w")
    assert str(on_spark.value) == str(on_frame.value)


def test_pyspark_is_imported_only_when_used() -> None:
    code = (
        "import sys\n"
        "import reident_airflow.cli, reident_airflow.engine, reident_airflow.sources.spark\n"
        "import reident_airflow.engine.assessment\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'pyspark'], 'pyspark'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_spark_errors_name_their_kind_never_a_value(session: Any) -> None:
    """A variant column cannot be grouped (analysis error: bad input); a job that fails on a
    record (here ``raise_error`` quoting the value) is a SparkJobError without the value."""
    from reident_airflow.sources.spark_grouping import SparkJobError, functions

    df = session.createDataFrame([("secret-value",)], "q string")
    F = functions(df)
    mapped = df.select(F.parse_json(F.lit('{"a": 1}')).alias("m"))
    with pytest.raises(InvalidInputError, match="AnalysisException") as bad:
        histogram_from_spark(mapped, ["m"])
    failing = df.select(
        F.when(F.col("q") == "x", F.col("q"))
        .otherwise(F.raise_error(F.concat(F.lit("leak "), F.col("q"))))
        .alias("q")
    )
    with pytest.raises(SparkJobError) as job:
        histogram_from_spark(failing, ["q"])
    for caught in (bad, job):
        assert "secret-value" not in str(caught.value)
    assert job.value.deterministic is False


def test_the_python_api_counts_a_spark_frame_in_spark(session: Any) -> None:
    """``reident_airflow.api.assess`` on a Spark DataFrame (classic and Connect) opens the
    Spark source and reports ARX's histogram (tests/data/arx/arx_C1.json)."""
    from reident_airflow.api import assess, open_source
    from reident_airflow.sources.spark import SparkSource

    ref = next(p for p in reference_files() if p.stem == "arx_C1")
    data = load_reference(ref)
    qis = list(data["quasi_identifiers"])
    df = spark_frame(session, oracle_data(data["dataset"]), qis, data["sep"])
    assert isinstance(open_source(df), SparkSource)
    got = assess(df, {"quasi_identifiers": qis}).to_dict()
    assert got["class_size_histogram"] == [list(p) for p in data["class_size_histogram"]]
    assert got == assess_spark_frame(df, options_of(qis, ())).to_dict()
