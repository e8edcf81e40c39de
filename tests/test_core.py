"""Core engine behaviour: text, chunks, concepts, graph, PageRank, selection, retrieval, incremental updates."""

from __future__ import annotations

import math
import warnings

import networkx as nx
import numpy as np
import pytest
from concept_oracle import extract_vocabulary

from g2cons_plugins import (
    CallableEmbedder,
    EmbeddingError,
    G2ConSConfig,
    G2ConSIndex,
    HashEmbedder,
    InputError,
    make_chunks,
)
from g2cons_plugins.chunks import Chunk, content_id, split_units
from g2cons_plugins.graph import pagerank
from g2cons_plugins.selection import take
from g2cons_plugins.text import english_stopwords, get_tokenizer, split_sentences

CFG = G2ConSConfig(theta_co=2)


@pytest.fixture(scope="module")
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus, embedder="wordllama", config=CFG)


# ------------------------------------------------------------------ text
def test_cl100k_offline_matches_known_ids() -> None:
    tok = get_tokenizer()
    assert tok.encode("hello world") == [15339, 1917]
    assert tok.decode(tok.encode("Graph-RAG costs one call per chunk.")) == "Graph-RAG costs one call per chunk."


def test_punkt_keeps_abbreviations_together() -> None:
    sents = split_sentences("Dr. Smith arrived at 5 p.m. on Jan. 5th. He left early.")
    assert sents == ["Dr. Smith arrived at 5 p.m. on Jan. 5th.", "He left early."]
    assert "the" in english_stopwords() and len(english_stopwords()) == 198


# ------------------------------------------------------------------ chunks
def test_make_chunks_rejects_bad_input() -> None:
    with pytest.raises(InputError, match="empty corpus"):
        make_chunks([])
    with pytest.raises(InputError, match="'b'.*empty or whitespace"):
        make_chunks([{"id": "a", "text": "ok"}, {"id": "b", "text": "  \n "}])
    with pytest.raises(InputError, match="duplicate chunk id 'a'"):
        make_chunks([("a", "one text"), ("a", "another text")])
    with pytest.raises(InputError, match="NUL bytes"):
        make_chunks([("bin", "abc\x00def")])
    with pytest.raises(InputError, match="without a 'text' key"):
        make_chunks([{"id": "x", "body": "no text"}])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = make_chunks([("a", "same"), ("a", "same")])
    assert len(out) == 1 and any("given twice" in str(w.message) for w in rec)


def test_content_ids_are_stable_and_titles_prefixed() -> None:
    a, b = make_chunks(["Alpha text.", {"title": "T", "text": "Body."}])
    assert a.id == content_id("Alpha text.") == make_chunks(["Alpha text."])[0].id
    assert b.text == "T\nBody." and b.id == content_id("T\nBody.")


def test_units_respect_tau_and_keep_parent() -> None:
    tok = get_tokenizer()
    text = " ".join(f"Sentence number {i} talks about Warsaw and Paris." for i in range(60))
    units = split_units(Chunk("big", text), tok, 40)
    assert len(units) > 5
    assert all(u.parent_id == "big" and u.n_tokens <= 40 for u in units)
    assert [u.id for u in units][:2] == ["big::0", "big::1"]
    assert " ".join(u.text for u in units).split() == text.split()  # nothing lost, nothing added
    whole = split_units(Chunk("small", "One short sentence."), tok, 40)
    assert [(u.id, u.text) for u in whole] == [("small", "One short sentence.")]


def test_one_megabyte_chunk_is_split_into_small_units() -> None:
    words = ("Warsaw Paris Vistula radium polonium Sorbonne physics chemistry " * 20).strip()
    big = ". ".join([words] * 800)  # ~1 MB, sentences of ~160 tokens (longer than tau)
    assert len(big) > 1_000_000
    idx = G2ConSIndex.build([("big", big), ("small", "Marie Curie lived in Paris.")], embedder="hash")
    assert max(u.n_tokens for u in idx.units) <= 150
    assert {u.parent_id for u in idx.units} == {"big", "small"}
    assert idx.retrieve("Where did Marie Curie live?", beta=300)


# ------------------------------------------------------------------ concepts
def test_tfidf_top_n_and_contains_incidence(corpus: list[dict[str, str]]) -> None:
    cfg = G2ConSConfig(top_n=3)
    vocab, extracted = extract_vocabulary([c["text"] for c in corpus], cfg)
    assert (np.diff(extracted.indptr) <= 3).all()
    assert not set(vocab) & english_stopwords()
    idx = G2ConSIndex.build(corpus, embedder="hash", config=cfg)
    dv = idx.derived
    # "contains": T_w holds every chunk containing w, also where w was not a top-3 keyword
    assert (dv.chunk_inc.toarray() >= dv.extracted.toarray()).all()
    assert dv.chunk_inc.sum() > dv.extracted.sum()
    j = int(np.argmax(np.asarray((dv.chunk_inc - dv.extracted).sum(axis=0)).ravel()))
    word = dv.vocab[j]
    holders = {idx.chunks[i].id for i in dv.chunk_inc[:, j].nonzero()[0]}
    assert holders == {c["id"] for c in corpus if word in c["text"].lower()} and len(holders) >= 2
    ext = G2ConSIndex.build(corpus, embedder="hash", config=cfg.with_(incidence="extracted"))
    assert (ext.derived.chunk_inc != ext.derived.extracted).nnz == 0


def test_all_words_mode_has_every_non_stop_word(corpus: list[dict[str, str]]) -> None:
    vocab, _ = extract_vocabulary([c["text"] for c in corpus], G2ConSConfig(concept_mode="all_words", max_df=1.0))
    assert {"vistula", "gdansk", "becquerel", "warsaw"} <= set(vocab)
    assert "the" not in vocab and "was" not in vocab


def test_non_english_and_mixed_script_text_builds() -> None:
    docs = [
        ("fr", "Marie Curie est née à Varsovie. Elle a étudié à Paris."),
        ("ru", "Мария Кюри родилась в Варшаве. Мария Кюри работала в Париже."),
        ("zh", "居里夫人出生于华沙。她在巴黎工作。"),
        ("mix", "Marie Curie (Мария Кюри, 居里夫人) studied in Paris."),
    ]
    idx = G2ConSIndex.build(docs, embedder="hash")
    assert {"мария", "варшаве", "étudié"} <= set(idx.derived.vocab)
    assert idx.retrieve("Мария Кюри", beta=200)


# ------------------------------------------------------------------ graph
def test_concept_vector_is_mean_of_its_sentences(index: G2ConSIndex) -> None:
    eq1 = G2ConSIndex(index.stored, index.embedder, CFG.with_(vector_level="sentence"), index.tokenizer)
    dv, st = eq1.derived, eq1.stored
    assert st.sent_vecs is not None
    j = dv.concept_index["vistula"]
    rows = [i for i, s in enumerate(st.sentences) if "vistula" in s.lower()]
    assert dv.sentence_counts[j] == len(rows) >= 3
    mean = st.sent_vecs[rows].mean(axis=0)
    np.testing.assert_allclose(dv.concept_vecs[j], mean / np.linalg.norm(mean), atol=1e-5)


def test_edges_match_brute_force_definition(index: G2ConSIndex) -> None:
    dv = index.derived
    T = [set(dv.chunk_inc[:, j].nonzero()[0]) for j in range(len(dv.vocab))]
    theta = dv.edges.theta_sem
    expected = {}
    for i in range(len(T)):
        for j in range(i + 1, len(T)):
            co = len(T[i] & T[j])
            cos = float(dv.concept_vecs[i] @ dv.concept_vecs[j])
            if co >= CFG.theta_co and cos >= theta - 1e-6:
                expected[(i, j)] = 2 * co / (len(T[i]) + len(T[j]))
    got = {(int(r), int(c)): float(w) for r, c, w in zip(dv.edges.rows, dv.edges.cols, dv.edges.dice, strict=True)}
    assert got.keys() == expected.keys() and got
    for key, w in expected.items():
        assert got[key] == pytest.approx(w, rel=1e-5)


def test_theta_sem_percentile_and_fixed(corpus: list[dict[str, str]]) -> None:
    auto = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(theta_co=2, theta_sem_percentile=50))
    kept = auto.stats.n_edges / auto.stats.n_candidate_pairs
    assert 0.4 <= kept <= 0.6
    fixed = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(theta_co=2, theta_sem=0.99))
    assert fixed.stats.theta_sem == 0.99 and fixed.stats.n_edges < auto.stats.n_edges
    paper = G2ConSConfig(mode="paper")
    assert paper.theta_sem == 0.65 and paper.strategy == "paper" and paper.selector == "pagerank"
    # fusion: measured defaults (lambda 0.4, spill) vs the paper's (0.6, hard caps); explicit values win
    assert (G2ConSConfig().lambda_, G2ConSConfig().fusion_options.spill) == (0.2, True)
    assert (paper.lambda_, paper.fusion_options.spill) == (0.6, False)
    explicit = G2ConSConfig(mode="paper", lambda_=0.3, spill=True)
    assert (explicit.fusion_lambda, explicit.fusion_spill) == (0.3, True)
    assert G2ConSConfig.from_dict(paper.to_dict()) == paper
    assert (G2ConSConfig().with_(mode="paper").lambda_, G2ConSConfig().with_(mode="paper").fusion_spill) == (0.6, False)
    assert G2ConSConfig().with_(mode="paper", lambda_=0.2).lambda_ == 0.2
    # a config saved before ``spill`` existed fused with hard caps: it still does
    old = G2ConSConfig.from_dict({"lambda_": 0.6, "kappa": 0.8})
    assert (old.lambda_, old.fusion_options.spill) == (0.6, False)
    with pytest.raises(InputError, match="spill"):
        G2ConSConfig(spill="false")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="lambda_"):
        G2ConSConfig(lambda_=1.5)


def test_pagerank_matches_networkx(index: G2ConSIndex) -> None:
    A = index.derived.A
    G = nx.from_scipy_sparse_array(A)
    ref = nx.pagerank(G, alpha=0.85, weight="weight", tol=1e-12, max_iter=1000)
    ours = pagerank(A, damping=0.85)
    np.testing.assert_allclose(ours, [ref[i] for i in range(A.shape[0])], atol=1e-8)
    p = np.zeros(A.shape[0])
    p[:3] = 1
    ref_p = nx.pagerank(G, alpha=0.5, personalization={i: float(p[i]) for i in range(len(p))}, tol=1e-12)
    np.testing.assert_allclose(pagerank(A, 0.5, p), [ref_p[i] for i in range(len(p))], atol=1e-8)


def test_stats_reported(index: G2ConSIndex) -> None:
    s = index.stats
    assert s.n_chunks == 18 and s.n_concepts == len(index.derived.vocab)
    assert 0 <= s.isolated_share <= 1 and s.n_edges == len(index.derived.edges.rows)
    assert "isolated" in str(s)


# ------------------------------------------------------------------ selection
@pytest.mark.parametrize(
    "selector", ["coverage", "concept_coverage", "pagerank", "shortest", "uniform", "knn_pagerank"]
)
def test_selection_by_tokens_respects_kappa(index: G2ConSIndex, selector: str) -> None:
    rep = index.select(kappa=0.5, selector=selector)
    assert rep.kept_tokens <= 0.5 * rep.total_tokens
    assert set(rep.kept_ids) | set(rep.dropped_ids) == {c.id for c in index.chunks}
    assert not set(rep.kept_ids) & set(rep.dropped_ids)
    assert rep == index.select(kappa=0.5, selector=selector)  # deterministic


def test_kappa_by_tokens_counts_the_prompt_sent_with_every_chunk(index: G2ConSIndex) -> None:
    """kappa by tokens is a share of the extraction input: kept chunk tokens + one prompt per kept chunk."""
    n = len(index.chunks)
    for prompt in (0, 40, 400):
        rep = index.select(kappa=0.5, prompt_tokens_per_call=prompt)
        sent = rep.kept_tokens + prompt * len(rep.kept_ids)
        assert sent <= 0.5 * (rep.total_tokens + prompt * n)
    # shortest-first keeps more than half the chunks in half the chunk tokens; once a large prompt makes every
    # chunk cost about the same, half the input is half the chunks
    assert len(index.select(kappa=0.5, selector="shortest").kept_ids) > n // 2
    assert len(index.select(kappa=0.5, selector="shortest", prompt_tokens_per_call=10_000).kept_ids) == n // 2


def test_selection_by_chunks_and_cost_report(index: G2ConSIndex) -> None:
    rep = index.select(kappa=0.5, kappa_by="chunks", price_per_mtok=2.0, prompt_tokens_per_call=1000)
    assert len(rep.kept_ids) == math.ceil(0.5 * 18)
    assert rep.input_tokens_avoided == rep.dropped_tokens + 1000 * len(rep.dropped_ids)
    assert rep.usd_avoided == pytest.approx(rep.input_tokens_avoided / 1e6 * 2.0)
    assert index.select(kappa=1.0).dropped_ids == [] and index.select(kappa=0.0).kept_ids == []


def test_coverage_selector_covers_concepts_first(index: G2ConSIndex) -> None:
    from g2cons_plugins.selection import rank_chunks

    dv, st = index.derived, index.stored
    names_of = [set() for _ in st.chunks]  # chunk -> names it holds
    for u, parent in enumerate(st.unit_parent):
        names_of[parent].update(dv.unit_names[u].indices.tolist())
    for selector, sets, weight in [
        ("concept_coverage", [set(dv.chunk_inc[i].indices.tolist()) for i in range(len(st.chunks))], dv.pagerank),
        ("coverage", names_of, np.ones(len(dv.names))),
    ]:
        order = rank_chunks(index, selector)
        assert sorted(order) == list(range(len(st.chunks)))
        covered: set[int] = set()
        gains = []
        for i in order:
            gains.append(sum(weight[c] for c in sets[i] - covered))
            covered |= sets[i]
        assert covered == set().union(*sets) and gains[0] > 0
        first_zero = next((k for k, g in enumerate(gains) if g == 0), len(gains))
        assert all(g == 0 for g in gains[first_zero:])  # once all is covered, nothing adds coverage
        # greedy: the first pick has the best gain per token of all chunks
        per_tok = [sum(weight[c] for c in sets[i]) / st.chunk_tokens[i] for i in range(len(st.chunks))]
        assert per_tok[order[0]] == pytest.approx(max(per_tok))


def test_take_skips_chunks_that_do_not_fit() -> None:
    tokens = np.array([50, 30, 10, 10])
    assert take([0, 1, 2, 3], tokens, 0.5, "tokens") == [0]  # cap 50: the first chunk fills it
    assert take([1, 0, 2, 3], tokens, 0.5, "tokens") == [1, 2, 3]  # 0 does not fit: skipped, the rest tried
    assert take([2, 0, 3], tokens, 0.7, "tokens") == [2, 0, 3]


def test_dropped_chunks_stay_retrievable(index: G2ConSIndex) -> None:
    rep = index.select(kappa=0.3)
    hits = {
        x.parent_id
        for q in ["Gdansk port Vistula", "Helsinki Finland", "Becquerel uranium"]
        for x in index.retrieve(q, beta=400)
    }
    assert hits & set(rep.dropped_ids)


# ------------------------------------------------------------------ retrieval
@pytest.mark.parametrize("strategy", ["bridge", "paper", "dense", "ppr"])
def test_retrieval_fits_beta_and_explains(index: G2ConSIndex, strategy: str) -> None:
    items = index.retrieve(
        "Which river flows through the capital where Marie Curie was born?", beta=120, strategy=strategy
    )
    assert items and sum(x.n_tokens for x in items) <= 120
    assert len({x.unit_id for x in items}) == len(items)
    for x in items:
        assert x.reason.get("via") and x.parent_id in {c.id for c in index.chunks}
        assert x.n_tokens == len(get_tokenizer().encode(x.text))


def test_bridge_mode_seeds_first_then_bridges(index: G2ConSIndex) -> None:
    q = "Which river flows through the city where Marie Curie was born?"
    qv = index.embed_query(q)
    items = index.retrieve(q, beta=2000, strategy="bridge")
    cos = index.stored.unit_vecs @ qv
    # seeds by the hybrid score: cos + lexical_weight x (std of cos / 0.1) x BM25 / max BM25 (score_scale "spread")
    lex = index.snapshot.lexical.scores(q)
    seed_score = cos + index.config.retrieval.lexical_weight * (np.std(cos) / 0.1) * lex / lex.max()
    dense_order = np.argsort(-seed_score, kind="stable")[: index.config.retrieval.n_seed_units]
    assert [x.unit_id for x in items[: len(dense_order)]] == [index.units[i].id for i in dense_order]
    bridged = [x for x in items if x.reason["via"] == "bridge"]
    assert bridged
    for x in bridged:
        assert any(name in x.text.lower() for name in x.reason["bridge_concepts"])


def test_paper_mode_local_then_global_and_terminates(index: G2ConSIndex) -> None:
    paper = G2ConSIndex(index.stored, index.embedder, G2ConSConfig(mode="paper", theta_co=2, k=2), index.tokenizer)
    items = paper.retrieve("Marie Curie radium", beta=10_000)
    vias = [x.reason["via"] for x in items]
    assert vias[0] == "local" and vias == sorted(vias, key=lambda v: v != "local")  # all local before global
    seeds = [x.reason["concept"] for x in items if x.reason["via"] == "local"]
    assert len(set(seeds)) <= 2
    small = paper.retrieve("Marie Curie radium", beta=60)
    assert sum(x.n_tokens for x in small) <= 60
    assert [x.unit_id for x in small] == [x.unit_id for x in items[: len(small)]]  # terminate = a prefix


def test_unknown_query_words_fall_back_to_vectors(index: G2ConSIndex) -> None:
    from g2cons_plugins.retrieval import query_concepts

    assert query_concepts(index, "zzqx blorf") == []
    assert index.retrieve("zzqx blorf", beta=100)
    with pytest.raises(InputError, match="non-empty"):
        index.retrieve("   ")
    with pytest.raises(InputError, match="shape"):
        index.retrieve("x", query_vector=np.ones(3))
    with pytest.raises(InputError, match="unknown strategy"):
        index.retrieve("x", strategy="magic")


# ------------------------------------------------------------------ embeddings
def test_wrong_dimension_and_nan_embeddings_are_named(corpus: list[dict[str, str]]) -> None:
    bad_dim = CallableEmbedder(lambda texts: np.ones((len(texts), 8)), dim=16, name="bad-dim")
    with pytest.raises(EmbeddingError, match="dimension 8 but 16"):
        G2ConSIndex.build(corpus, embedder=bad_dim)
    nan = CallableEmbedder(lambda texts: np.full((len(texts), 4), np.nan), dim=4, name="nan")
    with pytest.raises(EmbeddingError, match="NaN|non-finite"):
        G2ConSIndex.build(corpus, embedder=nan)


def test_every_distinct_sentence_embedded_once(corpus: list[dict[str, str]]) -> None:
    seen: list[str] = []
    inner = HashEmbedder(16)

    def fn(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return inner.embed(texts)

    dup = corpus + [{"id": "dup", "text": corpus[0]["text"] + " Extra sentence here."}]
    idx = G2ConSIndex.build(
        dup, embedder=CallableEmbedder(fn, 16, "counting"), config=G2ConSConfig(vector_level="sentence")
    )
    assert len(seen) == len(set(seen))
    assert set(idx.stored.sentences) <= set(seen)


# ------------------------------------------------------------------ incremental
def _same(a: G2ConSIndex, b: G2ConSIndex) -> None:
    assert a.stats == b.stats
    assert a.derived.vocab == b.derived.vocab
    np.testing.assert_allclose(a.derived.pagerank, b.derived.pagerank, atol=1e-12)
    for q in ["Marie Curie Warsaw", "Baltic Sea capitals", "Nobel Prize chemistry"]:
        ra, rb = a.retrieve(q, beta=300), b.retrieve(q, beta=300)
        # same items and scores; exact ties may swap through float summation order (BLAS blocking)
        assert sorted((round(x.score, 5), x.unit_id) for x in ra) == sorted((round(x.score, 5), x.unit_id) for x in rb)


def test_add_and_remove_equal_full_rebuild(corpus: list[dict[str, str]]) -> None:
    counter: list[str] = []
    inner = HashEmbedder(32)
    emb = CallableEmbedder(lambda t: (counter.extend(t), inner.embed(t))[1], 32, "hash-count")
    inc = G2ConSIndex.build(corpus[:12], embedder=emb, config=CFG)
    n_before = len(counter)
    inc.add(corpus[12:])
    new_texts = counter[n_before:]
    assert new_texts and not set(new_texts) & set(counter[:n_before])  # nothing known is re-embedded
    _same(inc, G2ConSIndex.build(corpus, embedder=HashEmbedder(32), config=CFG))
    n_before = len(counter)
    inc.remove([c["id"] for c in corpus[12:]])
    assert len(counter) == n_before  # removal embeds nothing
    _same(inc, G2ConSIndex.build(corpus[:12], embedder=HashEmbedder(32), config=CFG))
    with pytest.raises(InputError, match="already in the index"):
        inc.add(corpus[:1])
    with pytest.raises(InputError, match="unknown chunk ids"):
        inc.remove(["nope"])


def test_config_validation() -> None:
    with pytest.raises(InputError, match="kappa"):
        G2ConSConfig(kappa=1.5)
    with pytest.raises(InputError, match="lambda_"):
        G2ConSConfig(lambda_=-0.1)
    with pytest.raises(InputError, match="unknown G2ConSConfig fields"):
        G2ConSConfig().with_(kapa=0.3)
    assert G2ConSConfig.from_dict(G2ConSConfig(k=7).to_dict()).k == 7


def test_bridge_names_are_capitalised_words_in_two_or_more_chunks(index: G2ConSIndex) -> None:
    dv = index.derived
    assert {"curie", "vistula", "baltic", "paris"} <= set(dv.names)
    assert "river" not in dv.names and "capital" not in dv.names  # common nouns are not names
    assert "gdansk" not in dv.names  # a name in one chunk only cannot bridge two chunks
    assert (dv.name_df >= 2).all() and dv.unit_names.shape == (len(index.units), len(dv.names))


# ------------------------------------------------------------------ Table 4 ablations and the E2GraphRAG router
def test_ablation_a_sentence_cooccurrence(index: G2ConSIndex) -> None:
    abl = G2ConSIndex(index.stored, index.embedder, CFG.with_(cooccurrence="sentence", theta_co=1), index.tokenizer)
    dv = abl.derived
    S = [set(dv.sent_inc[:, j].nonzero()[0]) for j in range(len(dv.vocab))]
    for r, c, co in zip(dv.edges.rows, dv.edges.cols, dv.edges.co, strict=True):
        assert co == len(S[r] & S[c]) >= 1  # Co counts sentences, not chunks
    chunk_level = G2ConSIndex(index.stored, index.embedder, CFG.with_(theta_co=1), index.tokenizer)
    assert abl.stats.n_candidate_pairs < chunk_level.stats.n_candidate_pairs  # sentence windows are sparser


def test_ablation_c_chunk_level_vectors(index: G2ConSIndex) -> None:
    abl = G2ConSIndex(index.stored, index.embedder, CFG.with_(vector_level="chunk"), index.tokenizer)
    dv, st = abl.derived, abl.stored
    j = dv.concept_index["vistula"]
    rows = [u for u, unit in enumerate(st.units) if "vistula" in unit.text.lower()]
    mean = st.unit_vecs[rows].mean(axis=0)
    np.testing.assert_allclose(dv.concept_vecs[j], mean / np.linalg.norm(mean), atol=1e-5)
    assert not np.allclose(dv.concept_vecs[j], index.derived.concept_vecs[j], atol=1e-3)


def test_ablation_d_naive_rerank_is_one_sorted_pool(index: G2ConSIndex) -> None:
    abl = G2ConSIndex(
        index.stored, index.embedder, G2ConSConfig(mode="paper", theta_co=2, rerank="naive", k=3), index.tokenizer
    )
    items = abl.retrieve("Marie Curie radium Paris", beta=10_000)
    scores = [x.score for x in items]
    assert items and scores == sorted(scores, reverse=True) and {x.reason["via"] for x in items} == {"naive"}


def test_e2_router_puts_units_with_both_query_concepts_first(index: G2ConSIndex) -> None:
    dv = index.derived
    assert len(dv.edges.rows) > 0
    a, b = dv.vocab[dv.edges.rows[0]], dv.vocab[dv.edges.cols[0]]  # adjacent concepts, co-occurring in >= 2 chunks
    items = index.retrieve(f"{a} {b}", beta=500, strategy="e2")
    local = [x for x in items if x.reason["via"] == "e2_local"]
    assert local and items[: len(local)] == local
    assert all(a in x.text.lower() and b in x.text.lower() for x in local)
    none = index.retrieve("zzqx blorf", beta=200, strategy="e2")
    assert none and {x.reason["via"] for x in none} == {"e2_global_dense"}


def test_e2_router_occurrence_mode_for_a_single_query_concept(index: G2ConSIndex) -> None:
    """One query concept (no pair to intersect): dense candidates holding it come first (Occurrence Ranking)."""
    dv = index.derived
    c = dv.vocab[dv.edges.rows[0]]
    items = index.retrieve(f"{c} zzqx", beta=2000, strategy="e2")
    occ = [x for x in items if x.reason["via"] == "e2_global_occurrence"]
    assert occ and items[: len(occ)] == occ
    assert all(c in x.text.lower() for x in occ)
    assert all(x.reason["via"] == "e2_global_occurrence_dense" for x in items[len(occ) :])


def test_every_strategy_is_one_function_of_the_table(index: G2ConSIndex) -> None:
    """``retrieve`` runs the strategy chosen by name from ``retrieval.strategies.TABLE`` (every ``Strategy`` of the
    config, no other); only the ones the table marks take host evidence, the others refuse it naming both."""
    from typing import get_args

    from g2cons_plugins.config import Strategy
    from g2cons_plugins.retrieval import EVIDENCE_STRATEGIES, STRATEGIES, retrieve
    from g2cons_plugins.retrieval.strategies import TABLE, lookup

    assert set(TABLE) == set(get_args(Strategy)) and tuple(TABLE) == STRATEGIES
    assert EVIDENCE_STRATEGIES == tuple(n for n, s in TABLE.items() if s.evidence) == ("bridge", "dense")
    q = "Where did the river flood?"
    for name, s in TABLE.items():
        assert lookup(name) is s and s.name == name
        items = retrieve(index, q, beta=300, strategy=name)
        assert items and sum(x.n_tokens for x in items) <= 300
        if s.evidence:
            assert retrieve(index, q, beta=300, strategy=name, evidence={0: 0.5})
        else:
            with pytest.raises(InputError, match=rf"needs strategy 'bridge' or 'dense', not '{name}'"):
                retrieve(index, q, beta=300, strategy=name, evidence={0: 0.5})
    with pytest.raises(InputError, match="unknown strategy 'nope'"):
        retrieve(index, q, strategy="nope")
