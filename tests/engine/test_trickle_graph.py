"""The graph side of a trickle update (g2cons_plugins.engine.edge_update.update_edges): with near pairs the edges and
adjacency it makes equal build_edges / adjacency on the changed incidence and vectors, for adds and removals, with
concepts moved by less and by more than half the margin; without near pairs (an older index) an edge differs from
the rule only for a pair whose cosine is within the moved concepts' movement of theta_sem."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins.engine import edge_update
from g2cons_plugins.engine.edge_update import find_pairs, update_edges
from g2cons_plugins.graph import EdgeSet, NearPairs, adjacency, build_edges, pair_ids


def _incidence(rng: np.random.Generator, n: int, m: int) -> sp.csr_matrix:
    """0/1 chunks x concepts, skewed (a few frequent concepts) so that some pairs cross theta_co."""
    p = np.minimum(0.6, 3.0 / (1 + np.arange(m)) ** 0.7)
    return sp.csr_matrix((rng.random((n, m)) < p).astype(np.float32))


def _vectors(rng: np.random.Generator, m: int) -> np.ndarray:
    V = rng.normal(size=(m, 8)).astype(np.float32) + 1.5
    return V / np.linalg.norm(V, axis=1, keepdims=True)


def _nudged(rng: np.random.Generator, V: np.ndarray, which: np.ndarray, size: np.ndarray) -> np.ndarray:
    """``V`` with the rows ``which`` moved by about ``size`` each (then normalised)."""
    out = V.copy()
    step = rng.normal(size=(len(which), V.shape[1])).astype(np.float32)
    step *= (size / np.linalg.norm(step, axis=1))[:, None]
    out[which] = V[which] + step
    out[which] /= np.linalg.norm(out[which], axis=1, keepdims=True)
    return out


def _same(a: EdgeSet, b: EdgeSet, m: int, A: sp.csr_matrix) -> None:
    for f in ("rows", "cols", "co", "dice"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    np.testing.assert_allclose(a.cosine, b.cosine, atol=1e-6)
    ref = adjacency(b, m)
    for f in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(A, f), getattr(ref, f), err_msg=f)


def _pairs(p: NearPairs) -> set[tuple[int, int, int]]:
    return set(zip(p.rows.tolist(), p.cols.tolist(), p.co.tolist(), strict=True))


def _case(seed: int, sign: int, margin: float):  # type: ignore[no-untyped-def]
    """A base incidence with its edges, the incidence after adding (removing) 1-12 chunks, and concepts moved
    by 0.2-2.5 x half the margin."""
    rng = np.random.default_rng(seed)
    n, m, k, theta_co = 120, 60, int(rng.integers(1, 13)), 2
    C = _incidence(rng, n + k, m)
    V = _vectors(rng, m)
    base, after, changed = (C[:n], C, C[n:]) if sign > 0 else (C, C[k:], C[:k])
    edges = build_edges(base, V, theta_co, None, 50.0, margin=margin)
    moved = rng.choice(m, size=int(rng.integers(0, 12)), replace=False)
    V2 = _nudged(rng, V, moved, rng.uniform(0.2, 2.5, len(moved)) * max(margin, 0.05) / 2)
    df = np.asarray(after.sum(axis=0)).ravel().astype(np.int64)
    step = np.linalg.norm(V2[moved] - V[moved], axis=1)
    return edges, after, changed, V2, moved, step, df, theta_co


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("block", [20_000_000, 40])  # the redone concepts' pairs in one block / in many
def test_update_edges_equals_a_rebuild(seed: int, sign: int, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Concepts that moved more than half the margin are redone, the others only re-read their stored pairs:
    the edges and adjacency equal build_edges / adjacency on the new incidence and vectors (same theta_sem), and
    the near pairs are candidates in the band (all of the rebuild's when every moved concept is redone)."""
    monkeypatch.setattr(edge_update, "BLOCK_WORK", block)
    margin = 0.2
    edges, after, changed, V2, moved, step, df, theta_co = _case(seed, sign, margin)
    m = after.shape[1]
    want = build_edges(after, V2, theta_co, edges.theta_sem, 50.0, margin=margin)
    for redo in (moved[step > margin / 2], moved):
        got, A = update_edges(edges, after, V2, moved, redo, changed, sign, theta_co, df)
        _same(got, want, m, A)
        assert got.near.margin == margin
        assert _pairs(got.near) <= _pairs(want.near)
        cos = np.einsum("ij,ij->i", V2[got.near.rows], V2[got.near.cols])
        np.testing.assert_allclose(got.near.cosine, cos, atol=1e-6)
    assert _pairs(got.near) == _pairs(want.near)  # every moved concept redone


@pytest.mark.parametrize("seed", range(4))
def test_added_chunks_that_share_no_pair_still_update_the_moved_concepts(seed: int) -> None:
    """Chunks of one concept each change no pair's Co (an empty change), while concepts they hold moved and are
    redone: the edges equal a rebuild (the count of pairs before read the change's Co even when there was none)."""
    rng = np.random.default_rng(seed)
    n, m, theta_co, margin = 120, 60, 2, 0.2
    base = _incidence(rng, n, m)
    single = sp.csr_matrix((np.ones(3, np.float32), (np.arange(3), [0, 1, 2])), shape=(3, m))
    after = sp.csr_matrix(sp.vstack([base, single]))
    V = _vectors(rng, m)
    edges = build_edges(base, V, theta_co, None, 50.0, margin=margin)
    moved = np.array([0, 1, 2])
    V2 = _nudged(rng, V, moved, np.full(3, margin))
    df = np.asarray(after.sum(axis=0)).ravel().astype(np.int64)
    want = build_edges(after, V2, theta_co, edges.theta_sem, 50.0, margin=margin)
    got, A = update_edges(edges, after, V2, moved, moved, single, 1, theta_co, df)
    _same(got, want, m, A)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("sign", [1, -1])
def test_without_near_pairs_an_edge_differs_only_near_theta(seed: int, sign: int) -> None:
    """An index saved without near pairs (margin 0): with no moved concept redone, an edge differs from the rule
    only for a pair whose cosine is within the two ends' movement of theta_sem; kept edges carry the current
    cosine and Dice weight."""
    edges, after, changed, V2, moved, step, df, theta_co = _case(seed, sign, 0.0)
    assert edges.near.margin == 0.0 and len(edges.near.rows) == 0
    got, _ = update_edges(edges, after, V2, moved, moved[:0], changed, sign, theta_co, df)
    want = build_edges(after, V2, theta_co, edges.theta_sem, 50.0)
    moves = np.zeros(after.shape[1])
    moves[moved] = step
    mine = set(zip(got.rows.tolist(), got.cols.tolist(), strict=True))
    true = set(zip(want.rows.tolist(), want.cols.tolist(), strict=True))
    for r, c in mine ^ true:
        assert abs(float(V2[r] @ V2[c]) - edges.theta_sem) <= moves[r] + moves[c] + 1e-6
    assert not (mine - true) or moves.max() > 0  # nothing wrong without movement
    cos = np.einsum("ij,ij->i", V2[got.rows], V2[got.cols])
    np.testing.assert_allclose(got.cosine, cos, atol=1e-6)
    dff = df.astype(np.float64)
    np.testing.assert_array_equal(got.dice, (2.0 * got.co / (dff[got.rows] + dff[got.cols])).astype(np.float32))


def test_build_edges_keeps_the_band_below_theta() -> None:
    """build_edges with a margin: the edges are those without it; the near pairs are exactly the other
    candidates whose cosine is within the margin below theta_sem."""
    rng = np.random.default_rng(3)
    C, V = _incidence(rng, 150, 70), _vectors(rng, 70)
    plain = build_edges(C, V, 2, None, 60.0)
    edges = build_edges(C, V, 2, None, 60.0, margin=0.1)
    for f in ("rows", "cols", "co", "cosine", "dice"):
        np.testing.assert_array_equal(getattr(plain, f), getattr(edges, f))
    Co = (C.T @ C).toarray()
    cos = V @ V.T
    r, c = np.triu_indices(70, 1)
    band = (Co[r, c] >= 2) & (cos[r, c] < edges.theta_sem) & (cos[r, c] >= edges.theta_sem - 0.1)
    assert band.sum() > 0
    np.testing.assert_array_equal(edges.near.rows, r[band])
    np.testing.assert_array_equal(edges.near.cols, c[band])
    np.testing.assert_array_equal(edges.near.co, Co[r, c][band])


@pytest.mark.parametrize("sign", [1, -1])
def test_pairs_keep_their_integer_type(sign: int) -> None:
    """build_edges stores the pairs' concept ids as int32; an update keeps the type it finds, so an index saved
    with int64 pairs (before they were int32) updates to the same pairs, still int64."""
    edges, after, changed, V2, moved, step, df, theta_co = _case(11, sign, 0.2)
    assert edges.rows.dtype == edges.cols.dtype == np.int32
    assert edges.near.rows.dtype == edges.near.cols.dtype == np.int32
    wide = dataclasses.replace(
        edges,
        rows=edges.rows.astype(np.int64),
        cols=edges.cols.astype(np.int64),
        near=dataclasses.replace(
            edges.near, rows=edges.near.rows.astype(np.int64), cols=edges.near.cols.astype(np.int64)
        ),
    )
    redo = moved[step > 0.1]
    got, A = update_edges(edges, after, V2, moved, redo, changed, sign, theta_co, df)
    got64, A64 = update_edges(wide, after, V2, moved, redo, changed, sign, theta_co, df)
    for pairs, pairs64 in ((got, got64), (got.near, got64.near)):
        assert pairs.rows.dtype == pairs.cols.dtype == np.int32
        assert pairs64.rows.dtype == pairs64.cols.dtype == np.int64
        for f in ("rows", "cols", "co", "cosine"):
            np.testing.assert_array_equal(getattr(pairs, f), getattr(pairs64, f), err_msg=f)
    for f in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(A, f), getattr(A64, f), err_msg=f)
    assert pair_ids(2**31 - 1) is np.int32 and pair_ids(2**31) is np.int64


@pytest.mark.parametrize("n_queries", [3, 300])  # searches in row ranges / one search in the keys
@pytest.mark.parametrize("ids", [np.int32, np.int64])  # pairs as built / as saved before they were int32
def test_find_pairs(n_queries: int, ids: type) -> None:
    """Positions of present pairs, insertion points of absent ones, as a search over (row, col) keys gives."""
    rng = np.random.default_rng(0)
    key = np.unique(rng.integers(0, 400, 150))
    rows, cols = (key // 20).astype(ids), (key % 20).astype(ids)
    a, b = rng.integers(0, 20, n_queries), rng.integers(0, 20, n_queries)
    a[0], b[0] = 19, 19  # past the last pair
    pos, found = find_pairs(rows, cols, a, b)
    np.testing.assert_array_equal(pos, np.searchsorted(key, a * 20 + b))
    np.testing.assert_array_equal(found, np.isin(a * 20 + b, key))


@pytest.mark.parametrize("dense_bytes", [0, 700, 10**9])  # one end per batch / a few / all at once
def test_co_of_pairs_counts_the_shared_chunks(dense_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Co of arbitrary pairs (repeats, both orders, rare and frequent ends) equals the co-occurrence product."""
    monkeypatch.setattr(edge_update, "DENSE_BYTES", dense_bytes)
    rng = np.random.default_rng(5)
    C = _incidence(rng, 300, 80)
    df = np.asarray(C.sum(axis=0)).ravel().astype(np.int64)
    a, b = rng.integers(0, 80, 2000), rng.integers(0, 80, 2000)
    a[:50] = 0  # the most frequent concept, queried often: a dense row when allowed
    got = edge_update._co_of_pairs(C, df, a, b)
    np.testing.assert_array_equal(got, (C.T @ C).toarray()[a, b].astype(np.int64))


@pytest.mark.parametrize("n_changes", [5, 2000])  # copied by slices / through masks
def test_spliced_drops_and_inserts_in_pair_order(n_changes: int) -> None:
    """The kept pairs with the new ones merged in, in (row, col) order, every column carried along, as a sort of
    the union gives; a new pair equal to a dropped one goes where it was."""
    rng = np.random.default_rng(n_changes)
    keys = np.unique(rng.integers(0, 200 * 200, 6000))
    rows, cols = keys // 200, keys % 200
    vals = rng.random(len(keys)).astype(np.float32)
    keep = np.ones(len(keys), bool)
    keep[rng.choice(len(keys), n_changes, replace=False)] = False
    back = np.flatnonzero(~keep)[:3]  # dropped and inserted again
    pool = np.setdiff1d(np.arange(200 * 200), keys)
    add = np.concatenate([rng.choice(pool, n_changes, replace=False), keys[back]])
    rng.shuffle(add)
    new = (add // 200, add % 200, rng.random(len(add)).astype(np.float32))
    got = edge_update._spliced((rows, cols, vals), keep, new)
    all_keys = np.concatenate([keys[keep], add])
    all_vals = np.concatenate([vals[keep], new[2]])
    order = np.argsort(all_keys)
    np.testing.assert_array_equal(got[0] * 200 + got[1], all_keys[order])
    np.testing.assert_array_equal(got[2], all_vals[order])
