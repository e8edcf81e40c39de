"""The graph-walk host alone, per setting, and its PageRank solver against igraph's (HippoRAG 2's).

Builds the index once (as ``g2cons eval`` does: the corpus, ``--embedder``, the embedding cache), then the
``graph-walk`` host over the full extraction for HippoRAG 2's defaults and each one-parameter change of them; for
each: Context Recall of the host alone at each budget (its chunks in rank order within the budget, as the host-KG
rows of ``g2cons eval``), recall@5 of the gold passages among its first 5 chunks, query latency (``host.retrieve``,
query vector cached as in ``g2cons eval``) and build time. Then the PageRank of every question's reset vector by
the walk's power iteration and by igraph's PRPACK (HippoRAG 2's ``run_ppr``), where python-igraph is installed:
time and agreement. Writes ``OUT.json`` and ``OUT.md`` atomically.

    python benchmarks/dual_path/graph_walk_sweep.py --corpus C --questions Q --kg KG --out PREFIX
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np

from g2cons_plugins.eval.evaluation import answer_in_context, load_questions, read_jsonl
from g2cons_plugins.fusion import fuse, resolve_host_items
from g2cons_plugins.hosts.graph_walk import GraphWalkHost, _minmax
from g2cons_plugins.index import G2ConSIndex
from g2cons_plugins.storage.outputs import atomic_write_text

SETTINGS: list[tuple[str, dict[str, Any]]] = [
    ("defaults (HippoRAG 2's; unit vectors as the chunk prior)", {}),
    ("damping 0.3", {"damping": 0.3}),
    ("damping 0.7", {"damping": 0.7}),
    ("synonym_threshold 0.7", {"synonym_threshold": 0.7}),
    ("synonym_threshold 0.9", {"synonym_threshold": 0.9}),
    ("no synonym edges", {"synonym_threshold": 2.0}),
    ("top_facts 10, top_entities 10", {"top_facts": 10, "top_entities": 10}),
    ("passage_node_weight 0.02", {"passage_node_weight": 0.02}),
    ("passage_node_weight 0.1", {"passage_node_weight": 0.1}),
    ("mention_nodes", {"mention_nodes": True}),
    ("passage_prior text (HippoRAG 2: whole chunk text embedded)", {"passage_prior": "text"}),
]


def measure(index: Any, questions: list[dict[str, Any]], kg: str, model: str, budgets: list[int], opts: dict[str, Any]):
    host = GraphWalkHost(kg, model=model, **opts)
    t0 = time.perf_counter()
    cost = host.build(index, index.select(kappa=1.0))
    build_s = time.perf_counter() - t0
    hits = {b: 0 for b in budgets}
    at5: list[float] = []
    ms: list[float] = []
    for q in questions:
        t1 = time.perf_counter()
        items = resolve_host_items(index, host.retrieve(q["question"]))
        ms.append(1000 * (time.perf_counter() - t1))
        for b in budgets:
            alone = fuse(items, [], b, 1.0, tokenizer=index.tokenizer, spill=False)
            hits[b] += int(answer_in_context(q["answers"], "\n".join(f.text for f in alone)))
        gold = q.get("supporting_passage_ids")
        if gold:
            first = [h.chunk_id for h in items][:5]
            at5.append(sum(g in first for g in gold) / len(gold))
    row = {f"cr@{b}": round(100.0 * hits[b] / len(questions), 2) for b in budgets}
    row.update(
        {
            "recall@5": round(100.0 * float(np.mean(at5)), 2) if at5 else None,
            "latency_ms_p50": round(statistics.median(ms), 2),
            "latency_ms_p95": round(float(np.percentile(ms, 95)), 2),
            "build_s": round(build_s, 2),
            **{f"graph_{k}": v for k, v in cost.graph.items()},
        }
    )
    return row, host


def solvers(host: GraphWalkHost, index: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Power iteration (the walk's) against igraph's PRPACK (HippoRAG 2's) on every question's reset vector."""
    w = host.walk
    assert w is not None
    resets = []
    for q in questions:
        v = w._check_query(index.embed_query(q["question"]))
        resets.append(np.concatenate([w._seed_weights(v), _minmax(w.dense_scores(v)) * w.settings.passage_node_weight]))
    ours = []
    for r in resets:
        t = time.perf_counter()
        w._pagerank(r)
        ours.append(1000 * (time.perf_counter() - t))
    out: dict[str, Any] = {"power_iteration_ms_p50": round(statistics.median(ours), 3)}
    try:
        import igraph
    except ImportError:
        out["igraph"] = "not installed"
        return out
    adj = w._adjacency.tocoo()
    upper = adj.row < adj.col
    g = igraph.Graph(n=adj.shape[0], edges=list(zip(adj.row[upper].tolist(), adj.col[upper].tolist(), strict=True)))
    g.es["weight"] = adj.data[upper].tolist()
    theirs, diff, same = [], [], 0
    n_e = len(w.entities)
    for r in resets:
        t = time.perf_counter()
        ref = g.personalized_pagerank(
            vertices=range(adj.shape[0]), damping=w.settings.damping, directed=False, weights="weight",
            reset=r.tolist(), implementation="prpack",
        )  # fmt: skip
        theirs.append(1000 * (time.perf_counter() - t))
        ref_a, p = np.asarray(ref), w._pagerank(r)
        diff.append(float(np.abs(ref_a - p).max()))
        same += list(np.argsort(-ref_a[n_e:], kind="stable")[:50]) == list(np.argsort(-p[n_e:], kind="stable")[:50])
    out.update(
        {
            "igraph_version": igraph.__version__,
            "igraph_prpack_ms_p50": round(statistics.median(theirs), 3),
            "max_abs_difference": max(diff),
            "same_top50_order": f"{same}/{len(resets)}",
        }
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--kg", required=True)
    ap.add_argument("--model", default=None)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--cache-dir", default="benchmarks/cache")
    ap.add_argument("--budgets", default="1000,2000,4000")
    ap.add_argument("--out", required=True, help="path prefix of OUT.json and OUT.md")
    a = ap.parse_args()
    budgets = [int(x) for x in a.budgets.split(",")]
    index = G2ConSIndex.build(read_jsonl(a.corpus), embedder=a.embedder, cache_dir=a.cache_dir)
    questions = load_questions(a.questions)
    for q in questions:  # as g2cons eval: the query vectors are made before the host is timed
        index.embed_query(q["question"])
    rows, first = [], None
    for name, opts in SETTINGS:
        row, host = measure(index, questions, a.kg, a.model, budgets, opts)
        rows.append({"setting": name, **row})
        first = first or host
        print(rows[-1], flush=True)
    assert first is not None
    solver = solvers(first, index, questions)
    print(solver, flush=True)
    data = {"corpus": a.corpus, "kg": a.kg, "embedder": index.embedder.name, "rows": rows, "pagerank": solver}
    atomic_write_text(a.out + ".json", json.dumps(data, indent=2) + "\n")
    cols = list(rows[0])
    md = [
        f"graph-walk host alone over the full extraction ({a.kg}), {len(questions)} questions, {index.embedder.name}",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
        *("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows),
        "",
        "PageRank solver, per question (reset vectors of the defaults): "
        + ", ".join(f"{k} {v}" for k, v in solver.items()),
        "",
    ]
    atomic_write_text(a.out + ".md", "\n".join(md))


if __name__ == "__main__":
    main()
