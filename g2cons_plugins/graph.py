"""The concept graph: concept vectors (Eq. 1), semantically filtered co-occurrence edges with Dice weights,
weighted PageRank, and graph statistics. Everything is sparse linear algebra: no loop over concept pairs.

Steps 3 to 5 of a derive (:func:`g2cons_plugins.build.derive`): :func:`concept_vectors`, :func:`build_edges`
(then :func:`adjacency`), :func:`pagerank`. Nothing here manages memory: :func:`build_edges` calls the derive's
``after_step`` hook between its phases, and whoever runs the derive decides what that does.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from itertools import islice
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from .arrays.products import transposed_product
from .errors import EmbeddingError, InputError

_R = TypeVar("_R")
_T = TypeVar("_T")
_V = TypeVar("_V")

__all__ = [
    "ADJ_BLOCK",
    "DICE_BLOCK",
    "EDGE_BLOCK_WORK",
    "NEAR_MARGIN",
    "THREADS_ENV",
    "VECTOR_BLOCK_ROWS",
    "ConceptVectors",
    "EdgeSet",
    "GraphStats",
    "NearPairs",
    "adjacency",
    "build_edges",
    "concept_vectors",
    "default_workers",
    "degree_stats",
    "graph_stats",
    "pagerank",
    "pair_ids",
    "pairs_sorted",
]


@dataclass(frozen=True)
class ConceptVectors:
    """Concept vectors (one L2-normalised row per concept; zero for a concept in no row), each concept's count
    (|S_w|, or the unit count for ``vector_level="chunk"``), and the L2 norm of each concept's unnormalised sum of
    vectors (its vector times that norm is the sum, so a trickle update can add or take away a few rows' vectors
    instead of summing them all again)."""

    vectors: np.ndarray
    counts: np.ndarray
    sum_norms: np.ndarray


def concept_vectors(
    level: str | None,
    sent_inc: sp.csr_matrix,
    unit_inc: sp.csr_matrix,
    sent_unit: sp.csr_matrix,
    sent_vecs: np.ndarray | None,
    unit_vecs: np.ndarray,
    step: Callable[[str], None] | None = None,
) -> ConceptVectors:
    """The concept vector step, by ``level`` (``config.graph.vector_level``): "sentence" = Eq. 1 (mean of the vectors
    of the sentences holding the concept, |S_w|; ``sent_vecs`` needed); "chunk" = ablation C (mean of the vectors
    of the units holding it, the unit count); "unit" = Eq. 1 with each sentence's vector replaced by its unit's:
    the unit vectors weighted by how many of their sentences hold the concept (|S_w|), so no sentence is embedded
    (any other ``level``, None included, is "sentence"). ``sent_inc`` / ``unit_inc``: sentences / units x
    concepts (0/1); ``sent_unit``: sentences x units. ``step``: the derive's hook, called with
    ``"vectors.block"`` after each block of :data:`VECTOR_BLOCK_ROWS` rows of vectors is read (the engine unmaps
    the pages of a loaded index's vectors there)."""
    if level == "chunk":
        return _mean_vectors(unit_inc, unit_vecs, step)
    if level == "unit":
        means = _mean_vectors(transposed_product(sent_unit, sent_inc), unit_vecs, step)
        return ConceptVectors(means.vectors, np.asarray(sent_inc.sum(axis=0)).ravel(), means.sum_norms)
    if sent_vecs is None:
        raise InputError(
            "vector_level='sentence' (Eq. 1; mode='paper') needs sentence vectors, and this index holds none (it "
            "was built with vector_level='unit' or 'chunk'): build it with vector_level='sentence', or embed them "
            "with g2cons_plugins.build.with_vectors(stored, embedder, config)"
        )
    return _mean_vectors(sent_inc, sent_vecs, step)


#: Rows of vectors read per block by :func:`concept_vectors` (64 MB of 256-dimensional float32 vectors).
VECTOR_BLOCK_ROWS = 65536


def _mean_vectors(
    incidence: sp.csr_matrix, vecs: np.ndarray, step: Callable[[str], None] | None = None
) -> ConceptVectors:
    """Eq. 1 over the rows of ``incidence`` (rows x concepts, 0/1 or weights): per concept the mean of the
    ``vecs`` of its rows, L2-normalised (cosine is all that is used; a concept in none gets a zero vector), its row
    count and the norm of its unnormalised sum (:class:`ConceptVectors`)."""
    counts = np.asarray(incidence.sum(axis=0)).ravel()
    V = _transposed_product(incidence, vecs, step)
    with np.errstate(divide="ignore", invalid="ignore"):
        V /= np.maximum(counts, 1)[:, None]
        norms = np.linalg.norm(V, axis=1, keepdims=True)
        # in place (the values of np.where(norms > 0, V / max(norms, 1e-12), 0) bit for bit): no temporary copies of
        # the matrix, which is the step's peak (at 100k passages 58 MB a copy, three of them)
        np.divide(V, np.maximum(norms, np.float32(1e-12)), out=V)
        V[~(norms.ravel() > 0)] = 0.0
    if not np.isfinite(V).all():
        raise EmbeddingError("concept vectors contain NaN/inf: the sentence embeddings are not finite")
    return ConceptVectors(V, counts, norms.ravel().astype(np.float64) * np.maximum(counts, 1))


def _transposed_product(incidence: sp.csr_matrix, vecs: np.ndarray, step: Callable[[str], None] | None) -> np.ndarray:
    """``incidence.T @ vecs`` as float32, read in blocks of :data:`VECTOR_BLOCK_ROWS` rows of ``vecs`` (``step``
    called after each), so a caller can give back the pages of mapped vectors as they are read (at 1M passages
    the unit vectors are 1.5 GB). Bit for bit the product SciPy computes in one call: its compressed-column kernel
    (``csc_matvecs``, the one ``csc @ dense`` runs) adds each row's contribution to every concept's sum in row
    order, and here the same kernel is run block after block on the same accumulator, so each sum is the same
    sequence of float32 additions (``tests/test_vector_level.py``). The one-call product where the types are not
    float32 x float32, the kernel is missing (another SciPy) or there is a single block."""
    kernel = getattr(getattr(sp, "_sparsetools", None), "csc_matvecs", None)
    n, m = incidence.shape
    if (
        kernel is None
        or step is None
        or n <= VECTOR_BLOCK_ROWS
        or vecs.ndim != 2
        or incidence.dtype != np.float32
        or vecs.dtype != np.float32
    ):
        return np.asarray(incidence.T @ vecs, dtype=np.float32)
    d = vecs.shape[1]
    out = np.zeros((m, d), dtype=np.float32)
    flat = out.reshape(-1)
    for lo in range(0, n, VECTOR_BLOCK_ROWS):
        hi = min(n, lo + VECTOR_BLOCK_ROWS)
        block = incidence[lo:hi].T  # CSC: concepts x the block's rows, the same entries in the same order
        x = np.ascontiguousarray(vecs[lo:hi]).reshape(-1)
        kernel(m, hi - lo, d, block.indptr, block.indices, block.data, x, flat)
        del x, block
        step("vectors.block")
    return out


# the cosine band below theta_sem whose candidate pairs are kept as near pairs (trickle state: they let an update
# re-decide a moved concept's edges without its co-occurrence product until it moved NEAR_MARGIN / 2; see
# g2cons_plugins.engine.edge_update). 0.06 keeps about 0.66 x the edges on a 100k-passage corpus (wordllama), and an
# add of 1% of it then recomputes the candidates of about 8k concepts instead of 14k (16.5M pairs, not 92M);
# measured in benchmarks/scale/results/near_pairs.md
NEAR_MARGIN = 0.06


@dataclass(frozen=True)
class NearPairs:
    """Candidate pairs (i < j, Co >= theta_co) that are not edges but whose cosine, when computed, was within
    ``margin`` below theta_sem: sorted by (row, col), with Co and that cosine. Retrieval never reads them."""

    rows: np.ndarray
    cols: np.ndarray
    co: np.ndarray
    cosine: np.ndarray
    margin: float  # 0: none kept

    @classmethod
    def empty(cls) -> NearPairs:
        """No near pairs (margin 0): an index saved before they existed, or ``mode="paper"``."""
        z = np.zeros(0, np.int32)
        return cls(z, z, z, z.astype(np.float32), 0.0)


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
    near: NearPairs = field(default_factory=NearPairs.empty)


def build_edges(
    chunk_incidence: sp.csr_matrix,
    vectors: np.ndarray,
    theta_co: int,
    theta_sem: float | None,
    percentile: float,
    batch: int = 2048,
    block_concepts: int = 2048,
    workers: int | None = None,
    margin: float = 0.0,
    after_step: Callable[[str], None] | None = None,
    block_work: int | None = None,
    keep: Callable[[str, Any], Any] | None = None,
) -> EdgeSet:
    """Edge iff Co >= theta_co AND cos >= theta_sem. With ``theta_sem=None`` the threshold is the
    ``percentile``-th percentile of the cosines of all candidate pairs (Co >= theta_co), so the share of
    candidate pairs kept is the same whatever the embedder's cosine scale.

    The candidate pairs and their cosines are computed by blocks of at most ``block_concepts`` concepts whose
    co-occurrence product has at most ``block_work`` (default :data:`EDGE_BLOCK_WORK`) entries by its bound
    (:func:`_row_blocks`; at 1M passages the first 2,048 concepts' product alone held ~700 MB with its hit arrays,
    two of them in flight), on ``workers`` threads (default: :func:`default_workers`; scipy's sparse product and
    NumPy's gathers release the GIL). Blocks are taken in order and each pair's cosine is the same dot product
    whatever the block, so the result depends neither on ``workers`` nor on the block sizes. ``margin`` > 0 also
    keeps the candidates with cosine in [theta_sem - margin, theta_sem) as :class:`NearPairs` (state for trickle
    updates).
    ``after_step``: called with ``"edges.plan"`` once the co-occurrence products' input is copied from the
    incidence (which is not read again), ``"edges.candidates"`` once every candidate block is computed and
    ``"edges.pairs"`` once the kept pairs are sorted (the derive's hook: e.g. the engine gives the freed heap back
    there). ``keep``: the derive's hook on what it holds (:class:`g2cons_plugins.build.Keep`), given each
    candidate block as ``("edges.block", block)`` as soon as it is made (every block is held until the threshold
    is known: at 1M passages 75M candidates); identity by default."""
    step = after_step or _no_step
    hold = keep or _same
    work = EDGE_BLOCK_WORK if block_work is None else block_work
    plan, C = _co_plan(chunk_incidence, theta_co, block_concepts, work, step)
    n_workers = default_workers() if workers is None else max(1, int(workers))
    tasks = _column_suffixes(C, plan.blocks)
    del C  # the suffixes own it: its leading columns are freed as the blocks move past them
    make = partial(_candidates, plan, vectors=vectors, batch=batch)
    blocks = [hold("edges.block", b) for b in _in_order(make, tasks, n_workers)]
    concepts_kept = plan.keep
    del plan, make  # C^T (at 1M passages ~300 MB): the candidates are all the rest reads
    n_candidates = sum(len(b.cos) for b in blocks)
    step("edges.candidates")
    theta = _threshold([b.cos for b in blocks], theta_sem, percentile)
    n_concepts = max(int(chunk_incidence.shape[1]), 1)
    kept, near = _kept_and_near(blocks, concepts_kept, theta, margin, pair_ids(n_concepts))  # empties ``blocks``
    rows, cols, co, cos = kept
    df = np.asarray(chunk_incidence.sum(axis=0)).ravel().astype(np.float64)
    dice = np.empty(len(rows), dtype=np.float32)
    for s in range(0, len(rows), DICE_BLOCK):  # the float64 temporaries of one block, not of every edge
        e = slice(s, s + DICE_BLOCK)
        dice[e] = 2.0 * co[e] / (df[rows[e]] + df[cols[e]])
    step("edges.pairs")
    return EdgeSet(
        rows=rows,
        cols=cols,
        co=co,
        cosine=cos,
        dice=dice,
        theta_sem=theta,
        n_candidates=int(n_candidates),
        near=NearPairs(*near, float(margin)) if near is not None else NearPairs.empty(),
    )


def _no_step(step: str) -> None:
    """No hook: nothing between the steps."""


def _same(step: str, value: _V) -> _V:
    """No hook: what a step holds is kept as it is."""
    return value


def _threshold(cosines: list[np.ndarray], theta_sem: float | None, percentile: float) -> float:
    """``theta_sem``, or when None the ``percentile``-th percentile of every candidate's cosine (their one
    concatenation, partitioned in place)."""
    if theta_sem is not None:
        return float(theta_sem)
    all_cos = np.concatenate(cosines) if cosines else np.zeros(0, np.float32)
    return float(np.percentile(all_cos, percentile, overwrite_input=True)) if len(all_cos) else 1.0


# pairs whose Dice weights are computed at a time (bounds the float64 temporaries: 24 bytes a pair of a block)
DICE_BLOCK = 1 << 20


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _kept_and_near(
    blocks: list[Candidates], keep: np.ndarray, theta: float, margin: float, ids: type[np.signedinteger]
) -> tuple[Pairs, Pairs | None]:
    """The edges (cos >= theta) and, with ``margin`` > 0, the near pairs (cos in [theta - margin, theta)), each
    sorted by (row, col): rows, cols (``ids``), Co, cosines. The blocks cover increasing, disjoint row ranges
    (:func:`_row_blocks`) and each is sorted already, so their pairs go in order into arrays allocated once at their
    final size, each block taken out of ``blocks`` (freed) as soon as it is placed: no concatenation and no sort of
    every pair at once (at 1M passages those held ~1 GB on top of the candidates). Pairs are unique, so the order
    is the one a sort of all pairs at once gives."""
    out_kept = _empty_pairs(sum(int(np.count_nonzero(b.cos >= theta)) for b in blocks), ids)
    out_near = None
    if margin > 0:
        n_near = sum(int(np.count_nonzero((b.cos < theta) & (b.cos >= theta - margin))) for b in blocks)
        out_near = _empty_pairs(n_near, ids)
    at_kept = at_near = 0
    blocks.reverse()  # taken from the end: each pop is O(1)
    while blocks:
        block = blocks.pop()
        m = block.cos >= theta
        at_kept = _place(block, keep, m, out_kept, at_kept)
        if out_near is not None:
            at_near = _place(block, keep, ~m & (block.cos >= theta - margin), out_near, at_near)
        del block, m
    return out_kept, out_near


def _empty_pairs(n: int, ids: type[np.signedinteger]) -> Pairs:
    """Room for ``n`` pairs (rows, cols, Co, cosines); pages are touched only when written."""
    return np.empty(n, ids), np.empty(n, ids), np.empty(n, np.int32), np.empty(n, np.float32)


def _place(block: Candidates, keep: np.ndarray, mask: np.ndarray, out: Pairs, at: int) -> int:
    """The pairs of ``block`` that ``mask`` keeps (in the block's (row, col) order), written into ``out`` from
    ``at``; returns the position after them."""
    e = slice(at, at + int(np.count_nonzero(mask)))
    out[0][e] = keep[block.first + block.row[mask].astype(np.int64)]
    out[1][e], out[2][e], out[3][e] = block.col[mask], block.co[mask], block.cos[mask]
    return e.stop


def pair_ids(n_concepts: int) -> type[np.signedinteger]:
    """The integer type of the concept ids of stored pairs (edges, near pairs): int32 below 2**31 concepts
    (half the memory and disk of int64: at 1M passages the edges and near pairs are the largest arrays an update
    copies), else int64. An index saved with int64 pairs keeps them; an update keeps the type it finds."""
    return np.int32 if n_concepts < 2**31 else np.int64


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


# bound on the entries of one block's co-occurrence product (:func:`_row_blocks`): with the default 2 threads, two
# such products and their hit arrays are in flight (~12 bytes an entry). At 1M passages the first 2,048 concepts'
# product alone had ~50M entries. Measured at 1M (the candidate step's peak): 2^24 2,399 MB, 2^23 2,235, 2^22 2,301.
EDGE_BLOCK_WORK = 1 << 23


@dataclass(frozen=True)
class _CoPlan:
    """What the candidate blocks share: the concepts that can reach theta_co (``keep``), the transpose of the
    chunk x kept-concept counts by row (``CT``), theta_co, and the blocks as (first, end) kept positions."""

    keep: np.ndarray
    CT: sp.csr_matrix
    theta_co: int
    blocks: list[tuple[int, int]]


def _co_plan(
    incidence: sp.spmatrix, theta_co: int, block: int, work: int, step: Callable[[str], None] = _no_step
) -> tuple[_CoPlan, sp.csr_matrix]:
    """The plan and the chunk x kept-concept counts ``C`` (int32, by row). Concepts in fewer than theta_co chunks
    cannot reach it and are left out of the product, and each block multiplies only the columns from (about) its
    first row on (measured: 4x faster than the full product at 10k passages, same pairs). ``step("edges.plan")``
    once the incidence is copied (it is not read again)."""
    df = np.asarray(incidence.sum(axis=0)).ravel()
    keep = np.flatnonzero(df >= max(theta_co, 1)).astype(np.int32)
    # by row (a column slice of a csr matrix is 3x faster than a csc slice, 80k passages); one copy of the entries,
    # whose data is cast in place of the float32 one (at 1M passages 61M entries: the plan peaked at 1.7 GB over
    # its start through csc copies and casts of the whole matrix, ~0.9 GB now)
    C = sp.csr_matrix(incidence)[:, keep]
    step("edges.plan")
    C.sort_indices()
    # the transpose's 0/1 entries as int8 (a quarter of int32's bytes): int8 x int32 multiplies as int32
    small = C.nnz == 0 or (float(C.data.min()) >= 0 and float(C.data.max()) <= 127)
    C.data = C.data.astype(np.int8 if small else np.int32)
    CT = C.T.tocsr()
    CT.sort_indices()
    C.data = C.data.astype(np.int32)
    return _CoPlan(keep, CT, theta_co, _row_blocks(C, CT, block, work)), C


# a block multiplies the columns of C from ``s`` on, re-sliced when its first row has moved past ``s`` by more than
# this share of the columns left (:func:`_column_suffixes`). Measured at 1M passages (the candidate step's peak and
# seconds, 2 threads): a slice per block (0) 62 s; 1/8: 2,235 MB, 42 s; 1/4: 2,212, 40 s; 1/2: 2,052, 39 s; never
# (1 or more: every block multiplies all columns, no copy) 1,985, 47 s
SUFFIX_SLACK = 1 / 2

_Task = tuple[tuple[int, int], sp.csr_matrix, int]


def _column_suffixes(C: sp.csr_matrix, blocks: list[tuple[int, int]]) -> Iterator[_Task]:
    """Each block ``(a, b)`` with the columns of ``C`` from some ``s <= a`` on, as ``(block, C[:, s:], s)``. A
    column slice is a copy (at 1M passages the first blocks' slices were most of C's ~500 MB, two in flight), so
    one suffix serves the blocks until their first row is more than :data:`SUFFIX_SLACK` of the columns left past
    ``s``, and the next is cut from it; the columns in [s, a) a block multiplies are left out by its upper-triangle
    filter, so the pairs and counts are the same. ``C`` itself is dropped here once it is cut."""
    n, s = C.shape[1], 0
    for a, b in blocks:
        if a - s > SUFFIX_SLACK * (n - s):
            C, s = C[:, a - s :], a
        yield (a, b), C, s


def _row_blocks(C: sp.csr_matrix, CT: sp.csr_matrix, block: int, work: int) -> list[tuple[int, int]]:
    """Consecutive row ranges of the upper triangle of C^T C, each of at most ``block`` rows and, unless one row
    alone exceeds it, of at most ``work`` entries by a bound: row i of a block has at most min(its partners
    counted with repeats, the columns from i on) entries."""
    n = C.shape[1]
    partners = _products_by_rows(CT, np.diff(C.indptr).astype(np.int64))  # over a concept's chunks, their concepts
    bound = np.minimum(np.asarray(partners).ravel(), n - np.arange(n, dtype=np.int64))
    ends = np.cumsum(bound)
    out, a = [], 0
    block = max(int(block), 1)
    while a < n:
        base = int(ends[a - 1]) if a else 0
        b = int(np.searchsorted(ends, base + max(int(work), 1), side="right"))
        b = min(max(b, a + 1), a + block, n)
        out.append((a, b))
        a = b
    return out


# rows of a sparse matrix multiplied at a time by :func:`_products_by_rows`
PRODUCT_BLOCK_ROWS = 4096


def _products_by_rows(M: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """``M @ x`` by blocks of :data:`PRODUCT_BLOCK_ROWS` rows: SciPy casts a matrix's data to the product's type
    first (an int8 matrix times an int64 vector: a copy of the data as int64, at 1M passages 490 MB at once), so
    each block's copy is small. Whole numbers: the same sums."""
    if M.shape[0] <= PRODUCT_BLOCK_ROWS:
        return np.asarray(M @ x)
    return np.concatenate(
        [np.asarray(M[r : r + PRODUCT_BLOCK_ROWS] @ x) for r in range(0, M.shape[0], PRODUCT_BLOCK_ROWS)]
    )


@dataclass(frozen=True)
class Candidates:
    """One block's candidate pairs, sorted by (row, col), in 10-12 bytes a pair (at 1M passages 75M candidates
    are held at once until the threshold is known): the row as its offset from the block's first kept position
    ``first`` (uint16 while a block has at most 65,536 rows), the column concept id, Co (uint16 where every Co of
    the block fits) and the cosine."""

    first: int
    row: np.ndarray
    col: np.ndarray
    co: np.ndarray
    cos: np.ndarray


def _candidates(plan: _CoPlan, task: _Task, vectors: np.ndarray, batch: int) -> Candidates:
    """Pairs i < j of the block's rows with Co(i, j) >= theta_co and their cosines (computed by column: the
    gathered partner vectors are then read in increasing order, measured 25% faster than by row), kept sorted by
    (row, col) in the compact form of :class:`Candidates`. ``task``: the block, the columns of C it multiplies
    (from ``s`` on) and ``s`` (:func:`_column_suffixes`)."""
    (a, b), C, s = task
    P = sp.csr_matrix(plan.CT[a:b] @ C)
    hit = np.flatnonzero(P.data >= plan.theta_co)  # row of each hit from indptr: no array as long as P
    rows = np.searchsorted(P.indptr, hit, side="right").astype(np.int32) - 1
    cols = P.indices[hit].astype(np.int32) + s
    k = P.data[hit]
    del P, hit
    upper = np.flatnonzero(cols > rows + a)
    upper = upper[np.argsort(cols[upper], kind="stable")]
    rows, cols, k = rows[upper], cols[upper], k[upper]
    del upper
    r, c = plan.keep[rows + a], plan.keep[cols]
    cos = np.empty(len(r), dtype=np.float32)
    for lo in range(0, len(r), batch):  # small batches: the two gathered vector blocks stay in cache
        cos[lo : lo + batch] = np.einsum("ij,ij->i", vectors[r[lo : lo + batch]], vectors[c[lo : lo + batch]])
    del r
    order = np.lexsort((cols, rows))
    row_type = np.uint16 if b - a <= 1 << 16 else np.int32
    co_type = np.uint16 if len(k) and int(k.max()) < 1 << 16 else np.int32
    return Candidates(a, rows[order].astype(row_type), c[order], k[order].astype(co_type), cos[order])


def _in_order(fn: Callable[[_T], _R], tasks: Iterable[_T], workers: int) -> Iterator[_R]:
    """``fn`` of each task, yielded in order; up to ``workers`` tasks computed at once on a thread pool (each
    block's product is a memory peak, so no more are in flight; the tasks are drawn as they are submitted)."""
    if workers == 1:
        yield from map(fn, tasks)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="g2cons-edges") as pool:
        todo = iter(tasks)
        pending: deque[Future[_R]] = deque(pool.submit(fn, task) for task in islice(todo, workers))
        while pending:
            done = pending.popleft().result()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(pool.submit(fn, nxt))
            yield done


# edges placed per step of :func:`adjacency` (bounds its position temporaries: 8 bytes an edge of a step)
ADJ_BLOCK = 1 << 18


def adjacency(edges: EdgeSet, n: int) -> sp.csr_matrix:
    """Symmetric weighted adjacency (Dice weights), canonical (sorted indices, no duplicates). Edges sorted by
    (row, col), as :func:`build_edges` and the trickle update keep them, are placed straight into the matrix: row
    i holds the edges ending at i (the transpose, by its counting sort), then those starting at i. Besides the
    matrix only the transpose's 8 bytes and a mask's 2 bytes an edge are held; ``upper + upper.T`` held 20 more
    bytes an edge while it summed (at 80k passages, 3M edges: 98 MB at most instead of 126). Others go through a
    coordinate-format sum."""
    rows, cols = edges.rows, edges.cols
    m = len(rows)
    if not pairs_sorted(rows, cols):
        upper = sp.csr_matrix((edges.dice.astype(np.float64), (rows, cols)), shape=(n, n))
        return sp.csr_matrix(upper + upper.T)
    up_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=up_ptr[1:])
    lower = sp.csr_matrix((edges.dice, cols, up_ptr), shape=(n, n)).T.tocsr()  # row j: the edges (i, j), by i
    small = 2 * m < 2**31 and n < 2**31
    indices = np.empty(2 * m, dtype=np.int32 if small else np.int64)
    data = np.empty(2 * m, dtype=np.float64)
    is_lower = np.ones(2 * m, dtype=bool)
    for s in range(0, m, ADJ_BLOCK):  # edge k of row i goes after row i's lower entries: k + lower's end of row i
        e = min(s + ADJ_BLOCK, m)
        at = np.arange(s, e, dtype=np.int64) + lower.indptr[rows[s:e].astype(np.int64) + 1]
        indices[at], data[at], is_lower[at] = cols[s:e], edges.dice[s:e], False
    indices[is_lower], data[is_lower] = lower.indices, lower.data  # the rest, in order
    indptr = (up_ptr + lower.indptr).astype(indices.dtype)
    del lower, is_lower
    A = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    A.has_sorted_indices = True
    return A


def pairs_sorted(rows: np.ndarray, cols: np.ndarray) -> bool:
    """The pairs ``(rows[i], cols[i])`` are sorted by (row, col) without repeats (each step: a later row, or the
    same row and a later column). Compared, not subtracted: right for unsigned ids too."""
    if len(rows) < 2:
        return True
    r0, r1 = rows[:-1], rows[1:]
    return bool(np.all((r1 > r0) | ((r1 == r0) & (cols[1:] > cols[:-1]))))


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
        M, scale = A, inv
    else:
        M, scale = A.T.tocsr(), None  # P^T for P = diag(inv) A, row-stochastic on non-dangling rows
        M.data *= inv[M.indices]
    for _ in range(max_iter):
        prev = x
        moved = np.asarray(M @ (prev if scale is None else scale * prev))
        x = damping * (moved + prev[dangling].sum() * p) + (1.0 - damping) * p
        if np.abs(x - prev).sum() < n * tol:
            break
    result: np.ndarray = x / x.sum()
    return result


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
