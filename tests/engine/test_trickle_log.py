"""A save after trickle updates writes the exact snapshot they started from (hard links to its saved files) plus
their log, and a load replays the log to the very same state: nothing is re-derived at the save, nothing is
embedded at the load. Where the exact snapshot is not saved (or its version is gone, or links are refused) the
save refreshes and writes the index whole, as before."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from test_trickle import CFG, STRATEGIES, _docs, _key, _questions

from g2cons_plugins import G2ConSIndex, PersistError
from g2cons_plugins.build import Derived
from g2cons_plugins.embedders import get_embedder
from g2cons_plugins.engine import update as upd
from g2cons_plugins.storage import persistence
from g2cons_plugins.storage.derived_io import differences
from g2cons_plugins.storage.trickle_io import LOG_JSON, LOG_VECTORS, read_log


@pytest.fixture(scope="module")
def docs() -> list[dict[str, str]]:
    return _docs()


def _version(path: Path) -> tuple[int, Path]:
    ptr = json.loads((path / "CURRENT").read_text(encoding="utf-8"))
    return ptr["version"], path / ptr["data"]


def _updated(idx: G2ConSIndex, docs: list[dict[str, str]]) -> None:
    """Add 12, remove 3 (one of them just added), add 15 and a removed chunk back, all trickled."""
    idx.add(docs[100:112], exact=False)
    idx.remove([docs[5]["id"], docs[40]["id"], docs[105]["id"]], exact=False)
    idx.add(docs[112:127] + [docs[40]], exact=False)


def _arrays(x: Any, prefix: str = "") -> dict[str, Any]:
    """Every array, matrix and plain value reachable from a derived state's fields, by dotted name."""
    out: dict[str, Any] = {}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            out.update(_arrays(getattr(x, f.name), f"{prefix}{f.name}."))
    elif isinstance(x, (np.ndarray, sp.spmatrix, sp.sparray, int, float, str, tuple, list)) or x is None:
        out[prefix.rstrip(".")] = x
    return out


def _same(a: Any, b: Any) -> bool:
    if sp.issparse(a) or sp.issparse(b):
        a, b = sp.csr_matrix(a), sp.csr_matrix(b)
        return a.shape == b.shape and bool(
            np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data, b.data)
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b) or (isinstance(a, (tuple, list)) and list(a) == list(b))


def _assert_same_state(a: G2ConSIndex, b: G2ConSIndex) -> None:
    """Stored state, every derived field bit for bit, and the trickle state."""
    sa, sb = a.stored, b.stored
    assert [(c.id, c.text, dict(c.metadata)) for c in sa.chunks] == [
        (c.id, c.text, dict(c.metadata)) for c in sb.chunks
    ]
    assert list(sa.units) == list(sb.units) and list(sa.sentences) == list(sb.sentences)
    np.testing.assert_array_equal(sa.unit_vecs, sb.unit_vecs)
    if sa.sent_vecs is not None or sb.sent_vecs is not None:
        np.testing.assert_array_equal(sa.sent_vecs, sb.sent_vecs)
    assert (sp.csr_matrix(sa.sent_unit) != sp.csr_matrix(sb.sent_unit)).nnz == 0
    da, db = _arrays(a.derived), _arrays(b.derived)
    assert da.keys() == db.keys()
    assert [k for k in da if not _same(da[k], db[k])] == []
    pa, pb = a.snapshot.pending, b.snapshot.pending
    assert (pa is None) == (pb is None)
    if pa is not None and pb is not None:
        assert (pa.n_base, pa.n_changed) == (pb.n_base, pb.n_changed)
        for f in ("concept_cols", "name_cols", "live", "stale"):
            np.testing.assert_array_equal(getattr(pa, f), getattr(pb, f))
        assert [(o.kind, o.ids, o.texts) for o in pa.ops] == [(o.kind, o.ids, o.texts) for o in pb.ops]
        assert (pa.deferred is None) == (pb.deferred is None)
        if pa.deferred is not None and pb.deferred is not None:  # the added chunks whose graph update waits
            assert _same(pa.deferred.chunks, pb.deferred.chunks) and _same(pa.deferred.rows[0], pb.deferred.rows[0])
            np.testing.assert_array_equal(pa.deferred.rows[1], pb.deferred.rows[1])
            np.testing.assert_array_equal(pa.deferred.moved, pb.deferred.moved)


@pytest.mark.parametrize("level", ["unit", "sentence"])  # unit vectors only (default) / sentence vectors too
def test_a_save_after_trickle_updates_replays_to_the_same_state(
    docs: list[dict[str, str]], tmp_path: Path, level: str
) -> None:
    """Saved, updated by trickle, saved again: no refresh, version 6 whose data files are the first version's
    (the same inodes) plus the log; the load equals the updated index bit for bit and retrieves the same; its
    refresh equals a fresh build."""
    cfg = CFG.with_(vector_level=level)
    path = tmp_path / "ix"
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=cfg)
    idx.save(path)
    assert _version(path)[0] == persistence.FORMAT_VERSION
    first = _version(path)[1]
    _updated(idx, docs)
    idx.save(path)
    assert not idx.refreshed  # nothing re-derived
    version, folder = _version(path)
    assert version == persistence.LOG_VERSION
    for name in ("unit_vectors.npy", "derived.npz", "stored.npz"):
        assert os.stat(folder / name).st_ino == os.stat(first / name).st_ino
    assert (folder / LOG_JSON).is_file() and (folder / LOG_VECTORS).is_file()
    loaded = G2ConSIndex.load(path)
    assert not loaded.refreshed
    _assert_same_state(loaded, idx)
    for q in _questions(4):
        for s in STRATEGIES:
            assert _key(loaded.retrieve(q, beta=500, strategy=s)) == _key(idx.retrieve(q, beta=500, strategy=s))
    loaded.refresh()
    kept = [d for d in docs[:127] if d["id"] not in (docs[5]["id"], docs[105]["id"])]
    assert differences(loaded.derived, G2ConSIndex.build(kept, embedder="hash", config=cfg).derived) == []


def test_updates_go_on_after_a_replayed_load(docs: list[dict[str, str]], tmp_path: Path) -> None:
    """A loaded version 6 updates as the index it was saved from would, saves again (the log grows, old versions
    go, the files stay) and loads again to the same state; a verified load checks the base too."""
    path = tmp_path / "ix"
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.save(path)
    _updated(idx, docs)
    idx.save(path)
    loaded = G2ConSIndex.load(path)
    for ix in (idx, loaded):
        ix.add(docs[127:130], exact=False)
        ix.remove([docs[7]["id"]], exact=False)
    _assert_same_state(loaded, idx)
    loaded.save(path)
    loaded.remove([docs[8]["id"]], exact=False)
    loaded.save(path)
    versions = sorted(p.name for p in path.iterdir() if p.name.startswith("v-"))
    assert len(versions) == 2  # the first version is gone: its files live on in the later ones
    again = G2ConSIndex.load(path, verify=True)
    _assert_same_state(again, loaded)
    assert [op.kind for op in again.snapshot.pending.ops] == ["add", "remove", "add", "add", "remove", "remove"]  # type: ignore[union-attr]


def test_a_load_embeds_nothing(docs: list[dict[str, str]], tmp_path: Path) -> None:
    """The replay uses the logged vectors: an embedder that fails on every call loads the index."""
    path = tmp_path / "ix"
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.save(path)
    _updated(idx, docs)
    idx.save(path)
    hashed = get_embedder("hash")

    class Refusing:
        name, dim = hashed.name, hashed.dim

        def embed(self, texts: Any) -> np.ndarray:
            raise AssertionError("embedded at load")

    loaded = G2ConSIndex.load(path, embedder=Refusing())
    np.testing.assert_array_equal(loaded.stored.unit_vecs, idx.stored.unit_vecs)


def test_without_its_saved_base_a_save_refreshes(docs: list[dict[str, str]], tmp_path: Path) -> None:
    """Built in memory (never saved), or its first version changed, or hard links refused (another file system):
    the save refreshes and writes version 5, leaving no temporary folder behind."""
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    _updated(idx, docs)
    idx.save(tmp_path / "a")
    assert idx.refreshed and _version(tmp_path / "a")[0] == persistence.FORMAT_VERSION

    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.save(tmp_path / "b")
    _updated(idx, docs)
    first = _version(tmp_path / "b")[1]
    (first / "manifest.json").write_bytes((first / "manifest.json").read_bytes() + b" ")
    idx.save(tmp_path / "c")
    assert idx.refreshed and _version(tmp_path / "c")[0] == persistence.FORMAT_VERSION


def test_refused_links_fall_back_to_a_whole_save(
    docs: list[dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.save(tmp_path / "ix")
    _updated(idx, docs)

    def refuse(*a: Any, **k: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(persistence.os, "link", refuse)
    idx.save(tmp_path / "other")
    assert idx.refreshed and _version(tmp_path / "other")[0] == persistence.FORMAT_VERSION
    assert [p.name for p in (tmp_path / "other").iterdir() if p.name.startswith(".tmp")] == []
    kept = [d for d in docs[:127] if d["id"] not in (docs[5]["id"], docs[105]["id"])]
    loaded = G2ConSIndex.load(tmp_path / "other")
    assert differences(loaded.derived, G2ConSIndex.build(kept, embedder="hash", config=CFG).derived) == []


def test_a_save_to_another_path_links_from_the_first(docs: list[dict[str, str]], tmp_path: Path) -> None:
    """Loaded from one path, updated, saved to another on the same file system: version 6 there, the same state."""
    G2ConSIndex.build(docs[:100], embedder="hash", config=CFG).save(tmp_path / "a")
    idx = G2ConSIndex.load(tmp_path / "a")
    _updated(idx, docs)
    idx.save(tmp_path / "b")
    assert _version(tmp_path / "b")[0] == persistence.LOG_VERSION
    _assert_same_state(G2ConSIndex.load(tmp_path / "b"), idx)


def test_a_changed_or_inconsistent_log_is_refused(docs: list[dict[str, str]], tmp_path: Path) -> None:
    """A modified log file fails its checksum; a log that names a chunk the index lacks, or whose vectors do not
    match its texts, is refused naming the file and the update."""
    path = tmp_path / "ix"
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.save(path)
    _updated(idx, docs)
    idx.save(path)
    folder = _version(path)[1]
    raw = (folder / LOG_JSON).read_bytes()
    (folder / LOG_JSON).write_bytes(raw.replace(b'"remove"', b'"remove" '))
    with pytest.raises(PersistError, match="checksum mismatch"):
        G2ConSIndex.load(path)
    (folder / LOG_JSON).write_bytes(raw)
    dim = idx.embedder.dim
    assert [op.kind for op in read_log(folder, dim)] == ["add", "remove", "add"]
    doc = json.loads(raw)
    doc["ops"][1]["ids"] = ["no-such-chunk"]
    (folder / LOG_JSON).write_text(json.dumps(doc), encoding="utf-8")
    from g2cons_plugins.engine.snapshot_updates import replayed

    base = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG).snapshot
    with pytest.raises(Exception, match="update 1 removes chunk ids the index does not hold"):
        replayed(base, read_log(folder, dim))
    doc = json.loads(raw)
    doc["ops"][0]["texts"] = doc["ops"][0]["texts"][:-1]
    (folder / LOG_JSON).write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(PersistError, match="trickle_vectors.npy: holds .* vectors but the updates embedded"):
        read_log(folder, dim)
    doc["ops"][0]["kind"] = "append"
    (folder / LOG_JSON).write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(PersistError, match="update 0: field 'kind'"):
        read_log(folder, dim)


def test_an_exact_update_starts_the_log_again(docs: list[dict[str, str]], tmp_path: Path) -> None:
    """An exact update (or refresh) leaves no log: the next save writes the index whole."""
    path = tmp_path / "ix"
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.save(path)
    _updated(idx, docs)
    idx.add(docs[127:128], exact=True)
    assert idx.refreshed and idx.snapshot.pending is None
    idx.save(path)
    assert _version(path)[0] == persistence.FORMAT_VERSION
    assert isinstance(G2ConSIndex.load(path).derived, Derived)


def test_adds_waiting_for_their_graph_update_replay_too(
    docs: list[dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the concept-graph update of small adds waiting (as on an index of 200,000+ chunks), a save while
    chunks wait, and one after the add that makes the waiting update, both load to the same state."""
    monkeypatch.setattr(upd, "DEFER_MIN_CHUNKS", 0)
    monkeypatch.setattr(upd, "DEFER_CHUNKS", 4)
    path = tmp_path / "ix"
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.save(path)
    idx.add(docs[100:101], exact=False)
    idx.add(docs[101:103], exact=False)
    assert idx.snapshot.pending is not None and idx.snapshot.pending.deferred is not None  # 3 chunks wait
    idx.save(path)
    _assert_same_state(G2ConSIndex.load(path), idx)
    idx.add(docs[103:105], exact=False)  # passes 4: the waiting update is made
    assert idx.snapshot.pending is not None and idx.snapshot.pending.deferred is None
    idx.remove([docs[3]["id"]], exact=False)
    idx.save(path)
    loaded = G2ConSIndex.load(path)
    _assert_same_state(loaded, idx)
    q = _questions(1)[0]
    assert _key(loaded.retrieve(q, beta=500)) == _key(idx.retrieve(q, beta=500))


def test_a_reader_of_version_5_refuses_a_log(
    docs: list[dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library that reads up to format version 5 would take the log's base for the index: it refuses instead."""
    path = tmp_path / "ix"
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=CFG)
    idx.save(path)
    _updated(idx, docs)
    idx.save(path)
    monkeypatch.setattr(persistence, "READ_VERSIONS", (2, 3, 4, 5))
    with pytest.raises(PersistError, match="format version 6"):
        G2ConSIndex.load(path)


def test_updates_to_an_index_saved_in_an_older_layout_are_saved_whole(
    docs: list[dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loaded from format version 4 (texts as JSON columns), updated, saved: refreshed and written whole."""
    monkeypatch.setattr(persistence, "WRITE_VERSION", 4)
    G2ConSIndex.build(docs[:100], embedder="hash", config=CFG).save(tmp_path / "ix")
    monkeypatch.setattr(persistence, "WRITE_VERSION", 5)
    idx = G2ConSIndex.load(tmp_path / "ix")
    _updated(idx, docs)
    idx.save(tmp_path / "ix")
    assert idx.refreshed and _version(tmp_path / "ix")[0] == persistence.FORMAT_VERSION
    assert json.loads((_version(tmp_path / "ix")[1] / "manifest.json").read_text(encoding="utf-8"))["version"] == 5
