"""Deferred concept-graph updates of small adds to a large index (g2cons_plugins.engine.update.Deferred): while added
chunks wait, the concept vectors, edges and PageRank are the previous snapshot's and everything else of the new
chunks is in; the add that passes DEFER_CHUNKS, a removal or a refresh makes the waiting update, after which the
state equals the same adds made one by one without waiting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.engine import update as upd

EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"
CFG = G2ConSConfig(theta_co=2, theta_sem=0.1)  # a fixed theta_sem: a trickle's edge rule equals a rebuild's


@pytest.fixture(scope="module")
def docs() -> list[dict[str, str]]:
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{"id": r["id"], "text": f"{r['title']}\n{r['text']}"} for r in rows[:130]]


def _waiting(monkeypatch: pytest.MonkeyPatch, chunks: int | None) -> None:
    """Defer on any index (the corpus here is small) up to ``chunks`` waiting chunks (None: never defer)."""
    monkeypatch.setattr(upd, "DEFER_MIN_CHUNKS", 0 if chunks is not None else 10**12)
    monkeypatch.setattr(upd, "DEFER_CHUNKS", chunks or 0)


def _graph(idx: G2ConSIndex) -> dict[str, np.ndarray]:
    dv = idx.derived
    e = dv.edges
    return {
        "rows": e.rows,
        "cols": e.cols,
        "co": e.co,
        "cosine": e.cosine,
        "dice": e.dice,
        "near.rows": e.near.rows,
        "near.cols": e.near.cols,
        "vecs": dv.concept_vecs,
        "counts": dv.sentence_counts,
        "share": dv.name_share,
        "pagerank": dv.pagerank,
        "df": dv.df,
    }


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    for k in a:
        if a[k].dtype.kind == "f":
            np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=k)
        else:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("level", ["unit", "sentence"])
def test_waiting_adds_then_flush_equal_adds_one_by_one(
    docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    config = CFG.with_(vector_level=level)
    base = G2ConSIndex.build(docs[:100], embedder="hash", config=config)
    before = _graph(base)

    _waiting(monkeypatch, None)
    ref = G2ConSIndex.from_snapshot(base.snapshot)
    for lo, hi in ((100, 103), (103, 105), (105, 112)):
        ref.add(docs[lo:hi], exact=False)
        assert ref.snapshot.pending is not None and ref.snapshot.pending.deferred is None

    _waiting(monkeypatch, 5)
    idx = G2ConSIndex.from_snapshot(base.snapshot)
    idx.add(docs[100:103], exact=False)
    idx.add(docs[103:105], exact=False)  # 5 chunks wait
    wait = idx.snapshot.pending.deferred
    assert wait is not None and wait.chunks.shape[0] == 5
    now = _graph(idx)
    for k in ("rows", "cols", "vecs", "pagerank", "counts"):  # the concept graph is the build's while they wait
        np.testing.assert_array_equal(now[k], before[k], err_msg=k)
    assert not np.array_equal(now["df"], before["df"])  # df is exact at once
    assert idx.stats.n_chunks == 105
    new_ids = {u.parent_id for u in idx.units if u.parent_id in {d["id"] for d in docs[100:105]}}
    assert len(new_ids) == 5  # waiting chunks are stored, with their units

    idx.add(docs[105:112], exact=False)  # passes DEFER_CHUNKS: every waiting chunk is re-graphed
    assert idx.snapshot.pending.deferred is None
    _same(_graph(idx), _graph(ref))
    assert idx.stats == ref.stats


def test_removal_flushes_first(docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    base = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    gone = [docs[7]["id"], docs[101]["id"]]  # one of them waits
    _waiting(monkeypatch, None)
    ref = G2ConSIndex.from_snapshot(base.snapshot)
    ref.add(docs[100:104], exact=False)
    ref.remove(gone, exact=False)
    _waiting(monkeypatch, 10)
    idx = G2ConSIndex.from_snapshot(base.snapshot)
    idx.add(docs[100:104], exact=False)
    assert idx.snapshot.pending.deferred is not None
    idx.remove(gone, exact=False)
    assert idx.snapshot.pending.deferred is None
    _same(_graph(idx), _graph(ref))
    assert docs[101]["id"] not in {u.parent_id for u in idx.units}


def test_refresh_and_save_with_waiting_chunks_equal_a_fresh_build(
    docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _waiting(monkeypatch, 10)
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.add(docs[100:104], exact=False)
    assert idx.snapshot.pending.deferred is not None
    idx.save(tmp_path / "i")  # a save refreshes first: what is saved is exact
    fresh = G2ConSIndex.build(docs[:104], embedder="hash", config=CFG)
    _same(_graph(G2ConSIndex.load(tmp_path / "i")), _graph(fresh))
    assert idx.snapshot.pending is None


def test_waiting_chunks_are_retrievable(docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    _waiting(monkeypatch, 10)
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    new = docs[110]
    idx.add([new], exact=False)
    assert idx.snapshot.pending.deferred is not None
    words = new["text"].split("\n", 1)[1][:200]
    assert new["id"] in {r.parent_id for r in idx.retrieve(words, beta=2000)}
