"""Per-class aggregates (weight sums, sensitive value counts) on every grouping path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from reident_airflow.engine import aggregates as agg_mod
from reident_airflow.engine.aggregates import (
    aggregate_arrow,
    aggregate_codes,
    aggregate_frame,
    aggregate_grouped,
    weights_from_values,
)
from reident_airflow.engine.classes import ClassTable, class_table_from_frame, encode_frame
from reident_airflow.engine.errors import EmptyDatasetError, InvalidInputError


def _frame(n: int, cards: list[int], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data: dict[str, object] = {
        f"q{i}": rng.integers(0, c, n) * 7 + 1000 for i, c in enumerate(cards)
    }
    data["w"] = rng.uniform(1.0, 50.0, n)
    data["s"] = rng.choice(["x", "y", "z", None], n)
    data["t"] = rng.integers(0, 4, n)
    return pd.DataFrame(data)


def _by_tuple(frame: pd.DataFrame, qis: list[str], **kwargs: object) -> pd.DataFrame:
    """The aggregates as a frame keyed by the QI values (order-free comparison)."""
    agg = aggregate_frame(frame, qis, **kwargs)  # type: ignore[arg-type]
    table = agg.table
    assert table.dictionaries is not None
    out = pd.DataFrame(
        {
            q: np.asarray(table.dictionaries[i])[table.codes[:, i]]
            for i, q in enumerate(table.quasi_identifiers)
        }
    )
    out["size"] = table.sizes
    if agg.weights is not None:
        out["sum"] = agg.weights.sums
    for name, vc in agg.sensitive.items():
        counts = np.bincount(vc.classes, weights=vc.counts**2, minlength=table.classes)
        out[f"{name}_sq"] = counts.astype(np.int64)  # sum of squared value counts per class
        out[f"{name}_n"] = np.bincount(vc.classes, minlength=table.classes)
    return out.sort_values(qis).reset_index(drop=True)


def _own_keys(table: ClassTable) -> np.ndarray:
    """The mixed-radix keys the table computes itself (none handed over)."""
    bare = ClassTable(
        quasi_identifiers=table.quasi_identifiers,
        sizes=table.sizes,
        codes=table.codes,
        cardinalities=table.cardinalities,
    )
    keys = bare.radix_keys()
    assert keys is not None
    return keys


def _expected(frame: pd.DataFrame, qis: list[str]) -> pd.DataFrame:
    g = frame.groupby(qis, dropna=False)
    out = g.size().rename("size").to_frame()
    out["sum"] = g["w"].sum()
    for name in ("s", "t"):
        vc = frame.fillna({name: "<na>"}).groupby([*qis, name], dropna=False).size()
        out[f"{name}_sq"] = (vc**2).groupby(level=list(range(len(qis)))).sum()
        out[f"{name}_n"] = vc.groupby(level=list(range(len(qis)))).size()
    return out.reset_index().sort_values(qis).reset_index(drop=True)


@pytest.mark.parametrize(
    ("n", "cards", "path"),
    [
        (5000, [10, 20], "bincount"),  # small key space
        (5000, [3000, 2000], "bincount"),  # small key space, pairs counted by a sort
        (20000, [3000, 2000], "bincount"),  # ... or by a partition (enough rows per block)
        (5000, [300, 300, 300], "sort"),  # packed 64-bit sort
        (3000, [5000, 5000, 5000], "hash"),  # key beyond 32 bits
    ],
)
@pytest.mark.parametrize("threaded", [False, True], ids=["inline", "threaded"])
@pytest.mark.parametrize("order", ["sort", "partition"])
def test_every_grouping_path_gives_the_same_aggregates(
    n: int,
    cards: list[int],
    path: str,
    threaded: bool,
    order: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if threaded:  # what large tables do: parts of the grouping on worker threads
        from reident_airflow.engine import _parallel

        monkeypatch.setattr(_parallel, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(agg_mod, "_PAIR_ORDER", order)  # whatever this machine would choose
    frame = _frame(n, cards)
    qis = [f"q{i}" for i in range(len(cards))]
    got = _by_tuple(frame, qis, weight="w", sensitive=["s", "t"])
    want = _expected(frame, qis)
    pd.testing.assert_frame_equal(got[want.columns], want, check_dtype=False, rtol=1e-12)
    # without weights (a sort of the class key instead of a permutation or a hash table)
    unweighted = _by_tuple(frame, qis, sensitive=["s", "t"])
    columns = [c for c in want.columns if c != "sum"]
    pd.testing.assert_frame_equal(unweighted[columns], want[columns], check_dtype=False)
    # the same classes as the plain class table
    plain = class_table_from_frame(frame, qis)
    assert sorted(plain.sizes.tolist()) == sorted(got["size"].tolist())
    # the class keys a grouping hands over to the table are those it would compute itself
    for kwargs in (
        {},
        {"weight": "w"},
        {"sensitive": ["s", "t"]},
        {"weight": "w", "sensitive": ["s"]},
    ):
        table = aggregate_frame(frame, qis, **kwargs).table  # type: ignore[arg-type]
        np.testing.assert_array_equal(table.radix_keys(), _own_keys(table))
    # row -> class mapping, with and without weights or sensitive columns
    agg = aggregate_frame(frame, qis, weight="w", return_inverse=True)
    assert agg.inverse is not None and agg.weights is not None
    np.testing.assert_allclose(
        np.bincount(agg.inverse, weights=frame["w"].to_numpy()), agg.weights.sums, rtol=1e-12
    )
    for kwargs in ({}, {"sensitive": ["s"]}):
        bare = aggregate_frame(frame, qis, return_inverse=True, **kwargs)  # type: ignore[arg-type]
        assert bare.inverse is not None
        np.testing.assert_array_equal(np.bincount(bare.inverse), bare.table.sizes)
        codes = encode_frame(frame, qis).codes
        for i, column in enumerate(codes):
            np.testing.assert_array_equal(bare.table.codes[bare.inverse, i], column)
    product = int(np.prod(encode_frame(frame, qis).cardinalities, dtype=np.float64))
    limit = max(agg_mod._BINCOUNT_LIMIT, 2 * n)
    taken = "bincount" if product <= limit else "sort" if product <= 1 << 32 else "hash"
    assert taken == path
    if n == 20000:  # the case meant for it does partition its pairs
        assert agg_mod._partitions(product, 4, n) == (order == "partition")


@pytest.mark.parametrize(
    ("space", "card", "n", "key_dtype", "code_dtype"),
    [
        (6_000_000, 40, 400_000, np.int64, np.uint8),  # the benchmark's shape, scaled down
        (6_000_000, 40, 400_000, np.uint32, np.int64),  # the unweighted grouping's key type
        (1 << 25, 1, 300_000, np.int64, np.int64),  # one value: 16 key bits per block
        (70_001, 4096, 300_000, np.int64, np.uint16),  # 12 value bits: 4 key bits per block
    ],
)
def test_pairs_put_in_order_by_a_partition_equal_those_of_a_sort(
    space: int,
    card: int,
    n: int,
    key_dtype: type,
    code_dtype: type,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(card)
    # skewed keys (some classes large, most small, many absent) and values
    key = (rng.zipf(1.2, n) * 7919 % space).astype(key_dtype)
    key[:3] = [0, space - 1, space - 1]  # both ends of the key space
    codes = (rng.zipf(1.5, n) % card).astype(code_dtype)
    results = []
    for order in ("sort", "partition"):
        monkeypatch.setattr(agg_mod, "_PAIR_ORDER", order)
        assert agg_mod._partitions(space, card, n) == (order == "partition")
        results.append(agg_mod._count_pairs(key, space, codes, card, classes=True))
    by_sort, by_partition = results
    for name in ("counts", "starts", "class_keys", "sizes"):
        np.testing.assert_array_equal(getattr(by_partition, name), getattr(by_sort, name))
    # and the sort is right: the pairs of a pandas group-by, in (class, value) order
    want = pd.DataFrame({"k": key.astype(np.int64), "v": codes}).value_counts(sort=False)
    want = want.sort_index()
    np.testing.assert_array_equal(by_sort.counts, want.to_numpy())
    assert by_sort.class_keys is not None
    np.testing.assert_array_equal(
        by_sort.class_keys, np.unique(want.index.get_level_values("k").to_numpy())
    )


def test_the_pair_order_is_chosen_by_the_measured_sort_speed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(agg_mod, "_PAIR_ORDER", None)
    for slow in (True, False):
        monkeypatch.setattr(agg_mod, "_SORT_SPEED", [slow])
        assert agg_mod._partitions(6_000_000, 40, 10_000_000) is slow
    # too many blocks for the rows, or value codes too wide: never partitioned
    monkeypatch.setattr(agg_mod, "_SORT_SPEED", [True])
    assert not agg_mod._partitions(6_000_000, 40, 50_000)
    assert not agg_mod._partitions(6_000_000, 1 << 13, 10_000_000)
    # the measurement itself: a boolean, taken once
    monkeypatch.setattr(agg_mod, "_SORT_SPEED", [])
    first = agg_mod._sort_is_slow()
    assert [first] == agg_mod._SORT_SPEED


def test_arrow_and_frame_agree_and_text_weights_are_parsed() -> None:
    frame = _frame(2000, [30, 40], seed=3)
    frame["w_text"] = frame["w"].map(repr)
    qis = ["q0", "q1"]
    a = aggregate_frame(frame, qis, weight="w", sensitive=["s"])
    b = aggregate_arrow(pa.Table.from_pandas(frame), qis, weight="w_text", sensitive=["s"])
    assert a.weights is not None and b.weights is not None
    assert a.table.classes == b.table.classes
    np.testing.assert_allclose(np.sort(a.weights.sums), np.sort(b.weights.sums), rtol=1e-12)
    with pytest.raises(InvalidInputError, match="not numeric: 1 value"):
        weights_from_values(pa.chunked_array([pa.array(["1", "2", "many"])]), "w")
    with pytest.raises(InvalidInputError, match="1 missing value"):
        weights_from_values(pa.chunked_array([pa.array(["1", None, "2"])]), "w")
    with pytest.raises(InvalidInputError, match="not numeric"):
        weights_from_values(pa.chunked_array([pa.array([True, False])]), "w")


def test_fully_suppressed_records_are_excluded_from_every_aggregate() -> None:
    frame = pd.DataFrame(
        {
            "a": ["*", "*", "1", "1", "2"],
            "b": ["*", "*", "x", "x", "*"],
            "w": [5.0, 5.0, 2.0, 3.0, 4.0],
            "s": ["u", "v", "u", "u", "v"],
        }
    )
    agg = aggregate_frame(frame, ["a", "b"], weight="w", sensitive=["s"], return_inverse=True)
    assert agg.table.excluded_records == 2
    assert agg.table.records == 3
    assert agg.inverse is not None and agg.inverse.tolist()[:2] == [-1, -1]
    assert agg.weights is not None
    assert sorted(agg.weights.sums.tolist()) == [4.0, 5.0]
    vc = agg.sensitive["s"]
    assert int(vc.counts.sum()) == 3 and vc.classes.max() < agg.table.classes
    np.testing.assert_array_equal(agg.table.radix_keys(), _own_keys(agg.table))
    # the remaining classes, (1, x) with u, u and (2, *) with v, each hold one value
    from reident_airflow.engine.diversity import l_diversity

    ld = l_diversity(vc, agg.table.sizes)
    assert ld.per_class_distinct.tolist() == [1, 1] and ld.homogeneous_records == 1.0


def test_grouped_results_give_the_same_aggregates() -> None:
    frame = _frame(3000, [6, 7], seed=9)
    qis = ["q0", "q1"]
    counts = (
        frame.groupby(qis, dropna=False)
        .agg(n=("w", "size"), total=("w", "sum"))
        .reset_index()
        .rename(columns={"n": "cnt"})
    )
    vc = frame.groupby([*qis, "s"], dropna=False).size().rename("cnt").reset_index()
    grouped = aggregate_grouped(
        counts, qis, "cnt", weight="w", weight_sum_column="total", value_counts={"s": vc}
    )
    direct = aggregate_frame(frame, qis, weight="w", sensitive=["s"])
    assert grouped.table.classes == direct.table.classes
    assert grouped.weights is not None and direct.weights is not None
    np.testing.assert_allclose(
        np.sort(grouped.weights.sums), np.sort(direct.weights.sums), rtol=1e-12
    )
    assert sorted(grouped.sensitive["s"].counts.tolist()) == sorted(
        direct.sensitive["s"].counts.tolist()
    )
    # value counts that do not add up to the class sizes: different data
    broken = vc.assign(cnt=vc["cnt"] + 1)
    with pytest.raises(InvalidInputError, match="do not add up"):
        aggregate_grouped(counts, qis, "cnt", value_counts={"s": broken})
    with pytest.raises(EmptyDatasetError):
        aggregate_grouped(counts.head(0), qis, "cnt")


def test_empty_and_misaligned_input() -> None:
    frame = pd.DataFrame({"q": pd.Series([], dtype=str), "w": pd.Series([], dtype=float)})
    with pytest.raises(EmptyDatasetError):
        aggregate_frame(frame, ["q"], weight="w")
    enc = encode_frame(pd.DataFrame({"q": ["a", "b"]}), ["q"])
    with pytest.raises(InvalidInputError, match="3 weights for 2 records"):
        aggregate_codes(enc, weights=np.ones(3))


def test_threaded_path_gives_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large inputs run parts on worker threads: forced here on a small one."""
    from reident_airflow.engine import _parallel
    from reident_airflow.engine.assessment import assess

    frame = _frame(4000, [12, 9], seed=5)
    qis = ["q0", "q1"]
    inline = aggregate_arrow(pa.Table.from_pandas(frame), qis, weight="w", sensitive=["s", "t"])
    expected = assess(inline.table, weights=inline.weights, sensitive=inline.sensitive).to_dict()
    monkeypatch.setattr(_parallel, "PARALLEL_MIN_WORK", 0)
    threaded = aggregate_arrow(pa.Table.from_pandas(frame), qis, weight="w", sensitive=["s", "t"])
    got = assess(threaded.table, weights=threaded.weights, sensitive=threaded.sensitive)
    assert got.to_dict() == expected
    # an error on a worker thread reaches the caller as it is
    bad = frame.assign(w=-1.0)
    with pytest.raises(InvalidInputError, match="zero or negative"):
        aggregate_arrow(pa.Table.from_pandas(bad), qis, weight="w")


def _pair_multiset(agg: agg_mod.ClassAggregates, name: str) -> list[tuple[tuple[object, ...], int]]:
    """The (QI tuple, value count) pairs of a sensitive column, in a canonical order."""
    table = agg.table
    assert table.dictionaries is not None
    tuples = [
        tuple(str(np.asarray(table.dictionaries[i])[c]) for i, c in enumerate(row))
        for row in table.codes.tolist()
    ]
    vc = agg.sensitive[name]
    return sorted(zip((tuples[c] for c in vc.classes.tolist()), vc.counts.tolist(), strict=True))


@pytest.mark.parametrize("values", [4, 300, 70_000])  # 8-, 16- and 32-bit codes
def test_sensitive_dictionary_columns_count_like_plain_text(values: int) -> None:
    """Dictionary columns (as Parquet reads them): chunks with their own dictionaries, nulls in
    the indices and in a dictionary, count their values like the same column as plain text."""
    rng = np.random.default_rng(values)
    n = 3 * values + 500
    text = np.array([f"v{i}" for i in rng.integers(0, values, n)], dtype=object)
    text[rng.integers(0, n, 20)] = None
    q = rng.integers(0, 5, n)
    cuts = [(0, n // 3), (n // 3, n // 2), (n // 2, n)]
    chunks = [pa.array(text[a:b].tolist()).dictionary_encode() for a, b in cuts]
    null_entry = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 0], type=pa.int32()), pa.array(["v0", None])
    )
    for column in (pa.chunked_array(chunks), pa.chunked_array([*chunks, null_entry])):
        qi = pa.array(np.resize(q, len(column)))
        plain = pa.table({"q": qi, "s": column.cast(pa.string())})
        coded = pa.table({"q": qi, "s": column})
        want = aggregate_arrow(plain, ["q"], sensitive=["s"])
        got = aggregate_arrow(coded, ["q"], sensitive=["s"])
        assert _pair_multiset(got, "s") == _pair_multiset(want, "s")
    codes, card = agg_mod._value_codes(pa.chunked_array(chunks))
    assert card == len(set(text.tolist()))  # the distinct values, None (missing) among them
    assert codes.dtype == (np.uint8 if card <= 256 else np.uint16 if card <= 65536 else np.uint32)


@pytest.mark.parametrize("cards", [[10, 20], [300, 300, 300]])  # bincount path, sort path
def test_weights_in_chunks_sum_like_one_array(cards: list[int]) -> None:
    """A weight column read in chunks (as from Parquet row groups) is summed chunk by chunk
    without a copy, to exactly the sums of the same weights in one array."""
    frame = _frame(5000, cards, seed=11)
    qis = [f"q{i}" for i in range(len(cards))]
    whole = aggregate_arrow(pa.Table.from_pandas(frame), qis, weight="w", sensitive=["s"])
    pieces = [frame.iloc[a:b] for a, b in ((0, 1000), (1000, 1001), (1001, 3500), (3500, 5000))]
    table = pa.concat_tables([pa.Table.from_pandas(p, preserve_index=False) for p in pieces])
    assert table.column("w").num_chunks == 4
    chunked = aggregate_arrow(table, qis, weight="w", sensitive=["s"])
    assert whole.weights is not None and chunked.weights is not None
    np.testing.assert_array_equal(chunked.table.sizes, whole.table.sizes)
    np.testing.assert_array_equal(chunked.weights.sums, whole.weights.sums)
    # validation counts every chunk; the same chunks as arrays of consecutive rows
    bad = pa.chunked_array([pa.array([1.0, -2.0]), pa.array([0.0, 3.0, float("inf")])])
    with pytest.raises(InvalidInputError, match="1 non-finite value"):
        weights_from_values(bad, "w")
    with pytest.raises(InvalidInputError, match="2 zero or negative weight"):
        weights_from_values(pa.chunked_array([pa.array([1.0, -2.0]), pa.array([0.0])]), "w")
    np.testing.assert_array_equal(
        weights_from_values(pa.chunked_array([pa.array([1, 2]), pa.array([3])]), "w"),
        [1.0, 2.0, 3.0],
    )
    enc = encode_frame(frame, qis)
    arrays = [frame["w"].to_numpy()[a:b] for a, b in ((0, 2000), (2000, 5000))]
    by_arrays = aggregate_codes(enc, weights=arrays)
    assert by_arrays.weights is not None
    np.testing.assert_array_equal(
        by_arrays.weights.sums, aggregate_codes(enc, weights=frame["w"].to_numpy()).weights.sums
    )
    with pytest.raises(InvalidInputError, match="2000 weights for 5000 records"):
        aggregate_codes(enc, weights=arrays[:1])


@pytest.mark.parametrize(
    "cards", [[10, 20], [3000, 2000], [300, 300, 300], [5000, 5000, 5000]], ids=str
)
def test_the_grouping_lets_go_of_the_row_codes(cards: list[int]) -> None:
    """The QI codes of the rows (8 bytes per row and QI) are released as soon as the class
    keys are built: the list handed to the grouping is emptied, so a caller that kept no
    other reference (every front end) frees them before the pairs and sums are counted."""
    frame = _frame(4000, cards)
    qis = [f"q{i}" for i in range(len(cards))]
    encoded, codes = agg_mod._without_codes(encode_frame(frame, qis))
    assert encoded.codes == () and len(codes) == len(cards)
    s_codes, s_card, _ = agg_mod.encode_series(frame["s"])
    agg = agg_mod._aggregate(
        encoded,
        codes,
        weights=frame["w"].to_numpy(),
        weight_column="w",
        sensitive=[("s", s_codes, s_card)],
    )
    assert codes == []
    assert agg.table.records == 4000
    want = aggregate_frame(frame, qis, weight="w", sensitive=["s"])
    assert sorted(agg.table.sizes.tolist()) == sorted(want.table.sizes.tolist())


@pytest.mark.parametrize("threaded", [False, True], ids=["inline", "threaded"])
def test_assess_shares_the_measures_between_threads_without_changing_them(
    threaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever measures are asked for (ranking, weights, sensitive columns), each comes out
    as when computed alone, inline or with the work split between a worker thread and the
    caller's."""
    from reident_airflow.engine import _parallel
    from reident_airflow.engine.assessment import assess
    from reident_airflow.engine.diversity import l_diversity
    from reident_airflow.engine.individual_risk import individual_risk

    frame = _frame(3000, [12, 9], seed=11)
    agg = aggregate_frame(frame, ["q0", "q1"], weight="w", sensitive=["s", "t"])
    assert agg.weights is not None
    alone_ir = individual_risk(agg.table.sizes, agg.weights).to_dict()
    alone_ld = {k: l_diversity(v, agg.table.sizes).to_dict() for k, v in agg.sensitive.items()}
    alone_ranking = assess(agg.table).to_dict()["attributes"]
    if threaded:
        monkeypatch.setattr(_parallel, "PARALLEL_MIN_WORK", 0)
    for attributes in (True, False):
        for weights in (agg.weights, None):
            for sensitive in (agg.sensitive, None):
                got = assess(
                    agg.table, attributes=attributes, weights=weights, sensitive=sensitive
                ).to_dict()
                assert got["attributes"] == (alone_ranking if attributes else [])
                assert got["individual_risk"] == (alone_ir if weights is not None else None)
                assert got["l_diversity"] == (alone_ld if sensitive is not None else None)
                if sensitive is not None:
                    assert list(got["l_diversity"]) == ["s", "t"]  # the columns' order


@pytest.mark.parametrize("cards", [[10, 20], [3000, 2000]], ids=str)
def test_codes_handed_in_are_left_as_they_were(cards: list[int]) -> None:
    """Front ends let the grouping write the class keys over the QI codes they made (their
    pages are in memory already); codes a caller hands in (and may read again) stay intact,
    and both ways give the same aggregates."""
    frame = _frame(5000, cards, seed=3)
    qis = [f"q{i}" for i in range(len(cards))]
    enc = encode_frame(frame, qis)
    before = [c.copy() for c in enc.codes]
    s_codes, s_card, _ = agg_mod.encode_series(frame["s"])
    handed = aggregate_codes(
        enc, weights=frame["w"].to_numpy(), weight_column="w", sensitive=[("s", s_codes, s_card)]
    )
    for got, want in zip(enc.codes, before, strict=True):
        np.testing.assert_array_equal(got, want)
    own = aggregate_frame(frame, qis, weight="w", sensitive=["s"])
    np.testing.assert_array_equal(handed.table.codes, own.table.codes)
    np.testing.assert_array_equal(handed.table.sizes, own.table.sizes)
    assert handed.weights is not None and own.weights is not None
    np.testing.assert_array_equal(handed.weights.sums, own.weights.sums)
    np.testing.assert_array_equal(handed.sensitive["s"].counts, own.sensitive["s"].counts)
    np.testing.assert_array_equal(handed.sensitive["s"].classes, own.sensitive["s"].classes)
    # and written over when owned: the keys in the first code column's memory
    enc2, codes = agg_mod._without_codes(encode_frame(frame, qis))
    first = codes[0]
    agg_mod._aggregate(enc2, codes, weights=frame["w"].to_numpy(), own_codes=True)
    assert not np.array_equal(first, before[0])  # now the rows' class keys
