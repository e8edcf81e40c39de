"""Speed, memory and scaling of the core engine on real data (../shared/data). Prints a table, writes JSON.

    python benchmarks/perf.py --out benchmarks/results/perf.json            # all measurements (~5 min)
    python benchmarks/perf.py --minilm-cold --out benchmarks/results/perf_minilm_cold.json   # + a cold minilm build

Each measurement runs in its own subprocess so peak RSS is that measurement's alone. Cores: whatever the machine
has (2 in our runs). Query latency excludes the query embedding (vectors computed beforehand), as the target says.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MUSIQUE = "musique/ketrag500"
POOL = ["musique/ketrag500", "musique/hipporag_train100", "hotpotqa/hipporag_train100", "2wikimultihopqa/ketrag500"]


def _rows(prefix: str, kind: str) -> list[dict]:
    from g2cons_plugins.eval.evaluation import read_jsonl

    return read_jsonl(DATA / f"{prefix}_{kind}.jsonl")


def job_build(embedder: str, n: int, cache: str | None) -> dict:
    """Build on n passages of the pooled corpora (n = 0: MuSiQue ketrag500 exactly)."""
    from g2cons_plugins import G2ConSIndex

    if n == 0:
        corpus = _rows(MUSIQUE, "corpus")
    else:
        pool = [r for p in POOL for r in _rows(p, "corpus")]
        random.Random(0).shuffle(pool)
        corpus = pool[:n]
    t0 = time.perf_counter()
    idx = G2ConSIndex.build(corpus, embedder=embedder, cache_dir=cache)
    total = time.perf_counter() - t0
    tm = idx.timings
    return {
        "job": "build",
        "embedder": idx.embedder.name,
        "n_chunks": len(corpus),
        "n_tokens": int(idx.stored.chunk_tokens.sum()),
        "cached_embeddings": cache is not None,
        "seconds": round(total, 2),
        "split_and_count_s": round(tm["split_and_count"], 2),
        "embed_s": round(tm["embed"], 2),
        "derive_s": round(tm["derive"], 2),
        "non_embedding_share": round(1 - tm["embed"] / total, 4),
        "graph": idx.stats.to_dict(),
    }


def job_query(embedder: str, cache: str) -> dict:
    import numpy as np

    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.eval.evaluation import load_questions

    idx = G2ConSIndex.build(_rows(MUSIQUE, "corpus"), embedder=embedder, cache_dir=cache)
    qs = load_questions(DATA / f"{MUSIQUE}_questions.jsonl")
    vecs = idx.embedder.embed([q["question"] for q in qs])
    t0 = time.perf_counter()
    idx.embedder.inner.embed([q["question"] for q in qs[:100]])  # type: ignore[attr-defined]
    embed_ms = (time.perf_counter() - t0) * 10
    out = {
        "job": "query",
        "embedder": idx.embedder.name,
        "n_queries": len(qs),
        "query_embed_ms_mean": round(embed_ms, 2),
    }
    for strategy in ("bridge", "dense", "paper"):
        for beta in (2000, 12000):
            lat = []
            for q, v in zip(qs, vecs, strict=True):
                t = time.perf_counter()
                idx.retrieve(q["question"], beta=beta, strategy=strategy, query_vector=v)
                lat.append((time.perf_counter() - t) * 1000)
            out[f"{strategy}@{beta}_p50_ms"] = round(float(np.median(lat)), 3)
            out[f"{strategy}@{beta}_p95_ms"] = round(float(np.percentile(lat, 95)), 3)
    return out


def _run(args: list[str]) -> dict:
    res = subprocess.run([sys.executable, __file__, "--job", *args], capture_output=True, text=True, check=True)
    row = json.loads(res.stdout.strip().splitlines()[-1])
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", nargs="*")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--cache-dir", default=str(Path(__file__).parent / "cache"))
    ap.add_argument("--minilm-cold", action="store_true", help="also a cold minilm build (~6 min)")
    args = ap.parse_args()
    if args.job:
        kind, embedder, *rest = args.job
        row = (
            job_build(embedder, int(rest[0]), rest[1] if rest[1] != "-" else None)
            if kind == "build"
            else job_query(embedder, rest[0])
        )
        row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(row))
        return
    rows = []
    with tempfile.TemporaryDirectory() as cold:
        rows.append(_run(["build", "wordllama", "0", "-"]))  # cold, no cache: end-to-end build
        rows.append(_run(["build", "minilm", "0", args.cache_dir]))  # cached: the non-embedding work
        if args.minilm_cold:
            rows.append(_run(["build", "minilm", "0", cold]))
        scaling = [_run(["build", "wordllama", str(n), "-"]) for n in (5000, 10000, 20000)]
        rows.extend(scaling)
        rows.append(_run(["query", "minilm", args.cache_dir]))
    xs = [math.log(r["n_tokens"]) for r in scaling]
    ys = [math.log(r["seconds"]) for r in scaling]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    summary = {"rows": rows, "scaling_exponent_time_vs_tokens": round(slope, 3), "cpus": os.cpu_count()}
    for r in rows:
        print(json.dumps(r))
    print(f"scaling exponent (build seconds vs corpus tokens, wordllama, 5k/10k/20k passages): {slope:.3f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
