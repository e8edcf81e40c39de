"""The per-query fast paths equal the computations they replaced: BM25 from postings (bit for bit), the lexical
seeds from postings, the name head's covering choice, and the dense scores of one vector-index search that serves
both the seeds and the ranking."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from g2cons_plugins.retrieval import DenseScores, filling
from g2cons_plugins.retrieval.bridge import lexical_seeds
from g2cons_plugins.retrieval.lexical import LexicalIndex
from g2cons_plugins.retrieval.name_head import covering
from g2cons_plugins.retrieval.order import stable_desc, top_desc


def _lexical(n_units: int, n_words: int, seed: int, density: float) -> LexicalIndex:
    rng = np.random.default_rng(seed)
    W = sp.random(n_units, n_words, density=density, format="csc", random_state=rng, dtype=np.float64)
    W.data = np.round(W.data * 4, 1) + 0.1  # few distinct positive values: many equal sums, ties
    words = [f"w{j}" for j in range(n_words)]
    return LexicalIndex(W, {w: j for j, w in enumerate(words)}, str.split)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=0, max_value=60),
    st.integers(min_value=0, max_value=10_000),
    st.lists(st.integers(min_value=0, max_value=11), min_size=0, max_size=9),  # 11: an unknown word
    st.sampled_from([0.05, 0.3, 0.9]),
)
def test_postings_equal_the_full_bm25_array_bit_for_bit(n: int, seed: int, cols: list[int], density: float) -> None:
    lex = _lexical(n, 11, seed, density)
    lex.column.pop("w10", None)  # a word the index does not know
    query = " ".join(f"w{c}" for c in cols)  # repeated words count once per occurrence
    full = lex.scores(query)
    units, scores = lex.postings(query)
    assert units.dtype == np.int64
    assert units.tolist() == np.flatnonzero(full).tolist()
    assert scores.tobytes() == full[units].tobytes()  # the same additions in the same order


def _old_lexical_seeds(lexical: np.ndarray, seeds: list[int], n: int) -> list[int]:
    """The lexical seeds as computed from the BM25 array of every unit."""
    have = set(seeds)
    hit = np.flatnonzero(lexical > 0)
    lex_top = hit[top_desc(lexical[hit], n + len(seeds))].tolist()
    return [u for u in lex_top if u not in have][:n]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=3), min_size=0, max_size=50),  # few values: ties
    st.lists(st.integers(min_value=0, max_value=49), min_size=0, max_size=4, unique=True),
    st.integers(min_value=0, max_value=4),
)
def test_lexical_seeds_from_postings_equal_those_from_the_full_array(
    values: list[int], seeds: list[int], n: int
) -> None:
    full = np.asarray(values, dtype=np.float64) / 2.0
    seeds = [s for s in seeds if s < len(full)]
    units = np.flatnonzero(full).astype(np.int64)
    assert lexical_seeds((units, full[units]), seeds, n) == _old_lexical_seeds(full, seeds, n)


def _old_covering(sc: Any, n: int, per_name: dict[str, dict[int, float]]) -> list[int]:
    """The name head's covering choice as written before (a Python sum per pool unit and round)."""
    ent_units = {u for per in per_name.values() for u in per}
    pool = np.union1d(sc.top(n), np.fromiter(ent_units, dtype=np.int64, count=len(ent_units)))
    base = sc.of(pool).astype(np.float64)
    left = dict(per_name)
    seeds: list[int] = []
    for _ in range(min(n, len(pool))):
        s = base + np.asarray([sum(per.get(int(u), 0.0) for per in left.values()) for u in pool])
        s[np.isin(pool, seeds)] = -np.inf
        u = int(pool[np.lexsort((pool, -s))][0])
        seeds.append(u)
        left = {nm: per for nm, per in left.items() if u not in per}
    return seeds


def _exact_scores(values: list[int]) -> DenseScores:
    vecs = (np.asarray(values, dtype=np.float32) / 4.0)[:, None]
    snap = SimpleNamespace(stored=SimpleNamespace(unit_vecs=vecs), unit_ann=None)
    return DenseScores(snap, np.ones(1, dtype=np.float32))  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=-4, max_value=4), min_size=1, max_size=40),
    st.dictionaries(
        st.sampled_from(["A", "B", "C", "D"]),
        st.dictionaries(st.integers(min_value=0, max_value=39), st.sampled_from([0.05, 0.1, 0.25, 0.5]), max_size=6),
        max_size=4,
    ),
    st.integers(min_value=1, max_value=5),
)
def test_covering_equals_the_per_unit_sum(values: list[int], per_name: dict[str, dict[int, float]], n: int) -> None:
    per_name = {nm: {u: w for u, w in per.items() if u < len(values)} for nm, per in per_name.items()}
    assert covering(_exact_scores(values), n, per_name) == _old_covering(_exact_scores(values), n, per_name)


class _FakeANN:
    """Candidates as a vector index gives them: a fixed subset of the units (a search may miss some), at least the
    number asked for where the subset has them; records every ask."""

    def __init__(self, n: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.order = rng.permutation(n)
        self.asks: list[int] = []

    def search(self, qv: np.ndarray, k: int) -> np.ndarray:
        self.asks.append(k)
        return self.order[: min(len(self.order), 2 * k)]


def _ann_scores(values: list[int], seed: int) -> tuple[DenseScores, _FakeANN, np.ndarray]:
    vecs = (np.asarray(values, dtype=np.float32) / 4.0)[:, None]
    ann = _FakeANN(len(vecs), seed)
    snap = SimpleNamespace(stored=SimpleNamespace(unit_vecs=vecs), unit_ann=ann)
    return DenseScores(snap, np.ones(1, dtype=np.float32)), ann, vecs[:, 0]  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=-4, max_value=4), min_size=2, max_size=120),
    st.integers(min_value=0, max_value=1000),
    st.integers(min_value=1, max_value=60),
    st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=4),
)
def test_one_search_serves_every_ask_up_to_the_expected_size(
    values: list[int], seed: int, expected: int, asks: list[int]
) -> None:
    """After ``expect(K)`` the first search asks for at least K units, every later ask up to K is a prefix of its
    ranking (no second search), and each answer is the best of the candidates, ties by position; scores of any
    unit are exact."""
    sc, ann, cos = _ann_scores(values, seed)
    sc.expect(expected)
    n, cache = len(values), []
    for k in asks:
        k = min(k, n)
        if k > len(cache):  # a fresh search for max(k, expected) units, or every unit exactly
            w = n if k >= n else min(max(k, expected), n)
            cand = np.arange(n) if k >= n else np.unique(ann.order[: 2 * w])
            cache = cand[stable_desc(cos[cand])][:w].tolist()
        assert sc.top(k).tolist() == cache[:k]
    if max(asks) <= expected and max(asks) < n:  # one search served every ask
        assert ann.asks == [min(expected, n)]
    units = np.arange(len(values))
    assert sc.of(units).tolist() == cos.tolist()
    assert sc.of(units[::-1]).tolist() == cos[::-1].tolist()


def test_the_smallest_unit_is_measured_once_per_snapshot() -> None:
    from g2cons_plugins import G2ConSIndex

    idx = G2ConSIndex.build([{"id": "a", "text": "One short text."}, {"id": "b", "text": "Another text here."}],
                            embedder="hash")
    snap = idx.snapshot
    want = int(snap.stored.unit_tokens.min())
    assert want > 1
    assert filling.min_tokens(snap) == want
    other = dataclasses.replace(snap)  # a new snapshot: its memo starts empty
    other.memo("retrieval.min_tokens", lambda: want + 5)  # a cached value is used as is
    assert filling.Filler(other, 100, stop_on_overflow=False).min_tokens == want + 5
    assert filling.Filler(snap, 100, stop_on_overflow=False).min_tokens == want
    assert filling.Filler(dataclasses.replace(snap), 100, stop_on_overflow=False).min_tokens == want


_TEXT_CHARS = st.sampled_from(list("abAB  \n\n_.-,é É1'\"(") + ["ab", "Ab", "ba"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_TEXT_CHARS, min_size=0, max_size=14).map("".join), st.lists(_TEXT_CHARS, min_size=1, max_size=6))
def test_the_head_of_a_match_equals_the_title_and_opening_patterns(text: str, name_parts: list[str]) -> None:
    """``_head`` from the name's first match equals the two patterns it replaced: the first line is the name
    (1), the text opens with it (0.5), neither (0)."""
    from g2cons_plugins.retrieval.entities import _head, _phrase, normalize

    name = "".join(name_parts)
    if not normalize(name).strip():
        return
    m = _phrase(name).search(text)
    if m is None:
        return
    title, opens = _phrase(name, whole=True), _phrase(name, anchored=True)
    want = 1.0 if title.match(text.split("\n", 1)[0]) else 0.5 * bool(opens.match(text))
    assert _head(text, m) == want


_PHRASE_CHARS = st.sampled_from(list("abkAB  \n_.-,é É1'\"(\u212a\u0130") + ["ab", "Ab", "ba", "kA"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_PHRASE_CHARS, min_size=0, max_size=16).map("".join), st.lists(_PHRASE_CHARS, min_size=0, max_size=6))
def test_the_phrase_pattern_equals_the_look_behind_first_pattern(text: str, name_parts: list[str]) -> None:
    """The name's pattern, its word-boundary look-behind checked after the first character, finds the same first
    match (span) as the pattern that opens with the look-behind, and every later match too (case-insensitive,
    the Kelvin sign and a dotted capital I included)."""
    import re

    from g2cons_plugins.retrieval.entities import _phrase, normalize

    name = "".join(name_parts)
    core = r"[\W_]+".join(map(re.escape, normalize(name).split())) + r"(?![^\W_])"
    old = re.compile(r"(?<![^\W_])" + core, re.IGNORECASE)
    new = _phrase(name)
    assert [m.span() for m in new.finditer(text)] == [m.span() for m in old.finditer(text)]
    m_new, m_old = new.search(text), old.search(text)
    assert (m_new and m_new.span()) == (m_old and m_old.span())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=40), unique=True, max_size=25),
    st.lists(st.integers(min_value=0, max_value=40), unique=True, max_size=25),
)
def test_holding_equals_intersect1d(cand: list[int], column: list[int]) -> None:
    from g2cons_plugins.retrieval.entities import _holding

    c, col = np.asarray(sorted(cand), dtype=np.int32), np.asarray(column, dtype=np.int32)
    want = np.intersect1d(c, col, assume_unique=True).tolist()
    assert _holding(c, np.sort(col), True).tolist() == want
    assert _holding(c, col, False).tolist() == want


def _brute_best(full: np.ndarray, m: int, at_least: float) -> list[int]:
    units = [u for u in np.argsort(-full, kind="stable").tolist() if full[u] > 0 and full[u] >= at_least][:m]
    return sorted(units)


@settings(max_examples=400, deadline=None)
@given(
    st.integers(min_value=0, max_value=80),
    st.integers(min_value=0, max_value=10_000),
    st.lists(st.integers(min_value=0, max_value=11), min_size=0, max_size=9),
    st.sampled_from([0.02, 0.1, 0.4]),
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=30), st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0, 4.0, 9.0])),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([1, 2, 5, 1024]),
    st.booleans(),
    st.booleans(),
)
def test_query_bm25_equals_the_full_array(
    n: int,
    seed: int,
    cols: list[int],
    density: float,
    asks: list[tuple[int, float]],
    top_list: int,
    scores_first: bool,
    unaligned: bool,
) -> None:
    """Scores of any units bit for bit, and the m best units with BM25 >= at_least (ties by position), read from
    the heaviest words' postings only, equal the full array's, for any sequence of asks (the later ones read the
    list of best units the first one kept, or make a longer one); also after the full postings were summed, and
    with weights read from an unaligned buffer (as a memory-mapped file can give them)."""
    lex = _lexical(n, 11, seed, density)
    lex.column.pop("w10", None)
    if unaligned:
        data = lex.weights.data
        moved = np.ndarray(data.shape, data.dtype, buffer=np.zeros(data.nbytes + 3, np.uint8), offset=3)
        moved[:] = data
        moved.flags.writeable = False
        lex.weights.data = moved
        assert not len(data) or not lex.weights.data.flags.aligned
    query = " ".join(f"w{c}" for c in cols)
    full = lex.scores(query)
    q = lex.query(query)
    q.MERGE_MAX = 0  # the thread's array even for these few postings
    q.TOP_LIST = top_list
    units = np.arange(n)[::-1]
    if scores_first:
        assert q.of(units).tobytes() == full[units].tobytes()
    for _ in range(2):  # then again from the summed postings
        for m, at_least in asks:
            got, vals = q.best(m, at_least)
            assert got.tolist() == _brute_best(full, m, at_least)
            assert vals.tobytes() == full[got].tobytes()
            if q._top is not None:  # the kept list: every unit scoring at least its score c, best first
                units, _, c = q._top
                want = [u for u in np.argsort(-full, kind="stable").tolist() if full[u] > 0 and full[u] >= c]
                assert units.tolist() == want
        assert q.of(units).tobytes() == full[units].tobytes()
        q.postings()
    q.close()


def test_query_bm25_hands_back_a_cleared_array_and_nested_queries_get_their_own() -> None:
    from g2cons_plugins.retrieval import lexical as lexical_module

    lex = _lexical(50, 6, 3, 0.3)
    first, second = lex.query("w0 w1 w2"), lex.query("w3 w4 w0")
    first.MERGE_MAX = second.MERGE_MAX = 0
    want_first, want_second = lex.scores("w0 w1 w2"), lex.scores("w3 w4 w0")
    units = np.arange(50)
    assert first.of(units).tobytes() == want_first.tobytes()
    assert second.of(units).tobytes() == want_second.tobytes()  # the first holds the thread's array: a new one
    first.close()
    second.close()
    free = lexical_module._SCRATCH.free
    assert free is not None and not free.any()  # handed back cleared
    third = lex.query("w5 w1")
    third.MERGE_MAX = 0
    assert third.of(units).tobytes() == lex.scores("w5 w1").tobytes()
    assert third._acc is free  # reused
    third.close()
    assert not free.any()


class _Units:
    def __init__(self, tokens: list[int]) -> None:
        self.unit_tokens = np.asarray(tokens, dtype=np.int64)
        self.units = [SimpleNamespace(id=f"u{i}", parent_id=f"c{i}", text="t") for i in range(len(tokens))]


class _Index:
    def __init__(self, tokens: list[int]) -> None:
        self.stored = _Units(tokens)

    def memo(self, key: str, make: Any) -> Any:  # as Snapshot.memo, uncached
        return make()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=2, max_value=40), min_size=1, max_size=60),
    st.integers(min_value=1, max_value=300),
    st.integers(min_value=0, max_value=10_000),
)
def test_stopping_at_the_smallest_unit_keeps_the_items(tokens: list[int], beta: int, seed: int) -> None:
    """A filler that stops once the room left is below the smallest unit returns the items of one that goes on
    trying (the smallest unit was measured as at most 1 before): no unit could have fitted."""
    order = np.random.default_rng(seed).permutation(len(tokens)).tolist()
    idx = _Index(tokens)
    new = filling.Filler(idx, beta, stop_on_overflow=False)  # type: ignore[arg-type]
    old = filling.Filler(idx, beta, stop_on_overflow=False, max_misses=None)  # type: ignore[arg-type]
    old.min_tokens = 1
    assert new.min_tokens == min(tokens)
    for u in order:
        new.add(u, 0.0, {})
        old.add(u, 0.0, {})
    assert [i.unit_id for i in new.items] == [i.unit_id for i in old.items]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=3000), min_size=0, max_size=60, unique=True),
    st.lists(st.integers(min_value=0, max_value=3200), min_size=0, max_size=80),
)
def test_unit_index_positions_from_the_key_table_equal_the_binary_search(keys: list[int], found: list[int]) -> None:
    """Found keys -> positions through the dense key table equal the sorted-key search (order kept, keys the
    snapshot does not hold dropped), for dense and for sparse key sets (no table)."""
    from g2cons_plugins.arrays.unit_hnsw import UnitANN, UnitANNParams

    ann = UnitANN(None, np.asarray(keys, dtype=np.uint64), UnitANNParams())  # type: ignore[arg-type]
    sorted_keys, order = ann._by_key
    q = np.asarray(found, dtype=np.uint64)
    at = np.minimum(np.searchsorted(sorted_keys, q), max(len(sorted_keys) - 1, 0))
    hit = sorted_keys[at] == q if len(sorted_keys) else np.zeros(len(q), bool)
    want = order[at[hit]].astype(np.int64)
    got = ann.positions(q)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
    assert (ann._key_table is None) == (not keys or max(keys) >= 2 * len(keys) + 1024)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=4), min_size=0, max_size=40),  # few weights: ties
    st.integers(min_value=0, max_value=45),
)
def test_the_heaviest_name_candidates_equal_the_sorted_choice(weights: list[int], k: int) -> None:
    from g2cons_plugins.retrieval.entities import _heaviest

    cand = np.arange(0, 3 * len(weights), 3, dtype=np.int32)
    w = np.asarray(weights, dtype=np.float64)
    want = np.sort(cand[np.lexsort((cand, -w))[:k]])
    assert _heaviest(cand, w, k).tolist() == want.tolist()


@given(st.lists(st.integers(min_value=-5, max_value=40), max_size=60), st.sampled_from([np.int32, np.int64, np.intp]))
def test_sorted_unique_equals_numpy_unique(values: list[int], dtype: Any) -> None:
    from g2cons_plugins.retrieval.lexical import sorted_unique

    a = np.asarray(values, dtype=dtype)
    got, want = sorted_unique(a), np.unique(a)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
