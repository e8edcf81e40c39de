"""Before/after timing of two source trees of g2cons-plugins in one run: retrieval p50 (query embedding
excluded), build, save, load and add/remove of 1%, each tree in its own subprocess, alternating rounds so that
machine drift hits both sides alike.

    git worktree add /tmp/before <rev>
    python benchmarks/before_after.py --before /tmp/before --after . --out benchmarks/results/before_after.json

The corpus is MuSiQue ketrag500 (``--corpus``), the embedder ``hash`` (deterministic, no model: the figures are
the library's own cost, not the embedder's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, shutil, statistics, sys, tempfile, time
from pathlib import Path
from g2cons_plugins import G2ConSIndex
corpus, questions = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(corpus, encoding="utf-8")]
docs = [{"id": r["id"], "text": f"{r.get('title', '')}\n{r['text']}"} for r in rows]
qs = [json.loads(l)["question"] for l in open(questions, encoding="utf-8")][:300]
out = {}
t = time.perf_counter(); idx = G2ConSIndex.build(docs, embedder="hash"); out["build_s"] = time.perf_counter() - t
qv = [idx.embed_query(q) for q in qs]
for strategy in ("bridge", "dense"):
    for beta in (2000, 12000):
        ts = []
        for q, v in zip(qs, qv):
            t = time.perf_counter(); idx.retrieve(q, beta=beta, strategy=strategy, query_vector=v)
            ts.append(time.perf_counter() - t)
        out[f"retrieve_{strategy}_{beta}_p50_ms"] = statistics.median(ts) * 1000
d = Path(tempfile.mkdtemp())
try:
    t = time.perf_counter(); idx.save(d / "idx"); out["save_s"] = time.perf_counter() - t
    t = time.perf_counter(); G2ConSIndex.load(d / "idx"); out["load_s"] = time.perf_counter() - t
finally:
    shutil.rmtree(d, ignore_errors=True)
k = max(len(docs) // 100, 1)
small = G2ConSIndex.build(docs[:-k], embedder="hash")
t = time.perf_counter(); small.add(docs[-k:]); out["add_1pct_s"] = time.perf_counter() - t
t = time.perf_counter(); small.remove([d["id"] for d in docs[-k:]]); out["remove_1pct_s"] = time.perf_counter() - t
print("RESULT " + json.dumps(out))
"""


def run(tree: Path, corpus: Path, questions: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory() as cwd:  # never import from the caller's folder
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(corpus), str(questions)],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        )
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def main() -> None:
    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "musique"
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="source tree of the 'before' version")
    ap.add_argument("--after", type=Path, required=True, help="source tree of the 'after' version")
    ap.add_argument("--corpus", type=Path, default=data / "ketrag500_corpus.jsonl")
    ap.add_argument("--questions", type=Path, default=data / "ketrag500_questions.jsonl")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for r in range(args.rounds):
        for side in ("before", "after") if r % 2 == 0 else ("after", "before"):
            runs[side].append(run(getattr(args, side), args.corpus, args.questions))
            print(f"round {r + 1}/{args.rounds} {side} done", file=sys.stderr)
    keys = list(runs["before"][0])
    table = {k: {s: statistics.median(x[k] for x in runs[s]) for s in runs} for k in keys}
    print(f"{'figure (median of rounds)':32} {'before':>10} {'after':>10} {'after/before':>13}")
    for k, v in table.items():
        print(f"{k:32} {v['before']:10.3f} {v['after']:10.3f} {v['after'] / v['before']:13.2f}")
    if args.out:
        args.out.write_text(json.dumps({"rounds": runs, "median": table}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
