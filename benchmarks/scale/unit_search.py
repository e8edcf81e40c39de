"""Dense unit search at scale: the exact scan against the approximate routes tried for issue 12.

    python -c "import sys; sys.path.insert(0, 'benchmarks/scale'); import corpus; from g2cons_plugins import \
        G2ConSIndex; G2ConSIndex.build(list(corpus.passages(40000)), embedder='wordllama').save('/tmp/idx40000')"
    nice -n 5 python benchmarks/scale/unit_search.py --index /tmp/idx40000 \
        --out benchmarks/scale/results/unit_search_40k_wordllama

``--index`` is any saved G2ConS index (above: the 40k-passage generated corpus, 61,756 units). Its unit vectors
are searched with the embedded MuSiQue ketrag500 questions
(the index's embedder, query prefix where it has one) for k = 10 (the seeds) and k = the eager candidate count of
a 2k budget (``3 * 2000 / median_unit_tokens + 32``, the units a default query ranks). Routes:

- ``exact``: one float32 matrix-vector product and a partition (what queries do below ``ann_threshold``);
- ``hnsw-f32`` / ``hnsw-i8``: usearch HNSW (M 16, ef_construction 128, built single-threaded as the index does),
  searched with ef = 256 and 1024, candidates re-scored exactly;
- ``ivf``: k-means lists (scikit-learn ``MiniBatchKMeans``, 4 sqrt(n) lists), the 5% / 10% nearest lists scanned;
- ``pca64``: a 64-dimension PCA prefilter keeping 8k candidates, re-scored exactly.

Prints a markdown table (build s, p50 ms per query, recall of the exact top k) and writes ``OUT.json``/``OUT.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

Search = Callable[[np.ndarray, int], np.ndarray]


def _exact_top(V: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    s = V @ q
    return np.argpartition(-s, k)[:k]


def _rescored(V: np.ndarray, q: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    s = V[cand] @ q
    return cand[np.argpartition(-s, min(k, len(s) - 1))[:k]] if len(cand) > k else cand


def _hnsw(V: np.ndarray, dtype: str) -> tuple[float, Callable[[int], Search]]:
    from usearch.index import Index

    g = Index(ndim=V.shape[1], metric="ip", dtype=dtype, connectivity=16, expansion_add=128)
    t = time.perf_counter()
    g.add(np.arange(len(V), dtype=np.uint64), V, threads=1)
    build = time.perf_counter() - t

    def at(ef: int) -> Search:
        def search(q: np.ndarray, k: int) -> np.ndarray:
            g.expansion_search = ef
            cand = np.asarray(g.search(q, k, threads=1).keys, dtype=np.int64)
            return _rescored(V, q, cand, k)

        return search

    return build, at


def _ivf(V: np.ndarray) -> tuple[float, Callable[[float], Search]]:
    from sklearn.cluster import MiniBatchKMeans

    n = len(V)
    n_lists = max(8, int(4 * np.sqrt(n)))
    t = time.perf_counter()
    rng = np.random.default_rng(0)
    sample = V[np.sort(rng.choice(n, min(n, 64 * n_lists), replace=False))]
    km = MiniBatchKMeans(n_clusters=n_lists, random_state=0, n_init=1, batch_size=4096, max_iter=20).fit(sample)
    C = km.cluster_centers_.astype(np.float32)
    C /= np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-12)
    assign = np.concatenate([np.argmax(V[s : s + 16384] @ C.T, axis=1) for s in range(0, n, 16384)])
    order = np.argsort(assign, kind="stable")
    offsets = np.searchsorted(assign[order], np.arange(n_lists + 1))
    build = time.perf_counter() - t

    def at(share: float) -> Search:
        n_probe = max(1, int(share * n_lists))

        def search(q: np.ndarray, k: int) -> np.ndarray:
            probe = np.argpartition(-(C @ q), n_probe)[:n_probe]
            cand = np.concatenate([order[offsets[c] : offsets[c + 1]] for c in probe])
            return _rescored(V, q, cand, k)

        return search

    return build, at


def _pca(V: np.ndarray, dims: int = 64, over: int = 8) -> tuple[float, Search]:
    t = time.perf_counter()
    mu = V.mean(axis=0)
    _, _, Vt = np.linalg.svd(V[:: max(1, len(V) // 20000)] - mu, full_matrices=False)
    P = np.ascontiguousarray(Vt[:dims].T.astype(np.float32))
    Z = np.ascontiguousarray(V @ P)
    build = time.perf_counter() - t

    def search(q: np.ndarray, k: int) -> np.ndarray:
        kk = min(len(V) - 1, over * k)
        cand = np.argpartition(-(Z @ (P.T @ q)), kk)[:kk]
        return _rescored(V, q, cand, k)

    return build, search


def run(index_path: Path, n_queries: int) -> dict[str, Any]:
    from g2cons_plugins import G2ConSIndex

    idx = G2ConSIndex.load(index_path)
    V = np.ascontiguousarray(np.asarray(idx.stored.unit_vecs, dtype=np.float32))
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][:n_queries]
    Q = np.stack([idx.snapshot.embed_query(q) for q in questions])
    k_budget = int(3 * 2000 / idx.stored.median_unit_tokens) + 32
    ks = (10, k_budget)
    truth = {k: [set(_exact_top(V, q, k).tolist()) for q in Q] for k in ks}
    rows: list[dict[str, Any]] = []

    def measure(route: str, setting: str, build_s: float, search: Search) -> None:
        for k in ks:
            for q in Q[:5]:  # warm-up
                search(q, k)
            lat, rec = [], []
            for q, gold in zip(Q, truth[k], strict=True):
                t = time.perf_counter()
                got = search(q, k)
                lat.append((time.perf_counter() - t) * 1000)
                rec.append(len(gold & set(got.tolist())) / k)
            row = {"route": route, "setting": setting, "k": k, "build_s": round(build_s, 1)}
            row |= {"p50_ms": round(float(np.median(lat)), 2), "recall": round(float(np.mean(rec)), 4)}
            rows.append(row)
            print(json.dumps(row), flush=True)

    measure("exact", "float32 scan", 0.0, lambda q, k: _exact_top(V, q, k))
    build, search = _pca(V)
    measure("pca64", "8k candidates", build, search)
    build, ivf_at = _ivf(V)
    for share in (0.05, 0.10):
        measure("ivf", f"{share:.0%} of lists", build, ivf_at(share))
    for dtype in ("f32", "i8"):
        build, hnsw_at = _hnsw(V, dtype)
        for ef in (256, 1024):
            measure(f"hnsw-{dtype}", f"ef {ef}", build, hnsw_at(ef))
    return {
        "index": str(index_path),
        "n_units": len(V),
        "dim": int(V.shape[1]),
        "embedder": idx.embedder.name,
        "n_queries": len(Q),
        "loadavg_1min_after": round(os.getloadavg()[0], 2),
        "rows": rows,
    }


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"Unit search, {res['n_units']:,} units x {res['dim']} ({res['embedder']}), {res['n_queries']} MuSiQue "
        f"questions; 1-min load average after: {res['loadavg_1min_after']}.",
        "",
        "| route | setting | k | build s | p50 ms | recall of exact top k |",
        "|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        lines.append(f"| {r['route']} | {r['setting']} | {r['k']} | {r['build_s']} | {r['p50_ms']} | {r['recall']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    from g2cons_plugins.storage.outputs import atomic_write_text

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True, help="a saved G2ConS index")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    a = ap.parse_args()
    res = run(a.index, a.queries)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(a.out.with_suffix(".json"), json.dumps(res, indent=1) + "\n")
    md = markdown(res)
    atomic_write_text(a.out.with_suffix(".md"), md)
    print(md)


if __name__ == "__main__":
    main()
