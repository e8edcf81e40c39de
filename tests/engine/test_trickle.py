"""Trickle updates (g2cons_plugins.engine.update): the drift before refresh() stays within the stated bound, refresh()
restores exact equality with a fresh build, removed chunks are never retrieved, new ones at once, save refreshes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins import G2ConSConfig, G2ConSIndex, InputError
from g2cons_plugins import build as state_mod
from g2cons_plugins.chunks import make_chunks
from g2cons_plugins.engine import update as upd
from g2cons_plugins.engine.snapshot_updates import refreshed, with_added
from g2cons_plugins.graph import build_edges, pagerank
from g2cons_plugins.storage.derived_io import differences

EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"
QUESTIONS = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_questions.jsonl"
CFG = G2ConSConfig(theta_co=2, theta_sem=0.1)  # a fixed theta_sem: the edge rule of a trickle equals a rebuild's
STRATEGIES = ("bridge", "dense", "paper", "ppr", "e2")


def _docs() -> list[dict[str, str]]:
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{"id": r["id"], "text": f"{r['title']}\n{r['text']}"} for r in rows[:130]]


def _questions(n: int) -> list[str]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [str(r["question"]) for r in rows[:n]]


def _key(items: list) -> list[tuple[str, float, int]]:
    return [(i.unit_id, round(i.score, 6), i.n_tokens) for i in items]


@pytest.fixture(scope="module")
def docs() -> list[dict[str, str]]:
    return _docs()


def _trickled(docs: list[dict[str, str]], config: G2ConSConfig = CFG) -> tuple[G2ConSIndex, list[dict[str, str]]]:
    """Built on 100 chunks, then trickle: add 12, remove 3 (one of them added), add 15 more and one removed chunk
    back (its sentences come back to life). Returns the index and its chunks."""
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=config)
    idx.add(docs[100:112], exact=False)
    gone = [docs[5]["id"], docs[40]["id"], docs[105]["id"]]
    idx.remove(gone, exact=False)
    idx.add(docs[112:127] + [docs[40]], exact=False)
    kept = [d for d in docs[:127] if d["id"] not in (docs[5]["id"], docs[105]["id"])]
    return idx, kept


@pytest.mark.parametrize("level", ["unit", "sentence"])  # concept vectors from unit vectors (default) / Eq. 1
def test_refresh_equals_a_fresh_build(docs: list[dict[str, str]], level: str) -> None:  # default VECTOR_SLACK
    """After trickle adds and removes, refresh() gives exactly a fresh build: stored state, every derived array,
    and retrieve() under every strategy."""
    cfg = CFG.with_(vector_level=level)
    idx, kept = _trickled(docs, cfg)
    assert not idx.refreshed
    assert (idx.stored.sent_vecs is None) == (level == "unit")  # no sentence is embedded for unit-level vectors
    idx.refresh()
    assert idx.refreshed
    fresh = G2ConSIndex.build(kept, embedder="hash", config=cfg)
    a, b = idx.stored, fresh.stored
    assert [c.id for c in a.chunks] == [c.id for c in b.chunks]
    assert a.units == b.units and a.sentences == b.sentences
    np.testing.assert_array_equal(a.sent_vecs, b.sent_vecs)
    np.testing.assert_array_equal(a.unit_vecs, b.unit_vecs)
    np.testing.assert_array_equal(a.unit_parent, b.unit_parent)
    assert (a.sent_unit != b.sent_unit).nnz == 0
    assert differences(idx.derived, fresh.derived) == []
    for q in _questions(5):
        for s in STRATEGIES:
            assert _key(idx.retrieve(q, beta=500, strategy=s)) == _key(fresh.retrieve(q, beta=500, strategy=s))


def _common(a, b) -> tuple[np.ndarray, np.ndarray, list[str]]:  # type: ignore[no-untyped-def]
    words = sorted(set(a.vocab) & set(b.vocab))
    return (
        np.array([a.concept_index[w] for w in words]),
        np.array([b.concept_index[w] for w in words]),
        words,
    )


def _chunk_df(fresh: G2ConSIndex, words: list[str]) -> np.ndarray:
    """Chunks whose text contains each word (from a fresh build's term index: independent of the concepts)."""
    st, terms = fresh.stored, fresh.derived.terms
    unit_chunk = sp.csr_matrix(
        (np.ones(len(st.units)), (np.arange(len(st.units)), st.unit_parent)), shape=(len(st.units), len(st.chunks))
    )
    present = (unit_chunk.T @ st.sent_unit.T @ terms.counts).tocsc()
    col = {w: j for j, w in enumerate(terms.words)}
    return np.array([present[:, col[w]].count_nonzero() if w in col else 0 for w in words])


def test_drift_before_refresh_is_bounded(docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Before refresh: the vocabulary is unchanged; df (every concept), |S_w|, Eq. 1 vectors, incidences, name
    shares, Co / Dice edges and name df equal a fresh build's for the concepts both have; with VECTOR_SLACK 0 the
    edges equal build_edges on the trickled state; PageRank is the fixed point of the trickled graph to its
    tolerance."""
    monkeypatch.setattr(upd, "VECTOR_SLACK", 0.0)
    base = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx, kept = _trickled(docs)
    a = idx.derived
    assert a.vocab == base.derived.vocab
    fresh = G2ConSIndex.build(kept, embedder="hash", config=CFG)
    b = fresh.derived
    ia, ib, words = _common(a, b)
    assert len(words) > 0.8 * len(a.vocab)
    np.testing.assert_array_equal(a.df, _chunk_df(fresh, list(a.vocab)))
    np.testing.assert_array_equal(a.sentence_counts[ia], b.sentence_counts[ib])
    np.testing.assert_allclose(a.concept_vecs[ia], b.concept_vecs[ib], atol=1e-6)
    assert a.sum_norms is not None and b.sum_norms is not None  # the vectors were updated from their sums
    np.testing.assert_allclose(a.sum_norms[ia], b.sum_norms[ib], rtol=1e-5)
    np.testing.assert_array_equal(a.name_share[ia], b.name_share[ib])
    assert (a.unit_inc[:, ia] != b.unit_inc[:, ib]).nnz == 0
    assert (a.chunk_inc[:, ia] != b.chunk_inc[:, ib]).nnz == 0
    assert _edges_on(a, words) == _edges_on(b, words)
    again = build_edges(a.chunk_inc, a.concept_vecs, CFG.theta_co, a.edges.theta_sem, CFG.graph.theta_sem_percentile)
    for f in ("rows", "cols", "co", "dice"):
        np.testing.assert_array_equal(getattr(a.edges, f), getattr(again, f))
    np.testing.assert_allclose(a.edges.cosine, again.cosine, atol=1e-6)
    cold = pagerank(a.A, damping=CFG.graph.pagerank_damping)
    # both stop when a step moves < n * tol (L1): each is within n * tol * damping / (1 - damping) of the fixed point
    bound = 2 * len(a.vocab) * 1e-10 * CFG.graph.pagerank_damping / (1 - CFG.graph.pagerank_damping)
    assert 0 < np.abs(a.pagerank - cold).sum() < bound
    names = sorted(set(a.names) & set(b.names))
    na = {w: i for i, w in enumerate(a.names)}
    nb = {w: i for i, w in enumerate(b.names)}
    np.testing.assert_array_equal(a.name_df[[na[w] for w in names]], b.name_df[[nb[w] for w in names]])
    assert idx.stats.n_sentences == fresh.stats.n_sentences


def test_near_pairs_keep_the_edges_exact_without_redoing_every_moved_concept(
    docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With near pairs (the default), trickle adds leave some moved concepts' candidates not recomputed, and the
    edges still equal build_edges on the trickled state; refresh gives a build's near pairs."""
    monkeypatch.setattr(state_mod, "NEAR_MARGIN", 0.3)  # hash vectors move far: a wide band leaves some not redone
    cfg = G2ConSConfig(theta_co=2)  # theta_sem by percentile: candidates on both sides of it
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=cfg)
    assert idx.derived.edges.near.margin == 0.3 and len(idx.derived.edges.near.rows) > 0
    for i in range(100, 124, 3):
        idx.add(docs[i : i + 3], exact=False)
    a = idx.derived
    assert idx.snapshot.pending is not None and idx.snapshot.pending.stale.max() > 0  # some were not redone
    again = build_edges(
        a.chunk_inc, a.concept_vecs, cfg.theta_co, a.edges.theta_sem, cfg.graph.theta_sem_percentile, margin=0.3
    )
    for f in ("rows", "cols", "co", "dice"):
        np.testing.assert_array_equal(getattr(a.edges, f), getattr(again, f))
    np.testing.assert_allclose(a.edges.cosine, again.cosine, atol=1e-6)
    near = set(zip(a.edges.near.rows.tolist(), a.edges.near.cols.tolist(), strict=True))
    assert near <= set(zip(again.near.rows.tolist(), again.near.cols.tolist(), strict=True))
    idx.refresh()
    fresh = G2ConSIndex.build(list(idx.snapshot.stored.chunks), embedder="hash", config=cfg)
    for f in ("rows", "cols", "co", "cosine"):
        np.testing.assert_array_equal(getattr(idx.derived.edges.near, f), getattr(fresh.derived.edges.near, f))


def test_vector_slack_bounds_the_edge_drift(docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Without near pairs (an index saved before they existed) and with a vector slack, an edge differs from
    build_edges on the trickled state only for a pair whose cosine is within 2 * slack of theta_sem, and a kept
    edge's cosine is off by at most 2 * slack."""
    slack = 0.1
    monkeypatch.setattr(upd, "VECTOR_SLACK", slack)
    monkeypatch.setattr(state_mod, "NEAR_MARGIN", 0.0)
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    for i in range(100, 124, 3):  # small steps: some concepts move less than the slack
        idx.add(docs[i : i + 3], exact=False)
    a = idx.derived
    again = build_edges(a.chunk_inc, a.concept_vecs, CFG.theta_co, a.edges.theta_sem, CFG.graph.theta_sem_percentile)
    mine = dict(
        zip(zip(a.edges.rows.tolist(), a.edges.cols.tolist(), strict=True), a.edges.cosine.tolist(), strict=True)
    )
    true = dict(zip(zip(again.rows.tolist(), again.cols.tolist(), strict=True), again.cosine.tolist(), strict=True))
    assert idx.snapshot.pending is not None and idx.snapshot.pending.stale.max() > 0  # some were not redone
    for pair in set(mine) ^ set(true):
        r, c = pair
        assert abs(float(a.concept_vecs[r] @ a.concept_vecs[c]) - a.edges.theta_sem) <= 2 * slack + 1e-6
    for pair in set(mine) & set(true):
        assert abs(mine[pair] - true[pair]) <= 2 * slack + 1e-6
    np.testing.assert_array_equal(
        a.edges.dice, (2.0 * a.edges.co / (a.df[a.edges.rows] + a.df[a.edges.cols])).astype(np.float32)
    )


def _edges_on(d, words: list[str]) -> dict[tuple[str, str], tuple[int, float]]:  # type: ignore[no-untyped-def]
    keep = set(words)
    out = {}
    for r, c, k, x in zip(d.edges.rows, d.edges.cols, d.edges.co, d.edges.dice, strict=True):
        u, v = sorted((d.vocab[r], d.vocab[c]))
        if u in keep and v in keep:
            out[(u, v)] = (int(k), float(x))
    return out


def test_removed_never_retrieved_new_retrieved_at_once(docs: list[dict[str, str]]) -> None:
    """A trickled index never returns a removed chunk; a new chunk is found at once by its text (dense and BM25)."""
    idx, _ = _trickled(docs)
    gone = {docs[5]["id"], docs[105]["id"]}
    for q in _questions(8) + [docs[5]["text"], docs[105]["text"]]:
        for s in STRATEGIES:
            assert not {i.parent_id for i in idx.retrieve(q, beta=800, strategy=s)} & gone
    for d in docs[112:127:3] + [docs[40]]:
        got = {i.parent_id for i in idx.retrieve(d["text"], beta=800)}
        assert d["id"] in got
    scores = idx.snapshot.lexical.scores(docs[120]["text"])
    assert idx.snapshot.unit_pos[idx.snapshot.units[int(np.argmax(scores))].id] == int(np.argmax(scores))
    assert idx.snapshot.units[int(np.argmax(scores))].parent_id == docs[120]["id"]


def test_save_refreshes_first(docs: list[dict[str, str]], tmp_path: Path) -> None:
    """save() of a trickled index refreshes it first: the file holds (and load gives) exactly a fresh build."""
    idx, kept = _trickled(docs)
    idx.save(tmp_path / "ix")
    assert idx.refreshed
    loaded = G2ConSIndex.load(tmp_path / "ix", verify=True)
    fresh = G2ConSIndex.build(kept, embedder="hash", config=CFG)
    assert differences(loaded.derived, fresh.derived) == []
    q = _questions(1)[0]
    assert _key(loaded.retrieve(q, beta=500)) == _key(fresh.retrieve(q, beta=500))


def test_policy_and_drift_budget(docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """By default a small corpus is updated exactly; above MIN_CHUNKS a small change trickles, until the drift
    budget is spent: then the update is exact (a refresh). exact=True always refreshes."""
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.add(docs[100:101])
    assert idx.refreshed
    monkeypatch.setattr(upd, "MIN_CHUNKS", 50)
    monkeypatch.setattr(upd, "MAX_SHARE", 0.02)
    idx.add(docs[101:103])  # 2 of 101 chunks: within MAX_SHARE and the budget
    assert not idx.refreshed
    idx.remove([docs[101]["id"], docs[0]["id"]])
    assert not idx.refreshed and idx.snapshot.pending is not None and idx.snapshot.pending.n_changed == 4
    for i in range(103, 109, 2):  # 4 + 2 + 2 + 2 = 10 of 101: still within the 10% budget
        idx.add(docs[i : i + 2])
    assert not idx.refreshed
    idx.add(docs[109:113])  # 14 > 10.1: exact
    assert idx.refreshed
    idx.add(docs[113:115])
    assert not idx.refreshed
    idx.add(docs[115:116], exact=True)
    assert idx.refreshed
    idx.add(docs[116:120])  # 4 of 114 > 2%: exact
    assert idx.refreshed


def test_a_change_touching_too_much_of_the_graph_is_updated_exactly(
    docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the pair-work limit (PAIR_WORK_MAX, PAIR_WORK_SHARE), the default policy falls back to an exact
    update (equal to a fresh build); a forced trickle (exact=False) still trickles."""
    monkeypatch.setattr(upd, "MIN_CHUNKS", 50)
    monkeypatch.setattr(upd, "MAX_SHARE", 0.05)
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.add(docs[100:102])
    assert not idx.refreshed  # within every limit: a trickle
    monkeypatch.setattr(upd, "PAIR_WORK_MAX", 0)
    monkeypatch.setattr(upd, "PAIR_WORK_SHARE", 0.0)
    idx.add(docs[102:104])
    assert idx.refreshed  # too much pair work: exact
    fresh = G2ConSIndex.build(docs[:104], embedder="hash", config=CFG)
    assert differences(idx.derived, fresh.derived) == []
    idx.remove([docs[3]["id"]])
    assert idx.refreshed
    idx.add(docs[104:106], exact=False)
    assert not idx.refreshed


def test_unsupported_configs_refuse_a_forced_trickle(docs: list[dict[str, str]]) -> None:
    """exact=False on a config the trickle path does not support (paper mode, extracted incidence...) raises."""
    for cfg in (G2ConSConfig(mode="paper"), G2ConSConfig(incidence="extracted"), G2ConSConfig(ngram_max=2)):
        idx = G2ConSIndex.build(docs[:40], embedder="hash", config=cfg)
        with pytest.raises(InputError, match="exact=False"):
            idx.add(docs[40:41], exact=False)
        idx.add(docs[40:41])  # the default policy updates exactly
        assert idx.refreshed


def test_two_branches_from_one_snapshot(docs: list[dict[str, str]]) -> None:
    """Two trickle adds from the same snapshot (the shared sentence map is append-only) are both right."""
    base = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG).snapshot
    first = with_added(base, make_chunks(docs[100:105]), exact=False)
    second = with_added(base, make_chunks(docs[105:110]), exact=False)
    third = with_added(first, make_chunks(docs[110:112]), exact=False)
    for snap, rows in ((second, docs[:100] + docs[105:110]), (third, docs[:105] + docs[110:112])):
        fresh = G2ConSIndex.build(rows, embedder="hash", config=CFG)
        assert differences(refreshed(snap).derived, fresh.derived) == []
    assert base.pending is None and len(base.stored.chunks) == 100


def test_trickle_checks_ids(docs: list[dict[str, str]]) -> None:
    """Known ids, unknown ids and unit-id collisions raise and change nothing."""
    idx = G2ConSIndex.build(docs[:60], embedder="hash", config=CFG)
    before = idx.snapshot
    with pytest.raises(InputError, match="already in the index"):
        idx.add(docs[59:61], exact=False)
    with pytest.raises(InputError, match="unknown chunk ids"):
        idx.remove(["nope"], exact=False)
    sub = next(u for u in idx.units if u.id != u.parent_id)  # a unit of a chunk cut in several
    with pytest.raises(InputError, match="collides"):
        idx.add([{"id": sub.id, "text": "A clash."}], exact=False)
    with pytest.raises(InputError, match="collides"):
        idx.add([{"id": sub.id, "text": "A clash."}], exact=True)
    assert idx.snapshot is before


@pytest.mark.parametrize("level", ["unit", "sentence"])
def test_known_sentences_in_new_and_removed_units_move_the_vectors(docs: list[dict[str, str]], level: str) -> None:
    """New chunks made of known sentences (and the removal of a chunk whose sentences other chunks keep): with
    unit-level vectors a concept's vector moves with the units holding it, so the trickled vectors equal a fresh
    build's; with sentence-level vectors nothing moves."""
    cfg = CFG.with_(vector_level=level)
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=cfg)
    copies = [{"id": f"copy{i}", "text": docs[i]["text"]} for i in (7, 8, 9)]
    idx.add(copies, exact=False)
    idx.remove([docs[7]["id"]], exact=False)
    assert not idx.refreshed
    kept = [d for d in docs[:100] if d["id"] != docs[7]["id"]] + copies
    fresh = G2ConSIndex.build(kept, embedder="hash", config=cfg)
    a, b = idx.derived, fresh.derived
    ia, ib, _ = _common(a, b)
    np.testing.assert_allclose(a.concept_vecs[ia], b.concept_vecs[ib], atol=1e-6)
    np.testing.assert_allclose(a.sum_norms[ia], b.sum_norms[ib], rtol=1e-5)  # type: ignore[index]
    np.testing.assert_array_equal(a.sentence_counts[ia], b.sentence_counts[ib])


def test_an_index_without_sum_norms_sums_the_moved_vectors_again(docs: list[dict[str, str]]) -> None:
    """A snapshot from before the sum norms existed (None) still trickles: the moved concepts' vectors are summed
    again from their rows, equal to a fresh build's, and no sum norms are made up for it."""
    from dataclasses import replace

    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    snap = idx.snapshot
    old = G2ConSIndex.from_snapshot(replace(snap, derived=replace(snap.derived, sum_norms=None)))
    old.add(docs[100:103], exact=False)
    assert not old.refreshed and old.derived.sum_norms is None
    fresh = G2ConSIndex.build(docs[:103], embedder="hash", config=CFG)
    ia, ib, _ = _common(old.derived, fresh.derived)
    np.testing.assert_allclose(old.derived.concept_vecs[ia], fresh.derived.concept_vecs[ib], atol=1e-6)
