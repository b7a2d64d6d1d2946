"""The metrics: DataFrames read by DuckDB under docs/reading.md, values handed over in memory.

Each metric value is the engine's own object (numpy arrays of codes and counts, never a value
of a record), of one type whatever the engine; the class-size histogram metric answers the
expectations that do not rank QIs, the class distributions metric the others.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from great_expectations.validator.metric_configuration import MetricConfiguration

from reident_airflow import cli
from reident_airflow.engine.aggregates import ClassAggregates
from reident_airflow.engine.classes import ClassSizes, ClassTable
from reident_airflow.engine.distributions import Distributions
from reident_airflow.gx import (
    ExpectTableReidentificationRiskToBeBelow,
    ExpectTableToBeKAnonymous,
    ExpectTableToBeLDiverse,
    metrics,
)
from reident_airflow.gx.metrics import (
    CLASS_DISTRIBUTIONS_METRIC,
    CLASS_TABLE_METRIC,
    HISTOGRAM_METRIC,
    SENSITIVE_COUNTS_METRIC,
    MetricError,
)
from reident_airflow.sources import frames
from tests.conftest import oracle_data
from tests.gx.conftest import QIS, read_adult, sql_batch

NAN = float("nan")

# Hand computation: classes on (sex, zip) are (M, 1): 3, (M, 2): 3, (F, 1): 4, so the
# histogram is sizes [3, 4] with counts [2, 1] (two classes of 3, one of 4).
SMALL = pd.DataFrame(
    {
        "sex": ["M"] * 6 + ["F"] * 4,
        "zip": ["1", "1", "1", "2", "2", "2", "1", "1", "1", "1"],
        "diagnosis": list("abcabcabca"),
    }
)


def metric(context: Any, batch: Any, name: str, **value_kwargs: Any) -> Any:
    """The value of one metric on a batch, as GE computes it for an expectation."""
    validator = context.get_validator(batch_request=batch.batch_request)
    return validator.get_metric(
        MetricConfiguration(name, metric_domain_kwargs={}, metric_value_kwargs=value_kwargs)
    )


def histogram(value: ClassSizes | ClassTable) -> tuple[list[int], list[int]]:
    sizes, counts = value.histogram()
    return sizes.tolist(), counts.tolist()


def k_anonymous(qis: list[str], k: int, **kwargs: Any) -> ExpectTableToBeKAnonymous:
    return ExpectTableToBeKAnonymous(quasi_identifiers=qis, k=k, **kwargs)


# --------------------------------------------------------------------- the reading contract
def test_float_nan_is_a_value_and_minus_zero_equals_zero(context: Any, pandas_batch: Any) -> None:
    # docs/reading.md: -0.0 equals 0.0; every NaN equals every other NaN and is a value, not a
    # missing one. [0.0, -0.0, nan, nan] -> {0.0: 2, NaN: 2}: 2 classes of 2.
    batch = pandas_batch(pd.DataFrame({"x": [0.0, -0.0, NAN, NAN]}))
    assert histogram(metric(context, batch, HISTOGRAM_METRIC, quasi_identifiers=["x"])) == (
        [2],
        [2],
    )
    table = metric(context, batch, CLASS_TABLE_METRIC, quasi_identifiers=["x"])
    assert table.sizes.tolist() == [2, 2]
    assert batch.validate(k_anonymous(["x"], 2, rank_attributes=False)).success
    assert not batch.validate(k_anonymous(["x"], 3, rank_attributes=False)).success


def test_nan_beside_text_is_missing(context: Any, pandas_batch: Any) -> None:
    # In a column of text, None and NaN are both pandas' missing marker: one missing value.
    # ['a', None, nan, 'a'] -> {'a': 2, missing: 2}: 2 classes of 2.
    column = pd.Series(["a", None, NAN, "a"], dtype=object)
    batch = pandas_batch(pd.DataFrame({"x": column}))
    assert histogram(metric(context, batch, HISTOGRAM_METRIC, quasi_identifiers=["x"])) == (
        [2],
        [2],
    )
    table = metric(context, batch, CLASS_TABLE_METRIC, quasi_identifiers=["x"])
    assert table.sizes.tolist() == [2, 2]


def test_nullable_float_keeps_nan_and_missing_apart(context: Any, pandas_batch: Any) -> None:
    # A numeric column: NaN is a value, pd.NA is missing. [NaN, NA, 0.0, NA] -> {NaN: 1,
    # missing: 2, 0.0: 1}: two classes of 1, one of 2.
    column = pd.arrays.FloatingArray(
        np.array([NAN, 0.0, 0.0, 0.0]), np.array([False, True, False, True])
    )
    batch = pandas_batch(pd.DataFrame({"x": column}))
    assert histogram(metric(context, batch, HISTOGRAM_METRIC, quasi_identifiers=["x"])) == (
        [1, 2],
        [2, 1],
    )


MIXED = pd.DataFrame(
    {
        "sex": ["M", "M", "F", "F"],
        "code": pd.Series([1, "1", 1, "1"], dtype=object),  # a number and a text
        "diagnosis": ["a", "b", "a", "b"],
    }
)
MIXED_MESSAGE = (
    "the DataFrame: column 'code' holds values of different kinds (number, text): they cannot "
    "be compared by one rule; convert the column to one type first"
)


@pytest.mark.parametrize(
    "expectation",
    [
        k_anonymous(["sex", "code"], 2, rank_attributes=False),  # the histogram metric
        k_anonymous(["sex", "code"], 2),  # the class distributions metric
        ExpectTableReidentificationRiskToBeBelow(quasi_identifiers=["sex", "code"], max_value=1),
        ExpectTableToBeLDiverse(quasi_identifiers=["sex"], sensitive=["code"], min_l=1),
    ],
    ids=["histogram", "class_distributions", "risk", "sensitive"],
)
def test_a_column_of_mixed_kinds_fails_with_the_reader_message(
    pandas_batch: Any, expectation: Any
) -> None:
    result = pandas_batch(MIXED).validate(expectation)
    assert result.success is False
    info = result.exception_info
    assert info["raised_exception"] is True
    assert info["exception_message"] == MIXED_MESSAGE
    assert info["exception_traceback"] == f"InvalidInputError: {MIXED_MESSAGE}"
    assert result.result["observed_value"] is None


def test_a_column_the_metric_does_not_read_is_not_read(pandas_batch: Any) -> None:
    # 'code' (mixed kinds) is neither a QI nor sensitive: the reader never sees it. Classes
    # on sex: M: 2, F: 2 -> k = 2; diagnosis in each class: a, b -> distinct l = 2.
    batch = pandas_batch(MIXED)
    for expectation in (
        k_anonymous(["sex"], 2, rank_attributes=False),
        k_anonymous(["sex"], 2),
        ExpectTableToBeLDiverse(quasi_identifiers=["sex"], sensitive=["diagnosis"], min_l=2),
    ):
        result = batch.validate(expectation)
        assert result.success, result.exception_info


def test_names_are_resolved_as_the_reader_resolves_them(pandas_batch: Any) -> None:
    # a column named " age" is selected as "age" when no column is named "age" exactly;
    # an unknown name lists every column of the batch, not only those read
    frame = pd.DataFrame({" age": [30, 30, 40, 40], "sex": ["M", "M", "F", "F"]})
    batch = pandas_batch(frame)
    found = batch.validate(k_anonymous(["age", "sex"], 2, rank_attributes=False))
    assert found.success, found.exception_info
    assert found.result["observed_value"] == 2
    assert found.result["details"]["assessment"]["quasi_identifiers"] == [" age", "sex"]
    unknown = batch.validate(k_anonymous(["sex", "zip"], 2))
    assert unknown.exception_info["exception_message"].startswith(
        "unknown quasi-identifier 'zip'; available columns: ' age', 'sex'"
    )


# ----------------------------------------------------------------------- the histogram metric
def test_the_histogram_is_the_class_tables_histogram(
    context: Any, pandas_batch: Any, sqlite_url: str, adult: pd.DataFrame
) -> None:
    small = pandas_batch(SMALL)
    hand = metric(context, small, HISTOGRAM_METRIC, quasi_identifiers=["sex", "zip"])
    assert isinstance(hand, ClassSizes)
    assert histogram(hand) == ([3, 4], [2, 1])  # hand computation above
    assert hand.quasi_identifiers == ("sex", "zip") and hand.excluded_records == 0
    table = metric(context, small, CLASS_TABLE_METRIC, quasi_identifiers=["sex", "zip"])
    assert histogram(table) == ([3, 4], [2, 1])

    batches = {"pandas": pandas_batch(adult), "sqlite": sql_batch(context, sqlite_url, "adult")}
    seen = {}
    for engine, batch in batches.items():
        sizes = metric(context, batch, HISTOGRAM_METRIC, quasi_identifiers=QIS)
        table = metric(context, batch, CLASS_TABLE_METRIC, quasi_identifiers=QIS)
        assert histogram(sizes) == histogram(table), engine
        assert sizes.records == table.records == len(adult)
        seen[engine] = histogram(sizes)
    assert seen["pandas"] == seen["sqlite"]


def test_suppressed_records_are_excluded_from_the_histogram(
    context: Any, pandas_batch: Any
) -> None:
    # ('*', '*') is fully suppressed (ARX): its 2 records are excluded; ('*', '1') is not.
    # Classes left: (M, 1): 2, (*, 1): 1 -> sizes [1, 2], counts [1, 1].
    frame = pd.DataFrame({"sex": ["M", "M", "*", "*", "*"], "zip": ["1", "1", "1", "*", "*"]})
    batch = pandas_batch(frame)
    sizes = metric(context, batch, HISTOGRAM_METRIC, quasi_identifiers=["sex", "zip"])
    assert histogram(sizes) == ([1, 2], [1, 1])
    assert sizes.excluded_records == 2
    table = metric(context, batch, CLASS_TABLE_METRIC, quasi_identifiers=["sex", "zip"])
    assert table.excluded_records == 2


# ---------------------------------------------------------------------------- metric values
def test_metric_values_are_arrays_of_codes_and_counts(context: Any, pandas_batch: Any) -> None:
    batch = pandas_batch(SMALL)
    table = metric(context, batch, CLASS_TABLE_METRIC, quasi_identifiers=["sex", "zip"])
    assert isinstance(table, ClassTable)
    assert table.dictionaries is None  # the values the codes stand for are dropped
    assert isinstance(table.sizes, np.ndarray) and table.sizes.dtype == np.int64
    assert isinstance(table.codes, np.ndarray) and table.codes.dtype == np.int64
    assert table.codes.shape == (3, 2) and table.cardinalities == (2, 2)
    # the classes (M, 1), (M, 2), (F, 1) in some order: sizes 3, 3, 4
    assert sorted(table.sizes.tolist()) == [3, 3, 4]

    counted = metric(
        context,
        batch,
        SENSITIVE_COUNTS_METRIC,
        quasi_identifiers=["sex", "zip"],
        sensitive_columns=["diagnosis"],
    )
    assert isinstance(counted, ClassAggregates)
    assert counted.table.dictionaries is None
    diagnosis = counted.sensitive["diagnosis"]
    assert isinstance(diagnosis.counts, np.ndarray)
    # 3 values in each class: (M, 1) a b c, (M, 2) a b c, (F, 1) a b c a -> 9 pairs, 10 records
    assert diagnosis.counts.shape == (9,) and int(diagnosis.counts.sum()) == 10

    error = metric(context, batch, HISTOGRAM_METRIC, quasi_identifiers=["nope"])
    assert isinstance(error, MetricError)
    assert error.message.startswith("unknown quasi-identifier 'nope'")


def test_ge_hands_the_metric_value_to_the_expectation_as_it_is(
    pandas_batch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GE 1.x keeps metric values in memory: the object the reader returned is the one the
    expectation evaluates (not a copy, not a serialised form)."""
    returned: list[Any] = []
    seen: list[Any] = []
    read = frames.histogram_from_frame
    evaluate = ExpectTableToBeKAnonymous._evaluate

    def spy_read(frame: Any, qis: Any) -> Any:
        returned.append(read(frame, qis))
        return returned[-1]

    def spy_evaluate(self: Any, counted: Any) -> Any:
        seen.append(counted)
        return evaluate(self, counted)

    monkeypatch.setattr(metrics, "histogram_from_frame", spy_read)
    monkeypatch.setattr(ExpectTableToBeKAnonymous, "_evaluate", spy_evaluate)
    result = pandas_batch(SMALL).validate(k_anonymous(["sex", "zip"], 3, rank_attributes=False))
    assert result.success
    assert len(returned) == len(seen) == 1
    assert seen[0] is returned[0]


# ------------------------------------------------------------------------- rank_attributes
def test_without_ranking_only_the_histogram_is_counted(
    pandas_batch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_class_table(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the class table was computed")

    monkeypatch.setattr(metrics, "class_table_from_frame", no_class_table)
    batch = pandas_batch(SMALL)
    for expectation in (
        k_anonymous(["sex", "zip"], 3, rank_attributes=False),
        ExpectTableReidentificationRiskToBeBelow(
            quasi_identifiers=["sex", "zip"], max_value=0.4, rank_attributes=False
        ),
    ):
        result = batch.validate(expectation)
        assert result.success, result.exception_info
        document = result.result["details"]["assessment"]
        assert document["attributes"] == []
        assert document["k"] == 3  # hand computation above
        assert document["prosecutor"]["highest_risk"] == pytest.approx(1 / 3)


NO_RANKING: list[tuple[Any, list[str]]] = [
    (k_anonymous(QIS, 5, rank_attributes=False), ["--min-k", "5"]),
    (
        ExpectTableReidentificationRiskToBeBelow(
            quasi_identifiers=QIS,
            measure="uniqueness.population.dankar.fraction",
            max_value=1e-7,
            region="usa",
            rank_attributes=False,
        ),
        ["--region", "usa"],
    ),
]


@pytest.mark.parametrize(("expectation", "flags"), NO_RANKING, ids=["k", "dankar"])
def test_without_ranking_every_engine_equals_reident_assess_no_ranking(
    expectation: Any,
    flags: list[str],
    adult: pd.DataFrame,
    pandas_batch: Any,
    context: Any,
    sqlite_url: str,
    tmp_path: Path,
) -> None:
    out = tmp_path / "assess.json"
    args = ["assess", str(oracle_data("adult.csv")), "--sep", ";", "--qi", ",".join(QIS)]
    assert cli.main([*args, *flags, "--no-ranking", "--json", str(out)]) in (0, 1)
    expected = json.loads(out.read_text(encoding="utf-8"))
    for key in ("input", "advice"):  # about the command line's run (test_engines.cli_document)
        expected.pop(key, None)
    assert expected["attributes"] == []
    for batch in (pandas_batch(adult), sql_batch(context, sqlite_url, "adult")):
        result = batch.validate(expectation)
        assert result.result["details"]["assessment"] == expected
        assert result.success is False  # raw Adult fails both gates


def test_l_diversity_without_ranking(pandas_batch: Any) -> None:
    # SMALL: each class holds a, b, c -> distinct l = 3 (test_l_diversity's hand computation)
    result = pandas_batch(SMALL).validate(
        ExpectTableToBeLDiverse(
            quasi_identifiers=["sex", "zip"],
            sensitive=["diagnosis"],
            min_l=3,
            rank_attributes=False,
        )
    )
    assert result.success, result.exception_info
    document = result.result["details"]["assessment"]
    assert document["attributes"] == []
    assert document["l_diversity"]["diagnosis"]["distinct"] == 3
    assert math.isclose(result.result["observed_value"], 3)


def test_class_distributions_on_pandas_and_sqlite(
    context: Any, pandas_batch: Any, sqlite_url: str
) -> None:
    """One type on both engines: :class:`Distributions`. SMALL (hand computation above):
    histogram sizes [3, 4], counts [2, 1]; ranked subsets (sex) -> classes of 6 and 4 records,
    (zip) -> 7 and 3; diagnosis profiles (3, [1, 1, 1]) twice and (4, [1, 1, 2]) once. On
    Adult the histogram is ARX 3.9.2's (tests/data/arx/arx_C1.json: 528 classes, 62 of size
    1), on the DataFrame and in SQLite."""
    counted = metric(
        context,
        pandas_batch(SMALL),
        CLASS_DISTRIBUTIONS_METRIC,
        quasi_identifiers=["sex", "zip"],
        sensitive_columns=["diagnosis"],
    )
    assert isinstance(counted, Distributions)
    assert histogram(counted.histogram) == ([3, 4], [2, 1])
    assert counted.subsets is not None
    hists = {c: (s.tolist(), n.tolist()) for c, (s, n) in counted.subsets.histograms.items()}
    assert hists == {(0,): ([4, 6], [1, 1]), (1,): ([3, 7], [1, 1])}
    profiles = counted.profiles["diagnosis"]
    assert (profiles.sizes.tolist(), profiles.classes.tolist()) in (
        ([3, 4], [2, 1]),
        ([4, 3], [1, 2]),
    )
    assert sorted(profiles.counts.tolist()) == [1, 1, 1, 1, 1, 2]
    unranked = metric(
        context,
        pandas_batch(SMALL),
        CLASS_DISTRIBUTIONS_METRIC,
        quasi_identifiers=["sex", "zip"],
        rank_attributes=False,
    )
    assert unranked.subsets is None and not unranked.profiles
    for batch in (pandas_batch(read_adult()), sql_batch(context, sqlite_url, "adult")):
        adult = metric(context, batch, CLASS_DISTRIBUTIONS_METRIC, quasi_identifiers=QIS)
        assert isinstance(adult, Distributions)
        assert (adult.histogram.classes, int(adult.histogram.counts[0])) == (528, 62)
        assert adult.subsets is not None and len(adult.subsets.histograms) == 6
    error = metric(context, batch, CLASS_DISTRIBUTIONS_METRIC, quasi_identifiers=["nope"])
    assert isinstance(error, MetricError)


def test_the_expectations_read_distributions_built_by_the_engine(
    pandas_batch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On pandas the ranked and l-diversity expectations read the class distributions metric,
    which the engine's ``distributions_of`` builds from the class table."""
    built: list[Any] = []
    build = metrics.distributions_of

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append(build(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(metrics, "distributions_of", spy)
    batch = pandas_batch(SMALL)
    assert batch.validate(k_anonymous(["sex", "zip"], 3)).success
    assert len(built) == 1 and built[0].subsets is not None
    diverse = ExpectTableToBeLDiverse(
        quasi_identifiers=["sex", "zip"], sensitive=["diagnosis"], min_l=3
    )
    assert batch.validate(diverse).success
    assert len(built) == 2 and list(built[1].profiles) == ["diagnosis"]


def test_one_type_per_metric_whatever_the_engine() -> None:
    """The metrics of one row per class are not offered on Spark; the others are on all."""
    from great_expectations.expectations import registry

    def engines(name: str) -> set[str]:
        return set(registry._registered_metrics[name]["providers"])

    both = {"PandasExecutionEngine", "SqlAlchemyExecutionEngine"}
    for name in (CLASS_TABLE_METRIC, SENSITIVE_COUNTS_METRIC):
        assert both <= engines(name) and "SparkDFExecutionEngine" not in engines(name)
    for name in (CLASS_DISTRIBUTIONS_METRIC, HISTOGRAM_METRIC):
        assert {*both, "SparkDFExecutionEngine"} <= engines(name)


def test_the_histogram_metric_is_registered_for_both_engines() -> None:
    from great_expectations.expectations import registry

    providers = registry._registered_metrics[HISTOGRAM_METRIC]["providers"]
    # GE adds the SQLAlchemy engine's subclasses (SQLite ...) once a batch has used them
    assert {"PandasExecutionEngine", "SqlAlchemyExecutionEngine"} <= set(providers)
