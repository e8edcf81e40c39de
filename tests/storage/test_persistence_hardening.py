"""Persistence hardening (outside test findings): the pointer and the manifest are small regular files, the writer
lock never follows a planted link, loads racing a save loop never fail, and forged derived state (checksums
recomputed) is refused by validation."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, PersistError
from g2cons_plugins.storage.persistence import POINTER

DOCS = [
    {
        "id": f"d{i:02d}",
        "text": f"Alice Moreau{i % 3} met Bob Tanaka in Paris{i % 4}. They founded Acme{i % 5} in Lisbon.",
    }
    for i in range(24)
]
IDS = sorted(d["id"] for d in DOCS)


def _build(docs: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(docs, embedder="hash:32", config=G2ConSConfig(theta_co=1))


@pytest.fixture(scope="module")
def small() -> G2ConSIndex:
    return _build(DOCS)


@pytest.fixture
def saved(small: G2ConSIndex, tmp_path: Path) -> Path:
    path = tmp_path / "idx"
    small.save(path)
    return path


def V(path: Path) -> Path:
    return path / json.loads((path / POINTER).read_text(encoding="utf-8"))["data"]


def _quick_refusal(path: Path, match: str) -> PersistError:
    t = time.perf_counter()
    with pytest.raises(PersistError, match=match) as exc:
        G2ConSIndex.load(path)
    assert time.perf_counter() - t < 5.0
    return exc.value


# ---------------------------------------------------------------------------------------------- finding 1: CURRENT
def test_pointer_linked_to_dev_zero_is_refused_at_once(saved: Path) -> None:
    (saved / POINTER).unlink()
    (saved / POINTER).symlink_to("/dev/zero")
    err = _quick_refusal(saved, "symbolic link")
    assert POINTER in str(err)


def test_pointer_linked_to_a_real_pointer_is_refused(saved: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "pointer-copy"
    elsewhere.write_bytes((saved / POINTER).read_bytes())
    (saved / POINTER).unlink()
    (saved / POINTER).symlink_to(elsewhere)
    _quick_refusal(saved, "symbolic link")


def test_huge_pointer_is_refused_unread(saved: Path) -> None:
    with (saved / POINTER).open("r+b") as fh:
        fh.truncate(8 << 30)  # sparse: 8 GiB that a reader without a bound would read
    err = _quick_refusal(saved, "bytes")
    assert POINTER in str(err)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_pointer_that_is_not_a_regular_file_is_refused(saved: Path, kind: str) -> None:
    (saved / POINTER).unlink()
    if kind == "fifo":
        os.mkfifo(saved / POINTER)  # an unbounded reader would block here for ever
    else:
        (saved / POINTER).mkdir()
    err = _quick_refusal(saved, "regular file")
    assert POINTER in str(err)


def test_manifest_that_is_a_fifo_is_refused(saved: Path) -> None:
    mf = V(saved) / "manifest.json"
    mf.unlink()
    os.mkfifo(mf)
    err = _quick_refusal(saved, "regular file")
    assert "manifest.json" in str(err)


def test_save_replaces_a_pointer_linked_to_dev_zero_without_reading_it(small: G2ConSIndex, saved: Path) -> None:
    (saved / POINTER).unlink()
    (saved / POINTER).symlink_to("/dev/zero")
    t = time.perf_counter()
    small.save(saved)
    assert time.perf_counter() - t < 10.0
    assert not (saved / POINTER).is_symlink()
    assert [c.id for c in G2ConSIndex.load(saved).chunks] == IDS


# ---------------------------------------------------------------------------------------------- finding 4: .lock
def test_planted_lock_link_creates_nothing_outside(small: G2ConSIndex, saved: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "planted"
    outside.parent.mkdir()
    (saved / ".lock").unlink()
    (saved / ".lock").symlink_to(outside)
    with pytest.raises(PersistError, match=r"\.lock.*symbolic link"):
        small.save(saved)
    assert not outside.exists()
    assert [c.id for c in G2ConSIndex.load(saved).chunks] == IDS  # the index is untouched


def test_planted_lock_link_to_an_existing_file_leaves_it_alone(small: G2ConSIndex, saved: Path, tmp_path: Path) -> None:
    outside = tmp_path / "theirs"
    outside.write_text("keep")
    (saved / ".lock").unlink()
    (saved / ".lock").symlink_to(outside)
    with pytest.raises(PersistError, match="symbolic link"):
        small.save(saved)
    assert outside.read_text() == "keep"


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_lock_that_is_not_a_regular_file_is_refused(small: G2ConSIndex, saved: Path, kind: str) -> None:
    (saved / ".lock").unlink()
    if kind == "fifo":
        os.mkfifo(saved / ".lock")
    else:
        (saved / ".lock").mkdir()
    with pytest.raises(PersistError, match=r"\.lock"):
        small.save(saved)


# ---------------------------------------------------------------------------------------------- finding 2: races
ROOT = Path(__file__).resolve().parents[2]
BIG = [
    {
        "id": f"p{i:04d}",
        "text": f"Person{i % 37} studied Topic{i % 23} at Place{i % 19}. Person{(i * 7) % 37} wrote about "
        f"Topic{(i * 3) % 23} in City{i % 29}. The work of Person{i % 37} was cited in Journal{i % 11}.",
    }
    for i in range(1200)
]
BIG_A, BIG_B = BIG[:800], BIG[400:]
SAVE_LOOP = """
import json, os, sys
from g2cons_plugins import G2ConSConfig, G2ConSIndex
docs = json.loads(open(sys.argv[2], encoding="utf-8").read())
cfg = G2ConSConfig(theta_co=1)
a = G2ConSIndex.build(docs[:800], embedder="hash:32", config=cfg)
b = G2ConSIndex.build(docs[400:], embedder="hash:32", config=cfg)
print("ready", flush=True)
i = 0
while True:
    (a if i % 2 == 0 else b).save(sys.argv[1])
    i += 1
    with open(sys.argv[3] + ".tmp", "w") as fh:  # renamed into place: a reader never sees it half-written
        fh.write(str(i))
    os.replace(sys.argv[3] + ".tmp", sys.argv[3])
"""


def _slow_reads(monkeypatch: pytest.MonkeyPatch, seconds: float, during: object = None) -> None:
    """Make every load spend ``seconds`` between reading the stored and the derived state (a load of a large
    index takes 19 s at 1M passages), calling ``during()`` there first."""
    import g2cons_plugins.storage.persistence as persistence

    real = persistence.read_derived

    def slow(*args: object, **kwargs: object) -> object:
        if callable(during):
            during()
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(persistence, "read_derived", slow)


def _versions(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name.startswith("v-"))


def test_a_load_pins_its_version_against_any_number_of_saves(
    small: G2ConSIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saves (here three, in this process, between two steps of every load) never remove the version a load
    reads: it returns that version, not an error; the next save once it is done removes it."""
    path = tmp_path / "idx"
    other = _build(DOCS[:6])
    other.save(path)
    pinned = V(path)
    _slow_reads(monkeypatch, 0.0, during=lambda: [small.save(path) for _ in range(3)])
    loaded = G2ConSIndex.load(path)
    assert [c.id for c in loaded.chunks] == sorted(d["id"] for d in DOCS[:6])  # the version it started on
    assert pinned.is_dir()  # kept by the saves while the load read it
    monkeypatch.undo()
    small.save(path)
    assert not pinned.exists() and len(_versions(path)) == 2


def test_loads_never_fail_against_a_tight_save_loop_in_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    path, docs, count = tmp_path / "idx", tmp_path / "docs.json", tmp_path / "saves"
    docs.write_text(json.dumps(BIG), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    p = subprocess.Popen(
        [sys.executable, "-c", SAVE_LOOP, str(path), str(docs), str(count)], stdout=subprocess.PIPE, text=True, env=env
    )
    want = (sorted(d["id"] for d in BIG_A), sorted(d["id"] for d in BIG_B))
    errors: list[str] = []
    loads, most_versions = 0, 0
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        while not count.exists():
            time.sleep(0.01)
        _slow_reads(monkeypatch, 0.4)  # each load overlaps several saves
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline and p.poll() is None:
            try:
                assert [c.id for c in G2ConSIndex.load(path).chunks] in want
            except Exception as e:  # noqa: BLE001 - every failure counts
                errors.append(repr(e))
            loads += 1
            most_versions = max(most_versions, len(_versions(path)))
        saves = int(count.read_text() or 0)
    finally:
        p.kill()
        p.wait()
    assert not errors, (len(errors), loads, errors[:3])
    assert loads >= 5 and saves >= 2 * loads, (loads, saves)
    assert most_versions <= 4  # the new one, the previous one, and the one a load had pinned
    monkeypatch.undo()
    _build(DOCS).save(path)  # nothing pinned now: all but the new and the previous version go
    assert len(_versions(path)) == 2
    assert [c.id for c in G2ConSIndex.load(path).chunks] == IDS


# ---------------------------------------------------------------------------------------------- finding 3: derived
def _resum(path: Path, name: str) -> None:
    """Recompute the checksums above ``name`` (manifest, then pointer) the way a save writes them: only the
    validation of the content itself can catch the edit."""
    import hashlib

    mf = V(path) / "manifest.json"
    manifest = json.loads(mf.read_text(encoding="utf-8"))
    manifest["files"][name] = hashlib.sha256((V(path) / name).read_bytes()).hexdigest()
    data = json.dumps(manifest, indent=2).encode("utf-8")
    mf.write_bytes(data)
    ptr = json.loads((path / POINTER).read_text(encoding="utf-8"))
    ptr["manifest_sha256"] = hashlib.sha256(data).hexdigest()
    (path / POINTER).write_text(json.dumps(ptr, indent=2), encoding="utf-8")


def _forge_npz(path: Path, edit: Callable[[dict[str, np.ndarray]], object]) -> None:
    from g2cons_plugins.storage.derived_io import savez

    f = V(path) / "derived.npz"
    with np.load(f, allow_pickle=False) as z:
        arrays = {k: np.array(z[k]) for k in z.files}
    edit(arrays)
    f.unlink()
    with f.open("xb") as fh:
        savez(fh, arrays)
    _resum(path, "derived.npz")


def _forge_json(path: Path, name: str, edit: Callable[[dict[str, Any]], object]) -> None:
    f = V(path) / name
    obj = json.loads(f.read_text(encoding="utf-8"))
    edit(obj)
    f.write_text(json.dumps(obj), encoding="utf-8")
    _resum(path, name)


def _set(key: str, fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict[str, np.ndarray]], None]:
    def edit(arrays: dict[str, np.ndarray]) -> None:
        arrays[key] = fn(arrays[key])

    return edit


def _at(i: int | tuple[int, ...], value: float) -> Callable[[np.ndarray], np.ndarray]:
    def fn(a: np.ndarray) -> np.ndarray:
        a = a.copy()
        a[i] = value
        return a

    return fn


def _lower_entry(arrays: dict[str, np.ndarray]) -> None:
    """Change the first entry below the diagonal of A (the upper triangle, the edge list, stays)."""
    indptr, indices, data = arrays["A.indptr"], arrays["A.indices"], arrays["A.data"].copy()
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    k = int(np.flatnonzero(indices < rows)[0])
    data[k] *= 0.5
    arrays["A.data"] = data


def _swap_edges(arrays: dict[str, np.ndarray]) -> None:
    for k in ("rows", "cols", "co", "cosine", "dice"):
        a = arrays[f"edges.{k}"].copy()
        a[[0, 1]] = a[[1, 0]]
        arrays[f"edges.{k}"] = a


def _scaled_edge_weight(arrays: dict[str, np.ndarray]) -> None:
    """Dice weight of the first edge doubled in the edge list and in both triangles of A, consistently."""
    d = arrays["edges.dice"].copy()
    old = np.float64(d[0])
    d[0] *= 2
    arrays["edges.dice"] = d
    a = arrays["A.data"].copy()
    a[a == old] = np.float64(d[0])
    arrays["A.data"] = a


NPZ_CASES: list[tuple[str, Callable[[dict[str, np.ndarray]], object], str]] = [
    ("pagerank-2d", _set("pagerank", lambda a: np.stack([a, a], axis=1)), "'pagerank'.*shape"),
    ("pagerank-nan", _set("pagerank", _at(0, np.nan)), "'pagerank'"),
    ("pagerank-negative", _set("pagerank", _at(0, -0.5)), "'pagerank'"),
    ("pagerank-not-a-distribution", _set("pagerank", lambda a: a * 3), "'pagerank'.*distribution"),
    ("pagerank-int", _set("pagerank", lambda a: np.ones(len(a), np.int64)), "'pagerank'.*dtype"),
    ("weights-nan", _set("A.data", _at(0, np.nan)), "'A.data'.*NaN"),
    ("weights-inf", _set("A.data", _at(0, np.inf)), "'A.data'.*NaN or infinite"),
    ("weights-negative", _set("A.data", lambda a: -a), "'A.data'.*negative"),
    ("weights-asymmetric", _lower_entry, "'A'"),
    ("weights-other-than-the-edges", _set("A.data", lambda a: a * 0.5), "'A'.*Dice"),
    ("edge-weight-not-dice", _scaled_edge_weight, "'edges.dice'"),
    ("edges-unsorted", _swap_edges, "'edges.rows'.*sorted"),
    ("edges-out-of-range", _set("edges.cols", _at(-1, 10**6)), "'edges.rows'.*col <"),
    ("edges-float-rows", _set("edges.rows", lambda a: a.astype(np.float64)), "'edges.rows'.*dtype"),
    ("edges-cosine-nan", _set("edges.cosine", _at(0, np.nan)), "'edges.cosine'"),
    ("edges-co-negative", _set("edges.co", _at(0, -3)), "'edges.co'"),
    ("concept-vectors-zero", _set("concept_vecs", lambda a: np.zeros_like(a)), "'concept_vecs'.*norm"),
    ("concept-vector-scaled", _set("concept_vecs", lambda a: a * 3), "'concept_vecs'"),
    ("concept-vectors-1d", _set("concept_vecs", lambda a: a[:, 0].copy()), "'concept_vecs'.*shape"),
    ("df-negative", _set("df", _at(0, -4)), "'df'"),
    ("df-float", _set("df", lambda a: a.astype(np.float64)), "'df'.*dtype"),
    ("df-off-by-one", _set("df", lambda a: a + 1), "'df'.*differs"),
    ("sentence-counts", _set("sentence_counts", lambda a: a + 1), "'sentence_counts'"),
    ("name-share-above-1", _set("name_share", _at(0, 1.5)), "'name_share'"),
    ("name-df", _set("name_df", lambda a: a + 1), "'name_df'"),
    ("indices-float", _set("A.indices", lambda a: a.astype(np.float64)), "'A.indices'.*dtype"),
    ("indptr-float", _set("unit_inc.indptr", lambda a: a.astype(np.float64)), "'unit_inc.indptr'.*dtype"),
    ("incidence-2", _set("chunk_inc.data", _at(0, 2.0)), "'chunk_inc.data'.*1"),
    ("incidence-indices-out-of-range", _set("sent_inc.indices", _at(0, 10**6)), "'sent_inc'"),
    ("term-counts-negative", _set("terms.counts.data", _at(0, -1)), "'terms.counts.data'.*negative"),
    ("array-missing", lambda arrays: arrays.pop("name_share"), "missing array 'name_share'"),
]


@pytest.mark.parametrize(("edit", "what"), [c[1:] for c in NPZ_CASES], ids=[c[0] for c in NPZ_CASES])
def test_forged_derived_arrays_are_refused(
    saved: Path, edit: Callable[[dict[str, np.ndarray]], object], what: str
) -> None:
    _forge_npz(saved, edit)
    with pytest.raises(PersistError, match=what) as exc:
        G2ConSIndex.load(saved)
    assert "derived.npz" in str(exc.value) or "derived.json" in str(exc.value)


def _dup(key: str) -> Callable[[dict[str, Any]], None]:
    def edit(meta: dict[str, Any]) -> None:
        meta[key][1] = meta[key][0]

    return edit


JSON_CASES: list[tuple[str, str, Callable[[dict[str, Any]], object], str]] = [
    ("vocab-duplicated", "derived.json", _dup("vocab"), "'vocab' holds .* twice"),
    ("names-duplicated", "derived.json", _dup("names"), "'names' holds .* twice"),
    ("words-duplicated", "derived.json", _dup("terms.words"), "'terms.words' holds .* twice"),
    ("vocab-unknown-word", "derived.json", lambda m: m["vocab"].__setitem__(0, "zzzz"), "'vocab'.*terms.words"),
    ("stats-string", "derived.json", lambda m: m["stats"].update(mean_degree="2"), "'stats.mean_degree'"),
    ("stats-wrong", "derived.json", lambda m: m["stats"].update(max_degree=m["stats"]["max_degree"] + 1), "max_degree"),
    ("stats-extra", "derived.json", lambda m: m["stats"].update(extra=1), "'stats'"),
    ("theta-string", "derived.json", lambda m: m["edges"].update(theta_sem="0.5"), "'edges.theta_sem'"),
    ("candidates-below-edges", "derived.json", lambda m: m["edges"].update(n_candidates=0), "n_candidates"),
]


@pytest.mark.parametrize(("name", "edit", "what"), [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES])
def test_forged_derived_json_is_refused(
    saved: Path, name: str, edit: Callable[[dict[str, Any]], object], what: str
) -> None:
    _forge_json(saved, name, edit)
    with pytest.raises(PersistError, match=what) as exc:
        G2ConSIndex.load(saved)
    assert name in str(exc.value)


@pytest.mark.parametrize("content", [b"", b"\x00" * 64, b"PK\x03\x04garbage", "npy"])
def test_empty_or_garbage_derived_npz_names_it(saved: Path, content: bytes | str) -> None:
    f = V(saved) / "derived.npz"
    if content == "npy":
        f.unlink()
        with f.open("xb") as fh:
            np.save(fh, np.arange(4))
    else:
        f.write_bytes(content)  # type: ignore[arg-type]
    _resum(saved, "derived.npz")
    with pytest.raises(PersistError, match="derived.npz"):
        G2ConSIndex.load(saved)


def test_unsorted_sparse_indices_are_read_as_sorted(saved: Path) -> None:
    """Lenient where nothing is wrong: a row's indices in another order (an older writer) read back canonical."""
    want = G2ConSIndex.load(saved).derived.chunk_inc

    def reverse_rows(arrays: dict[str, np.ndarray]) -> None:
        indptr, indices = arrays["chunk_inc.indptr"], arrays["chunk_inc.indices"].copy()
        for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist(), strict=True):
            indices[a:b] = indices[a:b][::-1].copy()
        arrays["chunk_inc.indices"] = indices

    _forge_npz(saved, reverse_rows)
    got = G2ConSIndex.load(saved).derived.chunk_inc
    assert got.has_canonical_format and (got != want).nnz == 0


VERIFY_CASES: list[tuple[str, Callable[[dict[str, np.ndarray]], object], str]] = [
    ("pagerank-permuted", _set("pagerank", lambda a: a[::-1].copy()), "pagerank"),
    ("concept-vector-swapped", _set("concept_vecs", lambda a: a[[1, 0, *range(2, len(a))]].copy()), "concept_vecs"),
    ("name-share-changed", _set("name_share", lambda a: 1.0 - a), "name_share"),
]


@pytest.mark.parametrize(("edit", "what"), [c[1:] for c in VERIFY_CASES], ids=[c[0] for c in VERIFY_CASES])
def test_verify_compares_everything_pagerank_included(
    saved: Path, edit: Callable[[dict[str, np.ndarray]], object], what: str
) -> None:
    """Valid-looking but wrong values (PageRank of another graph, another concept's vector) pass the structural
    checks; ``verify=True`` re-derives and names the field."""
    _forge_npz(saved, edit)
    G2ConSIndex.load(saved)  # consistent enough to load
    with pytest.raises(PersistError, match=f"verify|{what}") as exc:
        G2ConSIndex.load(saved, verify=True)
    assert what in str(exc.value)


# ---------------------------------------------------------------------------------------------- read-only state
def _arrays(idx: G2ConSIndex) -> dict[str, np.ndarray]:
    import dataclasses

    import scipy.sparse as sp

    out: dict[str, np.ndarray] = {}

    def walk(prefix: str, obj: object) -> None:
        if isinstance(obj, np.ndarray):
            out[prefix] = obj
        elif sp.issparse(obj):
            for k in ("data", "indices", "indptr"):
                out[f"{prefix}.{k}"] = getattr(obj, k)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                walk(f"{prefix}.{f.name}", getattr(obj, f.name))

    walk("derived", idx.derived)
    walk("stored", idx.stored)
    return out


@pytest.mark.parametrize("how", ["built", "loaded"])
def test_no_caller_can_change_what_every_reader_sees(small: G2ConSIndex, saved: Path, how: str) -> None:
    idx = small if how == "built" else G2ConSIndex.load(saved)
    arrays = _arrays(idx)
    assert {"derived.pagerank", "derived.A.data", "derived.concept_vecs", "derived.terms.counts.data"} <= set(arrays)
    writeable = sorted(k for k, a in arrays.items() if a.flags.writeable)
    assert not writeable, writeable
    with pytest.raises(ValueError, match="read-only"):
        idx.derived.pagerank[0] = 1.0


def test_a_loaded_read_only_index_serves_every_path_and_updates_like_a_rebuild(saved: Path) -> None:
    """Every reader and writer works on read-only arrays (nothing mutates them in place): all strategies and
    selectors, fusion, export, add and remove; an update of a loaded index equals a rebuild."""
    from g2cons_plugins.config import G2ConSConfig as Config

    idx = G2ConSIndex.load(saved)
    q = "Where did Alice Moreau1 meet Bob Tanaka?"
    for strategy in ("bridge", "paper", "ppr", "dense", "e2"):
        assert idx.retrieve(q, strategy=strategy), strategy
    for selector in ("coverage", "concept_coverage", "pagerank", "shortest", "uniform", "knn_pagerank"):
        assert idx.select(kappa=0.5, selector=selector, seed=1) is not None, selector
    assert idx.fuse([{"id": "d01", "text": "Alice Moreau1 met Bob Tanaka."}], q)
    assert idx.to_networkx().number_of_nodes() == len(idx.derived.vocab)
    extra = [{"id": "e1", "text": "Carla Nunes met Alice Moreau1 in Lisbon. Acme2 hired Carla Nunes."}]
    idx.add(extra)
    idx.remove(["d03"])
    docs = [d for d in DOCS if d["id"] != "d03"] + extra
    fresh = G2ConSIndex.build(docs, embedder="hash:32", config=Config(theta_co=1))
    assert idx.stats == fresh.stats and idx.derived.vocab == fresh.derived.vocab
    np.testing.assert_allclose(idx.derived.pagerank, fresh.derived.pagerank, rtol=1e-9)
    assert not idx.derived.pagerank.flags.writeable


CONFIGS = [
    {},
    {"vector_level": "chunk"},
    {"cooccurrence": "sentence"},
    {"incidence": "extracted"},
    {"concept_mode": "all_words"},
    {"mode": "paper"},
]


@pytest.mark.parametrize("kw", CONFIGS, ids=[",".join(f"{k}={v}" for k, v in c.items()) or "default" for c in CONFIGS])
def test_every_config_round_trips_through_the_validation_and_verify(
    corpus: list[dict[str, str]], tmp_path: Path, kw: dict[str, str]
) -> None:
    cfg = G2ConSConfig(theta_co=1, **kw)  # type: ignore[arg-type]
    idx = G2ConSIndex.build(corpus, embedder="hash", config=cfg)
    idx.save(tmp_path / "idx")
    got = G2ConSIndex.load(tmp_path / "idx", verify=True)
    assert got.stats == idx.stats
    np.testing.assert_array_equal(got.derived.pagerank, idx.derived.pagerank)


# ---------------------------------------------------------------------------------------------- forged .npy files
def _npy_bytes(shape: tuple[int, ...], descr: str, data: bytes) -> bytes:
    import io

    buf = io.BytesIO()
    buf.write(np.lib.format.magic(1, 0))
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


def _npy_forgeries(file: Path) -> dict[str, bytes]:
    """Consistent forgeries of a saved ``.npy`` (its checksum is recomputed): empty, a header claiming 2^40 rows
    over the same data, one row fewer, another dtype over the same bytes, a truncated header."""
    with file.open("rb") as fh:
        np.lib.format.read_magic(fh)
        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        data = fh.read()
    descr = np.lib.format.dtype_to_descr(dtype)
    other = "<f8" if dtype != np.float64 else "<f4"
    fewer = data[: max(0, len(data) - (len(data) // max(shape[0], 1)))]
    return {
        "empty": b"",
        "2^40 rows": _npy_bytes((2**40, *shape[1:]), descr, data),
        "a row fewer": _npy_bytes((max(shape[0] - 1, 0), *shape[1:]), descr, fewer),
        "another dtype": _npy_bytes((len(data) // np.dtype(other).itemsize,), other, data),
        "cut header": _npy_bytes(shape, descr, data)[:20],
    }


@pytest.fixture(scope="module")
def npy_indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Saved indexes holding every ``.npy`` a load reads: plain, product-quantised, graph unit index, sentence
    vectors, trickle log."""
    root = tmp_path_factory.mktemp("npy")
    out = {}
    for kind in ("plain", "pq", "hnsw", "sentence"):
        if kind in ("plain", "sentence"):
            cfg = G2ConSConfig(theta_co=1, vector_level="sentence" if kind == "sentence" else "unit")
        else:
            cfg = G2ConSConfig(theta_co=1, ann_threshold=1, ann_kind=kind)
        if kind in ("pq", "hnsw"):
            pytest.importorskip("faiss" if kind == "pq" else "usearch")
        G2ConSIndex.build(DOCS[:16], embedder="hash:32", config=cfg).save(root / kind)
        out[kind] = root / kind
    idx = G2ConSIndex.load(out["plain"])
    idx.add(DOCS[16:], exact=False)
    idx.save(out["plain"])  # the folder it was loaded from: the exact snapshot's files + trickle_log / _vectors
    return out


NPY_FILES = [
    ("plain", "unit_vectors.npy"),
    ("plain", "trickle_vectors.npy"),
    ("pq", "unit_pq_codes.npy"),
    ("pq", "unit_pq_centroids.npy"),
    ("hnsw", "unit_ann_keys.npy"),
    ("hnsw", "unit_vectors.npy"),
    ("sentence", "sentence_vectors.npy"),
]


@pytest.mark.parametrize("kind, name", NPY_FILES)
def test_forged_npy_files_are_refused_naming_the_file_before_anything_is_allocated(
    npy_indexes: dict[str, Path], tmp_path: Path, kind: str, name: str
) -> None:
    """Every forgery of every ``.npy`` a load reads (checksums recomputed) raises PersistError naming the file, at
    once: no EOFError, no MemoryError, no allocation of what the header claims."""
    import shutil
    import tracemalloc

    for label, content in _npy_forgeries(V(npy_indexes[kind]) / name).items():
        path = tmp_path / f"{kind}-{label.replace(' ', '-').replace('^', '')}"
        shutil.copytree(npy_indexes[kind], path)
        (V(path) / name).unlink()  # hard links in a trickle save: never write through one
        (V(path) / name).write_bytes(content)
        _resum(path, name)
        tracemalloc.start()
        try:
            err = _quick_refusal(path, name.replace(".", r"\."))
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert peak < 64 << 20, (label, peak)
        assert str(V(path) / name) in str(err), (label, str(err))


@pytest.mark.parametrize("compress", [False, True])
def test_a_forged_npz_member_claiming_2_40_rows_is_refused_unallocated(
    saved: Path, tmp_path: Path, compress: bool
) -> None:
    """A member of ``derived.npz`` whose header claims 2^40 rows over its real data (stored, or compressed: read by
    ``np.load``), checksums recomputed: PersistError naming the file, nothing allocated."""
    import tracemalloc
    import zipfile

    f = V(saved) / "derived.npz"
    with zipfile.ZipFile(f) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    name = max(members, key=lambda k: len(members[k]))  # the largest member: a real array
    head = __import__("io").BytesIO(members[name])
    np.lib.format.read_magic(head)
    shape, _, dtype = np.lib.format.read_array_header_1_0(head)
    members[name] = _npy_bytes((2**40, *shape[1:]), np.lib.format.dtype_to_descr(dtype), head.read())
    f.unlink()
    kind = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(f, "w", compression=kind) as z:
        for k, v in members.items():
            z.writestr(k, v)
    _resum(saved, "derived.npz")
    tracemalloc.start()
    try:
        err = _quick_refusal(saved, "derived")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 256 << 20 and "derived.npz" in str(err), (peak, str(err))
