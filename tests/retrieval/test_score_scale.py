"""``G2ConSConfig.score_scale``: the bridge bonus and the lexical weight measured in the query's spread of cosines.

An embedder whose cosines are an affine compression of another's (cos' = b cos + 1 - b, as e5's crowd near 0.8)
must give the same ranking under ``"spread"``; under ``"cosine"`` the same bonus weighs 1 / b times more."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.embedders import HashEmbedder
from g2cons_plugins.errors import InputError
from g2cons_plugins.retrieval import retrieve, score_spread

B = 0.1  # compression: cosines of the compressed embedder = B x hash cosines + 1 - B

QUERIES = (
    "Which port city lies near the mouth of the Vistula?",
    "Vistula Baltic Sea",
    "Who founded the company and where was he born?",
    "What river flows through the capital?",
)


class CompressedHash:
    """[sqrt(B) v, sqrt(1 - B)] for the hash embedding v: unit norm, cos' = B cos + 1 - B."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.dim = self.inner.dim + 1
        self.name = "compressed-hash"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        v = self.inner.embed(texts).astype(np.float64)
        out = np.hstack([np.sqrt(B) * v, np.full((len(v), 1), np.sqrt(1 - B))])
        return out.astype(np.float32)


def _pair(corpus: list[dict[str, str]], **changes: object) -> tuple[G2ConSIndex, G2ConSIndex]:
    cfg = G2ConSConfig(unit_tokens=None, **changes)  # type: ignore[arg-type]
    return (G2ConSIndex.build(corpus, embedder="hash", config=cfg),
            G2ConSIndex.build(corpus, embedder=CompressedHash(), config=cfg))


def _ranking(index: G2ConSIndex, q: str) -> list[str]:
    return [x.unit_id for x in retrieve(index, q, beta=100_000)]


def test_spread_ranking_does_not_depend_on_the_cosine_scale(corpus: list[dict[str, str]]) -> None:
    # bridge_link="indicator": w = 1 (the default weighs a bridge by a ratio of cosines, which is not affine-free)
    plain, squeezed = _pair(corpus, score_scale="spread", lexical_weight=0.1, bridge_link="indicator")
    for q in QUERIES:
        a = retrieve(plain, q, beta=100_000)
        b = retrieve(squeezed, q, beta=100_000)
        assert [x.unit_id for x in a] == [x.unit_id for x in b]
        assert any(x.reason.get("via") == "bridge" for x in a)  # the bonus is in play
        # every score (cos + bonus) moves by the same affine map as the cosines
        np.testing.assert_allclose([x.score for x in b], [B * x.score + 1 - B for x in a], atol=1e-4)
        spread = score_spread(_dense(plain, q))
        assert score_spread(_dense(squeezed, q)) == pytest.approx(B * spread, rel=1e-3)


def test_cosine_bonus_outweighs_compressed_cosines(corpus: list[dict[str, str]]) -> None:
    plain, squeezed = _pair(corpus, score_scale="cosine", lexical_weight=0.1, bridge_link="indicator")
    assert any(_ranking(plain, q) != _ranking(squeezed, q) for q in QUERIES)


def test_score_scale_is_validated() -> None:
    with pytest.raises(InputError, match="score_scale"):
        G2ConSConfig(score_scale="z")  # type: ignore[arg-type]


def _dense(index: G2ConSIndex, q: str) -> object:
    from g2cons_plugins.retrieval import DenseScores

    snap = index.snapshot
    return DenseScores(snap, snap.embed_query(q))


def test_vector_index_path_keeps_the_hybrid_term_without_a_full_scan(
    corpus: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a vector index the hybrid term is computed on candidates only: no unit-wide cosine scan, the same
    ranking as the exact path (the index finds every true neighbour on a corpus this small)."""
    from g2cons_plugins import retrieval

    pytest.importorskip("usearch")
    index = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(unit_tokens=None, ann_threshold=1))
    assert index.snapshot.unit_ann is not None and index.config.retrieval.lexical_weight > 0
    exact = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(unit_tokens=None))
    built: list[int] = []
    scans: list[int] = []
    real, real_full = retrieval.HybridScores.__init__, retrieval.DenseScores.full

    def spy(self: object, *args: object) -> None:
        built.append(1)
        real(self, *args)  # type: ignore[arg-type]

    def full(self: retrieval.DenseScores) -> np.ndarray:
        scans.append(1)
        return real_full(self)

    want = retrieve(exact, QUERIES[0], beta=400)
    monkeypatch.setattr(retrieval.HybridScores, "__init__", spy)
    monkeypatch.setattr(retrieval.DenseScores, "full", full)
    items = retrieve(index, QUERIES[0], beta=400)
    assert built and items  # the hybrid term is there (a corpus this small is scanned: K >= n)
    assert [i.unit_id for i in items] == [i.unit_id for i in want]
    np.testing.assert_allclose([i.score for i in items], [i.score for i in want], atol=1e-5)
    assert any(x.reason.get("source") == "bm25" for x in items)  # the lexical seed still applies


def test_spread_with_a_vector_index_is_the_std_of_the_strided_sample(
    corpus: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a unit index the spread comes from the sample's covariance (one d x d product a query): it equals the
    std of the sample's cosines, and for a sample of every unit the exact path's spread."""
    pytest.importorskip("usearch")
    from g2cons_plugins.retrieval import scores

    cfg = G2ConSConfig(unit_tokens=None, ann_threshold=1)
    index = G2ConSIndex.build(corpus, embedder="hash", config=cfg)
    exact = G2ConSIndex.build(corpus, embedder="hash", config=G2ConSConfig(unit_tokens=None))
    vecs = np.asarray(index.snapshot.stored.unit_vecs, dtype=np.float64)
    monkeypatch.setattr(scores, "SPREAD_SAMPLE", 3)  # a strided sample of about 3 units
    step = max(1, len(vecs) // 3)
    for q in QUERIES:
        sc = _dense(index, q)
        assert sc.ann is not None  # type: ignore[attr-defined]
        qv = np.asarray(sc.qv, dtype=np.float64)  # type: ignore[attr-defined]
        assert score_spread(sc) == pytest.approx(float(np.std(vecs[::step] @ qv)), rel=1e-6)  # type: ignore[arg-type]
    index = G2ConSIndex.from_snapshot(dataclasses.replace(index.snapshot))  # a new snapshot: its memo starts empty
    monkeypatch.setattr(scores, "SPREAD_SAMPLE", len(vecs))  # every unit: the exact path's value
    for q in QUERIES:
        assert score_spread(_dense(index, q)) == pytest.approx(score_spread(_dense(exact, q)), rel=1e-5)  # type: ignore[arg-type]
