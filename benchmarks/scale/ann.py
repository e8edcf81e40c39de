"""Approximate nearest-neighbour libraries on G2ConS-like unit vectors: usearch, hnswlib, faiss-cpu (HNSW each).

    nice -n 10 python benchmarks/scale/ann.py --sizes 100000,1000000 --embedder wordllama \\
        --out benchmarks/scale/results/ann_wordllama.json

Vectors: the distinct sentences of the generated corpus (``corpus.py``) are embedded for real; passage *i*'s
vector is the normalised mean of its sentences' vectors (the generator's own sentence picks), so any N costs one
sentence embedding pass. Queries: the 500 MuSiQue ketrag500 questions, embedded for real. Exact top-k (float32
dot products) is the reference. Every (library, N) runs in its own process so memory is that library's alone.
k follows retrieval's eager budget ``3*beta/median_unit_tokens + 32``: 400 (beta 12,000) and 100 (beta 2,000).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

CACHE = Path(os.environ.get("G2CONS_ANN_CACHE", Path(tempfile.gettempdir()) / "g2cons_ann_cache"))
KS = (100, 400)
M, EF_CONSTRUCTION = 16, 128
THREADS = int(os.environ.get("ANN_THREADS", "2"))
EF_FACTORS = tuple(int(f) for f in os.environ.get("ANN_EF_FACTORS", "1,2,4").split(","))  # ef = factor * k


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _embedder(name: str) -> Any:
    from g2cons_plugins.embedders import get_embedder

    return get_embedder(name)


def vectors(n: int, embedder: str) -> tuple[np.ndarray, np.ndarray]:
    """(passage vectors n x d, query vectors 500 x d), float32, unit length; sentence vectors cached on disk."""
    CACHE.mkdir(parents=True, exist_ok=True)
    sent_f, q_f = CACHE / f"sent_{embedder}.npy", CACHE / f"questions_{embedder}.npy"
    if not sent_f.exists():
        emb = _embedder(embedder)
        np.save(sent_f, np.asarray(emb.embed(list(corpus.sentence_pool())), dtype=np.float32))
        with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
            qs = [json.loads(line)["question"] for line in f if line.strip()]
        np.save(q_f, np.asarray(emb.embed(qs), dtype=np.float32))
    sent = np.load(sent_f).astype(np.float32)
    out = np.empty((n, sent.shape[1]), dtype=np.float32)
    for i, picks in enumerate(corpus.sentence_picks(n, 0, len(sent))):
        out[i] = sent[picks].mean(axis=0)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    q = np.load(q_f)
    return out, q / np.linalg.norm(q, axis=1, keepdims=True)


def exact_topk(X: np.ndarray, Q: np.ndarray, k: int) -> np.ndarray:
    S = Q @ X.T
    part = np.argpartition(-S, k, axis=1)[:, :k]
    return np.take_along_axis(part, np.argsort(-np.take_along_axis(S, part, 1), axis=1), 1)


class Lib:
    """A uniform face over one ANN library: build, search one query, save, load (mmap where offered)."""

    def __init__(self, name: str, dim: int, dtype: str = "f32") -> None:
        self.name, self.dim, self.dtype = name, dim, dtype
        self.index: Any = None

    def build(self, X: np.ndarray) -> None:
        n, d = X.shape
        keys = np.arange(n, dtype=np.int64)
        if self.name == "usearch":
            from usearch.index import Index

            self.index = Index(ndim=d, metric="ip", dtype=self.dtype, connectivity=M, expansion_add=EF_CONSTRUCTION)
            self.index.add(keys, X, threads=THREADS)
        elif self.name == "hnswlib":
            import hnswlib

            self.index = hnswlib.Index(space="ip", dim=d)
            self.index.init_index(max_elements=n, ef_construction=EF_CONSTRUCTION, M=M, random_seed=0)
            self.index.add_items(X, keys, num_threads=THREADS)
        elif self.name == "faiss":
            import faiss

            faiss.omp_set_num_threads(THREADS)
            self.index = faiss.IndexHNSWFlat(d, M, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = EF_CONSTRUCTION
            self.index.add(X)
        else:
            raise ValueError(self.name)

    def search(self, q: np.ndarray, k: int, ef: int) -> np.ndarray:
        if self.name == "usearch":
            self.index.expansion_search = ef
            return np.asarray(self.index.search(q, k, threads=1, exact=False).keys)
        if self.name == "hnswlib":
            self.index.set_ef(ef)
            return self.index.knn_query(q[None, :], k=k, num_threads=1)[0][0]
        import faiss

        faiss.omp_set_num_threads(1)
        params = faiss.SearchParametersHNSW(efSearch=ef)
        return self.index.search(q[None, :], k, params=params)[1][0]

    def save(self, path: Path) -> None:
        if self.name == "usearch":
            self.index.save(str(path))
        elif self.name == "hnswlib":
            self.index.save_index(str(path))
        else:
            import faiss

            faiss.write_index(self.index, str(path))

    def load(self, path: Path, n: int) -> str:
        """Load from ``path``; returns "mmap" or "read" (what the library did)."""
        if self.name == "usearch":
            from usearch.index import Index

            self.index = Index.restore(str(path), view=True)
            return "mmap"
        if self.name == "hnswlib":
            import hnswlib

            self.index = hnswlib.Index(space="ip", dim=self.dim)
            self.index.load_index(str(path), max_elements=n)
            return "read"
        import faiss

        try:
            self.index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
            return "mmap"
        except RuntimeError:
            self.index = faiss.read_index(str(path))
            return "read"


def job(lib: str, n: int, embedder: str, dtype: str) -> dict[str, Any]:
    X, Q = vectors(n, embedder)
    truth = {k: exact_topk(X, Q, k) for k in KS}
    t0 = time.perf_counter()
    for q in Q[:100]:  # exact single-query latency, as retrieval does it today (matvec + argpartition + sort)
        s = X @ q
        top = np.argpartition(-s, max(KS))[: max(KS)]
        top[np.argsort(-s[top])]
    exact_ms = (time.perf_counter() - t0) * 10
    rss0 = _rss_mb()
    a = Lib(lib, X.shape[1], dtype)
    t0 = time.perf_counter()
    a.build(X)
    row: dict[str, Any] = {
        "lib": lib,
        "n": n,
        "dim": X.shape[1],
        "embedder": embedder,
        "dtype": dtype,
        "M": M,
        "ef_construction": EF_CONSTRUCTION,
        "build_threads": THREADS,
        "build_s": round(time.perf_counter() - t0, 2),
        "index_rss_mb": round(_rss_mb() - rss0, 1),
        "vectors_mb": round(X.nbytes / 2**20, 1),
        "exact_query_ms": round(exact_ms, 2),
        "search": [],
    }
    for k in KS:
        for ef in (f * k for f in EF_FACTORS):
            lat, rec = [], []
            for qi, q in enumerate(Q):
                t = time.perf_counter()
                ids = a.search(q, k, ef)
                lat.append((time.perf_counter() - t) * 1000)
                rec.append(len(set(ids.tolist()) & set(truth[k][qi].tolist())) / k)
            row["search"].append(
                {
                    "k": k,
                    "ef": ef,
                    "recall_mean": round(float(np.mean(rec)), 4),
                    "recall_p5": round(float(np.percentile(rec, 5)), 4),
                    "p50_ms": round(float(np.median(lat)), 3),
                    "p95_ms": round(float(np.percentile(lat, 95)), 3),
                }
            )
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "index.bin"
        t0 = time.perf_counter()
        a.save(f)
        row["save_s"] = round(time.perf_counter() - t0, 2)
        row["file_mb"] = round(f.stat().st_size / 2**20, 1)
        before = a.search(Q[0], 100, 400)
        t0 = time.perf_counter()
        row["load_mode"] = a.load(f, n)
        row["load_s"] = round(time.perf_counter() - t0, 3)
        row["same_after_load"] = bool(np.array_equal(before, a.search(Q[0], 100, 400)))
    row["ru_maxrss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--libs", default="usearch,hnswlib,faiss")
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--dtype", default="f32", help="usearch storage: f32 or f16")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.job:
        print(json.dumps(job(args.libs, int(args.sizes), args.embedder, args.dtype)))
        return
    vectors(10, args.embedder)  # fill the cache once
    rows = json.loads(args.out.read_text())["rows"] if args.out and args.out.exists() else []
    for n in (int(s) for s in args.sizes.split(",")):
        for lib in args.libs.split(","):
            res = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--job",
                    "--libs",
                    lib,
                    "--sizes",
                    str(n),
                    "--embedder",
                    args.embedder,
                    "--dtype",
                    args.dtype,
                ],
                capture_output=True,
                text=True,
            )
            if res.returncode:
                print(res.stderr[-3000:], file=sys.stderr)
                continue
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
            if args.out:
                tmp = args.out.with_name(f".{args.out.name}.tmp")
                tmp.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
                os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
