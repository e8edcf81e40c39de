"""The streaming build (g2cons_plugins.engine.streaming) equals the in-memory build field by field."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.build import store
from g2cons_plugins.chunks import make_chunks
from g2cons_plugins.embedders import get_embedder
from g2cons_plugins.engine.streaming import spool_chunks, stream_store
from g2cons_plugins.errors import InputError
from g2cons_plugins.text import get_tokenizer
from tests.test_build_speed import EXPECTED, _passages, index_digest


def _stream_index(rows: list[dict[str, Any]], config: G2ConSConfig, batch: int) -> G2ConSIndex:
    emb, tok = get_embedder("hash"), get_tokenizer(None)
    stored = stream_store(spool_chunks(rows), emb, tok, config, batch=batch)
    return G2ConSIndex(stored, emb, config, tok)


@pytest.mark.parametrize("batch", [1, 7, 4096])
def test_streamed_index_equals_the_digests_of_the_in_memory_build(batch: int) -> None:
    assert index_digest(_stream_index(_passages(), G2ConSConfig(), batch)) == EXPECTED


def test_streamed_store_equals_store_in_paper_mode_with_sentence_vectors() -> None:
    rows = _passages()[::3]
    config = G2ConSConfig(mode="paper")
    emb, tok = get_embedder("hash"), get_tokenizer(None)
    want = store(make_chunks(rows), emb, tok, config, False)
    got = stream_store(spool_chunks(reversed(rows)), emb, tok, config, batch=5)
    assert got.sent_vecs is not None and want.sent_vecs is not None
    np.testing.assert_array_equal(got.sent_vecs, want.sent_vecs)
    np.testing.assert_array_equal(got.unit_vecs, want.unit_vecs)
    assert list(got.sentences) == list(want.sentences)
    assert list(got.units) == list(want.units)
    assert list(got.chunks) == list(want.chunks)
    np.testing.assert_array_equal(got.chunk_tokens, want.chunk_tokens)
    assert (got.sent_unit != want.sent_unit).nnz == 0


def test_metadata_json_cannot_give_back_is_kept_as_given() -> None:
    rows = [
        {"id": "b", "text": "Paris is in France.", "metadata": {"pages": (1, 2), "n": 1.0}},
        {"id": "a", "text": "Berlin is in Germany.", "metadata": {"title": "Berlin", "tags": ["x"]}},
        {"id": "c", "text": "Rome is in Italy."},
    ]
    table = spool_chunks(rows)
    assert list(table.ids) == ["a", "b", "c"]
    assert table[1].metadata == {"pages": (1, 2), "n": 1.0} and isinstance(table[1].metadata["pages"], tuple)
    assert table[0].metadata == {"title": "Berlin", "tags": ["x"]} and table[2].metadata == {}


def test_spooling_checks_input_as_make_chunks_does() -> None:
    with pytest.raises(InputError, match="duplicate chunk id 'a'"):
        spool_chunks([("a", "one text"), ("b", "two"), ("a", "another text")])
    with pytest.raises(InputError, match="empty corpus"):
        spool_chunks([])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        table = spool_chunks([("a", "one text"), ("a", "one text")])
    assert len(table) == 1 and any("given twice" in str(w.message) for w in seen)


def test_a_unit_id_that_is_another_chunks_id_is_refused() -> None:
    long = " ".join(f"Sentence number {i} is about a city." for i in range(200))
    rows = [("x", long), ("x::1", "Another chunk.")]
    emb, tok = get_embedder("hash"), get_tokenizer(None)
    with pytest.raises(InputError, match="collides"):
        stream_store(spool_chunks(rows), emb, tok, G2ConSConfig(), batch=1)


def test_a_saved_streamed_index_has_the_same_files_as_the_in_memory_build(tmp_path: Any) -> None:
    rows = _passages()[::2]
    config = G2ConSConfig()
    emb, tok = get_embedder("hash"), get_tokenizer(None)
    rows[3] = {**rows[3], "metadata": {"pages": (1, 2)}}  # kept as given in memory, JSON on disk
    built = G2ConSIndex(store(make_chunks(rows), emb, tok, config, False), emb, config, tok)
    streamed = _stream_index(rows, config, 9)
    assert streamed.chunks[[c.id for c in streamed.chunks].index(rows[3]["id"])].metadata == {"pages": (1, 2)}
    built.save(tmp_path / "a")
    streamed.save(tmp_path / "b")
    a, b = ({p.name: p.read_bytes() for p in (tmp_path / d).rglob("*.np*")} for d in "ab")
    assert "stored.npz" in a and a.keys() == b.keys()
    assert [name for name in a if a[name] != b[name]] == []
    loaded = G2ConSIndex.load(tmp_path / "b", embedder=emb)
    assert index_digest(loaded) == index_digest(built)


def test_build_leaves_no_memo_of_its_texts(tmp_path: Any) -> None:
    """The in-memory memo of the build's texts is emptied once they are embedded (no query asks for them); the
    disk cache keeps every vector, and the stored vectors are those of a build without a memo."""
    from g2cons_plugins.embedders.cache import CachedEmbedder

    rows, config, tok = _passages()[::4], G2ConSConfig(), get_tokenizer(None)
    memo = CachedEmbedder(get_embedder("hash"))
    on_disk = CachedEmbedder(get_embedder("hash"), cache_dir=tmp_path)
    plain = stream_store(spool_chunks(rows), get_embedder("hash"), tok, config, batch=16)
    for emb in (memo, on_disk):
        got = stream_store(spool_chunks(rows), emb, tok, config, batch=16)
        np.testing.assert_array_equal(got.unit_vecs, plain.unit_vecs)
        assert emb.n_computed > 0
    assert len(memo) == 0
    assert len(on_disk) == on_disk.n_computed  # every computed vector is in the database
    assert all(u.text in on_disk for u in plain.units[:5])


def test_a_build_reports_the_seconds_of_each_stage() -> None:
    """``timings`` names every stage a build runs (what ``bench.py`` records per stage at scale), and an update
    keeps the build's figures beside its own."""
    idx = G2ConSIndex.build(_passages()[:60], embedder="hash")
    t = idx.timings
    assert list(t) == ["read", "split_and_count", "embed", "derive", "unit_index"]
    assert all(v >= 0 for v in t.values()) and t["split_and_count"] > 0 and t["derive"] > 0
    idx.add([{"id": "zz-new", "text": "A new passage about Paris."}], exact=False)
    assert {"read", "unit_index", "update_trickle"} <= set(idx.timings)
