"""The product-quantised unit index (``ann_kind``): candidates, the kind per size, updates, save and load."""

from __future__ import annotations

import copy
import json
import mmap
import pickle
from pathlib import Path

import numpy as np
import pytest
from test_unit_ann import _excerpt, _questions, _same

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.arrays import unit_pq
from g2cons_plugins.arrays.unit_hnsw import UnitANN
from g2cons_plugins.arrays.unit_pq import UnitPQ, UnitPQParams, build_unit_pq
from g2cons_plugins.engine.snapshot_updates import with_added, with_removed
from g2cons_plugins.errors import InputError, PersistError
from g2cons_plugins.storage import unit_index_io

PQ = G2ConSConfig(ann_threshold=1, ann_kind="pq")


def _clustered(n: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, dim))
    x = centres[rng.integers(0, 20, n)] + 0.6 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _mapped(a: np.ndarray) -> bool:
    while a is not None:
        if isinstance(a, (np.memmap, mmap.mmap)):
            return True
        a = getattr(a, "base", None)
    return False


@pytest.fixture(scope="module")
def docs() -> list[dict[str, str]]:
    return _excerpt(400)


@pytest.fixture(scope="module")
def pair(docs: list[dict[str, str]]) -> tuple[G2ConSIndex, G2ConSIndex]:
    return G2ConSIndex.build(docs, embedder="hash"), G2ConSIndex.build(docs, embedder="hash", config=PQ)


def test_candidates_hold_the_exact_best_units() -> None:
    """A search passes on max(rerank x k, min_candidates) positions, distinct and in range, and they hold nearly
    every one of the exact k best; the same vectors give the same codebook and codes."""
    vecs = _clustered(4000)
    params = UnitPQParams(rerank=4.0, min_candidates=64)
    pq = build_unit_pq(vecs, params)
    assert pq.codes.dtype == np.uint8 and pq.codes.shape == (4000, 16)  # 32 codes of 4 bits: 16 bytes a unit
    assert pq.centroids.shape == (32, 16, 2) and not pq.codes.flags.writeable
    again = build_unit_pq(vecs, params)
    assert np.array_equal(again.codes, pq.codes) and np.array_equal(again.centroids, pq.centroids)
    rng = np.random.default_rng(1)
    hits = []
    for i in rng.integers(0, 4000, 40):
        q = vecs[i] + 0.3 * vecs[(i + 7) % 4000]
        found = pq.search(q, 50)
        assert len(found) == 200 and len(set(found.tolist())) == 200 and found.min() >= 0 and found.max() < 4000
        best = np.argsort(-(vecs @ q), kind="stable")[:50]
        hits.append(len(set(best.tolist()) & set(found.tolist())) / 50)
    assert np.mean(hits) >= 0.95
    assert pq.search(vecs[0], 5000).tolist() == list(range(4000))  # asked for all: every position


def test_odd_sizes_and_tiny_corpora() -> None:
    """A vector size that dims_per_code does not divide gets one dimension a code; fewer units than centroids
    still train; every unit is then a candidate."""
    vecs = _clustered(5, dim=9)
    pq = build_unit_pq(vecs, UnitPQParams(dims_per_code=2))
    assert pq.centroids.shape == (9, 16, 1) and pq.codes.shape == (5, 5)
    assert sorted(pq.search(vecs[0], 1).tolist()) == [0, 1, 2, 3, 4]
    with pytest.raises(InputError, match="ann_pq_rerank"):
        UnitPQParams(rerank=0.5)
    with pytest.raises(InputError, match="ann_pq_dims_per_code"):
        UnitPQParams(dims_per_code=0)


def test_the_kind_follows_the_size_and_the_config() -> None:
    cfg = G2ConSConfig(ann_threshold=100, ann_pq_max_units=1000)
    assert [cfg.unit_index_kind(n) for n in (99, 100, 999, 1000)] == [None, "pq", "pq", "hnsw"]
    assert G2ConSConfig(ann_threshold=100, ann_kind="hnsw").unit_index_kind(150) == "hnsw"
    assert G2ConSConfig(ann_threshold=100, ann_kind="pq").unit_index_kind(10**7) == "pq"
    assert G2ConSConfig(ann_threshold=None).unit_index_kind(10**7) is None
    with pytest.raises(InputError, match="ann_kind"):
        G2ConSConfig(ann_kind="ivf")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="ann_pq_rerank"):
        G2ConSConfig(ann_pq_rerank=0.9)
    with pytest.raises(InputError, match="ann_pq_rerank"):
        UnitPQParams(rerank=float("inf"))
    # an index that has the graph keeps it down to 0.75 x the limit: no switching back and forth near it
    assert [cfg.unit_index_kind(n, "hnsw") for n in (999, 750, 749)] == ["hnsw", "hnsw", "pq"]
    assert cfg.unit_index_kind(999, "pq") == "pq" and cfg.unit_index_kind(1000, "pq") == "hnsw"
    # a config a user writes without ann_kind gets the default
    mine = {k: v for k, v in G2ConSConfig().to_dict().items() if not k.startswith("ann_pq") and k != "ann_kind"}
    assert G2ConSConfig.from_dict(mine).engine.ann_kind == "auto"


def test_an_index_saved_before_ann_kind_keeps_its_graph(
    docs: list[dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest whose config has no ``ann_kind`` (saved by the release before it) loads its saved HNSW graph,
    building nothing, and its updates keep the graph."""
    from g2cons_plugins.arrays import unit_hnsw as vector_index
    from g2cons_plugins.storage import persistence

    G2ConSIndex.build(docs[:200], embedder="hash", config=PQ.with_(ann_kind="hnsw")).save(tmp_path / "ix")
    cur = tmp_path / "ix" / "CURRENT"
    ptr = json.loads(cur.read_text(encoding="utf-8"))
    mf = tmp_path / "ix" / ptr["data"] / "manifest.json"
    m = json.loads(mf.read_text(encoding="utf-8"))
    m["config"] = {k: v for k, v in m["config"].items() if not k.startswith("ann_pq") and k != "ann_kind"}
    data = json.dumps(m, indent=1).encode("utf-8")
    mf.write_bytes(data)
    cur.write_text(json.dumps({**ptr, "manifest_sha256": persistence._sha256_bytes(data)}), encoding="utf-8")

    def no_build(*a: object, **k: object) -> None:
        raise AssertionError("a unit index was built on load")

    monkeypatch.setattr(vector_index, "build_unit_ann", no_build)
    monkeypatch.setattr(unit_pq, "build_unit_pq", no_build)
    idx = G2ConSIndex.load(tmp_path / "ix")
    assert idx.config.engine.ann_kind == "hnsw" and isinstance(idx.snapshot.unit_ann, UnitANN)
    idx.add(docs[200:203])
    assert isinstance(idx.snapshot.unit_ann, UnitANN)


def test_pq_path_equals_the_exact_path(pair: tuple[G2ConSIndex, G2ConSIndex]) -> None:
    """The default query with the scan forced on (its candidates a subset of the units) answers as the exact
    path does on the excerpt; every candidate is re-scored exactly."""
    exact, pq = pair
    assert exact.snapshot.unit_ann is None and isinstance(pq.snapshot.unit_ann, UnitPQ)
    n = len(pq.units)
    seen: list[int] = []
    real = UnitPQ.search

    def counting(self: UnitPQ, q: np.ndarray, k: int) -> np.ndarray:
        out = real(self, q, k)
        seen.append(len(out))
        return out

    UnitPQ.search = counting  # type: ignore[method-assign]
    try:
        for q in _questions(12):
            for beta in (300, 1000):
                _same(pq.retrieve(q, beta=beta), exact.retrieve(q, beta=beta))
    finally:
        UnitPQ.search = real  # type: ignore[method-assign]
    assert seen and min(seen) < n  # the scan passed on a subset: the equality is not an exact scan in disguise


def test_updates_move_the_codes(docs: list[dict[str, str]]) -> None:
    """add / remove: kept units keep their codes and the codebook, new units are encoded with it, and every row
    stays aligned with its unit."""
    base = G2ConSIndex.build(docs[:120], embedder="hash", config=PQ).snapshot
    p0 = base.unit_ann
    added = with_added(base, list(G2ConSIndex.build(docs[120:], embedder="hash").chunks))
    p1 = added.unit_ann
    assert isinstance(p1, UnitPQ) and np.shares_memory(p1.centroids, p0.centroids) and len(p1) == len(added.units)
    before = {u.id: p0.codes[i] for i, u in enumerate(base.units)}
    vecs = np.asarray(added.stored.unit_vecs)
    new = [i for i, u in enumerate(added.units) if u.id not in before]
    assert new
    for i, u in enumerate(added.units):
        if u.id in before:
            assert np.array_equal(p1.codes[i], before[u.id])
    assert np.array_equal(p1.codes[new], p0.encode(vecs, np.asarray(new)))
    drop = [c["id"] for c in docs[:30]]
    removed = with_removed(added, drop)
    p2 = removed.unit_ann
    pos1 = {u.id: i for i, u in enumerate(added.units)}
    assert np.array_equal(p2.codes, p1.codes[[pos1[u.id] for u in removed.units]])
    rvecs = np.asarray(removed.stored.unit_vecs)
    assert np.array_equal(p2.codes, p0.encode(rvecs))  # every row is its own unit's code
    for i in range(0, len(removed.units), 23):  # each unit's own code is nearest its vector: rows stay aligned
        assert i in p2.search(rvecs[i], 5).tolist()


def test_trickle_updates_and_the_switch_to_hnsw() -> None:
    """Trickle updates move the codes (the refresh keeps them); an index that grows to ann_pq_max_units units
    gets the HNSW graph, and one that shrinks below it the scan again."""
    docs = _excerpt(60)
    cfg = PQ.with_(theta_co=2, theta_sem=0.1)
    idx = G2ConSIndex.build(docs[:50], embedder="hash", config=cfg)
    before = idx.snapshot.unit_ann
    idx.add(docs[50:52], exact=False)
    idx.remove([docs[3]["id"]], exact=False)
    after = idx.snapshot.unit_ann
    assert not idx.refreshed and isinstance(after, UnitPQ) and np.shares_memory(after.centroids, before.centroids)
    # one codebook and a deterministic encoder: every row is its own unit's code (no row moved to another unit)
    assert np.array_equal(after.codes, before.encode(np.asarray(idx.snapshot.stored.unit_vecs)))
    idx.refresh()
    assert np.array_equal(idx.snapshot.unit_ann.codes, after.codes)
    n = len(idx.units)
    grow = G2ConSIndex.build(docs[:50], embedder="hash", config=cfg.with_(ann_kind="auto", ann_pq_max_units=n))
    assert isinstance(grow.snapshot.unit_ann, UnitPQ)
    grow.add(docs[50:60])
    assert isinstance(grow.snapshot.unit_ann, UnitANN)
    grow.remove([c["id"] for c in docs[40:60]])
    assert isinstance(grow.snapshot.unit_ann, UnitPQ)


def test_saved_with_the_snapshot_and_mapped_on_load(
    pair: tuple[G2ConSIndex, G2ConSIndex], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, pq = pair
    pq.save(tmp_path / "idx")
    (version,) = [p for p in (tmp_path / "idx").iterdir() if p.name.startswith("v-")]
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["unit_pq"]["format"] == unit_pq.UNIT_PQ_FORMAT and "unit_ann" not in manifest
    assert set(unit_pq.UNIT_PQ_FILES) <= set(manifest["files"])

    def no_build(*a: object, **k: object) -> None:
        raise AssertionError("the unit index was rebuilt on load")

    monkeypatch.setattr(unit_pq, "build_unit_pq", no_build)
    loaded = G2ConSIndex.load(tmp_path / "idx")
    lp = loaded.snapshot.unit_ann
    assert isinstance(lp, UnitPQ) and _mapped(lp.codes)
    assert np.array_equal(lp.codes, pq.snapshot.unit_ann.codes)
    for q in _questions(6):
        _same(loaded.retrieve(q, beta=700), pq.retrieve(q, beta=700))
    loaded.add([{"id": "new-1", "text": "The Lantern Guild was founded in Ostravel by Mira Quell."}])
    loaded.save(tmp_path / "again")
    again = G2ConSIndex.load(tmp_path / "again")
    assert np.array_equal(again.snapshot.unit_ann.codes, loaded.snapshot.unit_ann.codes)
    monkeypatch.undo()
    rebuilt = G2ConSIndex.load(tmp_path / "idx", rebuild=True).snapshot.unit_ann  # rebuild: the files are ignored
    assert isinstance(rebuilt, UnitPQ) and not _mapped(rebuilt.codes)


def test_a_modified_codes_file_fails_the_checksum(pair: tuple[G2ConSIndex, G2ConSIndex], tmp_path: Path) -> None:
    _, pq = pair
    pq.save(tmp_path / "idx")
    (version,) = [p for p in (tmp_path / "idx").iterdir() if p.name.startswith("v-")]
    codes = version / unit_pq.UNIT_PQ_CODES
    data = bytearray(codes.read_bytes())
    data[len(data) // 2] ^= 0xFF
    codes.write_bytes(bytes(data))
    with pytest.raises(PersistError, match="checksum mismatch"):
        G2ConSIndex.load(tmp_path / "idx")


def test_a_wrong_entry_or_file_is_named(pair: tuple[G2ConSIndex, G2ConSIndex], tmp_path: Path) -> None:
    _, pq = pair
    snap = pq.snapshot
    folder = tmp_path / "v"
    folder.mkdir()

    def write(path: Path, fn: object) -> None:
        with path.open("xb") as fh:
            fn(fh)  # type: ignore[operator]

    entry = unit_index_io.write_unit_pq(snap.unit_ann, folder, write)
    n, dim = len(snap.units), snap.embedder.dim
    assert len(unit_index_io.read_unit_pq(folder, entry, n, dim)) == n
    with pytest.raises(PersistError, match="g2cons-unit-pq/1"):
        unit_index_io.read_unit_pq(folder, {**entry, "format": "g2cons-unit-pq/9"}, n, dim)
    with pytest.raises(PersistError, match="unit_pq.n"):
        unit_index_io.read_unit_pq(folder, entry, n + 1, dim)
    with pytest.raises(PersistError, match="unit_pq.params"):
        unit_index_io.read_unit_pq(folder, {**entry, "params": {"rerank": 0}}, n, dim)
    with pytest.raises(PersistError, match="centroids"):
        unit_index_io.read_unit_pq(folder, entry, n, dim + 2)
    with pytest.raises(PersistError, match="exists"):
        unit_index_io.write_unit_pq(snap.unit_ann, folder, write)


def test_pickle_and_deepcopy_keep_the_index(pair: tuple[G2ConSIndex, G2ConSIndex]) -> None:
    _, pq = pair
    q = _questions(1)[0]
    for clone in (pickle.loads(pickle.dumps(pq)), copy.deepcopy(pq)):
        assert isinstance(clone.snapshot.unit_ann, UnitPQ)
        assert np.array_equal(clone.snapshot.unit_ann.codes, pq.snapshot.unit_ann.codes)
        _same(clone.retrieve(q, beta=500), pq.retrieve(q, beta=500))


def test_a_save_after_trickle_updates_replays_the_codes(tmp_path: Path) -> None:
    """Saved, updated by trickle, saved again (the trickle log: the first save's files plus the updates): the load
    replays the updates to the same codes and codebook, and the saved codes are the first save's file."""
    docs = _excerpt(140)
    cfg = PQ.with_(theta_co=2, theta_sem=0.1)
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=cfg)
    idx.save(tmp_path / "ix")
    first = json.loads((tmp_path / "ix" / "CURRENT").read_text(encoding="utf-8"))["data"]
    idx.add(docs[100:112], exact=False)
    idx.remove([docs[5]["id"], docs[105]["id"]], exact=False)
    idx.add(docs[112:127], exact=False)
    assert not idx.refreshed
    idx.save(tmp_path / "ix")
    ptr = json.loads((tmp_path / "ix" / "CURRENT").read_text(encoding="utf-8"))
    manifest = json.loads((tmp_path / "ix" / ptr["data"] / "manifest.json").read_text(encoding="utf-8"))
    assert "trickle" in manifest and "unit_pq" in manifest  # the log, over the first save's codes
    codes = unit_pq.UNIT_PQ_CODES
    assert (tmp_path / "ix" / ptr["data"] / codes).stat().st_ino == (tmp_path / "ix" / first / codes).stat().st_ino
    loaded = G2ConSIndex.load(tmp_path / "ix")
    a, b = loaded.snapshot.unit_ann, idx.snapshot.unit_ann
    assert isinstance(a, UnitPQ) and np.array_equal(a.codes, b.codes) and np.array_equal(a.centroids, b.centroids)
    for q in _questions(4):
        _same(loaded.retrieve(q, beta=600), idx.retrieve(q, beta=600))


def test_without_faiss_auto_uses_the_graph(docs: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """``"auto"`` falls back to the HNSW graph (with a warning) where faiss cannot be imported; ``"pq"`` asked for
    explicitly scans exactly instead, with the warning every missing ANN library gives."""

    def missing() -> None:
        raise ImportError("no module named 'faiss'")

    monkeypatch.setattr(unit_pq, "_faiss", missing)
    with pytest.warns(UserWarning, match="HNSW graph instead"):
        auto = G2ConSIndex.build(docs[:60], embedder="hash", config=PQ.with_(ann_kind="auto"))
    assert isinstance(auto.snapshot.unit_ann, UnitANN)
    with pytest.warns(UserWarning, match="no ANN library"):
        forced = G2ConSIndex.build(docs[:60], embedder="hash", config=PQ)
    assert forced.snapshot.unit_ann is None


def test_a_log_save_whose_unit_index_changed_kind_is_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trickle updates that take an index past ann_pq_max_units give it the graph; saving them as a log over the
    scan's files would make every load build the graph again, so that save is written whole and loads its graph."""
    from g2cons_plugins.arrays import unit_hnsw as vector_index

    docs = _excerpt(140)
    base = G2ConSIndex.build(docs[:100], embedder="hash", config=PQ.with_(theta_co=2, theta_sem=0.1))
    cfg = base.config.with_(ann_kind="auto", ann_pq_max_units=len(base.units) + 1)
    idx = G2ConSIndex.build(docs[:100], embedder="hash", config=cfg)
    assert isinstance(idx.snapshot.unit_ann, UnitPQ)
    idx.save(tmp_path / "ix")
    idx.add(docs[100:106], exact=False)
    assert not idx.refreshed and isinstance(idx.snapshot.unit_ann, UnitANN)
    idx.save(tmp_path / "ix")
    ptr = json.loads((tmp_path / "ix" / "CURRENT").read_text(encoding="utf-8"))
    manifest = json.loads((tmp_path / "ix" / ptr["data"] / "manifest.json").read_text(encoding="utf-8"))
    assert "trickle" not in manifest and "unit_ann" in manifest and "unit_pq" not in manifest

    def no_build(*a: object, **k: object) -> None:
        raise AssertionError("the graph was built on load")

    monkeypatch.setattr(vector_index, "build_unit_ann", no_build)
    assert isinstance(G2ConSIndex.load(tmp_path / "ix").snapshot.unit_ann, UnitANN)


def test_both_unit_indexes_satisfy_the_unit_index_protocol() -> None:
    """``arrays.unit_index``: the PQ scan and the HNSW graph answer the same protocol (``len``, ``params``,
    ``search`` -> candidate positions), and ``kind_of`` names each."""
    pytest.importorskip("faiss")
    pytest.importorskip("usearch")
    from g2cons_plugins.arrays.unit_hnsw import UnitANNParams, build_unit_ann
    from g2cons_plugins.arrays.unit_index import UnitIndex, kind_of

    vecs = np.random.default_rng(0).standard_normal((300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    indexes: dict[str, UnitIndex] = {
        "pq": build_unit_pq(vecs, UnitPQParams(dims_per_code=2)),
        "hnsw": build_unit_ann(vecs, UnitANNParams(), threads=1),
    }
    for kind, index in indexes.items():
        assert kind_of(index) == kind and len(index) == len(vecs) and index.params is not None
        found = index.search(vecs[7], 10)
        assert found is not None and len(found) >= 10 and 7 in set(np.asarray(found).tolist())
    assert kind_of(None) is None and kind_of(object()) is None
