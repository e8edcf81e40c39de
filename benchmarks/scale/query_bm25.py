"""The BM25 part of default ``retrieve`` calls alone: every :class:`~g2cons_plugins.retrieval.lexical.QueryBM25` ask of
real queries, recorded, then replayed and timed (per query, thread CPU time) under each ``--merge-max``.

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/scale/query_bm25.py --index /tmp/mem/idx5b_100000 \\
        --merge-max 65536,8192,0 --out PATH.json

Loads the index, runs ``--queries`` (200) MuSiQue questions (after 10 warm-up ones, as ``query_parts.py``) with
the default ``retrieve`` while recording each query's words and its calls to ``QueryBM25.of`` / ``best`` with
their answers; then, for each ``QueryBM25.MERGE_MAX`` of ``--merge-max`` (postings up to which a query's BM25 is
summed by a merge; above, the thread's array over every unit), replays every query's calls on a new
``QueryBM25`` ``--rounds`` (3) times, checks each answer equals the recorded one bit for bit, and reports the
median over the rounds of the per-query p50 / p90 / mean milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import numpy as np  # noqa: E402


def _record(idx: Any, questions: list[str]) -> list[list[tuple[Any, ...]]]:
    """Each question's ``("cols", words)`` then its ``("of", units, answer)`` / ``("best", m, at_least, units,
    scores)`` calls, in order."""
    from g2cons_plugins.retrieval import lexical

    cls = lexical.QueryBM25
    init, of, best = cls.__init__, cls.of, cls.best
    calls: list[list[tuple[Any, ...]]] = []

    def r_init(self: Any, lex: Any, cols: Any) -> None:
        init(self, lex, cols)
        calls[-1].append(("cols", list(cols)))

    def r_of(self: Any, units: Any) -> np.ndarray:
        out = of(self, units)
        calls[-1].append(("of", np.array(units, dtype=np.int64), out.copy()))
        return out

    def r_best(self: Any, m: int, at_least: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        out = best(self, m, at_least)
        calls[-1].append(("best", m, at_least, out[0].copy(), out[1].copy()))
        return out

    cls.__init__, cls.of, cls.best = r_init, r_of, r_best  # type: ignore[method-assign]
    try:
        for q in questions:
            calls.append([])
            idx.retrieve(q)
    finally:
        cls.__init__, cls.of, cls.best = init, of, best  # type: ignore[method-assign]
    return calls


def _replay(lex: Any, calls: list[list[tuple[Any, ...]]], merge_max: int) -> list[float]:
    from g2cons_plugins.retrieval.lexical import QueryBM25

    ms = []
    for query in calls:
        if not query:
            continue
        t = time.thread_time()
        q = QueryBM25(lex, query[0][1])
        q.MERGE_MAX = merge_max
        for call in query[1:]:
            if call[0] == "of":
                assert q.of(call[1]).tobytes() == call[2].tobytes()
            else:
                units, vals = q.best(call[1], call[2])
                assert units.tolist() == call[3].tolist() and vals.tobytes() == call[4].tobytes()
        q.close()
        ms.append(1000 * (time.thread_time() - t))
    return ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--merge-max", default="65536,8192,0")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    from g2cons_plugins import G2ConSIndex

    idx = G2ConSIndex.load(args.index)
    with open(corpus.DATA / "musique/ketrag500_questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][: args.queries + 10]
    for q in questions[:10]:
        idx.retrieve(q)
    calls = _record(idx, questions[10:])
    lex = idx.snapshot.lexical
    out: dict[str, Any] = {"index": args.index, "n_units": len(idx.units), "queries": len(calls)}
    totals = [sum(int(np.diff(lex.weights.indptr)[c]) for c in q[0][1]) for q in calls if q]
    out["postings_per_query"] = {"p50": float(np.percentile(totals, 50)), "p90": float(np.percentile(totals, 90))}
    for mm in (int(x) for x in args.merge_max.split(",")):
        rounds = [_replay(lex, calls, mm) for _ in range(max(args.rounds, 1))]
        out[f"merge_max_{mm}_ms"] = {
            name: round(float(np.median([fn(r) for r in rounds])), 3)
            for name, fn in (("p50", np.median), ("p90", lambda r: np.percentile(r, 90)), ("mean", np.mean))
        }
    out["load_avg_1min_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
