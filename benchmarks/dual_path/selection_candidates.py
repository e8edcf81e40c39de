"""Candidate selections judged by the strong host: the graph walk (HippoRAG 2's search, ``graph-walk`` host) over
the replayed gpt-3.5 extraction of the kept chunks only, host alone, CR at 1k / 2k / 4k on MuSiQue train100, every
selection held to the same extraction input tokens (chunk + the host's prompt per call) at each kappa.

Besides the library's selectors (``coverage``, the default) it measures rankings that were tried as replacements
and are NOT in the library (each scored from the index alone, no question seen):

- ``coverage_cost``: the default's greedy name coverage, gain per (chunk tokens + prompt) instead of per chunk token;
- ``longest``: longest chunks first (more chunk text per call);
- ``ent_density``: names found in >= 2 chunks per (tokens + prompt);
- ``bridge``: sum of log(chunk count - 1) of the chunk's names per (tokens + prompt);
- ``concept_bridge``: the same over the TF-IDF concepts;
- ``spec_bridge``: names found in 2 to 5 chunks (the concept path's ``bridge_max_df``) per (tokens + prompt);
- ``spec_cov``: greedy coverage of those names only;
- ``links``: title links: other chunks whose text names this chunk's first line (capped at 5) plus the chunk
  first lines this chunk names, per (tokens + prompt) (Wikipedia-like corpora only);
- ``lmr0`` .. ``lmr2``: length-matched random (the default's length profile), seeds 0..2: the control's spread;
- ``oracle_gold`` (not a selector: it reads the questions' supporting passages): the chunks holding a supporting
  passage first, then the default's order; the most any selection could buy at that kappa (``--candidates``).

Also the share of the questions' supporting passages each selection keeps (a proxy the selection never sees).

    python benchmarks/dual_path/selection_candidates.py --pack-tokens 0 --kappas 0.2,0.5,0.8 \
        --out benchmarks/dual_path/results/selection_candidates_musique.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from g2cons_plugins import G2ConSIndex
from g2cons_plugins import selection as S
from g2cons_plugins.eval.evaluation import answer_in_context, load_questions, read_jsonl
from g2cons_plugins.eval.host_eval import _length_matched
from g2cons_plugins.fusion import fuse, resolve_host_items
from g2cons_plugins.hosts.graph_walk import GraphWalkHost

BUDGETS = (1000, 2000, 4000)
DEFAULT_CANDIDATES = (
    "coverage,pagerank,knn_pagerank,coverage_cost,longest,ent_density,bridge,concept_bridge,spec_bridge,spec_cov,"
    "links,lmr0,lmr1,lmr2"
)


def rankings(index: G2ConSIndex, prompt: int, gold_chunks: set[str]) -> dict[str, Callable[[float], list[str]]]:
    """Each candidate as a function kappa -> kept chunk ids (by tokens, prompt per call); ``gold_chunks``: the
    chunks holding a supporting passage (only ``oracle_gold`` reads them)."""
    st, dv = index.stored, index.derived
    tokens = np.asarray(st.chunk_tokens)
    ids = [c.id for c in st.chunks]
    n = len(ids)
    cost = tokens.astype(float) + prompt
    uc = sp.csr_matrix(
        (np.ones(len(st.units), np.float32), (np.arange(len(st.units)), st.unit_parent)), shape=(len(st.units), n)
    )
    names = (uc.T @ dv.unit_names).tocsr()
    names.data[:] = 1.0
    df = np.asarray(names.sum(axis=0)).ravel()
    spec = ((df >= 2) & (df <= 5)).astype(float)
    concepts = dv.chunk_inc.tocsr().copy()
    concepts.data[:] = 1.0
    cdf = np.asarray(concepts.sum(axis=0)).ravel()

    def keep(order: list[int], kappa: float) -> list[str]:
        return [ids[i] for i in S.take(list(order), tokens + prompt, kappa, "tokens")]

    def desc(score: np.ndarray) -> list[int]:
        return np.lexsort((np.arange(len(score)), -score)).tolist()

    def per_cost(v: Any) -> list[int]:
        return desc(np.asarray(v).ravel() / cost)

    texts = [c.text for c in st.chunks]
    heads = [t.split("\n", 1)[0].strip().lower() for t in texts]
    bodies = [t.split("\n", 1)[-1].lower() for t in texts]
    owners: dict[str, list[int]] = defaultdict(list)
    for i, h in enumerate(heads):
        owners[h].append(i)
    inl, outl = np.zeros(n), np.zeros(n)
    for h, own in owners.items():
        if len(h) < 4:
            continue
        pat = re.compile(r"\b" + re.escape(h) + r"\b")
        for j, body in enumerate(bodies):
            if j not in own and pat.search(body):
                outl[j] += 1
                inl[own] += 1
    cov = S.rank_chunks(index, "coverage")
    out: dict[str, Callable[[float], list[str]]] = {
        "full": lambda k: list(ids),
        "coverage_cost": lambda k: keep(S.coverage_order(names, np.ones(names.shape[1]), tokens + prompt), k),
        "longest": lambda k: keep(desc(tokens.astype(float)), k),
        "ent_density": lambda k: keep(per_cost(names @ (df >= 2).astype(float)), k),
        "bridge": lambda k: keep(per_cost(names @ np.log1p(np.maximum(df - 1, 0))), k),
        "concept_bridge": lambda k: keep(per_cost(concepts @ np.log1p(np.maximum(cdf - 1, 0))), k),
        "spec_bridge": lambda k: keep(per_cost(names @ spec), k),
        "spec_cov": lambda k: keep(S.coverage_order(names, spec, tokens), k),
        "links": lambda k: keep(per_cost(np.minimum(inl, 5) + outl), k),
    }
    for sel in S.SELECTORS:
        out[sel] = lambda k, sel=sel: keep(S.rank_chunks(index, sel), k)
    oracle = sorted(range(n), key=lambda i: (ids[i] not in gold_chunks, cov.index(i)))
    out["oracle_gold"] = lambda k: keep(oracle, k)
    for seed in range(3):
        out[f"lmr{seed}"] = lambda k, seed=seed: _length_matched(index, keep(cov, k), seed)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data/musique")
    ap.add_argument("--pack-tokens", type=int, default=0)
    ap.add_argument("--kappas", default="0.2,0.5,0.8")
    ap.add_argument("--candidates", default=DEFAULT_CANDIDATES)
    ap.add_argument("--cache-dir", default="benchmarks/cache")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    d = Path(args.data)
    corpus: list[Any] = read_jsonl(d / "hipporag_train100_corpus.jsonl")
    if args.pack_tokens:
        from g2cons_plugins.chunks import make_chunks, pack_chunks
        from g2cons_plugins.text import get_tokenizer

        corpus = pack_chunks(make_chunks(corpus), args.pack_tokens, get_tokenizer())
    qs = load_questions(d / "hipporag_train100_questions.jsonl")
    index = G2ConSIndex.build(corpus, embedder="minilm", cache_dir=args.cache_dir, show_progress=False)
    host = GraphWalkHost(path=str(d / "hipporag_train100_kg_gpt35.jsonl"), model="gpt-3.5-turbo-1106")
    prompt = host.prompt_tokens_per_call
    st = index.stored
    tokens = np.asarray(st.chunk_tokens)
    ids = [c.id for c in st.chunks]
    total_input = float(tokens.sum() + prompt * len(ids))
    members = {c.id: [c.id] for c in st.chunks}  # a packed chunk holds several passages: its metadata says which
    for c in st.chunks:
        src = (c.metadata or {}).get("source_ids") if isinstance(c.metadata, dict) else None
        if isinstance(src, list):
            members[c.id] = [str(s) for s in src]
    gold = {g for q in qs for g in q.get("supporting_passage_ids") or []}
    cands = rankings(index, prompt, {c for c, ps in members.items() if any(p in gold for p in ps)})
    rows: list[dict[str, Any]] = []
    for kappa in [float(x) for x in args.kappas.split(",")]:
        for name in args.candidates.split(","):
            t0 = time.perf_counter()
            kept = cands[name](kappa)
            ks = set(kept)
            kt = int(tokens[[i for i, c in enumerate(ids) if c in ks]].sum())
            base = index.select(kappa=kappa, prompt_tokens_per_call=prompt)
            rep = replace(base, selector=name, kept_ids=kept, dropped_ids=[c for c in ids if c not in ks],
                          kept_tokens=kt, dropped_tokens=int(tokens.sum()) - kt)  # fmt: skip
            host.build(index, rep)
            hits: dict[int, list[int]] = {b: [] for b in BUDGETS}
            for q in qs:
                items = resolve_host_items(index, host.retrieve(q["question"]))
                for b in BUDGETS:
                    ctx = fuse(items, [], b, 1.0, tokenizer=index.tokenizer, spill=False)
                    hits[b].append(int(answer_in_context(q["answers"], "\n".join(f.text for f in ctx))))
            cr = [round(100.0 * sum(hits[b]) / len(qs), 2) for b in BUDGETS]
            kept_gold = sum(1 for c in kept for p in members[c] if p in gold)
            row = {
                "kappa": kappa,
                "selector": name,
                "kept_chunks": len(kept),
                "input_share": round((kt + prompt * len(kept)) / total_input, 4),
                "chunk_token_share": round(kt / float(tokens.sum()), 4),
                "supporting_kept_share": round(kept_gold / max(len(gold), 1), 4),
                **{f"host_cr_{b}": c for b, c in zip(BUDGETS, cr, strict=True)},
                "host_cr_mean": round(sum(cr) / len(cr), 2),
                "host_hits": {str(b): "".join(map(str, hits[b])) for b in BUDGETS},
                "seconds": round(time.perf_counter() - t0, 1),
            }
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "host_hits"}), file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pack_tokens": args.pack_tokens, "budgets": BUDGETS, "rows": rows}, indent=2))
    tmp.replace(args.out)
    cols = ("kappa", "selector", "kept_chunks", "input_share", "chunk_token_share", "supporting_kept_share",
            *(f"host_cr_{b}" for b in BUDGETS), "host_cr_mean")  # fmt: skip
    print(f"# Candidate selections, graph-walk host alone (pack_tokens {args.pack_tokens})\n")
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
