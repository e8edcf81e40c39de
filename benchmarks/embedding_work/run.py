"""How much of the embedding work the concept path needs: CR of the default concept path when the concept vectors
(Eq. 1) come from the unit vectors instead of embedded sentences, or the unit vectors from the sentence vectors,
against embedding both. One build per corpus (vectors from the embedding cache); every variant shares it.

Variants (``texts`` = what a build embeds):

- ``sentence``: Eq. 1 on sentence vectors, units embedded for the dense scores (texts: sentences + units);
- ``chunk``: Table 4 ablation C, a concept's vector is the mean of the vectors of the units holding it (units);
- ``unit``: the unit vectors weighted by how many of their sentences hold the concept (units);
- ``sent-only``: Eq. 1 on sentence vectors, each unit's vector the normalised token-weighted mean of its sentences'
  vectors (sentences).

Prints a Markdown table of CR per variant and budget, texts embedded per unit, and embed seconds: the seconds to
embed a random sample of units and of sentences with the raw embedder (no cache), scaled to the corpus.

    python benchmarks/embedding_work/run.py --corpus C --questions Q --embedder minilm --cache-dir /tmp/dp/cache
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from g2cons_plugins import G2ConSConfig, G2ConSIndex
from g2cons_plugins.build import Stored
from g2cons_plugins.embedders import get_embedder
from g2cons_plugins.eval.evaluation import evaluate_retrieval, load_questions, read_jsonl
from g2cons_plugins.text import count_tokens_batch

VARIANTS = ("sentence", "chunk", "unit", "sent-only")


def units_from_sentences(st: Stored, sent_tokens: np.ndarray) -> np.ndarray:
    """Each unit's vector: the token-weighted mean of its sentences' vectors, L2-normalised."""
    assert st.sent_vecs is not None
    W = st.sent_unit.T.multiply(sent_tokens[None, :].astype(np.float32)).tocsr()  # units x sentences
    V = np.asarray(W @ np.asarray(st.sent_vecs), dtype=np.float32)
    V /= np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
    return V


def embed_seconds(embedder: str, texts: list[str], sample: int, seed: int = 0) -> float:
    """Seconds to embed ``texts`` with the raw embedder, measured on a random sample and scaled."""
    emb = get_embedder(embedder)
    emb.embed(["warm up"])
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(texts), size=min(sample, len(texts)), replace=False)
    t0 = time.perf_counter()
    emb.embed([texts[i] for i in pick.tolist()])
    return (time.perf_counter() - t0) * len(texts) / len(pick)


def graph_agreement(ref: Any, dv: Any) -> dict[str, Any]:
    """Edges and PageRank of ``dv`` against ``ref`` (the same vocabulary: only the vectors differ)."""
    a = set(zip(ref.edges.rows.tolist(), ref.edges.cols.tolist(), strict=True))
    b = set(zip(dv.edges.rows.tolist(), dv.edges.cols.tolist(), strict=True))
    top = min(100, len(dv.pagerank))
    pr = len(set(np.argsort(-ref.pagerank)[:top].tolist()) & set(np.argsort(-dv.pagerank)[:top].tolist()))
    return {"edges": len(b), "edge_jaccard": len(a & b) / max(len(a | b), 1), "pr@100": pr / max(top, 1)}


def table(rows: list[dict[str, Any]], methods: list[str], budgets: list[int], extra: list[str]) -> None:
    """One Markdown table: CR per method and budget, its difference to the first row, and the ``extra`` fields."""
    keys = [f"{m}@{b}" for m in methods for b in budgets]
    head = ["variant", *(f"CR {k}" for k in keys), *(f"d {k}" for k in keys), *extra]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    ref = rows[0]["cr"]
    for r in rows:
        cells = [r["variant"], *(f"{r['cr'][k]:.1f}" for k in keys), *(f"{r['cr'][k] - ref[k]:+.1f}" for k in keys)]
        cells += [f"{r[e]:,}" if isinstance(r[e], int) else f"{r[e]:.2f}" for e in extra]
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--budgets", default="1000,2000,4000")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--sample", type=int, default=300, help="texts of each kind timed for the embed seconds")
    ap.add_argument(
        "--graph-methods",
        default="concept-ppr,concept-e2",
        help="eval methods on the concept graph, reported beside the default path ('' for none)",
    )
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    print("command: python " + " ".join(sys.argv) + "\n")
    budgets = [int(b) for b in a.budgets.split(",")]
    questions = load_questions(a.questions)
    base = G2ConSIndex.build(
        read_jsonl(a.corpus), embedder=a.embedder, cache_dir=a.cache_dir, config=G2ConSConfig(vector_level="sentence")
    )
    st = base.stored
    n_s, n_u = len(st.sentences), len(st.units)
    secs = {
        "units": embed_seconds(a.embedder, [u.text for u in st.units], a.sample),
        "sentences": embed_seconds(a.embedder, st.sentences, a.sample),
    }
    texts = {"sentence": n_s + n_u, "chunk": n_u, "unit": n_u, "sent-only": n_s}
    embed_s = {
        "sentence": secs["units"] + secs["sentences"],
        "chunk": secs["units"],
        "unit": secs["units"],
        "sent-only": secs["sentences"],
    }
    rows: list[dict[str, Any]] = []
    methods = ["concept", *a.graph_methods.split(",")] if a.graph_methods else ["concept"]
    ref_dv = None
    for name in a.variants.split(","):
        stored, level = st, name
        if name == "sent-only":
            tokens = np.asarray(count_tokens_batch(base.tokenizer, st.sentences), dtype=np.int64)
            stored = dataclasses.replace(st, unit_vecs=units_from_sentences(st, tokens))
            level = "sentence"
        idx = G2ConSIndex(stored, base.embedder, base.config.with_(vector_level=level), base.tokenizer)
        ref_dv = ref_dv or idx.derived
        t0 = time.perf_counter()
        cr = {
            (r["method"], r["budget"]): r["context_recall"]
            for r in evaluate_retrieval(idx, questions, methods, budgets)
        }
        print(f"{name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        rows.append(
            {
                "variant": name,
                "cr": {f"{m}@{b}": v for (m, b), v in cr.items()},
                "texts": texts[name],
                "texts_per_unit": texts[name] / n_u,
                "embed_s": embed_s[name],
                **graph_agreement(ref_dv, idx.derived),
            }
        )
    print(
        f"{a.corpus}: {len(st.chunks):,} chunks, {n_u:,} units, {n_s:,} sentences, {len(questions)} questions; "
        f"embed s: units {secs['units']:.1f}, sentences {secs['sentences']:.1f} (timed on {a.sample} of each, "
        "scaled)\n"
    )
    print("The default concept path (strategy bridge, selector coverage); d = CR - CR of 'sentence':\n")
    table(rows, ["concept"], budgets, ["texts", "texts_per_unit", "embed_s"])
    if len(methods) > 1:
        print(
            "\nThe strategies that walk the concept graph (not the default), and the graph against 'sentence' "
            "(edges: Jaccard of the edge sets; pr@100: share of the top 100 PageRank concepts in common):\n"
        )
        table(rows, methods[1:], budgets, ["edges", "edge_jaccard", "pr@100"])
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump({"corpus": a.corpus, "units": n_u, "sentences": n_s, "embed_s": secs, "rows": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
