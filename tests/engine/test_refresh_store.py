"""The stored state a refresh derives from (engine.refresh_store.refreshed_stored) equals what
``store(chunks, previous=...)`` makes from the same trickle state, field by field and bit for bit (built and loaded
indexes, adds and removes, sentence vectors), keeps the columns and maps as they are, copies the vector of the
last unit with the same text where two such vectors differ, and says None where store must run."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_build_speed import _feed

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.build import Stored, store
from g2cons_plugins.chunks import Unit
from g2cons_plugins.engine.refresh_store import _same_text_same_vector, refreshed_stored

EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"
CFG = G2ConSConfig(theta_co=2, theta_sem=0.1)


def _docs() -> list[dict[str, str]]:
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{"id": r["id"], "text": f"{r['title']}\n{r['text']}"} for r in rows[:130]]


def _trickled(idx: G2ConSIndex, docs: list[dict[str, str]]) -> G2ConSIndex:
    idx.add(docs[100:112], exact=False)
    idx.remove([docs[5]["id"], docs[40]["id"], docs[105]["id"]], exact=False)
    idx.add(docs[112:127] + [docs[40]], exact=False)
    assert not idx.refreshed
    return idx


def _digests(st: Stored) -> dict[str, str]:
    out = {}
    for name in st.__dataclass_fields__:
        if name != "timings":
            h = hashlib.sha256()
            _feed(h, getattr(st, name))
            out[name] = h.hexdigest()
    return out


def _equal_to_store(idx: G2ConSIndex) -> Stored:
    snap = idx.snapshot
    got = refreshed_stored(snap.stored, snap.config)
    assert got is not None
    want = store(snap.stored.chunks, snap.embedder, snap.tokenizer, snap.config, False, previous=snap.stored)
    assert _digests(got) == _digests(want)
    assert got.units is snap.stored.units and got.chunks is snap.stored.chunks  # kept, not materialised
    return got


@pytest.mark.parametrize("level", ["unit", "sentence"])
def test_equals_store_on_a_built_index_after_adds_and_removes(level: str) -> None:
    docs = _docs()
    cfg = replace(CFG, graph=replace(CFG.graph, vector_level=level))
    idx = _trickled(G2ConSIndex.build(docs[:100], embedder="hash", config=cfg), docs)
    got = _equal_to_store(idx)
    assert (got.sent_vecs is not None) == (level == "sentence")
    assert got.unit_vecs is idx.snapshot.stored.unit_vecs  # the same vectors: no copy


def test_equals_store_on_a_loaded_index(tmp_path: Path) -> None:
    docs = _docs()
    G2ConSIndex.build(docs[:100], embedder="hash", config=CFG).save(tmp_path / "ix")
    idx = _trickled(G2ConSIndex.load(tmp_path / "ix"), docs)
    _equal_to_store(idx)
    fresh = G2ConSIndex.build(
        [d for d in docs[:127] if d["id"] not in (docs[5]["id"], docs[105]["id"])], embedder="hash", config=CFG
    )
    idx.refresh()
    assert _digests(idx.stored) == _digests(fresh.stored)


def test_on_a_loaded_index_the_pages_of_the_unit_texts_are_dropped_as_they_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each pass over the unit texts unmaps what it read of their file maps every PAGE_DROP_UNITS units and at
    its end (a loaded 1M index: ~1 GB of text pages a pass), and the state is the same."""
    from g2cons_plugins.engine import refresh_store
    from g2cons_plugins.storage.memory import drop_mapped_pages

    docs = _docs()
    G2ConSIndex.build(docs[:100], embedder="hash", config=CFG).save(tmp_path / "ix")
    idx = _trickled(G2ConSIndex.load(tmp_path / "ix"), docs)
    units = idx.snapshot.stored.units
    advised: list[int] = []
    monkeypatch.setattr(refresh_store, "PAGE_DROP_UNITS", 40)
    monkeypatch.setattr(refresh_store, "drop_mapped_pages", lambda xs: advised.append(drop_mapped_pages(xs)))
    _equal_to_store(idx)
    passes, n = 2, len(units)
    assert len(advised) == passes * ((n - 1) // 40 + 1) and n > 80
    assert all(k > 0 for k in advised)  # the texts are file maps of the loaded index


def _unit(i: int, text: str) -> Unit:
    return Unit(f"c{i}", f"c{i}", text, 1, (text,))


def test_units_of_one_text_get_the_last_ones_vector_as_store_copies_it() -> None:
    units = [_unit(i, t) for i, t in enumerate(["a", "b", "a", "c", "a", "b"])]
    vecs = np.arange(12, dtype=np.float32).reshape(6, 2)
    vecs.flags.writeable = False
    got = _same_text_same_vector(units, vecs)
    want = vecs[[4, 5, 4, 3, 4, 5]]
    np.testing.assert_array_equal(got, want)
    assert not got.flags.writeable
    same = want.copy()
    assert _same_text_same_vector(units, same) is same  # already so: no copy
    minus = same.copy()
    minus[0, 0] = -0.0  # bit for bit: -0.0 is not the last one's 0.0
    minus[4, 0] = 0.0
    assert np.signbit(_same_text_same_vector(units, minus)[0, 0]) == np.False_


def test_none_where_store_must_run() -> None:
    docs = _docs()
    idx = G2ConSIndex.build(docs[:20], embedder="hash", config=CFG)
    st = idx.snapshot.stored
    assert refreshed_stored(replace(st, chunks=list(st.chunks)[::-1]), CFG) is None  # not in id order
    paper = replace(CFG, graph=replace(CFG.graph, vector_level="sentence"))
    assert refreshed_stored(st, paper) is None  # sentence vectors needed, none held: store embeds them


def test_a_refresh_of_a_loaded_index_makes_no_chunk_to_check_the_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After trickle updates a loaded index's chunks are a rope of tables; the refresh checks their order on the
    id column alone (every chunk made, its text read, was ~0.7 GB of pages at 1M) and still equals a fresh build."""
    from g2cons_plugins.arrays.tables import ChunkTable

    docs = _docs()
    G2ConSIndex.build(docs[:100], embedder="hash", config=CFG).save(tmp_path / "ix")
    idx = _trickled(G2ConSIndex.load(tmp_path / "ix"), docs)
    assert not isinstance(idx.snapshot.stored.chunks, (ChunkTable, tuple, list))

    def no_chunk(self: ChunkTable, i: object) -> None:
        raise AssertionError("a chunk was made")

    monkeypatch.setattr(ChunkTable, "__getitem__", no_chunk)
    idx.refresh()
    monkeypatch.undo()
    fresh = G2ConSIndex.build(
        [d for d in docs[:127] if d["id"] not in (docs[5]["id"], docs[105]["id"])], embedder="hash", config=CFG
    )
    assert _digests(idx.stored) == _digests(fresh.stored)
