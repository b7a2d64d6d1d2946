"""Property tests of Datafly over random small tables and random hierarchies.

Every generated case is checked against a plain row-by-row implementation of metrics.md §9
written here (dicts and Counters, no class table), and against the invariants of the output:
classes of at least k, suppression within the limit, non-QI columns and row order untouched,
determinism, and "infeasible exactly when, with every QI at its top level, more records than
the limit are in classes smaller than k" (for tree hierarchies, where generalizing never
makes things worse).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reident_airflow.engine.datafly import datafly
from reident_airflow.engine.datafly_search import DataflyStep
from reident_airflow.engine.errors import AnonymizationInfeasibleError
from reident_airflow.engine.hierarchies import Hierarchy

SETTINGS = settings(max_examples=100, deadline=None, database=None)


@dataclass
class Case:
    frame: pd.DataFrame
    qis: list[str]
    hierarchies: dict[str, Hierarchy]
    k: int
    limit: int | float | None
    tree: bool


@st.composite
def hierarchies_(draw: st.DrawFn, domain: list[str], tree: bool) -> Hierarchy:
    """A random hierarchy over ``domain``: a tree (each label one parent) or any mapping."""
    depth = draw(st.integers(1, 3))
    rows = [[v] for v in domain]
    for level in range(1, depth):
        if tree:  # the parent of each label of the level below
            below = list(dict.fromkeys(r[-1] for r in rows))
            parent = {lab: draw(st.integers(0, max(len(below) - 1, 0))) for lab in below}
            for r in rows:
                r.append(f"L{level}_{parent[r[-1]]}")
        else:  # any function of the original value
            for r in rows:
                r.append(f"M{level}_{draw(st.integers(0, len(domain)))}")
    if draw(st.booleans()):  # often, as in ARX's files, a top level of one "*"
        for r in rows:
            r.append("*")
    return Hierarchy.from_rows(rows)


@st.composite
def cases(draw: st.DrawFn, tree: bool | None = None) -> Case:
    if tree is None:
        tree = draw(st.booleans())
    m = draw(st.integers(1, 3))
    n = draw(st.integers(1, 25))
    data: dict[str, Any] = {"rid": list(range(n))}
    hierarchies: dict[str, Hierarchy] = {}
    qis = [f"q{i}" for i in range(m)]
    for q in qis:
        d = draw(st.integers(1, 6))
        as_int = draw(st.booleans())  # an integer column is matched through its text
        domain = [str(j) if as_int else f"v{j}" for j in range(d)]
        picks = draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n))
        data[q] = picks if as_int else [domain[p] for p in picks]
        hierarchies[q] = draw(hierarchies_(domain, tree))
    data["payload"] = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n))
    frame = pd.DataFrame(data)
    frame = frame[["rid", *draw(st.permutations(qis)), "payload"]]
    frame.index = [1000 + 3 * i for i in range(n)]
    k = draw(st.one_of(st.integers(min(2, n), min(n, 5)), st.integers(1, n)))
    limit = draw(
        st.one_of(
            st.none(),
            st.integers(0, 2),
            st.integers(0, n + 2),
            st.floats(0.0, 0.2, allow_nan=False, allow_infinity=False),
            st.floats(0.0, 0.999, allow_nan=False, allow_infinity=False),
        )
    )
    return Case(frame, qis, hierarchies, k, limit, tree)


def effective_limit(case: Case) -> int:
    n = len(case.frame)
    if case.limit is None:
        return case.k
    if isinstance(case.limit, int):
        return case.limit
    return int(round(case.limit * n, 9) // 1)


def generalize(case: Case, levels: list[int]) -> list[tuple[str, ...]]:
    rows = case.frame[case.qis].astype(str).itertuples(index=False)
    return [
        tuple(
            case.hierarchies[q].mapping[v][lv]
            for q, v, lv in zip(case.qis, row, levels, strict=True)
        )
        for row in rows
    ]


def below_k(keys: list[tuple[str, ...]], k: int) -> tuple[int, Counter[tuple[str, ...]]]:
    counts = Counter(keys)
    return sum(c for c in counts.values() if c < k), counts


def reference(case: Case) -> tuple[list[int], list[DataflyStep], list[int]] | None:
    """metrics.md §9 row by row: (levels, steps, indices of the kept rows), None if infeasible."""
    limit = effective_limit(case)
    tops = [case.hierarchies[q].top for q in case.qis]
    levels = [0] * len(case.qis)
    steps: list[DataflyStep] = []
    while True:
        keys = generalize(case, levels)
        below, counts = below_k(keys, case.k)
        if steps:
            steps[-1] = DataflyStep(steps[-1].generalized, steps[-1].level, below)
        if below <= limit:
            kept = [
                idx
                for idx, key in zip(case.frame.index, keys, strict=True)
                if counts[key] >= case.k
            ]
            return levels, steps, kept
        open_ = [i for i in range(len(levels)) if levels[i] < tops[i]]
        if not open_:
            return None
        distinct = [len({key[i] for key in keys}) for i in range(len(levels))]
        chosen = open_[0]
        for i in open_:
            if distinct[i] > distinct[chosen]:
                chosen = i
        levels[chosen] += 1
        steps.append(DataflyStep(case.qis[chosen], levels[chosen], -1))


@SETTINGS
@given(cases())
def test_matches_the_row_by_row_reference(case: Case) -> None:
    expected = reference(case)
    if expected is None:
        with pytest.raises(AnonymizationInfeasibleError):
            datafly(case.frame, case.qis, case.hierarchies, case.k, case.limit)
        return
    levels, steps, kept = expected
    result = datafly(case.frame, case.qis, case.hierarchies, case.k, case.limit)
    assert [result.levels[q] for q in case.qis] == levels
    assert list(result.steps) == steps
    assert list(result.table.index) == kept
    assert result.suppressed_records == len(case.frame) - len(kept)


@SETTINGS
@given(cases())
def test_output_invariants_and_determinism(case: Case) -> None:
    try:
        result = datafly(case.frame, case.qis, case.hierarchies, case.k, case.limit)
    except AnonymizationInfeasibleError as err:
        with pytest.raises(AnonymizationInfeasibleError) as repeated:
            datafly(case.frame, case.qis, case.hierarchies, case.k, case.limit)
        assert repeated.value.best_attempt == err.best_attempt
        return
    table = result.table
    assert result.suppression_limit == effective_limit(case)
    assert result.suppressed_records <= result.suppression_limit
    assert len(table) == len(case.frame) - result.suppressed_records
    if len(table):
        sizes = table.groupby(case.qis, sort=False).size()
        assert int(sizes.min()) >= case.k
        assert result.achieved_k == int(sizes.min())
        n = len(case.frame)
        expected_dm = int((sizes**2).sum()) + result.suppressed_records * n
        assert result.information_loss.discernibility == expected_dm
    else:
        assert result.achieved_k is None
    # rows kept in order, non-QI columns untouched, QI columns the labels of their level
    kept = case.frame.loc[table.index]
    assert list(table.index) == [i for i in case.frame.index if i in set(table.index)]
    pd.testing.assert_frame_equal(table[["rid", "payload"]], kept[["rid", "payload"]])
    assert list(table.columns) == list(case.frame.columns)
    for q in case.qis:
        h, level = case.hierarchies[q], result.levels[q]
        assert list(table[q]) == [h.mapping[str(v)][level] for v in kept[q]]
    tops = [case.hierarchies[q].top for q in case.qis]
    ratios = [result.levels[q] / t if t else 0.0 for q, t in zip(case.qis, tops, strict=True)]
    assert result.information_loss.precision == pytest.approx(1 - sum(ratios) / len(ratios))
    # determinism
    again = datafly(case.frame.copy(), list(case.qis), case.hierarchies, case.k, case.limit)
    assert again.to_dict() == result.to_dict()
    pd.testing.assert_frame_equal(again.table, table)


@SETTINGS
@given(cases(tree=True))
def test_infeasible_exactly_when_the_top_levels_fail(case: Case) -> None:
    # With every QI at its top level, count the records in classes smaller than k.
    tops = [case.hierarchies[q].top for q in case.qis]
    below_at_top, _ = below_k(generalize(case, tops), case.k)
    infeasible = below_at_top > effective_limit(case)
    try:
        result = datafly(case.frame, case.qis, case.hierarchies, case.k, case.limit)
    except AnonymizationInfeasibleError as err:
        assert infeasible
        assert err.best_attempt.levels == dict(zip(case.qis, tops, strict=True))
        assert err.best_attempt.below_k == below_at_top
        return
    assert not infeasible
    assert result.suppressed_records <= result.suppression_limit
