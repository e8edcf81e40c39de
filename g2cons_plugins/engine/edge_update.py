"""The trickle update of the concept graph's edges (:func:`update_edges`): after a few chunks came or went and
some concept vectors moved, the edges by :func:`g2cons_plugins.graph.build_edges`' rule (Co >= theta_co and
cos >= theta_sem, theta_sem kept) in work proportional to the change.

What makes it exact without recomputing every moved concept's candidates is the near pairs
(:class:`g2cons_plugins.graph.NearPairs`): the candidate pairs that are not edges but whose cosine was within
``margin`` below theta_sem when it was computed. A concept's candidates are recomputed from the co-occurrence
product (``redo``) only once its vector moved more than margin / 2 since they were. Until then a candidate pair of
it that is neither an edge nor near had a cosine below theta_sem - margin, and each end moved at most margin / 2
since, so its cosine is still below theta_sem (for unit vectors |cos(a', b') - cos(a, b)| <= |a' - a| + |b' - b|).
The edges and near pairs of a moved concept get their cosine re-read and are decided again. With near pairs kept
(margin > 0) the edges therefore equal ``build_edges`` on the current incidence and vectors; without (an index
saved before they existed) a concept is redone once it moved more than the caller's slack, and an edge can differ
from the rule only for a pair whose cosine is within twice that slack of theta_sem.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..graph import EdgeSet, NearPairs, adjacency, pair_ids, pairs_sorted

__all__ = ["BLOCK_WORK", "PairWorkExceeded", "find_pairs", "update_edges"]

_REDO, _MOVED, _DF = 1, 2, 4  # per-concept flags: candidates recomputed / vector moved / df changed
Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]

# the (chunk, concept) entries one block of the recomputed concepts' co-occurrence product may read (its memory)
BLOCK_WORK = 20_000_000


class PairWorkExceeded(Exception):
    """:func:`update_edges` would look up more chunk-pair entries than its ``max_work``."""


def update_edges(
    edges: EdgeSet,
    incidence: sp.csr_matrix,
    vectors: np.ndarray,
    moved: np.ndarray,
    redo: np.ndarray,
    changed: sp.csr_matrix,
    sign: int,
    theta_co: int,
    df: np.ndarray,
    max_work: float = float("inf"),
    read: Callable[[], object] | None = None,
) -> tuple[EdgeSet, sp.csr_matrix]:
    """``edges`` (with their near pairs) after a few chunks changed, and their adjacency (module doc).
    ``incidence``: the chunk x concept incidence now; ``changed``: the incidence rows of the chunks added
    (``sign`` +1) or removed (-1); ``moved``: the concepts whose vector changed; ``redo`` (within ``moved``): those
    whose candidate pairs are recomputed from ``incidence``; ``df``: |T_w| now. The Dice weights of the edges of
    the concepts whose df changed (those of ``changed``) are recomputed. ``n_candidates`` (a statistic) follows
    the redone concepts, the stored pairs and the pairs that became candidates near or above theta_sem (exact
    again at the next full build). Raises :class:`PairWorkExceeded` before looking up more than ``max_work``
    (chunk, concept) entries for pairs that may have become candidates. ``read``: called once ``edges`` are read
    for the last time, before the adjacency is built (a caller can unmap their file pages there)."""
    m = int(incidence.shape[1])
    theta_co, theta = max(int(theta_co), 1), edges.theta_sem
    low = theta - edges.near.margin
    rd = np.unique(np.asarray(redo, np.int64))
    flag = np.zeros(m, np.uint8)
    flag[np.asarray(moved, np.int64)] |= _MOVED
    flag[rd] |= _REDO | _MOVED
    flag[np.unique(changed.indices)] |= _DF
    delta = _delta_pairs(changed, sign, m)
    r1, c1, k1, n_old = _moved_pairs(incidence, df, rd, (flag & _REDO) > 0, theta_co, delta)
    cos1 = _cosines(vectors, r1, c1)
    sel = ((flag[delta[0]] | flag[delta[1]]) & _REDO) == 0  # pairs of a redone concept are in r1 already
    dr, dc, dk = (x[sel] for x in delta)
    near = edges.near
    e = _restored((edges.rows, edges.cols, edges.co, edges.cosine), flag, (dr, dc, dk), vectors, theta_co, low)
    n = _restored((near.rows, near.cols, near.co, near.cosine), flag, (dr, dc, dk), vectors, theta_co, low)
    fresh = ~(e.hit | n.hit)
    r2, c2, k2, cos2 = _new_pairs(
        incidence, df, vectors, (dr[fresh], dc[fresh], dk[fresh]), sign, low, theta_co, max_work
    )
    n_cand = int(edges.n_candidates - n_old + len(r1) + len(r2) - e.lost - n.lost)
    ok1 = cos1 >= low
    found = ((r1[ok1], c1[ok1], k1[ok1], cos1[ok1]), (r2, c2, k2, cos2))
    del delta, dr, dc, dk, fresh, r1, c1, k1, cos1, ok1, r2, c2, k2, cos2  # not held through the merge
    held: list[object] = [e, n, found]
    del e, n, found  # the merge lets each go once it is merged
    out = _assembled(edges, held, df, n_cand)
    if read is not None:
        read()
    return out, adjacency(out, m)


def _assembled(edges: EdgeSet, held: list[object], df: np.ndarray, n_cand: int) -> EdgeSet:
    """The edges and near pairs after a change: the kept ones of each set (``e``, ``n``), those that crossed
    theta_sem either way and the ``found`` pairs (rows, cols, Co, cosine; cosine >= the band's low end) merged
    into the set their cosine puts them in; the Dice weights of the kept edges whose df changed recomputed.
    ``held`` is ``[e, n, found]``; it is emptied here, so that each part is let go as soon as it is merged (at 80k
    passages the parts and their copies are ~100 MB of the removal's peak)."""
    e, n, found = held
    held.clear()
    assert isinstance(e, _Restored) and isinstance(n, _Restored) and isinstance(found, tuple)
    theta, near = edges.theta_sem, edges.near
    e_stay, e_down = e.keep & (e.cos >= theta), e.keep & (e.cos < theta)
    n_up, n_stay = n.keep & (n.cos >= theta), n.keep & (n.cos < theta)
    moving = (
        (edges.rows[e_down], edges.cols[e_down], e.co[e_down], e.cos[e_down]),
        (near.rows[n_up], near.cols[n_up], n.co[n_up], n.cos[n_up]),
    )
    del e_down, n_up
    ins = [np.concatenate(x) for x in zip(*found, *moving, strict=True)]
    del found, moving
    order = np.lexsort((ins[1], ins[0]))  # by pair once: both sets' new pairs are then in order
    for i, x in enumerate(ins):
        ins[i] = x[order]
    del order, x
    up = ins[3] >= theta
    dff = np.asarray(df, dtype=np.float64)
    dice = edges.dice
    redice = np.flatnonzero(e_stay & ((e.flags & _DF) > 0))
    if len(redice):
        dice = dice.copy()
        r, c = edges.rows[redice], edges.cols[redice]
        dice[redice] = (2.0 * e.co[redice] / (dff[r] + dff[c])).astype(np.float32)
        del r, c
    del redice
    new_e = [x[up] for x in ins]
    new_e.append((2.0 * new_e[2] / (dff[new_e[0]] + dff[new_e[1]])).astype(np.float32))
    new_n = [x[~up] for x in ins]
    del ins, up  # what is merged is held once (its two parts), not three times
    er, ec, eco, ecos, edice = _spliced((edges.rows, edges.cols, e.co, e.cos, dice), e_stay, new_e)
    del e, e_stay, dice, new_e
    nr, nc, nco, ncos = _spliced((near.rows, near.cols, n.co, n.cos), n_stay, new_n)
    del n, n_stay, new_n
    return EdgeSet(
        er,
        ec,
        eco.astype(edges.co.dtype, copy=False),
        ecos.astype(np.float32, copy=False),
        edice,
        theta,
        n_cand,
        NearPairs(nr, nc, nco.astype(near.co.dtype, copy=False), ncos.astype(np.float32, copy=False), near.margin),
    )


@dataclass(frozen=True)
class _Restored:
    """A stored pair set (edges or near pairs) after a change (:func:`_restored`)."""

    keep: np.ndarray  # per pair: still stored (no redone end, Co >= theta_co, cosine >= the band's low end)
    co: np.ndarray  # Co now
    cos: np.ndarray  # cosine now (re-read where an end moved)
    flags: np.ndarray  # per pair: its ends' concept flags, or-ed
    hit: np.ndarray  # per changed pair: found in this set
    lost: int  # pairs dropped because their Co fell below theta_co


def _restored(
    pairs: tuple[np.ndarray, ...],
    flag: np.ndarray,
    delta: Pairs,
    vectors: np.ndarray,
    theta_co: int,
    low: float,
) -> _Restored:
    """The pairs (rows, cols, Co, cosines, sorted by (row, col)) with the change of Co ``delta`` (pairs with no
    redone end) applied, cosines re-read where an end moved, and which are kept (:class:`_Restored`): one pass of
    flag look-ups over the pairs, the rest in the size of the change."""
    rows, cols, co, cos = pairs
    f = flag[rows] | flag[cols] if len(rows) else np.zeros(0, np.uint8)
    keep = (f & _REDO) == 0
    pos, hit = find_pairs(rows, cols, delta[0], delta[1])
    hp, lost = pos[hit], 0
    if len(hp):
        now = co[hp].astype(np.int64) + delta[2][hit]
        gone = now < theta_co
        keep[hp[gone]] = False
        lost = int(gone.sum())
        co = co.copy()
        co[hp] = np.maximum(now, 0).astype(co.dtype)
    mv = np.flatnonzero(keep & ((f & _MOVED) > 0))
    if len(mv):
        cos = cos.copy()
        cos[mv] = _cosines(vectors, rows[mv], cols[mv])
        keep[mv] = cos[mv] >= low
    return _Restored(keep, co, cos, f, hit, lost)


def _spliced(old: tuple[np.ndarray, ...], keep: np.ndarray, new: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Columns ``old`` (sorted by the pair in the first two) without the items where ``keep`` is False and with
    the columns ``new`` (pairs not kept in ``old``, distinct, any order; no copy when already in pair order)
    merged in. A list ``new`` is emptied here (its columns are let go once merged). A few changes are copied by
    slices between them (memory speed), many through masks."""
    cols = list(new)
    if isinstance(new, list):
        new.clear()
    if not pairs_sorted(cols[0], cols[1]):
        order = np.lexsort((cols[1], cols[0]))
        cols = [x[order] for x in cols]
        del order
    new = tuple(x.astype(o.dtype, copy=False) for x, o in zip(cols, old, strict=True))  # old's types
    del cols
    drop = np.flatnonzero(~keep)
    at = find_pairs(old[0], old[1], new[0], new[1])[0] if len(new[0]) else np.zeros(0, np.int64)
    if len(drop) == 0 and len(at) == 0:
        return old
    if len(drop) + len(at) > len(keep) // 512 + 256:  # a Python step per change: masks past this
        return _masked(old, keep, new, at - np.searchsorted(drop, at))
    cuts = np.unique(np.concatenate([[0, len(keep)], drop, drop + 1, at]))
    dropped = np.zeros(len(cuts), bool)
    dropped[np.searchsorted(cuts, drop)] = True
    first = np.searchsorted(at, cuts, side="left")  # the new items inserted before each cut
    out = []
    for o, n in zip(old, new, strict=True):
        pieces = []
        for i in range(len(cuts) - 1):
            pieces.append(n[first[i] : first[i + 1]])
            if not dropped[i]:
                pieces.append(o[cuts[i] : cuts[i + 1]])
        pieces.append(n[first[-1] :])
        out.append(np.concatenate(pieces))
    return tuple(out)


def _masked(
    old: tuple[np.ndarray, ...], keep: np.ndarray, new: tuple[np.ndarray, ...], at: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Columns ``old`` where ``keep``, with the columns ``new`` inserted before the kept positions ``at`` (sorted);
    a column at a time (one column's kept items are a temporary at once)."""
    where = at + np.arange(len(at))
    is_old = np.ones(int(np.count_nonzero(keep)) + len(at), bool)
    is_old[where] = False
    out = []
    for o, n in zip(old, new, strict=True):
        a = np.empty(len(is_old), dtype=o.dtype)
        a[is_old] = o[keep]
        a[where] = n
        out.append(a)
    return tuple(out)


def find_pairs(rows: np.ndarray, cols: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the pairs ``(a_i, b_i)`` are, or would be inserted, in pairs sorted by (``rows``, ``cols``), and
    whether they are there: for a few pairs a search in each one's row range (no key array over every pair), for
    many (more than 1/16 of the pairs searched) one search in the pairs' keys."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    if len(a) * 16 > len(rows) and len(rows):
        m = int(max(cols.max(), b.max(initial=0))) + 1
        keys = rows.astype(np.int64) * m + cols
        want = a * m + b
        pos = np.searchsorted(keys, want)
        found = np.zeros(len(a), bool)
        inside = pos < len(keys)
        found[inside] = keys[pos[inside]] == want[inside]
        return pos, found
    a_ = a.astype(rows.dtype, copy=False)  # searchsorted copies ``rows`` to a wider type of needle (int32 pairs)
    return _search_ranges(cols, np.searchsorted(rows, a_, side="left"), np.searchsorted(rows, a_, side="right"), b)


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


def _touching_pairs(csr: sp.csr_matrix, df: np.ndarray, t: np.ndarray, in_t: np.ndarray, theta_co: int) -> Pairs:
    """Pairs i < j with an end in ``t`` and Co(i, j) >= theta_co, each once, with Co (a concept in fewer than
    theta_co chunks cannot reach it: as in :func:`build_edges`, it is left out)."""
    t = t[df[t] >= theta_co]
    if len(t) == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int32)
    C = sp.csr_matrix(csr, dtype=np.float32)
    ids, counts = pair_ids(C.shape[1]), pair_ids(C.shape[0])  # int32 (half the memory) below 2**31
    CT = sp.csr_matrix(C[:, t].T)  # one column slice; the product is made by blocks of rows of it
    per_chunk = C.nnz / max(C.shape[0], 1)
    work = np.cumsum(np.diff(CT.indptr) * per_chunk)
    marks = np.arange(1, int(work[-1] // BLOCK_WORK) + 1) * BLOCK_WORK
    cuts = np.unique(np.concatenate([[0], np.searchsorted(work, marks), [len(t)]]))
    out: list[Pairs] = []
    for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        P = sp.csr_matrix(CT[lo:hi] @ C)  # memory: one block's product
        keep = np.flatnonzero(P.data >= theta_co - 0.5)
        a = t[lo + np.searchsorted(P.indptr, keep, side="right") - 1].astype(ids)
        b, k = P.indices[keep].astype(ids), np.rint(P.data[keep]).astype(counts)
        del P
        sel = (a != b) & ~(in_t[b] & (b < a))
        out.append((np.minimum(a[sel], b[sel]), np.maximum(a[sel], b[sel]), k[sel]))
    return tuple(np.concatenate([o[i] for o in out]) for i in range(3))  # type: ignore[return-value]


def _new_pairs(
    csr: sp.csr_matrix,
    df: np.ndarray,
    vectors: np.ndarray,
    delta: Pairs,
    sign: int,
    low: float,
    theta_co: int,
    max_work: float = float("inf"),
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs among ``delta`` (not stored, no redone end) whose Co grew to theta_co and whose cosine is at
    least ``low`` (edges or near pairs): only an add can make one (a removal lowers Co), and only a pair with
    cosine >= ``low`` has its Co looked up (:class:`PairWorkExceeded` past ``max_work`` entries: the rarer ends'
    chunks)."""
    r, c, d = delta
    if sign < 0 or len(r) == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32)
    cos = _cosines(vectors, r, c)
    hot = np.flatnonzero(cos >= low)
    work = float(np.minimum(df[r[hot]], df[c[hot]]).sum())
    if work > max_work:
        raise PairWorkExceeded(f"{len(hot):,} pairs to look up, about {work:,.0f} entries")
    k = _co_of_pairs(csr, df, r[hot], c[hot])
    crossed = (k >= theta_co) & (k - d[hot] < theta_co)
    became = hot[crossed]
    return r[became], c[became], k[crossed].astype(d.dtype), cos[became]


def _moved_pairs(
    csr: sp.csr_matrix, df: np.ndarray, mv: np.ndarray, in_mv: np.ndarray, theta_co: int, delta: Pairs
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The candidate pairs (Co >= theta_co) with an end in ``mv`` now, and about how many there were before the
    change ``delta`` (pairs, sorted by key, and their change of Co): the candidates now whose Co minus the change
    still reaches theta_co, plus the changed pairs held by no chunk now whose change alone reaches it."""
    a, b, k = _touching_pairs(csr, df, mv, in_mv, theta_co)
    m = int(csr.shape[1])
    key = a.astype(np.int64) * m + b
    order = np.argsort(key)
    a, b, k, key = a[order], b[order], k[order], key[order]
    del order
    dkey = delta[0].astype(np.int64) * m + delta[1]
    pos = np.minimum(np.searchsorted(dkey, key), max(len(dkey) - 1, 0))
    found = dkey[pos] == key if len(dkey) else np.zeros(len(key), bool)
    change = delta[2][pos] if len(dkey) else np.zeros(len(key), delta[2].dtype)  # no pair changed: none to read
    n_old = int(((k - np.where(found, change, 0)) >= theta_co).sum())
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
    ids, counts = pair_ids(m), pair_ids(C.shape[0])  # int32 (half the memory) below 2**31
    return D.row[order].astype(ids), D.col[order].astype(ids), sign * np.rint(D.data[order]).astype(counts)


# memory for the dense 0/1 chunk rows of _co_of_pairs (the other ends' chunks are looked up in them by batches of
# ends: a gather per look-up; measured 1.03 s with binary searches against ~0.3 s on the look-ups of an add of 1% at
# 100k passages, 79k pairs and 19M chunk look-ups)
DENSE_BYTES = 2 * 2**20


def _co_of_pairs(csr: sp.csr_matrix, df: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Co(a_i, b_i) for each pair: each chunk of the rarer end looked up in a dense 0/1 row of the other end's
    chunks, made for a batch of those ends at a time within :data:`DENSE_BYTES` (time: the rarer ends' df plus
    each other end's df once; no pass over the whole matrix but one column slice)."""
    if len(a) == 0:
        return np.zeros(0, np.int64)
    rare = df[a] <= df[b]
    lo, hi = np.where(rare, a, b), np.where(rare, b, a)
    ends, inv = np.unique(np.concatenate([lo, hi]), return_inverse=True)
    C = sp.csc_matrix(csr[:, ends])
    C.sort_indices()
    i_lo, i_hi = inv[: len(a)], inv[len(a) :]
    n = int(C.shape[0])
    order = np.argsort(i_hi, kind="stable")
    his = np.unique(i_hi)
    k = max(1, DENSE_BYTES // max(n, 1))
    rows = np.zeros((min(k, len(his)), n), bool)
    bounds = np.searchsorted(i_hi[order], his[::k].tolist() + [len(ends)])
    out = np.zeros(len(a), np.int64)
    for j, (s, e) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        batch = his[j * k : (j + 1) * k]
        owner, chunk = _expand(C.indptr, C.indices, batch)
        rows[owner, chunk] = True
        which = order[s:e]
        slot = np.searchsorted(batch, i_hi[which])
        pair, look = _expand(C.indptr, C.indices, i_lo[which])
        out[which] = np.bincount(pair, weights=rows[slot[pair], look], minlength=len(which)).astype(np.int64)
        rows[owner, chunk] = False
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
