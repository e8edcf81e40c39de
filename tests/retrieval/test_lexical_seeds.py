"""Core BM25 over units (g2cons_plugins.retrieval.lexical) and its use by the concept path (lexical seeds, hybrid
scores)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.errors import InputError
from g2cons_plugins.retrieval import retrieve


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(unit_tokens=None))


def test_bm25_matches_the_okapi_formula(index: G2ConSIndex) -> None:
    snap = index.snapshot
    lex = snap.lexical
    scores = lex.scores("Vistula river Poland")
    analyze = lex.analyze
    docs = [list(analyze(u.text)) for u in snap.stored.units]
    avg = sum(map(len, docs)) / len(docs)
    want = []
    for d in docs:
        s = 0.0
        for w in ("vistula", "river", "poland"):
            n = sum(w in x for x in docs)
            idf = math.log1p((len(docs) - n + 0.5) / (n + 0.5))
            tf = d.count(w)
            s += idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * len(d) / avg))
        want.append(s)
    assert scores == pytest.approx(want)
    assert not lex.scores("zzzz qqqq").any()


def test_lexical_seeds_reach_the_bm25_best_unit(index: G2ConSIndex) -> None:
    q = "Which port city lies near the mouth of the Vistula?"
    qv = index.embedder.embed([q])[0]
    lex = index.snapshot.lexical.scores(q)
    best = int(np.argmax(lex))
    plain = retrieve(index, q, beta=10_000, query_vector=qv)
    seeded_idx = G2ConSIndex(index.stored, index.embedder, index.config.with_(lexical_seeds=2), index.tokenizer)
    seeded = retrieve(seeded_idx, q, beta=10_000, query_vector=qv)
    seeds = [x.unit_id for x in seeded if x.reason.get("via") == "seed"]
    assert index.stored.units[best].id in seeds
    lexical = [x for x in seeded if x.reason.get("source") == "bm25"]
    assert all(x.reason["seed_rank"] >= index.config.retrieval.n_seed_units for x in lexical)
    assert len(seeds) <= index.config.retrieval.n_seed_units + 2
    assert {x.unit_id for x in plain} == {x.unit_id for x in seeded}  # same units, another order


def test_hybrid_scores_follow_the_weight(index: G2ConSIndex) -> None:
    q = "Vistula Baltic Sea"
    qv = index.embedder.embed([q])[0]
    heavy = G2ConSIndex(index.stored, index.embedder, index.config.with_(lexical_weight=10.0), index.tokenizer)
    items = retrieve(heavy, q, beta=10_000, query_vector=qv)
    lex = index.snapshot.lexical.scores(q)
    assert items[0].unit_id == index.stored.units[int(np.argmax(lex))].id  # BM25 dominates at weight 10
    for bad in ({"lexical_seeds": -1}, {"lexical_weight": -0.5}, {"lexical_weight": 11.0}):
        with pytest.raises(InputError, match=next(iter(bad))):
            G2ConSConfig(**bad)  # type: ignore[arg-type]
