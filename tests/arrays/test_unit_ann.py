"""The snapshot's unit index (HNSW, usearch): stable keys updated in place on add/remove, what older snapshots see,
saved with the snapshot and mapped on load (never rebuilt), and the hybrid term on candidates only."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, retrieval
from g2cons_plugins.arrays import unit_hnsw as vector_index
from g2cons_plugins.arrays.unit_hnsw import UnitANN
from g2cons_plugins.engine.snapshot_updates import with_added, with_removed
from g2cons_plugins.errors import PersistError
from g2cons_plugins.retrieval import DenseScores, retrieve
from g2cons_plugins.storage import unit_index_io

pytest.importorskip("usearch")

EXCERPT = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_corpus.jsonl"
QUESTIONS = Path(__file__).resolve().parents[2] / "examples" / "data" / "musique_excerpt_questions.jsonl"
ANN = G2ConSConfig(ann_threshold=1, ann_kind="hnsw")
# ef above the unit count: every search returns every unit, so the ANN path must equal the exact one (a graph built
# with several threads differs from run to run, and on its own may miss a neighbour)
ANN_ALL = G2ConSConfig(ann_threshold=1, ann_kind="hnsw", ann_expansion_search=5000)


def _excerpt(n: int) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in EXCERPT.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{"id": r["id"], "text": f"{r['title']}\n{r['text']}"} for r in rows[:n]]


def _questions(n: int) -> list[str]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [str(r["question"]) for r in rows[:n]]


def _key(items: list) -> list[tuple[str, float]]:
    return [(i.unit_id, round(i.score, 5)) for i in items]


def _same(got: list, want: list) -> None:
    """The same units in the same order, scores equal up to float32 summation order (a product over a subset of
    the vectors may round its last bit differently from one over all of them)."""
    assert [i.unit_id for i in got] == [i.unit_id for i in want]
    np.testing.assert_allclose([i.score for i in got], [i.score for i in want], rtol=0, atol=1e-5)


@pytest.fixture(scope="module")
def docs() -> list[dict[str, str]]:
    return _excerpt(400)


@pytest.fixture(scope="module")
def pair(docs: list[dict[str, str]]) -> tuple[G2ConSIndex, G2ConSIndex]:
    return G2ConSIndex.build(docs, embedder="hash"), G2ConSIndex.build(docs, embedder="hash", config=ANN_ALL)


def test_ann_path_equals_the_exact_path_with_the_hybrid_term(
    pair: tuple[G2ConSIndex, G2ConSIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Default config (hybrid term, lexical seeds) with the index forced on and returning every unit (ef > n): the
    results equal the exact path's; budgets below the corpus size rank candidates only (no exact scan of every
    unit), budgets above it take every unit."""
    exact, ann = pair
    assert exact.snapshot.unit_ann is None and isinstance(ann.snapshot.unit_ann, UnitANN)
    assert ann.config.retrieval.lexical_weight > 0 and ann.config.retrieval.lexical_seeds > 0
    scans: list[int] = []
    real_full = DenseScores.full

    def full(self: DenseScores) -> np.ndarray:
        scans.append(1)
        return real_full(self)

    monkeypatch.setattr(DenseScores, "full", full)
    hybrid: list[float] = []
    for q in _questions(12):
        for beta in (300, 1000):
            got, want = ann.retrieve(q, beta=beta), exact.retrieve(q, beta=beta)
            _same(got, want)
            hybrid += [i.score for i in got]
        _same(ann.retrieve(q, beta=10**7), exact.retrieve(q, beta=10**7))  # k >= n: every unit
    scans.clear()
    for q in _questions(12):
        ann.retrieve(q, beta=300)
    assert not scans  # the small budget never scanned every unit


def test_hybrid_scores_on_candidates_equal_the_exact_hybrid(pair: tuple[G2ConSIndex, G2ConSIndex]) -> None:
    exact, ann = pair
    for q in _questions(8):
        qv = ann.snapshot.embed_query(q)
        lex = ann.snapshot.lexical.scores(q)
        assert lex.any()
        want = retrieval.HybridScores(DenseScores(exact.snapshot, qv), lex, 0.3)
        got = retrieval.HybridScores(DenseScores(ann.snapshot, qv), lex, 0.3)
        for k in (1, 5, 40):
            assert got.top(k).tolist() == want.top(k).tolist()
            np.testing.assert_allclose(got.of(got.top(k)), want.of(want.top(k)), rtol=1e-6)


def test_add_and_remove_update_the_graph_in_place(docs: list[dict[str, str]]) -> None:
    base = G2ConSIndex.build(docs[:120], embedder="hash", config=ANN_ALL).snapshot
    a0 = base.unit_ann
    graph = a0._shared.graph
    new_chunks = G2ConSIndex.build(docs[120:], embedder="hash").chunks
    added = with_added(base, list(new_chunks))
    a1 = added.unit_ann
    assert a1._shared is a0._shared and a1._shared.graph is graph  # the same graph, not a rebuild
    assert a1._shared.head is a1
    old_key = dict(zip([u.id for u in base.units], a0.keys.tolist(), strict=True))
    for u, key in zip(added.units, a1.keys.tolist(), strict=True):
        if u.id in old_key:
            assert key == old_key[u.id]  # a unit keeps its key
        else:
            assert key > max(old_key.values())
    assert len(graph) == len(added.units) == len(a1)
    drop = [c["id"] for c in docs[:30]]
    removed = with_removed(added, drop)
    a2 = removed.unit_ann
    assert a2._shared.graph is graph and len(graph) == len(removed.units)
    assert set(a2.keys.tolist()) == {
        old_key.get(u.id, k) for u, k in zip(added.units, a1.keys.tolist(), strict=True) if u.parent_id not in drop
    }
    # the updated snapshot answers like a fresh exact build of the same chunks
    fresh = G2ConSIndex.build([c for c in docs if c["id"] not in drop], embedder="hash").snapshot
    for q in _questions(6):
        _same(retrieve(removed, q, beta=800), retrieve(fresh, q, beta=800))


def test_an_older_snapshot_sees_only_its_own_units(docs: list[dict[str, str]]) -> None:
    """After a newer snapshot updated the shared graph in place, the older one still returns only its units with
    exact scores (it may miss what the newer one removed); during the update it scans exactly."""
    old = G2ConSIndex.build(docs[:100], embedder="hash", config=ANN).snapshot
    exact_old = G2ConSIndex.build(docs[:100], embedder="hash").snapshot
    extra = G2ConSIndex.build(docs[100:], embedder="hash").snapshot
    new = with_removed(with_added(old, list(extra.chunks)), [c["id"] for c in docs[:10]])
    assert new.unit_ann._shared is old.unit_ann._shared and new.unit_ann._shared.head is new.unit_ann
    own = {u.id for u in old.units}
    for q in _questions(10):
        qv = old.embed_query(q)
        cand = old.unit_ann.search(qv, 20)
        assert cand is not None and len(cand) >= 20 and len(set(cand.tolist())) == len(cand)
        assert set(cand.tolist()) <= set(range(len(old.units)))
        assert {i.unit_id for i in retrieve(old, q, beta=600)} <= own
        got = retrieve(old, q, beta=600, strategy="dense")  # scores: the unit's exact cosine
        exact = {i.unit_id: i.score for i in retrieve(exact_old, q, beta=10**7, strategy="dense")}
        assert got and {i.unit_id for i in got} <= own
        for i in got:
            assert i.score == pytest.approx(exact[i.unit_id], abs=1e-5)
    with old.unit_ann._shared.writing():  # an update is running: the older snapshot neither waits nor reads it
        assert old.unit_ann.search(old.embed_query("Lantern Guild"), 5) is None
        for q in _questions(4):
            _same(retrieve(old, q, beta=600), retrieve(exact_old, q, beta=600))


def test_an_update_from_an_older_snapshot_works_on_a_copy(docs: list[dict[str, str]]) -> None:
    base = G2ConSIndex.build(docs[:100], embedder="hash", config=ANN_ALL).snapshot
    extra = G2ConSIndex.build(docs[100:], embedder="hash").snapshot
    head = with_added(base, list(extra.chunks)[:20])
    branch = with_removed(base, [c["id"] for c in docs[:5]])  # base is no longer the graph's head
    assert branch.unit_ann._shared is not base.unit_ann._shared
    assert len(head.unit_ann._shared.graph) == len(head.units)  # the head's graph is untouched
    assert len(branch.unit_ann._shared.graph) == len(branch.units)
    fresh = G2ConSIndex.build(docs[5:100], embedder="hash").snapshot
    for q in _questions(6):
        _same(retrieve(branch, q, beta=800), retrieve(fresh, q, beta=800))
        assert _key(retrieve(head, q, beta=800))


def test_saved_with_the_snapshot_and_mapped_on_load(
    pair: tuple[G2ConSIndex, G2ConSIndex], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ann = pair
    ann.save(tmp_path / "idx")
    (version,) = [p for p in (tmp_path / "idx").iterdir() if p.name.startswith("v-")]
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["unit_ann"]["format"] == vector_index.UNIT_ANN_FORMAT
    assert set(vector_index.UNIT_ANN_FILES) <= set(manifest["files"])

    def no_build(*a: object, **k: object) -> None:
        raise AssertionError("the unit index was rebuilt on load")

    monkeypatch.setattr(vector_index, "build_unit_ann", no_build)
    loaded = G2ConSIndex.load(tmp_path / "idx")
    la = loaded.snapshot.unit_ann
    assert isinstance(la, UnitANN) and la._shared.view and la.keys.tolist() == ann.snapshot.unit_ann.keys.tolist()
    for q in _questions(6):
        _same(loaded.retrieve(q, beta=700), ann.retrieve(q, beta=700))
    loaded.save(tmp_path / "again")  # a mapped graph saves as it is
    again = G2ConSIndex.load(tmp_path / "again")
    assert again.snapshot.unit_ann.keys.tolist() == la.keys.tolist()
    _same(again.retrieve(_questions(1)[0], beta=700), ann.retrieve(_questions(1)[0], beta=700))
    loaded.add([{"id": "new-1", "text": "The Lantern Guild was founded in Ostravel by Mira Quell."}])
    na = loaded.snapshot.unit_ann  # the new unit waits outside the mapped graph (pending), which is not copied
    assert na._shared.view and len(na.pending) == 1 and len(na) == len(loaded.units)
    assert la._shared.view and len(la._shared.graph) == len(la)  # the mapped graph is never written
    monkeypatch.undo()
    rebuilt = G2ConSIndex.load(tmp_path / "idx", rebuild=True).snapshot.unit_ann  # rebuild: the files are ignored
    assert isinstance(rebuilt, UnitANN) and not rebuilt._shared.view


def test_a_modified_graph_file_fails_the_checksum(pair: tuple[G2ConSIndex, G2ConSIndex], tmp_path: Path) -> None:
    _, ann = pair
    ann.save(tmp_path / "idx")
    (version,) = [p for p in (tmp_path / "idx").iterdir() if p.name.startswith("v-")]
    graph = version / vector_index.UNIT_ANN_GRAPH
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF
    graph.write_bytes(bytes(data))
    with pytest.raises(PersistError, match="checksum mismatch"):
        G2ConSIndex.load(tmp_path / "idx")


def test_a_wrong_format_is_named(pair: tuple[G2ConSIndex, G2ConSIndex], tmp_path: Path) -> None:
    _, ann = pair
    snap = ann.snapshot
    folder = tmp_path / "v"
    folder.mkdir()

    def write(path: Path, fn: object) -> None:
        with path.open("xb") as fh:
            fn(fh)  # type: ignore[operator]

    entry = unit_index_io.write_unit_ann(snap.unit_ann, folder, write)
    n, dim = len(snap.units), snap.embedder.dim
    assert len(unit_index_io.read_unit_ann(folder, entry, n, dim)) == n
    with pytest.raises(PersistError, match="g2cons-unit-ann/1"):
        unit_index_io.read_unit_ann(folder, {**entry, "format": "g2cons-unit-ann/9"}, n, dim)
    with pytest.raises(PersistError, match="unit_ann.n"):
        unit_index_io.read_unit_ann(folder, entry, n + 1, dim)


def test_pickle_and_deepcopy_keep_the_index(pair: tuple[G2ConSIndex, G2ConSIndex]) -> None:
    _, ann = pair
    q = _questions(1)[0]
    for clone in (pickle.loads(pickle.dumps(ann)), copy.deepcopy(ann)):
        assert isinstance(clone.snapshot.unit_ann, UnitANN)
        assert clone.snapshot.unit_ann._shared is not ann.snapshot.unit_ann._shared
        _same(clone.retrieve(q, beta=500), ann.retrieve(q, beta=500))


def test_config_validates_the_ann_fields() -> None:
    from g2cons_plugins.errors import InputError

    with pytest.raises(InputError, match="ann_quantization"):
        G2ConSConfig(ann_quantization="i4")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="ann_connectivity"):
        G2ConSConfig(ann_connectivity=1)


def test_lexical_postings_equal_the_full_scores(pair: tuple[G2ConSIndex, G2ConSIndex]) -> None:
    lexical = pair[0].snapshot.lexical
    for q in _questions(10) + ["Vistula Vistula Baltic", "zzqx unknownword"]:
        full = lexical.scores(q)
        units, scores = lexical.postings(q)
        assert units.tolist() == np.flatnonzero(full).tolist()
        np.testing.assert_allclose(scores, full[units], rtol=1e-12)
        want = np.lexsort((np.arange(len(full)), -full))[: min(5, len(units))]
        assert lexical.top(q, 5).tolist() == want.tolist()


def test_hybrid_scores_take_postings(pair: tuple[G2ConSIndex, G2ConSIndex]) -> None:
    _, ann = pair
    snap = ann.snapshot
    for q in _questions(5):
        qv = snap.embed_query(q)
        full = retrieval.HybridScores(DenseScores(snap, qv), snap.lexical.scores(q), 0.2)
        sparse = retrieval.HybridScores(DenseScores(snap, qv), snap.lexical.postings(q), 0.2)
        assert sparse.top(30).tolist() == full.top(30).tolist()


def test_readers_of_an_older_snapshot_run_while_newer_ones_update(docs: list[dict[str, str]]) -> None:
    import threading

    old = G2ConSIndex.build(docs[:200], embedder="hash", config=ANN).snapshot
    chunks = list(G2ConSIndex.build(docs[200:], embedder="hash").chunks)
    own = {u.id for u in old.units}
    questions = _questions(8)
    stop = threading.Event()
    errors: list[BaseException] = []
    seen: list[set[str]] = []

    def read() -> None:
        try:
            while not stop.is_set():
                for q in questions:
                    seen.append({i.unit_id for i in retrieve(old, q, beta=500)})
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    head = old
    for i in range(0, 40, 10):  # each update starts from the graph's head: in place, under the writer gate
        head = with_added(head, chunks[i : i + 10])
        head = with_removed(head, [docs[i]["id"]])
    stop.set()
    for t in readers:
        t.join()
    assert not errors and seen
    assert all(s <= own for s in seen)
    assert head.unit_ann._shared is old.unit_ann._shared and len(head.unit_ann._shared.graph) == len(head.units)


def test_trickle_updates_update_the_unit_index_in_place() -> None:
    """A trickle add / remove (few chunks, no global re-derive) updates the predecessor's graph by the changed
    units (same shared graph, kept keys), and retrieval equals an exact update's."""
    docs = _excerpt(60)
    cfg = ANN_ALL.with_(theta_co=2, theta_sem=0.1)
    idx = G2ConSIndex.build(docs[:50], embedder="hash", config=cfg)
    before = idx.snapshot.unit_ann
    idx.add(docs[50:52], exact=False)
    idx.remove([docs[3]["id"]], exact=False)
    after = idx.snapshot.unit_ann
    assert not idx.refreshed and isinstance(after, UnitANN)
    assert after._shared is before._shared  # updated in place, not rebuilt
    assert len(after) == len(idx.units)
    shared = set(before.keys.tolist()) & set(after.keys.tolist())  # the units both hold keep their keys
    assert len(shared) >= len(before) - 10
    idx.refresh()  # the refresh keeps the graph too
    assert idx.refreshed and idx.snapshot.unit_ann._shared is before._shared
    exact = G2ConSIndex.build(docs[:50], embedder="hash", config=cfg)
    exact.add(docs[50:52], exact=True)
    exact.remove([docs[3]["id"]], exact=True)
    for q in _questions(4):
        got, want = idx.retrieve(q, beta=600, strategy="dense"), exact.retrieve(q, beta=600, strategy="dense")
        _same(got, want)


def test_units_added_to_a_mapped_graph_wait_outside_it(
    pair: tuple[G2ConSIndex, G2ConSIndex], docs: list[dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adds and removes on a loaded (memory-mapped) graph leave it untouched: new units are pending (every search
    re-scores them), removed ones are dropped by key; results equal an exact build of the same chunks; past
    PENDING_MAX the graph is copied and holds them all; a save writes them into the graph; a pickle keeps them."""
    base = G2ConSIndex.build(docs[:300], embedder="hash", config=ANN_ALL)
    base.save(tmp_path / "idx")
    idx = G2ConSIndex.load(tmp_path / "idx")
    graph = idx.snapshot.unit_ann._shared.graph
    extra = G2ConSIndex.build(docs[300:], embedder="hash").chunks
    idx.add(list(extra[:40]))
    drop = [docs[5]["id"], docs[77]["id"], extra[3].id]
    idx.remove(drop)
    ann = idx.snapshot.unit_ann
    assert ann._shared.graph is graph and len(graph) == len(base.units)  # not written, not copied
    assert 0 < len(ann.pending) < 40 * 3 and set(ann.pending.tolist()) <= set(ann.keys.tolist())
    fresh = G2ConSIndex.build([d for d in docs[:340] if d["id"] not in drop], embedder="hash")
    for q in _questions(8):
        _same(idx.retrieve(q, beta=800), fresh.retrieve(q, beta=800))
    clone = pickle.loads(pickle.dumps(ann))
    assert len(clone._shared.graph) == len(clone) == len(ann) and not len(clone.pending)
    idx.save(tmp_path / "again")
    again = G2ConSIndex.load(tmp_path / "again").snapshot.unit_ann
    assert len(again._shared.graph) == len(again) == len(ann) and not len(again.pending)
    monkeypatch.setattr(vector_index, "PENDING_MAX", len(ann.pending))
    idx.add(list(extra[40:45]))
    full = idx.snapshot.unit_ann
    assert not full._shared.view and not len(full.pending) and len(full._shared.graph) == len(idx.units)
    fresh = G2ConSIndex.build([d for d in docs[:345] if d["id"] not in drop], embedder="hash")
    for q in _questions(8):
        _same(idx.retrieve(q, beta=800), fresh.retrieve(q, beta=800))


def test_a_search_returns_the_pending_units(docs: list[dict[str, str]], tmp_path: Path) -> None:
    """With a small search (ef 8 of hundreds of units), a pending unit is among the candidates of a query equal to
    its own vector: pending units are always re-scored."""
    small = G2ConSConfig(ann_threshold=1, ann_kind="hnsw", ann_expansion_search=8)
    G2ConSIndex.build(docs[:300], embedder="hash", config=small).save(tmp_path / "idx")
    idx = G2ConSIndex.load(tmp_path / "idx")
    idx.add(list(G2ConSIndex.build(docs[300:303], embedder="hash").chunks))
    snap = idx.snapshot
    ann = snap.unit_ann
    assert len(ann.pending) and len(ann) > 100
    for pos in ann.positions(ann.pending).tolist():
        found = ann.search(np.asarray(snap.stored.unit_vecs[pos]), 1)
        assert found is not None and pos in found.tolist() and len(found) < len(ann)


def test_many_pending_units_pass_on_only_the_best_they_hold(
    docs: list[dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where more units wait outside the mapped graph than a search asks for, it passes on only the best of them
    by exact score (not all): the candidates stay near what was asked, every pending unit that belongs in an
    answer is among them, and retrieval equals an exact build of the same chunks. The graph is built on one
    thread, so it is the same graph every run (built on two, it differs from run to run, and a search with ef 8
    missed a neighbour of the saved units in about one run in six)."""
    monkeypatch.setattr(vector_index, "available_threads", lambda: 1)
    small = G2ConSConfig(ann_threshold=1, ann_kind="hnsw", ann_expansion_search=8)
    G2ConSIndex.build(docs[:300], embedder="hash", config=small).save(tmp_path / "idx")
    idx = G2ConSIndex.load(tmp_path / "idx")
    idx.add(list(G2ConSIndex.build(docs[300:], embedder="hash").chunks))
    snap = idx.snapshot
    ann, vecs = snap.unit_ann, np.asarray(snap.stored.unit_vecs)
    pending = ann.positions(ann.pending)
    assert ann._shared.view and len(pending) > 40  # the added units wait; many more than one search asks for
    for pos in pending[:: max(1, len(pending) // 12)].tolist():
        q = vecs[pos] + 0.01 * vecs[(pos + 1) % len(vecs)]
        found = ann.search(q, 3)
        assert found is not None
        got = set(np.asarray(found).tolist()) & set(pending.tolist())
        assert len(got) <= 8  # the best ``want`` (8) of the pending units, not all of them
        best = pending[np.argsort(-(vecs[pending] @ q), kind="stable")[:3]]
        assert set(best.tolist()) <= got  # the pending units of the exact top 3 are passed on
    fresh = G2ConSIndex.build(docs, embedder="hash", config=G2ConSConfig(ann_threshold=10**9))
    for q in _questions(8):
        _same(idx.retrieve(q, beta=600, strategy="dense"), fresh.retrieve(q, beta=600, strategy="dense"))


def test_a_build_over_mapped_vectors_adds_in_parts_and_unmaps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors mapped from a file are added in parts of ``ADD_ROWS`` with the pages each part read unmapped after
    it; with one thread the graph is the one a single call builds (same candidates for every query)."""
    import mmap

    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(500, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    np.save(tmp_path / "v.npy", vecs)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    params = vector_index.unit_ann_params(G2ConSConfig())
    whole = vector_index.build_unit_ann(vecs, params, threads=1)
    advised: list[object] = []
    real = vector_index.unmap_read_pages
    monkeypatch.setattr(vector_index, "unmap_read_pages", lambda m: advised.append(m) or real(m))
    monkeypatch.setattr(vector_index, "ADD_ROWS", 37)
    parts = vector_index.build_unit_ann(mapped, params, threads=1)
    assert len(advised) == -(-500 // 37) and all(isinstance(m, mmap.mmap) for m in advised)
    assert len(parts) == len(whole) == 500
    for q in rng.normal(size=(20, 16)).astype(np.float32):
        a, b = whole.search(q, 10), parts.search(q, 10)
        assert a is not None and b is not None
        assert np.array_equal(np.sort(a), np.sort(b))


def test_ray_starts_after_the_library_loaded_usearch() -> None:
    """usearch's extension carries its own C++ standard library; loaded before the system's, a later ``ray.init``
    in the same process aborted (std::regex_error in Ray's GCS client). The library loads the system's first."""
    pytest.importorskip("ray")
    code = (
        "import numpy as np\n"
        "from g2cons_plugins.arrays.unit_hnsw import _usearch\n"
        "ix = _usearch()(ndim=16)\n"
        "ix.add(np.arange(200), np.random.default_rng(0).random((200, 16), dtype=np.float32))\n"
        "import ray\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
        "ray.shutdown()\n"
        "print('started')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "started" in out.stdout, out.stderr[-2000:]
