"""The unit graph a streamed build makes while it embeds (engine.stream_graph), and the local split thread."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

pytest.importorskip("usearch")

from g2cons_plugins import G2ConSConfig, G2ConSIndex  # noqa: E402
from g2cons_plugins.arrays.unit_hnsw import GraphBuilder, UnitANN, UnitANNParams  # noqa: E402
from g2cons_plugins.embedders import get_embedder  # noqa: E402
from g2cons_plugins.engine import streaming  # noqa: E402
from g2cons_plugins.engine.stream_graph import StreamGraph  # noqa: E402
from g2cons_plugins.engine.streaming import spool_chunks, stream_store  # noqa: E402
from g2cons_plugins.storage.spill import can_spill  # noqa: E402
from g2cons_plugins.storage.spool import ArraySpool  # noqa: E402
from g2cons_plugins.text import get_tokenizer  # noqa: E402
from tests.test_build_speed import _passages  # noqa: E402


def _finds_itself(ann: UnitANN, vecs: np.ndarray, rows: range) -> float:
    """Share of ``rows`` whose own vector finds the row among the index's candidates."""
    hits = 0
    for i in rows:
        got = ann.search(vecs[i], 10)
        hits += got is not None and i in set(np.asarray(got).tolist())
    return hits / len(rows)


def _streamed(config: G2ConSConfig, batch: int) -> Any:
    emb, tok = get_embedder("hash"), get_tokenizer(None)
    return stream_store(spool_chunks(_passages()), emb, tok, config, batch=batch), emb, tok


def test_a_streamed_build_hands_its_unit_graph_to_the_snapshot() -> None:
    n_chunks = len(_passages())
    stored, emb, tok = _streamed(G2ConSConfig(), 16)
    n_units = len(stored.unit_parent)
    config = G2ConSConfig().with_(ann_threshold=n_chunks, ann_kind="hnsw")
    stored, emb, tok = _streamed(config, 16)
    assert isinstance(stored.unit_ann, UnitANN) and len(stored.unit_ann) == n_units
    assert "unit_graph_wait" in stored.timings
    graph = stored.unit_ann
    index = G2ConSIndex(stored, emb, config, tok)
    assert index._snapshot.unit_ann is graph  # taken as it is, not built again
    assert index.stored.unit_ann is None  # the snapshot's own state does not keep it (an update must not reuse it)
    np.testing.assert_array_equal(graph.keys, np.arange(n_units, dtype=np.uint64))
    # every row is in the graph under its own key, those read back from the spool (late start) as the others
    assert _finds_itself(graph, np.asarray(stored.unit_vecs), range(0, n_units, 7)) >= 0.95
    assert graph._shared.view == can_spill()  # the graph is a file map during the derive, as a loaded one
    # an update copies it into memory and goes on from it
    index.add([{"id": "zz-new", "text": "Quokkas live on Rottnest Island near Perth in Western Australia."}])
    new = index._snapshot
    assert len(new.unit_ann) == n_units + 1
    row = new.unit_pos["zz-new"]
    assert _finds_itself(new.unit_ann, np.asarray(new.stored.unit_vecs), range(row, row + 1)) == 1.0


def test_no_graph_where_the_snapshot_gets_none() -> None:
    stored, _, _ = _streamed(G2ConSConfig().with_(ann_threshold=10**6), 16)
    assert stored.unit_ann is None and "unit_graph_wait" not in stored.timings


def test_the_graph_builder_adds_in_order_and_closes() -> None:
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    builder = GraphBuilder(16, UnitANNParams(quantization="f32"), threads=1)
    for a in range(0, 300, 64):
        builder.add(vecs[a : a + 64])
    builder.add(vecs[:0])  # an empty batch adds nothing
    ann = builder.finish()
    assert len(ann) == 300
    assert _finds_itself(ann, vecs, range(300)) == 1.0
    builder.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        builder.add(vecs[:3])


def _unit_rows(n: int, seed: int) -> np.ndarray:
    vecs = np.random.default_rng(seed).normal(size=(n, 16)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def _fed(graph: StreamGraph, units_per_batch: list[int], chunks_per_batch: int) -> tuple[Any, np.ndarray]:
    spool = ArraySpool(np.float32, (16,))
    vecs = _unit_rows(sum(units_per_batch), 1)
    at = 0
    for i, n in enumerate(units_per_batch):
        spool.append(vecs[at : at + n])
        at += n
        graph.after_batch(spool, vecs[at - n : at], (i + 1) * chunks_per_batch)
    return graph.finish(at), vecs


def test_the_graph_starts_late_when_the_corpus_passes_the_size_late() -> None:
    # 10 chunks a batch, 100 chunks: one unit per chunk at first (forecast 110 < 200), then many
    config = G2ConSConfig().with_(ann_threshold=200, ann_kind="hnsw")
    graph = StreamGraph(config, 100)
    ann, vecs = _fed(graph, [10] * 8 + [90, 90], 10)
    assert len(ann) == 260  # the 80 + 90 rows before the start were read back from the spool
    np.testing.assert_array_equal(ann.keys, np.arange(260, dtype=np.uint64))
    assert _finds_itself(ann, vecs, range(260)) >= 0.98


def test_a_graph_started_on_a_forecast_the_corpus_misses_is_dropped() -> None:
    # 5 units a chunk in the first batch (forecast 550 >= 300), one a chunk after: 140 units in all
    config = G2ConSConfig().with_(ann_threshold=300, ann_kind="hnsw")
    graph = StreamGraph(config, 100)
    spool = ArraySpool(np.float32, (16,))
    first = _unit_rows(50, 2)
    spool.append(first)
    graph.after_batch(spool, first, 10)
    assert graph._builder is not None  # started on the forecast
    rest = _unit_rows(90, 3)
    spool.append(rest)
    graph.after_batch(spool, rest, 100)
    assert graph.finish(140) is None


def test_a_failed_split_stops_the_split_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = streaming.split_units

    def failing(chunk: Any, tok: Any, size: Any) -> Any:
        calls.append(chunk.id)
        if len(calls) > 20:
            raise ValueError("no split for you")
        return real(chunk, tok, size)

    monkeypatch.setattr(streaming, "split_units", failing)
    emb, tok = get_embedder("hash"), get_tokenizer(None)
    with pytest.raises(ValueError, match="no split for you"):
        stream_store(spool_chunks(_passages()), emb, tok, G2ConSConfig(), batch=8)
    assert len(calls) <= 21 + 8  # at most the batch split ahead was started
    assert not [t for t in threading.enumerate() if t.name.startswith("g2cons-split")]
