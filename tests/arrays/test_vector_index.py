"""VectorIndex: exact top-k with deterministic ties, the HNSW path (usearch) against exact, persistence."""

from __future__ import annotations

import json

import numpy as np
import pytest

from g2cons_plugins.arrays.unit_hnsw import ANNParams, VectorIndex
from g2cons_plugins.errors import InputError, PersistError


def _unit(rng: np.random.Generator, n: int, d: int, clusters: int = 20) -> np.ndarray:
    centres = rng.standard_normal((clusters, d))
    X = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, d))
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


def _brute(X: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    s = X.astype(np.float32) @ q.astype(np.float32)
    return sorted(range(len(X)), key=lambda i: (-s[i], i))[:k]


def test_exact_search_matches_brute_force_order() -> None:
    rng = np.random.default_rng(1)
    X = _unit(rng, 700, 24)
    index = VectorIndex(X)
    assert not index.uses_ann
    for q in X[:10] + 0.05 * rng.standard_normal((10, 24)).astype(np.float32):
        ids, scores = index.search(q, 37)
        assert ids.tolist() == _brute(X, q, 37)
        assert np.allclose(scores, X[ids] @ q, atol=1e-6)
        assert (np.diff(scores) <= 0).all()


def test_ties_are_broken_by_id_even_at_the_cut_off() -> None:
    base = np.eye(4, dtype=np.float32)
    X = np.vstack([base[1], base[0], base[0], base[2], base[0], base[0], base[3]])  # rows 1, 2, 4, 5 tie
    ids, scores = VectorIndex(X).search(base[0], 3)
    assert ids.tolist() == [1, 2, 4]
    assert scores.tolist() == [1.0, 1.0, 1.0]


def test_k_larger_than_the_index_returns_every_row() -> None:
    X = _unit(np.random.default_rng(2), 5, 8)
    ids, _ = VectorIndex(X).search(X[0], 50)
    assert sorted(ids.tolist()) == list(range(5))


@pytest.mark.parametrize(
    "build",
    [
        lambda: VectorIndex(np.zeros(4, np.float32)),
        lambda: VectorIndex(np.array([[np.nan, 1.0]], np.float32)),
        lambda: VectorIndex(np.ones((2, 2), np.float32), dtype="int8"),
        lambda: VectorIndex(np.ones((2, 2), np.float32), ann_threshold=0),
        lambda: ANNParams(connectivity=0),
        lambda: VectorIndex(np.ones((2, 2), np.float32)).search(np.ones(3, np.float32), 1),
        lambda: VectorIndex(np.ones((2, 2), np.float32)).search(np.ones(2, np.float32), 0),
    ],
)
def test_bad_input_raises_input_error(build) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError):
        build()


def test_float16_scores_stay_close_to_float32() -> None:
    rng = np.random.default_rng(3)
    X = _unit(rng, 2000, 64)
    full, half = VectorIndex(X), VectorIndex(X, dtype="float16")
    assert half.vectors.dtype == np.float16
    q = X[7] + 0.1 * rng.standard_normal(64).astype(np.float32)
    assert np.abs(full.scores(q) - half.scores(q)).max() < 2e-3
    overlap = set(full.search(q, 50)[0].tolist()) & set(half.search(q, 50)[0].tolist())
    assert len(overlap) >= 45


@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip_exact(tmp_path, mmap: bool) -> None:  # type: ignore[no-untyped-def]
    X = _unit(np.random.default_rng(4), 300, 16)
    index = VectorIndex(X, dtype="float16")
    index.save(tmp_path / "vi")
    loaded = VectorIndex.load(tmp_path / "vi", mmap=mmap)
    assert isinstance(loaded.vectors, np.memmap) == mmap
    assert loaded.dtype == "float16" and not loaded.uses_ann
    for q in X[:5]:
        a, b = index.search(q, 20), loaded.search(q, 20)
        assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    assert not list((tmp_path / "vi").glob(".*"))  # no temporary files left behind


def test_save_refuses_a_directory_with_foreign_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(PersistError, match="notes.txt"):
        VectorIndex(np.eye(3, dtype=np.float32)).save(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_load_rejects_missing_manifest_and_truncated_vectors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PersistError, match="not a vector index"):
        VectorIndex.load(tmp_path)
    VectorIndex(np.eye(3, dtype=np.float32)).save(tmp_path)
    data = (tmp_path / "vectors.npy").read_bytes()
    (tmp_path / "vectors.npy").write_bytes(data[:-4])
    with pytest.raises(PersistError, match="wrong size"):
        VectorIndex.load(tmp_path)
    manifest = json.loads((tmp_path / "vector_index.json").read_text())
    manifest["format"] = "something-else/9"
    (tmp_path / "vector_index.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistError, match="format"):
        VectorIndex.load(tmp_path)


# ---------------------------------------------------------------------------- the HNSW path (usearch)
usearch = pytest.importorskip("usearch", reason="the ANN path needs the 'ann' extra (usearch)")


@pytest.fixture(scope="module")
def clustered() -> np.ndarray:
    return _unit(np.random.default_rng(5), 4000, 32)


def test_ann_recall_and_exact_scores(clustered: np.ndarray) -> None:
    index = VectorIndex(clustered, ann_threshold=1000)
    assert index.uses_ann
    rng = np.random.default_rng(6)
    recalls = []
    for q in clustered[rng.choice(len(clustered), 20, replace=False)]:
        ids, scores = index.search(q, 100)
        assert len(ids) == 100 and len(set(ids.tolist())) == 100
        assert np.array_equal(scores, clustered[ids] @ q)  # re-scored exactly
        assert ids.tolist() == sorted(ids.tolist(), key=lambda i: (-float(clustered[i] @ q), i))
        recalls.append(len(set(ids.tolist()) & set(_brute(clustered, q, 100))) / 100)
    assert np.mean(recalls) >= 0.97


def test_ann_build_is_reproducible_and_survives_save_load(tmp_path, clustered: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    a = VectorIndex(clustered, ann_threshold=1000)
    b = VectorIndex(clustered, ann_threshold=1000)
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    assert (tmp_path / "a" / "hnsw.usearch").read_bytes() == (tmp_path / "b" / "hnsw.usearch").read_bytes()
    for mmap in (True, False):
        loaded = VectorIndex.load(tmp_path / "a", mmap=mmap)
        assert loaded.uses_ann
        for q in clustered[:10]:
            x, y = a.search(q, 60), loaded.search(q, 60)
            assert x[0].tolist() == y[0].tolist() and x[1].tolist() == y[1].tolist()


def test_switching_to_exact_removes_the_stale_graph(tmp_path, clustered: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    VectorIndex(clustered, ann_threshold=1000).save(tmp_path)
    assert (tmp_path / "hnsw.usearch").exists()
    VectorIndex(clustered[:500], ann_threshold=1000).save(tmp_path)
    assert not (tmp_path / "hnsw.usearch").exists()
    assert not VectorIndex.load(tmp_path).uses_ann
