"""The concept graph's candidate pairs and edges against a dense brute-force reference."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import scipy.sparse as sp

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.graph import build_edges


def _reference(inc: np.ndarray, vecs: np.ndarray, theta_co: int, theta_sem: float) -> set[tuple[int, int, int, float]]:
    co = inc.T.astype(np.int64) @ inc.astype(np.int64)
    df = inc.sum(axis=0)
    out = set()
    n = co.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if co[i, j] >= theta_co and float(vecs[i] @ vecs[j]) >= theta_sem:
                out.add((i, j, int(co[i, j]), round(2 * co[i, j] / (df[i] + df[j]), 5)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("theta_co", [1, 2, 3, 6])
@pytest.mark.parametrize("block", [1, 7, 4096])
@pytest.mark.parametrize("workers", [1, 3])
def test_edges_equal_brute_force(seed: int, theta_co: int, block: int, workers: int) -> None:
    rng = np.random.default_rng(seed)
    inc = (rng.random((60, 40)) < rng.uniform(0.05, 0.4, size=40)).astype(np.int8)  # concepts of varied df
    vecs = rng.normal(size=(40, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    edges = build_edges(sp.csr_matrix(inc), vecs, theta_co, -0.2, 50.0, batch=5, block_concepts=block, workers=workers)
    rows = zip(edges.rows, edges.cols, edges.co, edges.dice, strict=True)
    got = {(int(r), int(c), int(k), round(float(d), 5)) for r, c, k, d in rows}
    assert got == _reference(inc, vecs, theta_co, -0.2)
    assert np.all(edges.rows < edges.cols) and np.all(np.diff(edges.rows) >= 0)
    co = inc.T.astype(np.int64) @ inc.astype(np.int64)
    assert edges.n_candidates == int((np.triu(co, 1) >= theta_co).sum())


@pytest.mark.parametrize("seed", [0, 1])
def test_threads_give_the_same_edges_in_the_same_order(seed: int) -> None:
    """Blocks computed on a thread pool are taken in order: the edge set, its order and the percentile threshold
    are those of the one-thread run."""
    rng = np.random.default_rng(seed)
    inc = sp.csr_matrix((rng.random((300, 120)) < rng.uniform(0.02, 0.3, size=120)).astype(np.int8))
    vecs = rng.normal(size=(120, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    one = build_edges(inc, vecs, 2, None, 60.0, batch=7, block_concepts=5, workers=1)
    many = build_edges(inc, vecs, 2, None, 60.0, batch=7, block_concepts=5, workers=4)
    assert one.n_candidates > 100 and len(one.rows) > 10  # the case is not trivial
    assert one.theta_sem == many.theta_sem
    for name in ("rows", "cols", "co", "cosine", "dice"):
        assert np.array_equal(getattr(one, name), getattr(many, name)), name


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("work", [1, 50, 1 << 30])
def test_blocks_bounded_by_work_give_the_same_edges_and_near_pairs(seed: int, work: int) -> None:
    """Blocks cut by the bound on their product's entries (one concept per block at work 1) give the edges, near
    pairs, threshold and candidate count of the blocks of 2,048 concepts, in the same order."""
    from g2cons_plugins.graph import _co_plan

    rng = np.random.default_rng(seed)
    inc = sp.csr_matrix((rng.random((300, 120)) < rng.uniform(0.02, 0.3, size=120)).astype(np.float32))
    vecs = rng.normal(size=(120, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    want = build_edges(inc, vecs, 2, None, 60.0, margin=0.2, block_work=1 << 40)
    got = build_edges(inc, vecs, 2, None, 60.0, margin=0.2, block_work=work, workers=2)
    plan, _ = _co_plan(inc, 2, 2048, work)
    assert plan.blocks[0][0] == 0 and plan.blocks[-1][1] == len(plan.keep)
    assert all(a < b == c for (a, b), (c, _) in zip(plan.blocks, plan.blocks[1:], strict=False))
    if work == 1:
        assert all(b - a == 1 for a, b in plan.blocks)
    assert len(want.rows) > 10 and len(want.near.rows) > 10  # the case is not trivial
    assert (got.theta_sem, got.n_candidates) == (want.theta_sem, want.n_candidates)
    for name in ("rows", "cols", "co", "cosine", "dice"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    for name in ("rows", "cols", "co", "cosine"):
        assert np.array_equal(getattr(got.near, name), getattr(want.near, name)), name
    assert np.all(want.near.cosine < want.theta_sem) and np.all(want.near.cosine >= want.theta_sem - 0.2)


@pytest.mark.parametrize("slack", [0.0, 1 / 8, 2.0])
def test_blocks_sharing_a_column_suffix_give_the_same_edges(slack: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether each block cuts its own columns of C (slack 0), blocks share a suffix cut from the last one (the
    default) or every block multiplies all columns (slack 2): the same edges, near pairs, threshold and count."""
    from g2cons_plugins import graph
    from g2cons_plugins.graph import _co_plan, _column_suffixes

    rng = np.random.default_rng(3)
    inc = sp.csr_matrix((rng.random((400, 150)) < rng.uniform(0.02, 0.3, size=150)).astype(np.float32))
    vecs = rng.normal(size=(150, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    want = build_edges(inc, vecs, 2, None, 60.0, margin=0.2, block_work=1 << 40)
    monkeypatch.setattr(graph, "SUFFIX_SLACK", slack)
    plan, C = _co_plan(inc, 2, 2048, 30)
    n = C.shape[1]
    tasks = list(_column_suffixes(C, plan.blocks))
    assert [t[0] for t in tasks] == plan.blocks and len(tasks) > 20
    for (a, _), Cs, s in tasks:
        assert s <= a and Cs.shape[1] == n - s and a - s <= slack * (n - s)
        assert (Cs != C[:, s:]).nnz == 0
    cuts = len({s for _, _, s in tasks})  # the suffixes cut
    if slack == 0.0:
        assert cuts == len(tasks)
    elif slack == 2.0:
        assert cuts == 1
    else:
        assert 1 < cuts < len(tasks)
    got = build_edges(inc, vecs, 2, None, 60.0, margin=0.2, block_work=30, workers=2)
    assert (got.theta_sem, got.n_candidates) == (want.theta_sem, want.n_candidates)
    for name in ("rows", "cols", "co", "cosine", "dice"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    for name in ("rows", "cols", "co", "cosine"):
        assert np.array_equal(getattr(got.near, name), getattr(want.near, name)), name


@pytest.mark.parametrize("rows", [1, 7, 10_000])
def test_a_product_by_blocks_of_rows_is_the_whole_product(rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row blocks' bound (an int8 matrix times an int64 vector, by blocks of rows so SciPy's cast of the data
    stays small) equals the one-call product, type included."""
    from g2cons_plugins import graph

    rng = np.random.default_rng(5)
    M = sp.random(300, 90, density=0.1, format="csr", random_state=7, data_rvs=lambda k: rng.integers(1, 127, k))
    M = M.astype(np.int8)
    x = rng.integers(0, 10**12, size=90, dtype=np.int64)
    monkeypatch.setattr(graph, "PRODUCT_BLOCK_ROWS", rows)
    got = graph._products_by_rows(M, x)
    want = M @ x
    assert got.dtype == want.dtype == np.int64 and np.array_equal(got, want)


def test_release_free_memory_is_safe_to_call_anywhere() -> None:
    """glibc's malloc_trim where there is one, else a no-op; the answer says which, and calling it twice is fine."""
    import sys

    from g2cons_plugins.storage.memory import release_free_memory

    first = release_free_memory()
    assert release_free_memory() is first
    if not sys.platform.startswith("linux"):
        assert first is False


@pytest.mark.parametrize(("shuffle", "block"), [(False, 1 << 18), (False, 7), (True, 1 << 18)])
def test_adjacency_is_the_symmetric_dice_matrix_whatever_the_edge_order(
    shuffle: bool, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sorted edges are placed straight into the matrix (by blocks of ``ADJ_BLOCK`` edges); others are summed.
    Either way: the symmetric Dice matrix, canonical, as ``upper + upper.T`` makes it."""
    import scipy.sparse as sp

    from g2cons_plugins import graph
    from g2cons_plugins.graph import EdgeSet, adjacency

    monkeypatch.setattr(graph, "ADJ_BLOCK", block)

    rng = np.random.default_rng(3)
    pairs = sorted({(int(a), int(b)) for a, b in rng.integers(0, 30, size=(120, 2)) if a < b})
    rows, cols = (np.array(x, dtype=np.int64) for x in zip(*pairs, strict=True))
    dice = rng.uniform(0.1, 1.0, size=len(rows)).astype(np.float32)
    if shuffle:
        p = rng.permutation(len(rows))
        rows, cols, dice = rows[p], cols[p], dice[p]
    z = np.zeros(len(rows), np.float32)
    edges = EdgeSet(rows, cols, z.astype(np.int32), z, dice, 0.0, len(rows))
    A = adjacency(edges, 32)
    dense = np.zeros((32, 32))
    dense[rows, cols] = dice
    dense[cols, rows] = dice
    assert np.array_equal(A.toarray(), dense)
    assert A.has_canonical_format
    upper = sp.csr_matrix((dice.astype(np.float64), (rows, cols)), shape=(32, 32))
    summed = sp.csr_matrix(upper + upper.T)
    for name in ("indptr", "indices", "data"):
        got, want = getattr(A, name), getattr(summed, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name


def test_thread_count_comes_from_the_environment_and_bad_values_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from g2cons_plugins.errors import InputError
    from g2cons_plugins.graph import THREADS_ENV, default_workers

    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert 1 <= default_workers() <= 4
    monkeypatch.setenv(THREADS_ENV, "7")
    assert default_workers() == 7
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(InputError, match=THREADS_ENV):
            default_workers()


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
def test_pairs_sorted_compares_without_subtracting(dtype: type) -> None:
    """Sorted, distinct pairs by (row, col); a step back or a repeat is not, for unsigned ids too (a difference of
    unsigned ids would wrap round and read as a step forward)."""
    from g2cons_plugins.graph import pairs_sorted

    rows, cols = np.array([0, 0, 2, 5], dtype), np.array([1, 3, 0, 1], dtype)
    assert pairs_sorted(rows, cols) and pairs_sorted(rows[:1], cols[:1])
    assert not pairs_sorted(rows[::-1], cols[::-1])  # rows go back
    assert not pairs_sorted(np.array([0, 0], dtype), np.array([3, 1], dtype))  # a column goes back
    assert not pairs_sorted(np.array([2, 2], dtype), np.array([1, 1], dtype))  # a repeat


STEPS = [
    "concepts",
    "incidences",
    "vectors",
    "edges.plan",
    "edges.candidates",
    "edges.pairs",
    "edges",
    "pagerank",
    "names",
]


def test_derive_runs_in_paper_order_and_calls_its_hook_between_the_steps(corpus: list[dict[str, str]]) -> None:
    """``derive`` calls ``after_step`` once after each step, in the paper's order, and the hook changes nothing of
    the derived state (the method knows nothing of memory: the caller's hook decides what runs there)."""
    from test_build_speed import _feed

    from g2cons_plugins.build import derive

    index = G2ConSIndex.build(corpus, embedder="hash")
    seen: list[str] = []
    with_hook = derive(index.snapshot.stored, index.config, after_step=seen.append)
    assert seen == STEPS
    without = derive(index.snapshot.stored, index.config)
    for name in without.__dataclass_fields__:
        if name == "stats":
            assert getattr(with_hook, name) == getattr(without, name)
            continue
        a, b = hashlib.sha256(), hashlib.sha256()
        _feed(a, getattr(with_hook, name))
        _feed(b, getattr(without, name))
        assert a.digest() == b.digest(), name


def test_a_build_gives_the_freed_heap_back_where_it_did_before(
    corpus: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index passes the engine's memory hook (storage.memory.after_build_step, through
    storage.step_spill.derive_hooks): a build releases the free heap
    after the candidate blocks, after the kept pairs are sorted and after the bridge names, as when the releases
    were lines inside the algorithm; a refresh (an exact derive) too."""
    from g2cons_plugins.storage import memory

    released: list[str] = []
    hook = memory.after_build_step
    monkeypatch.setattr(memory, "release_free_memory", lambda: released.append("release") or True)
    steps: list[str] = []

    def spy(step: str) -> None:
        steps.append(step)
        n = len(released)
        hook(step)
        if len(released) > n:
            steps[-1] += " (released)"

    import g2cons_plugins.storage.step_spill as step_spill_mod

    monkeypatch.setattr(step_spill_mod, "after_build_step", spy)  # SpillSteps.after_step, the engine's derive hook
    index = G2ConSIndex.build(corpus[:14], embedder="hash")
    want = [f"{s} (released)" if s in memory.RELEASE_AFTER else s for s in STEPS]
    assert steps == want and {"edges.candidates", "edges.pairs", "names"} == memory.RELEASE_AFTER
    steps.clear()
    index.add(corpus[14:], exact=True)
    assert steps == want
