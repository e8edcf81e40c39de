"""The concept graph: concept vectors (Eq. 1), semantically filtered co-occurrence edges with Dice weights,
weighted PageRank, and graph statistics. Everything is sparse linear algebra: no loop over concept pairs.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from itertools import islice

import numpy as np
import scipy.sparse as sp

from .errors import EmbeddingError, InputError
from .storage.memory import release_free_memory


def concept_vectors(sent_incidence: sp.csr_matrix, sent_vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 1: Vector(w) = mean of phi(s) over the distinct sentences s containing w; returned L2-normalised
    (cosine is all that is used). Also returns |S_w|. A concept in no sentence gets a zero vector."""
    counts = np.asarray(sent_incidence.sum(axis=0)).ravel()
    V = np.asarray(sent_incidence.T @ sent_vecs, dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        V /= np.maximum(counts, 1)[:, None]
        norms = np.linalg.norm(V, axis=1, keepdims=True)
        V = np.where(norms > 0, V / np.maximum(norms, 1e-12), 0.0).astype(np.float32)
    if not np.isfinite(V).all():
        raise EmbeddingError("concept vectors contain NaN/inf: the sentence embeddings are not finite")
    return V, counts


@dataclass(frozen=True)
class EdgeSet:
    """Upper-triangle edges (i < j) of the concept graph."""

    rows: np.ndarray
    cols: np.ndarray
    co: np.ndarray  # Co(w_i, w_j): number of chunks containing both
    cosine: np.ndarray
    dice: np.ndarray  # r = 2 Co / (|T_i| + |T_j|)
    theta_sem: float  # the threshold actually applied
    n_candidates: int  # pairs with Co >= theta_co


def build_edges(
    chunk_incidence: sp.csr_matrix,
    vectors: np.ndarray,
    theta_co: int,
    theta_sem: float | None,
    percentile: float,
    batch: int = 2048,
    block_concepts: int = 2048,
    workers: int | None = None,
) -> EdgeSet:
    """Edge iff Co >= theta_co AND cos >= theta_sem. With ``theta_sem=None`` the threshold is the
    ``percentile``-th percentile of the cosines of all candidate pairs (Co >= theta_co), so the share of
    candidate pairs kept is the same whatever the embedder's cosine scale.

    The candidate pairs and their cosines are computed by blocks of concepts on ``workers`` threads (default:
    :func:`default_workers`; scipy's sparse product and NumPy's gathers release the GIL);
    blocks are taken in order and each pair's cosine is the same dot product whatever the block, so the result
    does not depend on ``workers``."""
    blocks = list(_candidate_blocks(chunk_incidence, vectors, theta_co, block_concepts, batch, workers))
    n_candidates = sum(len(b[0]) for b in blocks)
    release_free_memory()  # what the threads freed (see g2cons_plugins.storage.memory)
    if theta_sem is None:  # the percentile needs every candidate's cosine; nothing else is concatenated before it
        all_cos = np.concatenate([b[3] for b in blocks]) if blocks else np.zeros(0, np.float32)
        theta = float(np.percentile(all_cos, percentile)) if len(all_cos) else 1.0
        del all_cos
    else:
        theta = float(theta_sem)
    kept: list[Block] = []
    while blocks:  # keep the edges of each block and free it (the candidates are ~3x the edges)
        r, c, k, cos = blocks.pop(0)
        m = cos >= theta
        kept.append((r[m], c[m], k[m], cos[m]))
        del r, c, k, cos, m
    r, c, k = (np.concatenate([b[i] for b in kept]) if kept else np.zeros(0, np.int32) for i in range(3))
    cos = np.concatenate([b[3] for b in kept]) if kept else np.zeros(0, np.float32)
    del kept
    n_concepts = max(int(chunk_incidence.shape[1]), 1)
    order = np.argsort(r.astype(np.int64) * n_concepts + c)  # by (row, col): pairs are unique
    rows, cols, co, cos = r[order].astype(np.int64), c[order].astype(np.int64), k[order], cos[order]
    del r, c, k, order
    df = np.asarray(chunk_incidence.sum(axis=0)).ravel().astype(np.float64)
    release_free_memory()
    return EdgeSet(
        rows=rows,
        cols=cols,
        co=co,
        cosine=cos,
        dice=(2.0 * co / (df[rows] + df[cols])).astype(np.float32),
        theta_sem=theta,
        n_candidates=int(n_candidates),
    )


THREADS_ENV = "G2CONS_NUM_THREADS"


def default_workers() -> int:
    """Threads for the concept graph: ``$G2CONS_NUM_THREADS`` when set (a positive integer; 1 = no thread pool),
    else the CPUs this process may use, at most 4. The edges do not depend on it."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if value:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            raise InputError(f"{THREADS_ENV} must be a positive integer, got {value!r}")
        return n
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(n, 4))


Block = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _candidate_blocks(
    incidence: sp.spmatrix, vectors: np.ndarray, theta_co: int, block: int, batch: int, workers: int | None
) -> Iterator[Block]:
    """Pairs i < j with Co(i, j) >= theta_co and their cosines, by blocks of rows of the upper triangle of C^T C,
    yielded block by block in order (within a block, by column: the gathered partner vectors are then read in
    increasing order, measured 25% faster than by row). Concepts in fewer than theta_co chunks cannot reach it
    and are left out of the product, and each block multiplies only the columns from its first row on (measured:
    4x faster than the full product at 10k passages, same pairs). Up to ``workers`` blocks are computed at once
    on a thread pool (each block's product is a memory peak, so no more are in flight)."""
    df = np.asarray(incidence.sum(axis=0)).ravel()
    keep = np.flatnonzero(df >= max(theta_co, 1)).astype(np.int32)
    C = sp.csc_matrix(incidence)[:, keep].astype(np.int32)
    CT = C.T.tocsr()
    C = C.tocsr()  # a column slice of a csr matrix is 3x faster than converting a csc slice (80k passages)
    C.sort_indices()

    def one(a: int) -> Block:
        P = sp.csr_matrix(CT[a : a + block] @ C[:, a:])
        hit = np.flatnonzero(P.data >= theta_co)  # row of each hit from indptr: no array as long as P
        rows = np.searchsorted(P.indptr, hit, side="right").astype(np.int32) - 1 + a
        cols = P.indices[hit].astype(np.int32) + a
        k = P.data[hit]
        del P, hit
        upper = np.flatnonzero(cols > rows)
        upper = upper[np.argsort(cols[upper], kind="stable")]
        r, c, k = keep[rows[upper]], keep[cols[upper]], k[upper].astype(np.int32)
        cos = np.empty(len(r), dtype=np.float32)
        for s in range(0, len(r), batch):  # small batches: the two gathered vector blocks stay in cache
            cos[s : s + batch] = np.einsum("ij,ij->i", vectors[r[s : s + batch]], vectors[c[s : s + batch]])
        return r, c, k, cos

    starts = range(0, len(keep), block)
    n_workers = default_workers() if workers is None else max(1, int(workers))
    if n_workers == 1 or len(starts) < 2:
        yield from map(one, starts)
        return
    with ThreadPoolExecutor(max_workers=n_workers, thread_name_prefix="g2cons-edges") as pool:
        todo = iter(starts)
        pending: deque[Future[Block]] = deque(pool.submit(one, a) for a in islice(todo, n_workers))
        while pending:
            done = pending.popleft().result()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(pool.submit(one, nxt))
            yield done


class PairWorkExceeded(Exception):
    """:func:`update_edges` would look up more chunk-pair entries than its ``max_work``."""


def update_edges(
    edges: EdgeSet,
    incidence: sp.csr_matrix,
    vectors: np.ndarray,
    moved: np.ndarray,
    changed: sp.csr_matrix,
    sign: int,
    theta_co: int,
    df: np.ndarray,
    max_work: float = float("inf"),
    A: sp.csr_matrix | None = None,
) -> tuple[EdgeSet, sp.csr_matrix]:
    """``edges`` after a few chunks changed, by :func:`build_edges`' rule with the threshold ``edges.theta_sem``
    kept, and their adjacency. ``incidence``: the chunk x concept incidence now; ``changed``: the incidence rows of
    the chunks added (``sign`` +1) or removed (-1); ``moved``: the concepts whose vector is to be re-read; ``A``:
    the adjacency of ``edges`` (:func:`adjacency`; made when None). Pairs with an end in ``moved`` are recomputed
    (Co and cosine); the other pairs two changed chunks share change only their Co (their cosine is kept); the
    Dice weights of the edges of the concepts whose df changed (those of ``changed``) are recomputed from ``df``
    (|T_w| on ``incidence``). With every concept whose vector changed in ``moved`` the result equals
    ``build_edges(incidence, vectors, theta_co, edges.theta_sem, ...)`` (cosines to float rounding) and the
    adjacency equals :func:`adjacency` of it. ``n_candidates`` (a statistic) follows the moved pairs and the edges,
    not a non-edge pair whose Co crossed theta_co (exact again at the next full build). The edges and adjacency
    rows touched are found through ``A`` (no pass over the edge list but one copy of it and of ``A``); raises
    :class:`PairWorkExceeded` before looking up more than ``max_work`` (chunk, concept) entries for new edges."""
    m = int(incidence.shape[1])
    A = adjacency(edges, m) if A is None else A
    theta_co = max(int(theta_co), 1)
    mv = np.unique(np.asarray(moved, np.int64))
    in_mv = np.zeros(m, bool)
    in_mv[mv] = True
    delta = _delta_pairs(changed, sign, m)
    r1, c1, k1, n_old_mv = _moved_pairs(incidence, df, mv, in_mv, theta_co, delta)
    cos1 = _cosines(vectors, r1, c1)
    dr, dc, dk = delta
    sel = ~(in_mv[dr] | in_mv[dc])
    dr, dc, dk = dr[sel], dc[sel], dk[sel]
    deg = np.diff(A.indptr)
    sparse = int(deg[np.unique(changed.indices)].sum() + deg[mv].sum()) <= len(edges.rows) / SPARSE_SHARE
    if sparse:
        pos, hit = find_pairs(edges.rows, edges.cols, dr, dc)
    else:
        key = edges.rows * m + edges.cols
        pos = np.minimum(np.searchsorted(key, dr * m + dc), max(len(key) - 1, 0))
        hit = (key[pos] == dr * m + dc) if len(key) else np.zeros(len(dr), bool)
    hp = pos[hit]
    co_hp = edges.co[hp].astype(np.int64) + dk[hit]  # an edge's Co is known: no lookup
    lost = hp[co_hp < theta_co]
    new = (dr[~hit], dc[~hit], dk[~hit])
    r2, c2, k2, cos2 = _new_edges(incidence, df, vectors, new, sign, edges.theta_sem, theta_co, max_work)
    ok1 = cos1 >= edges.theta_sem
    ins = (
        np.concatenate([r1[ok1], r2]),
        np.concatenate([c1[ok1], c2]),
        np.concatenate([k1[ok1], k2]),
        np.concatenate([cos1[ok1], cos2]),
    )
    n_cand = int(edges.n_candidates - n_old_mv + len(r1) + len(r2) - len(lost))
    kept = (hp, co_hp, lost)
    if not sparse:  # the change touches much of the graph: linear passes over the edges
        out = _merged_edges(edges, in_mv, kept, ins, df, n_cand)
        return out, adjacency(out, m)
    return _patched_edges(edges, A, (mv, np.unique(changed.indices)), kept, ins, df, n_cand)


def _merged_edges(
    edges: EdgeSet,
    in_mv: np.ndarray,
    kept: tuple[np.ndarray, np.ndarray, np.ndarray],
    ins: tuple[np.ndarray, ...],
    df: np.ndarray,
    n_cand: int,
) -> EdgeSet:
    """:func:`update_edges` by linear passes over the edges: those with a moved end (``in_mv``) and the ``lost``
    ones of ``kept`` = (positions whose Co changed, their Co, lost) dropped, ``ins`` merged in, every Dice weight
    recomputed."""
    hp, co_hp, lost = kept
    m = len(in_mv)
    keep = ~(in_mv[edges.rows] | in_mv[edges.cols])
    keep[lost] = False
    co = edges.co.astype(np.int64)
    co[hp] = co_hp
    rows, cols, co, cos = _merge_edges((edges.rows[keep], edges.cols[keep], co[keep], edges.cosine[keep]), ins, m)
    dff = np.asarray(df, dtype=np.float64)
    dice = (2.0 * co / (dff[rows] + dff[cols])).astype(np.float32)
    return EdgeSet(rows, cols, co.astype(edges.co.dtype), cos.astype(np.float32), dice, edges.theta_sem, n_cand)


def _patched_edges(
    edges: EdgeSet,
    A: sp.csr_matrix,
    concepts: tuple[np.ndarray, np.ndarray],
    kept: tuple[np.ndarray, np.ndarray, np.ndarray],
    ins: tuple[np.ndarray, ...],
    df: np.ndarray,
    n_cand: int,
) -> tuple[EdgeSet, sp.csr_matrix]:
    """:func:`update_edges` by patching: the edges of the moved concepts (``concepts[0]``, found through ``A``) and
    the lost ones dropped, ``ins`` spliced in, the Co of ``kept`` set, the Dice weights of the edges of the
    concepts whose df changed (``concepts[1]``) recomputed; the adjacency patched alike."""
    m = A.shape[0]
    hp, co_hp, lost = kept
    order = np.argsort(ins[0] * m + ins[1], kind="stable")
    ins_r, ins_c, ins_k, ins_cos = (x[order] for x in ins)
    drop = np.union1d(_edges_of(edges, A, concepts[0]), lost)
    at, again = find_pairs(edges.rows, edges.cols, ins_r, ins_c)  # again: an edge dropped and inserted back
    splice = _splicer(len(edges.rows), drop, at)
    co = splice(edges.co, ins_k.astype(edges.co.dtype))
    rows, cols = splice(edges.rows, ins_r), splice(edges.cols, ins_c)
    upd = np.setdiff1d(hp, lost, assume_unique=True)
    co[_new_position(upd, drop, at)] = co_hp[np.isin(hp, upd, assume_unique=True)]
    dff = np.asarray(df, dtype=np.float64)
    dice = splice(edges.dice, (2.0 * ins_k / (dff[ins_r] + dff[ins_c])).astype(np.float32))
    redo = _new_position(np.setdiff1d(_edges_of(edges, A, concepts[1]), drop), drop, at)
    dice[redo] = (2.0 * co[redo] / (dff[rows[redo]] + dff[cols[redo]])).astype(np.float32)
    cosine = splice(edges.cosine, ins_cos.astype(np.float32))
    out = EdgeSet(rows, cols, co, cosine, dice, edges.theta_sem, n_cand)
    ins_at = at - np.searchsorted(drop, at, side="left") + np.arange(len(at))  # new positions of the inserted
    gone = np.setdiff1d(drop, at[again])  # edges dropped for good; those inserted back change their weight only
    weights = np.union1d(redo, ins_at[again])
    return out, _patched_adjacency(A, out, weights, (edges.rows[gone], edges.cols[gone]), ins_at[~again])


# the patching path of update_edges (touched edges and adjacency rows found through the adjacency) is taken while
# the changed concepts' edges are at most 1 / SPARSE_SHARE of all edges. Off (inf): measured slower than the
# linear passes for adds of 1 and 10 chunks at 100k and 1M passages (1M, add 1: 6.5 vs 1.0 s; add 10: 21.7 vs
# 4.1 s; benchmarks/scale/update_edges_ab.py), its many small searches and row splices cost more than the passes
SPARSE_SHARE = float("inf")


def find_pairs(rows: np.ndarray, cols: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the pairs ``(a_i, b_i)`` are, or would be inserted, in pairs sorted by (``rows``, ``cols``), and
    whether they are there: a search in the row's range, no key array over every pair."""
    a = np.asarray(a, np.int64)
    return _search_ranges(cols, np.searchsorted(rows, a, side="left"), np.searchsorted(rows, a, side="right"), b)


def _search_ranges(
    values: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each i, where ``target[i]`` is (or would be inserted) in the sorted run ``values[lo_i:hi_i]``, and
    whether it is there: one binary search for all at once."""
    target = np.asarray(target, np.int64)
    lo, hi = np.asarray(lo, np.int64).copy(), np.asarray(hi, np.int64)
    end, hi = hi, hi.copy()
    while True:
        act = np.flatnonzero(lo < hi)
        if len(act) == 0:
            break
        mid = (lo[act] + hi[act]) // 2
        less = values[mid] < target[act]
        lo[act[less]] = mid[less] + 1
        hi[act[~less]] = mid[~less]
    found = lo < end
    found[found] = values[lo[found]] == target[found]
    return lo, found


def _entries(A: sp.csr_matrix, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Positions in ``A.data`` of the stored entries ``(a_i, b_i)`` (each must be stored)."""
    a = np.asarray(a, np.int64)
    pos, found = _search_ranges(A.indices, A.indptr[a], A.indptr[a + 1], b)
    if not found.all():
        raise AssertionError("an edge is missing from the adjacency")
    return pos


def _edges_of(edges: EdgeSet, A: sp.csr_matrix, concepts: np.ndarray) -> np.ndarray:
    """Positions (sorted) of the edges with an end in ``concepts``, found through their rows of ``A``."""
    concepts = np.asarray(concepts, np.int64)
    if len(concepts) == 0 or len(edges.rows) == 0:
        return np.zeros(0, np.int64)
    owner, nb = _expand(A.indptr, A.indices, concepts)
    a = concepts[owner]
    pos, found = find_pairs(edges.rows, edges.cols, np.minimum(a, nb), np.maximum(a, nb))
    return np.unique(pos[found])


def _splicer(n: int, drop: np.ndarray, at: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A function making, from an array ``old`` of ``n`` and the ``new`` items, ``old`` without the positions
    ``drop`` (sorted, unique) and with ``new[j]`` inserted before the old position ``at[j]`` (sorted): copied by
    slices when the changes are few, through masks when they are many."""
    drop, at = np.asarray(drop, np.int64), np.asarray(at, np.int64)
    if len(drop) + len(at) > n // 64 + 1024:
        keep = np.ones(n, bool)
        keep[drop] = False
        is_new = np.zeros(n - len(drop) + len(at), bool)
        is_new[at - np.searchsorted(drop, at, side="left") + np.arange(len(at))] = True

        def masked(old: np.ndarray, new: np.ndarray) -> np.ndarray:
            out = np.empty(len(is_new), old.dtype)
            out[is_new] = new
            out[~is_new] = old[keep]
            return out

        return masked
    cuts = np.unique(np.concatenate([drop, drop + 1, at, [0, n]]))
    dropped = np.zeros(len(cuts), bool)
    dropped[np.searchsorted(cuts, drop)] = True
    first = np.searchsorted(at, cuts, side="left")
    plan = [
        (int(cuts[i]), int(cuts[i]) if dropped[i] else int(cuts[i + 1]), int(first[i]), int(first[i + 1]))
        for i in range(len(cuts) - 1)
    ] + [(n, n, int(first[-1]), len(at))]

    def sliced(old: np.ndarray, new: np.ndarray) -> np.ndarray:
        pieces = []
        for o_lo, o_hi, n_lo, n_hi in plan:
            if n_hi > n_lo:
                pieces.append(new[n_lo:n_hi])
            if o_hi > o_lo:
                pieces.append(old[o_lo:o_hi])
        return np.concatenate(pieces).astype(old.dtype, copy=False) if pieces else old[:0].copy()

    return sliced


def _new_position(p: np.ndarray, drop: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Positions after :func:`_splice` of the kept old positions ``p``."""
    p = np.asarray(p, np.int64)
    return p - np.searchsorted(drop, p, side="left") + np.searchsorted(at, p, side="right")


def _patched_adjacency(
    A: sp.csr_matrix, edges: EdgeSet, redo: np.ndarray, dropped: tuple[np.ndarray, np.ndarray], ins: np.ndarray
) -> sp.csr_matrix:
    """The adjacency of ``edges`` from ``A``, that of the edges before: the Dice weights of the kept edges at the
    new positions ``redo`` rewritten in a copy of ``A.data`` (the structure is shared when nothing else changed);
    the rows of the ends of the ``dropped`` pairs and of the edges inserted at the new positions ``ins`` made
    again and the other rows copied by slices. Equals :func:`adjacency` (``edges``)."""
    data = A.data.copy()
    a, b, v = edges.rows[redo], edges.cols[redo], edges.dice[redo].astype(np.float64)
    data[_entries(A, a, b)] = v
    data[_entries(A, b, a)] = v
    ia, ib = edges.rows[ins], edges.cols[ins]
    rows = np.unique(np.concatenate([dropped[0], dropped[1], ia, ib]))
    out = sp.csr_matrix((data, A.indices, A.indptr), shape=A.shape, copy=False)
    out.has_sorted_indices = True
    if len(rows) == 0:
        return out
    m = A.shape[1]
    owner, nb = _expand(A.indptr, A.indices, rows)
    at = np.repeat(A.indptr[rows], np.diff(A.indptr)[rows]) + (
        np.arange(len(owner))
        - np.repeat(np.concatenate([[0], np.cumsum(np.diff(A.indptr)[rows])[:-1]]), np.diff(A.indptr)[rows])
    )
    gone = np.concatenate([dropped[0] * m + dropped[1], dropped[1] * m + dropped[0]])
    keep = ~np.isin(rows[owner] * m + nb, gone)
    iv = edges.dice[ins].astype(np.float64)
    own = np.concatenate([owner[keep], np.searchsorted(rows, ia), np.searchsorted(rows, ib)])
    col = np.concatenate([nb[keep], ib, ia])
    val = np.concatenate([data[at[keep]], iv, iv])
    order = np.lexsort((col, own))
    own, col, val = own[order], col[order], val[order]
    return replace_rows(out, rows, own, col, val)


def replace_rows(
    M: sp.csr_matrix,
    rows: np.ndarray,
    own: np.ndarray,
    col: np.ndarray,
    val: np.ndarray,
    shape: tuple[int, int] | None = None,
) -> sp.csr_matrix:
    """csr ``M`` (grown to ``shape``: new rows empty) with its ``rows`` (sorted, unique) replaced by the entries
    ``(rows[own], col, val)``, sorted by (``own``, ``col``); the other rows are copied by slices (their indices
    stay sorted when ``M``'s are)."""
    n_old = M.shape[0]
    shape = M.shape if shape is None else shape
    lens = np.zeros(shape[0], np.int64)
    lens[:n_old] = np.diff(M.indptr)
    lens[rows] = np.bincount(own, minlength=len(rows))
    indptr = np.zeros(shape[0] + 1, np.int64)
    np.cumsum(lens, out=indptr[1:])
    starts = np.searchsorted(own, np.arange(len(rows) + 1))
    ptr = M.indptr
    pieces: list[np.ndarray] = []
    idx: list[np.ndarray] = []
    last = 0
    for k, r in enumerate(rows.tolist()):
        r_old = min(r, n_old)
        pieces += [M.data[ptr[last] : ptr[r_old]], val[starts[k] : starts[k + 1]]]
        idx += [M.indices[ptr[last] : ptr[r_old]], col[starts[k] : starts[k + 1]]]
        last = min(r + 1, n_old)
    pieces.append(M.data[ptr[last] : ptr[n_old]])
    idx.append(M.indices[ptr[last] : ptr[n_old]])
    small = indptr[-1] <= np.iinfo(np.int32).max and M.indices.dtype == np.int32 and shape[1] < 2**31
    out = sp.csr_matrix(
        (
            np.concatenate(pieces).astype(M.dtype, copy=False),
            np.concatenate(idx).astype(np.int32 if small else np.int64, copy=False),
            indptr.astype(np.int32) if small else indptr,
        ),
        shape=shape,
    )
    out.has_sorted_indices = True
    return out


def _ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the ranges ``[lo_i, hi_i)``, each with its range's index ``i``."""
    lens = (hi - lo).astype(np.int64)
    owner = np.repeat(np.arange(len(lo)), lens)
    return owner, np.repeat(lo - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(int(lens.sum()))


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]


def _touching_pairs(csr: sp.csr_matrix, df: np.ndarray, t: np.ndarray, in_t: np.ndarray, theta_co: int) -> Pairs:
    """Pairs i < j with an end in ``t`` and Co(i, j) >= theta_co, each once, with Co (a concept in fewer than
    theta_co chunks cannot reach it: as in :func:`build_edges`, it is left out)."""
    t = t[df[t] >= theta_co]
    if len(t) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    C = sp.csr_matrix(csr, dtype=np.float32)
    CT = sp.csr_matrix(C[:, t].T)  # one column slice; the product is made by blocks of rows of it
    per_chunk = C.nnz / max(C.shape[0], 1)
    work = np.cumsum(np.diff(CT.indptr) * per_chunk)
    marks = np.arange(1, int(work[-1] // BLOCK_WORK) + 1) * BLOCK_WORK
    cuts = np.unique(np.concatenate([[0], np.searchsorted(work, marks), [len(t)]]))
    out: list[Pairs] = []
    for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        P = sp.csr_matrix(CT[lo:hi] @ C)  # memory: one block's product
        keep = np.flatnonzero(P.data >= theta_co - 0.5)
        a = t[lo + np.searchsorted(P.indptr, keep, side="right") - 1]
        b, k = P.indices[keep].astype(np.int64), np.rint(P.data[keep]).astype(np.int64)
        del P
        sel = (a != b) & ~(in_t[b] & (b < a))
        out.append((np.minimum(a[sel], b[sel]), np.maximum(a[sel], b[sel]), k[sel]))
    return tuple(np.concatenate([o[i] for o in out]) for i in range(3))  # type: ignore[return-value]


# the (chunk, concept) entries one block of the recomputed concepts' co-occurrence product may read (its memory)
BLOCK_WORK = 20_000_000


def _new_edges(
    csr: sp.csr_matrix,
    df: np.ndarray,
    vectors: np.ndarray,
    delta: Pairs,
    sign: int,
    theta: float,
    theta_co: int,
    max_work: float = float("inf"),
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Edges among the pairs ``delta`` (not edges, no moved end) whose Co grew to theta_co: only an add can make
    one (a removal lowers Co; the cosine is kept), and only a pair with cosine >= theta, whose Co is looked up
    (:class:`PairWorkExceeded` past ``max_work`` entries: the rarer ends' chunks)."""
    r, c, d = delta
    if sign < 0 or len(r) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    cos = _cosines(vectors, r, c)
    hot = np.flatnonzero(cos >= theta)
    work = float(np.minimum(df[r[hot]], df[c[hot]]).sum())
    if work > max_work:
        raise PairWorkExceeded(f"{len(hot):,} pairs to look up, about {work:,.0f} entries")
    k = _co_of_pairs(csr, df, r[hot], c[hot])
    became = hot[(k >= theta_co) & (k - d[hot] < theta_co)]
    k = k[(k >= theta_co) & (k - d[hot] < theta_co)]
    return r[became], c[became], k, cos[became]


def _moved_pairs(
    csr: sp.csr_matrix, df: np.ndarray, mv: np.ndarray, in_mv: np.ndarray, theta_co: int, delta: Pairs
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The candidate pairs (Co >= theta_co) with an end in ``mv`` now, and about how many there were before the
    change ``delta`` (pairs, sorted by key, and their change of Co): the candidates now whose Co minus the change
    still reaches theta_co, plus the changed pairs held by no chunk now whose change alone reaches it."""
    a, b, k = _touching_pairs(csr, df, mv, in_mv, theta_co)
    m = int(csr.shape[1])
    order = np.argsort(a * m + b)
    a, b, k = a[order], b[order], k[order]
    key, dkey = a * m + b, delta[0] * m + delta[1]
    pos = np.minimum(np.searchsorted(dkey, key), max(len(dkey) - 1, 0))
    found = dkey[pos] == key if len(dkey) else np.zeros(len(key), bool)
    n_old = int(((k - np.where(found, delta[2][pos], 0)) >= theta_co).sum())
    touch = in_mv[delta[0]] | in_mv[delta[1]]
    where = np.minimum(np.searchsorted(key, dkey[touch]), max(len(key) - 1, 0))
    gone = ~(key[where] == dkey[touch]) if len(key) else np.ones(int(touch.sum()), bool)
    n_old += int((-delta[2][touch][gone] >= theta_co).sum())  # pairs no chunk holds any more
    keep = k >= theta_co
    return a[keep], b[keep], k[keep], n_old


def _delta_pairs(changed: sp.csr_matrix, sign: int, m: int) -> Pairs:
    """Pairs i < j two of the ``changed`` rows share, and the change of their Co (``sign`` times the count)."""
    C = sp.csr_matrix(changed, dtype=np.float32)
    D = sp.triu(sp.csr_matrix(C.T @ C), k=1).tocoo()
    order = np.argsort(D.row.astype(np.int64) * m + D.col)
    return D.row[order].astype(np.int64), D.col[order].astype(np.int64), sign * np.rint(D.data[order]).astype(np.int64)


def _co_of_pairs(csr: sp.csr_matrix, df: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Co(a_i, b_i) for each pair: each chunk of the rarer end searched in the other end's sorted chunk list (time:
    the rarer ends' df times a logarithm; no pass over the whole matrix but one column slice)."""
    if len(a) == 0:
        return np.zeros(0, np.int64)
    rare = df[a] <= df[b]
    lo, hi = np.where(rare, a, b), np.where(rare, b, a)
    ends, inv = np.unique(np.concatenate([lo, hi]), return_inverse=True)
    C = sp.csc_matrix(csr[:, ends])
    C.sort_indices()
    i_lo, i_hi = inv[: len(a)], inv[len(a) :]
    by_hi = np.argsort(i_hi, kind="stable")  # queries in increasing key order: the search reuses its last place
    pair, chunk = _expand(C.indptr, C.indices, i_lo[by_hi])
    n = np.int64(C.shape[0])
    keys = np.repeat(np.arange(len(ends), dtype=np.int64), np.diff(C.indptr)) * n + C.indices  # sorted
    want = i_hi[by_hi][pair] * n + chunk
    at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
    found = keys[at] == want if len(keys) else np.zeros(len(want), bool)
    out = np.zeros(len(a), np.int64)
    out[by_hi] = np.bincount(pair, weights=found, minlength=len(a)).astype(np.int64)
    return out


def _expand(indptr: np.ndarray, indices: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries of the compressed rows (or columns) ``which``, each with its position in ``which``."""
    lens = (indptr[which + 1] - indptr[which]).astype(np.int64)
    owner = np.repeat(np.arange(len(which)), lens)
    offset = np.repeat(indptr[which] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    return owner, indices[offset + np.arange(len(owner))].astype(np.int64)


def _cosines(vectors: np.ndarray, r: np.ndarray, c: np.ndarray, batch: int = 2048) -> np.ndarray:
    """Cosine of each pair (unit vectors), as :func:`build_edges` computes it."""
    out = np.empty(len(r), dtype=np.float32)
    for s in range(0, len(r), batch):
        out[s : s + batch] = np.einsum("ij,ij->i", vectors[r[s : s + batch]], vectors[c[s : s + batch]])
    return out


def _merge_edges(
    old: tuple[np.ndarray, ...], new: tuple[np.ndarray, ...], m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sorted (by row, col) edge columns ``old`` with the columns ``new`` merged in (pairs distinct)."""
    order = np.argsort(new[0] * m + new[1], kind="stable")
    at = np.searchsorted(old[0] * m + old[1], new[0][order] * m + new[1][order]) + np.arange(len(order))
    is_old = np.ones(len(old[0]) + len(order), bool)
    is_old[at] = False
    out = []
    for i, (o, n) in enumerate(zip(old, new, strict=True)):
        a = np.empty(len(is_old), dtype=np.int64 if i < 3 else np.float32)
        a[is_old] = o
        a[at] = n[order]
        out.append(a)
    return out[0], out[1], out[2], out[3]


def adjacency(edges: EdgeSet, n: int) -> sp.csr_matrix:
    """Symmetric weighted adjacency (Dice weights). Edges sorted by row (as :func:`build_edges` makes them) are
    assembled straight into the upper triangle, with no coordinate-format copy; others go through one."""
    data = edges.dice.astype(np.float64)
    if np.all(edges.rows[1:] >= edges.rows[:-1]):
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(edges.rows, minlength=n), out=indptr[1:])
        upper = sp.csr_matrix((data, edges.cols, indptr), shape=(n, n))
    else:
        upper = sp.csr_matrix((data, (edges.rows, edges.cols)), shape=(n, n))
    return sp.csr_matrix(upper + upper.T)


def pagerank(
    A: sp.csr_matrix,
    damping: float = 0.85,
    personalization: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 1000,
    x0: np.ndarray | None = None,
    symmetric: bool = False,
) -> np.ndarray:
    """Weighted PageRank by power iteration; the same fixed point as ``networkx.pagerank`` (dangling nodes,
    here the isolated concepts, send their mass along the personalization vector, uniform by default).
    ``x0``: the starting vector (warm start, e.g. the PageRank before a small change; the uniform or
    personalization vector when None or of another length); the result meets the same tolerance. ``symmetric``:
    ``A`` is symmetric (an undirected graph, as :func:`adjacency` makes it), so its transpose is not formed."""
    n = A.shape[0]
    if n == 0:
        return np.zeros(0)
    p = np.full(n, 1.0 / n) if personalization is None else personalization / personalization.sum()
    A = sp.csr_matrix(A)  # no copy when it is one already
    out = np.asarray(A.sum(axis=1)).ravel()
    dangling = out == 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out))
    x = p.copy()
    if x0 is not None and len(x0) == n and float(np.sum(x0)) > 0:
        x = np.asarray(x0, dtype=np.float64) / float(np.sum(x0))
    if symmetric:  # P^T x = A (inv * x): no copy of A
        step = lambda v: A @ (inv * v)  # noqa: E731
    else:
        PT = A.T.tocsr()  # P^T for P = diag(inv) A, row-stochastic on non-dangling rows
        PT.data *= inv[PT.indices]
        step = PT.__matmul__
    for _ in range(max_iter):
        prev = x
        x = damping * (step(prev) + prev[dangling].sum() * p) + (1.0 - damping) * p
        if np.abs(x - prev).sum() < n * tol:
            break
    return x / x.sum()


@dataclass(frozen=True)
class GraphStats:
    """What a build produced; printed after every build."""

    n_chunks: int
    n_units: int
    n_sentences: int
    n_concepts: int
    n_candidate_pairs: int
    n_edges: int
    theta_sem: float
    isolated_share: float
    mean_degree: float
    max_degree: int

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"concept graph: {self.n_concepts:,} concepts, {self.n_edges:,} edges "
            f"(of {self.n_candidate_pairs:,} pairs with Co >= theta_co; theta_sem = {self.theta_sem:.3f}), "
            f"{self.isolated_share:.1%} isolated, mean degree {self.mean_degree:.2f}, max {self.max_degree}; "
            f"{self.n_chunks:,} chunks, {self.n_units:,} retrieval units, {self.n_sentences:,} sentences"
        )


def graph_stats(sizes: tuple[int, int, int, int], edges: EdgeSet, A: sp.csr_matrix) -> GraphStats:
    """The statistics of a graph: ``sizes`` (chunks, units, sentences, concepts), its edges and adjacency."""
    isolated, mean_deg, max_deg = degree_stats(A)
    return GraphStats(
        *sizes,
        n_candidate_pairs=edges.n_candidates,
        n_edges=len(edges.rows),
        theta_sem=edges.theta_sem,
        isolated_share=isolated,
        mean_degree=mean_deg,
        max_degree=max_deg,
    )


def degree_stats(A: sp.csr_matrix) -> tuple[float, float, int]:
    deg = np.diff(A.indptr)
    n = max(len(deg), 1)
    return float((deg == 0).sum() / n), float(deg.mean()) if len(deg) else 0.0, int(deg.max(initial=0))
