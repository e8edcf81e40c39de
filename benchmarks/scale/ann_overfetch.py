"""Context recall of the default query on the ANN path against the exact path, per over-fetch factor (a search
visits max(f x k, ef) candidates, all re-scored exactly), 80 MuSiQue questions, and ms per query.

    python -c "from g2cons_plugins import G2ConSIndex; ex = G2ConSIndex.load('/tmp/ann_wt/idx100k'); \\
        G2ConSIndex(ex.stored, ex.embedder, ex.config.with_(ann_threshold=1), ex.tokenizer, \\
        ex.snapshot.derived).save('/tmp/ann_wt/idx100k_ann')"
    OPENBLAS_NUM_THREADS=1 nice -n 5 python benchmarks/scale/ann_overfetch.py

(``/tmp/ann_wt/idx100k``: see ``ann_query.py``.) Prints ``factor strategy recall ms``; the last factor repeats the
first, as a check of the timing's drift.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402


def main() -> None:
    from g2cons_plugins import G2ConSIndex
    from g2cons_plugins.arrays import unit_hnsw as vector_index

    ann = G2ConSIndex.load("/tmp/ann_wt/idx100k_ann")
    ex = G2ConSIndex.load("/tmp/ann_wt/idx100k")
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as fh:
        qs = [json.loads(line)["question"] for line in fh if line.strip()][:80]
    truth = {s: [{i.unit_id for i in ex.retrieve(q, strategy=s)} for q in qs] for s in ("dense", "bridge")}
    for q in qs[:10]:
        ann.retrieve(q)
    real = vector_index.UnitANN.search
    for f in (1, 2, 4, 1):

        def search(self: Any, q: Any, k: int, f: int = f) -> Any:
            return real(self, q, f * k)

        vector_index.UnitANN.OVERFETCH = 1
        vector_index.UnitANN.search = search  # type: ignore[method-assign]
        for strat in ("dense", "bridge"):
            t = time.perf_counter()
            got = [{i.unit_id for i in ann.retrieve(q, strategy=strat)} for q in qs]
            ms = (time.perf_counter() - t) * 1000 / len(qs)
            rec = sum(len(a & b) / len(b) for a, b in zip(got, truth[strat], strict=True)) / len(qs)
            print(f, strat, round(rec, 4), round(ms, 1), flush=True)


if __name__ == "__main__":
    main()
