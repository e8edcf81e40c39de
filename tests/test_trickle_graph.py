"""The graph side of a trickle update (g2cons_plugins.graph.update_edges): the edges and adjacency it patches equal
build_edges / adjacency on the changed incidence, for adds and removals, with and without moved concepts."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins import graph
from g2cons_plugins.graph import adjacency, build_edges, find_pairs, update_edges


def _incidence(rng: np.random.Generator, n: int, m: int) -> sp.csr_matrix:
    """0/1 chunks x concepts, skewed (a few frequent concepts) so that some pairs cross theta_co."""
    p = np.minimum(0.6, 3.0 / (1 + np.arange(m)) ** 0.7)
    return sp.csr_matrix((rng.random((n, m)) < p).astype(np.float32))


def _vectors(rng: np.random.Generator, m: int) -> np.ndarray:
    V = rng.normal(size=(m, 8)).astype(np.float32) + 1.5
    return V / np.linalg.norm(V, axis=1, keepdims=True)


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    for f in ("rows", "cols", "co", "dice"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    np.testing.assert_allclose(a.cosine, b.cosine, atol=1e-6)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("share", [1e-9, 1e9])  # always the sparse path (patching) / always the linear one
@pytest.mark.parametrize("block", [20_000_000, 40])  # the moved concepts' pairs in one block / in many
def test_update_edges_equals_a_rebuild(
    seed: int, sign: int, share: float, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adds / removes of 1-12 chunks, with some concepts' vectors moved: the patched edges and adjacency equal
    build_edges and adjacency on the new incidence and vectors (same theta_sem)."""
    monkeypatch.setattr(graph, "SPARSE_SHARE", share)
    monkeypatch.setattr(graph, "BLOCK_WORK", block)
    rng = np.random.default_rng(seed)
    n, m, k, theta_co = 120, 60, int(rng.integers(1, 13)), 2
    C = _incidence(rng, n + k, m)
    V = _vectors(rng, m)
    base = C[:n] if sign > 0 else C
    after = C if sign > 0 else C[k:]
    changed = C[n:] if sign > 0 else C[:k]
    edges = build_edges(base, V, theta_co, None, 50.0)
    moved = rng.choice(m, size=int(rng.integers(0, 6)), replace=False)
    V2 = V.copy()
    V2[moved] = _vectors(rng, len(moved))
    df = np.asarray(after.sum(axis=0)).ravel().astype(np.int64)
    got, A = update_edges(edges, after, V2, moved, changed, sign, theta_co, df, A=adjacency(edges, m))
    want = build_edges(after, V2, theta_co, edges.theta_sem, 50.0)
    _same(got, want)
    ref = adjacency(want, m)
    assert A.has_sorted_indices and (ref != A).nnz == 0
    np.testing.assert_array_equal(A.indptr, ref.indptr)
    np.testing.assert_array_equal(A.indices, ref.indices)
    np.testing.assert_array_equal(A.data, ref.data)


def test_find_pairs() -> None:
    """Positions of present pairs, insertion points of absent ones, as a search over (row, col) keys gives."""
    rng = np.random.default_rng(0)
    key = np.unique(rng.integers(0, 400, 150))
    rows, cols = key // 20, key % 20
    a, b = rng.integers(0, 20, 300), rng.integers(0, 20, 300)
    pos, found = find_pairs(rows, cols, a, b)
    np.testing.assert_array_equal(pos, np.searchsorted(key, a * 20 + b))
    np.testing.assert_array_equal(found, np.isin(a * 20 + b, key))
