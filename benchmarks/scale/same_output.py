"""The default ``retrieve`` output on a quality set, written to compare two commits (ids, order and scores).

    PYTHONPATH=/work/main nice -n 10 python benchmarks/scale/same_output.py --out /tmp/before.json
    PYTHONPATH=$PWD nice -n 10 python benchmarks/scale/same_output.py --out /tmp/after.json
    python benchmarks/scale/same_output.py --compare /tmp/before.json /tmp/after.json

Builds the index of ``--corpus`` (MuSiQue ketrag500 by default, 8,553 units: the exact path) with ``--embedder``
(minilm, vectors from ``--cache-dir``), then retrieves every question at each budget of ``--budgets`` (1000, 2000,
4000 and the default beta) and writes, per question and budget, the unit ids in order with their scores (float
repr: equal output means equal bits). ``--compare`` prints how many results differ; equal results give equal
Context Recall at every budget.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = Path(os.environ.get("G2CONS_DATA", "/work/shared/data"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(DATA / "musique/ketrag500_corpus.jsonl"))
    ap.add_argument("--questions", default=str(DATA / "musique/ketrag500_questions.jsonl"))
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--cache-dir", default="/tmp/dp/cache")
    ap.add_argument("--budgets", default="1000,2000,4000,default")
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2)
    args = ap.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in args.compare)
        keys = sorted(set(a) | set(b))
        diff = [k for k in keys if a.get(k) != b.get(k)]
        print(f"{len(keys)} (question, budget) results, {len(diff)} differ: {diff[:10]}")
        return
    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.eval.evaluation import read_jsonl

    chunks = read_jsonl(args.corpus)  # as ``g2cons eval`` reads it
    idx = G2ConSIndex.build(chunks, embedder=args.embedder, cache_dir=args.cache_dir)
    with open(args.questions, encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()]
    out: dict[str, list[tuple[str, str]]] = {}
    for b in args.budgets.split(","):
        beta = None if b == "default" else int(b)
        for i, q in enumerate(questions):
            out[f"{i}@{b}"] = [(r.unit_id, repr(r.score)) for r in idx.retrieve(q, beta=beta)]
    Path(args.out).write_text(json.dumps(out), encoding="utf-8")
    print(f"{len(questions)} questions x {len(args.budgets.split(','))} budgets, {len(idx.units)} units")


if __name__ == "__main__":
    main()
