"""Quasi-identifier risk (distinction / separation), hand-computed and against ARX 3.9.2."""

from __future__ import annotations

import pandas as pd
import pytest

from reident_airflow.engine.attributes import attribute_risks, gate_subsets
from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.sources.frames import class_table_from_frame
from tests.conftest import load_reference, oracle_data, reference_files


def test_hand_computed() -> None:
    # a: x x y y ; b: 1 2 1 1  (n = 4, C(4,2) = 6 pairs)
    df = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": [1, 2, 1, 1]})
    got = {r.columns: r for r in attribute_risks(class_table_from_frame(df, ["a", "b"]))}
    # {a}: classes {2,2} -> distinction 2/4, same-value pairs 1+1 -> separation 1 - 2/6
    assert got[("a",)].distinction == 0.5 and got[("a",)].separation == pytest.approx(4 / 6)
    # {b}: classes {3,1} -> 2/4, pairs 3 -> 1 - 3/6
    assert got[("b",)].distinction == 0.5 and got[("b",)].separation == pytest.approx(0.5)
    # {a,b}: classes {1,1,2} -> 3/4, pairs 1 -> 1 - 1/6
    assert got[("a", "b")].distinction == 0.75
    assert got[("a", "b")].separation == pytest.approx(5 / 6)
    ranked = attribute_risks(class_table_from_frame(df, ["a", "b"]))
    assert ranked[0].columns == ("a", "b")  # most re-identifying first


def test_max_subset_size() -> None:
    df = pd.DataFrame({c: [1, 2, 3] for c in "abcd"})
    t = class_table_from_frame(df, list("abcd"))
    assert len(attribute_risks(t, max_size=4)) == 15  # the full lattice: 2^4 - 1
    assert len(attribute_risks(t, max_size=9)) == 15  # any size from m up
    got = attribute_risks(t, max_size=1)
    assert {r.columns for r in got} == {("a",), ("b",), ("c",), ("d",), ("a", "b", "c", "d")}
    with pytest.raises(InvalidInputError):
        attribute_risks(t, max_size=0)


def test_gate_subsets() -> None:
    """By default: each single column, each subset with one QI left out, the full set."""
    assert gate_subsets(1) == [(0,)]
    assert gate_subsets(2) == [(0,), (1,), (0, 1)]
    # three QIs: the leave-one-out subsets are the pairs, so the full lattice (2^3 - 1)
    assert gate_subsets(3) == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
    assert gate_subsets(4) == [
        *[(0,), (1,), (2,), (3,)],
        *[(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)],
        (0, 1, 2, 3),
    ]
    assert len(gate_subsets(12)) == 12 + 12 + 1


def test_default_ranking_hand_computed() -> None:
    # a: x x y y ; b: 1 2 1 1 ; c: p p p q ; d: 0 0 0 0  (n = 4, C(4,2) = 6 pairs)
    df = pd.DataFrame(
        {"a": ["x", "x", "y", "y"], "b": [1, 2, 1, 1], "c": list("pppq"), "d": [0] * 4}
    )
    got = attribute_risks(class_table_from_frame(df, list("abcd")))
    want = [
        # {a,b,c}: 4 distinct rows -> 4/4, no same-value pair -> 1; {a,b,c,d} the same
        (("a", "b", "c"), 1.0, 1.0),
        (("a", "b", "c", "d"), 1.0, 1.0),
        # {a,b,d}: x1 x2 y1 y1 -> classes {1,1,2}: 3/4, 1 pair -> 5/6; {a,c,d}: xp xp yp yq
        # and {b,c,d}: 1p 2p 1p 1q likewise {2,1,1}
        (("a", "b", "d"), 0.75, 5 / 6),
        (("a", "c", "d"), 0.75, 5 / 6),
        (("b", "c", "d"), 0.75, 5 / 6),
        (("a",), 0.5, 4 / 6),  # {2,2}: 2 pairs
        (("b",), 0.5, 0.5),  # {3,1}: 3 pairs
        (("c",), 0.5, 0.5),  # {3,1}: 3 pairs
        (("d",), 0.25, 0.0),  # {4}: all 6 pairs
    ]
    assert [r.columns for r in got] == [w[0] for w in want]  # ranked, and nothing else
    for r, (_, distinction, separation) in zip(got, want, strict=True):
        assert r.distinction == distinction
        assert r.separation == pytest.approx(separation, rel=1e-15)


@pytest.mark.parametrize(
    ("dense_limit", "key_limit", "radix"),
    [(1 << 16, (1 << 63) - 1, True), (1, (1 << 63) - 1, True), (1, 50, False)],
)
def test_default_ranking_equals_the_lattice(
    monkeypatch: pytest.MonkeyPatch, dense_limit: int, key_limit: int, radix: bool
) -> None:
    """Each subset ranked by default carries the numbers the full lattice gives it, bit for
    bit: with dense sums, with sorted keys (a digit dropped from the full table's key), and
    with keys built from the codes (compressed when the next column would overflow)."""
    import numpy as np

    from reident_airflow.engine import attributes

    rng = np.random.default_rng(5)
    n = 6_000
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 90, n),
            "b": rng.choice(["x", "y", "z"], n),
            "c": rng.integers(0, 400, n),
            "d": rng.integers(0, 7, n),
            "e": rng.integers(0, 25, n),
        }
    )
    t = class_table_from_frame(df, list("abcde"))
    lattice = {r.columns: r for r in attribute_risks(t, max_size=5)}
    monkeypatch.setattr(attributes, "_DENSE_LIMIT", dense_limit)
    monkeypatch.setattr(attributes, "_KEY_LIMIT", key_limit)
    if not radix:
        monkeypatch.setattr(type(t), "radix_keys", lambda self: None)
    default = attribute_risks(t)
    assert len(default) == 5 + 5 + 1
    for r in default:
        assert (r.distinction, r.separation) == (
            lattice[r.columns].distinction,
            lattice[r.columns].separation,
        ), r.columns


@pytest.mark.parametrize("ref", reference_files(), ids=lambda p: p.stem)
def test_every_subset_matches_arx(ref: object) -> None:
    """Distinction and separation of every QI subset, rel 1e-12 (ARX 3.9.2, oracle/reference)."""
    data = load_reference(ref)  # type: ignore[arg-type]
    frame = pd.read_csv(
        oracle_data(data["dataset"]), sep=data["sep"], dtype=str, keep_default_na=False
    )
    t = class_table_from_frame(frame, data["quasi_identifiers"])
    lattice = attribute_risks(t, max_size=len(data["quasi_identifiers"]))  # the full lattice
    got = {frozenset(r.columns): r for r in lattice}
    assert len(got) == len(data["attributes"])
    for item in data["attributes"]:
        r = got[frozenset(item["columns"])]
        assert r.distinction == pytest.approx(item["distinction"], rel=1e-12, abs=0)
        assert r.separation == pytest.approx(item["separation"], rel=1e-12, abs=0)


@pytest.mark.parametrize("dense_limit", [1 << 22, 1])  # bincount path, and the sort path
def test_top_down_equals_bottom_up(monkeypatch: pytest.MonkeyPatch, dense_limit: int) -> None:
    """Subsets merged from supersets give what regrouping every subset from scratch gives."""
    import numpy as np

    from reident_airflow.engine import attributes

    rng = np.random.default_rng(3)
    n = 5_000
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 90, n),
            "b": rng.choice(["x", "y", "z"], n),
            "c": rng.integers(0, 400, n),
            "d": rng.integers(0, 7, n),
        }
    )
    t = class_table_from_frame(df, list("abcd"))
    monkeypatch.setattr(attributes, "_DENSE_LIMIT", dense_limit)
    top_down = {r.columns: r for r in attribute_risks(t, max_size=4)}  # every subset: top-down
    bottom_up = {r.columns: r for r in attribute_risks(t, max_size=3)}  # walks up from {}
    for cols, r in bottom_up.items():
        assert top_down[cols].distinction == r.distinction, cols
        assert top_down[cols].separation == pytest.approx(r.separation, rel=1e-15), cols


def test_dense_cube_with_counts_beyond_int32() -> None:
    """More than 2^31 records: the dense counts are int64 and the pair sums exact integers.

    Hand-computed: classes (a, b) = (0, 0): 2^31, (0, 1): 3, (1, 1): 1; n = 2^31 + 4.
    Subset {a}: F = 2^31 + 3 and 1; subset {b}: F = 2^31 and 4.
    """
    import numpy as np

    from reident_airflow.engine.classes import ClassTable

    big = 1 << 31
    t = ClassTable(
        quasi_identifiers=("a", "b"),
        sizes=np.array([big, 3, 1], dtype=np.int64),
        codes=np.array([[0, 0], [0, 1], [1, 1]], dtype=np.int64),
        cardinalities=(2, 2),
    )
    n = big + 4
    pairs = n * (n - 1) // 2

    def sep(*sizes: int) -> float:
        return 1.0 - sum(f * (f - 1) // 2 for f in sizes) / pairs

    got = {r.columns: r for r in attribute_risks(t)}
    assert got[("a", "b")].separation == sep(big, 3, 1)
    assert got[("a",)].separation == sep(big + 3, 1)
    assert got[("b",)].separation == sep(big, 4)
    assert got[("a",)].distinction == 2 / n and got[("b",)].distinction == 2 / n
