"""The Python API (``reident_airflow.api``): a table in memory, assessed where it is.

Reference values are ARX 3.9.2's (``tests/data/arx/arx_C1.json``: Adult on sex, age, race);
the small cases are counted by hand in their comments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from reident_airflow.api import assess, open_source
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.options import AssessmentOptions, Thresholds
from reident_airflow.sources.frames import FrameSource
from tests.conftest import TEST_DATA, load_reference

pl = pytest.importorskip("polars")

ARX_C1 = load_reference(TEST_DATA / "arx" / "arx_C1.json")


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(TEST_DATA / "adult.csv", sep=";", dtype=str, keep_default_na=False)


def _frames(df: pd.DataFrame) -> dict[str, Any]:
    return {"pandas": df, "polars": pl.from_pandas(df), "arrow": pa.Table.from_pandas(df)}


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_each_kind_of_frame_gives_arx_numbers(adult: pd.DataFrame, kind: str) -> None:
    frame = _frames(adult)[kind]
    result = assess(frame, {"quasi_identifiers": ARX_C1["quasi_identifiers"]}).to_dict()
    assert result["records"] == ARX_C1["records"]
    assert result["classes"] == ARX_C1["classes"]
    assert result["class_size_histogram"] == [list(p) for p in ARX_C1["class_size_histogram"]]
    assert result["prosecutor"]["highest_risk"] == pytest.approx(ARX_C1["highest_risk"], rel=1e-12)
    assert result["prosecutor"]["average_risk"] == pytest.approx(ARX_C1["average_risk"], rel=1e-12)
    want = {tuple(a["columns"]): a for a in ARX_C1["attributes"]}
    for got in result["attributes"]:
        ref = want[tuple(got["columns"])]
        assert got["distinction"] == pytest.approx(ref["distinction"], rel=1e-12)
        assert got["separation"] == pytest.approx(ref["separation"], rel=1e-12)


def test_options_as_a_mapping_or_an_object_are_one(adult: pd.DataFrame) -> None:
    mapping = assess(adult, {"quasi_identifiers": "sex, age, race", "min_k": "5"})
    typed = assess(
        adult,
        AssessmentOptions(quasi_identifiers=("sex", "age", "race"), thresholds=Thresholds(min_k=5)),
    )
    assert mapping.to_dict() == typed.to_dict()
    # ARX: the smallest class holds one record (highest risk 1.0), so k = 1 < 5
    assert mapping.k == 1
    assert [b.metric for b in mapping.breaches] == ["k"]


def test_a_register_file_is_read_for_the_journalist(tmp_path: Path) -> None:
    # sample: a, a, b; register: a x3, b x2 -> the journalist's highest risk is 1 / 2
    sample = pd.DataFrame({"q": ["a", "a", "b"]})
    register = tmp_path / "register.csv"
    register.write_text("q\na\na\na\nb\nb\n", encoding="utf-8")
    result = assess(sample, {"quasi_identifiers": "q", "population_table": str(register)})
    assert result.to_dict()["journalist"]["highest_risk"] == 0.5


def test_weights_and_sensitive_columns_on_polars() -> None:
    # classes on q: a (s in {u, v}), b (s = u): l-diversity 1 (class b), k = 1
    frame = pl.DataFrame({"q": ["a", "a", "b"], "s": ["u", "v", "u"]})
    result = assess(frame, {"quasi_identifiers": "q", "sensitive": "s", "min_l": 2})
    assert result.k == 1
    assert [b.metric for b in result.breaches] == ["l_diversity.s.distinct"]


def test_a_frame_source_is_chosen_for_frames() -> None:
    with open_source(pl.DataFrame({"a": [1]})) as source:
        assert isinstance(source, FrameSource)
        assert source.fingerprint() is None


def test_an_unknown_object_is_refused_naming_its_type() -> None:
    with pytest.raises(InvalidInputError, match="got dict"):
        assess({"a": [1]}, {"quasi_identifiers": "a"})


def test_options_of_another_type_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="options: expected AssessmentOptions"):
        assess(pd.DataFrame({"a": [1]}), ["a"])  # type: ignore[arg-type]


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="unknown assessment option 'qis'"):
        assess(pd.DataFrame({"a": [1]}), {"qis": "a"})
