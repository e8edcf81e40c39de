"""What the linked head (``retrieval.link_head``) costs a query: one saved index queried with ``link_weight`` 0 and
the default, the default query at beta 2,000, rounds taking turns (p50 per round, query embedding excluded: the same
vectors for both).

    python benchmarks/scale/linked_head_latency.py --size 80000 --index /tmp/idx_80000 \
        --out benchmarks/scale/results/linked_head_latency_80k.json

The index is built (``corpus.passages(size, 0)``, wordllama) and saved at ``--index`` when that folder does not
exist; the questions are MuSiQue KET-RAG 500's first ``--queries``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import corpus  # noqa: E402

from g2cons_plugins.index import G2ConSIndex  # noqa: E402
from g2cons_plugins.retrieval import retrieve  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=80_000)
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--beta", type=int, default=2000)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    built_s = None
    if not Path(a.index).exists():
        t = time.perf_counter()
        G2ConSIndex.build(corpus.passages(a.size, 0), embedder="wordllama", show_progress=False).save(a.index)
        built_s = round(time.perf_counter() - t, 1)
    snap = G2ConSIndex.load(a.index, embedder="wordllama").snapshot
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        qs = [json.loads(line)["question"] for line in f][: a.queries]
    off_cfg = dataclasses.replace(snap.config.retrieval, link_weight=0.0)
    off = dataclasses.replace(snap, config=dataclasses.replace(snap.config, retrieval=off_cfg))
    vecs = [snap.embed_query(q) for q in qs]
    for q, v in zip(qs[:20], vecs, strict=False):  # warm both
        retrieve(snap, q, a.beta, query_vector=v)
        retrieve(off, q, a.beta, query_vector=v)
    p50: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(a.rounds):
        for name, s in (("off", off), ("on", snap)):
            ts = []
            for q, v in zip(qs, vecs, strict=True):
                t = time.perf_counter()
                retrieve(s, q, a.beta, query_vector=v)
                ts.append(1000 * (time.perf_counter() - t))
            p50[name].append(round(statistics.median(ts), 3))
    diff = [round(b - a_, 3) for a_, b in zip(p50["off"], p50["on"], strict=True)]
    out = {"size": a.size, "queries": len(qs), "beta": a.beta, "built_s": built_s, "p50_ms": p50}
    out["on_minus_off_ms"] = diff
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
