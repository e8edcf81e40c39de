"""The candidate selector ``anti_hub`` (benchmarks/dual_path/anti_hub.py) against the library's selectors and
length-matched random, judged by the graph-walk host alone (HippoRAG 2's walk over the replayed gpt-3.5 OpenIE of
the kept chunks only; every chunk stays a node with its dense prior), CR at 1k / 2k / 4k, MuSiQue train100, minilm,
every selection held to the same extraction input tokens (chunk + the host's 112-token prompt per call, kappa by
tokens, ``selection.take``).

Rows per kappa: ``coverage`` (the default), ``pagerank`` (the paper), ``knn_pagerank`` (KET-RAG), ``anti_hub``
(the candidate), ``oracle_gold`` (reads the questions' supporting passages: not a selector, the most a selection
could buy), ``lmr<s>``: random chunks with coverage's chunk-length profile (``host_eval._length_matched``, seeds
0..--seeds-1: the bar, with its spread), ``own<s>``: random chunks with anti_hub's length profile (seeds 100..).

``--proxy-only`` (sets without a host KG, e.g. HotpotQA train100): no host; for each selection the share of the
questions' supporting passages it keeps and the supporting passages kept per 1,000 extraction input tokens. A proxy
(the host's CR follows the supporting passages it can walk to, but not one for one), reported as such.

    python benchmarks/dual_path/selection_candidate_research.py --data ../shared/data/musique \
        --out benchmarks/dual_path/results/selection_candidate_musique.json \
        > benchmarks/dual_path/results/selection_candidate_musique.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from anti_hub import select_anti_hub  # research code beside this script, not in the package

from g2cons_plugins import G2ConSIndex
from g2cons_plugins import selection as S
from g2cons_plugins.eval.evaluation import answer_in_context, load_questions, read_jsonl
from g2cons_plugins.eval.host_eval import _length_matched
from g2cons_plugins.fusion import fuse, resolve_host_items

BUDGETS = (1000, 2000, 4000)
PROMPT = 112  # the graph-walk host's extraction prompt per call (hosts.graph_walk.DEFAULT_PROMPT_TOKENS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data/musique")
    ap.add_argument("--name", default="hipporag_train100")
    ap.add_argument("--kappas", default="0.2,0.5,0.8")
    ap.add_argument("--pack-tokens", type=int, default=0, help="pack passages into chunks of about this many tokens")
    ap.add_argument("--seeds", type=int, default=10, help="length-matched random draws (coverage's profile)")
    ap.add_argument("--own-seeds", type=int, default=5, help="length-matched random draws (anti_hub's profile)")
    ap.add_argument("--proxy-only", action="store_true")
    ap.add_argument("--link-texts", choices=("auto", "on", "off"), default="auto", help="the host's link_texts")
    ap.add_argument("--cache-dir", default="benchmarks/cache")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--render", action="store_true", help="only print the markdown of an existing --out JSON")
    args = ap.parse_args()
    if args.render:
        saved = json.loads(args.out.read_text())
        print(render(saved["rows"], any("host_cr_mean" in r for r in saved["rows"])))
        return
    d = Path(args.data)
    corpus: list[Any] = read_jsonl(d / f"{args.name}_corpus.jsonl")
    if args.pack_tokens:
        from g2cons_plugins.chunks import make_chunks, pack_chunks
        from g2cons_plugins.text import get_tokenizer

        corpus = pack_chunks(make_chunks(corpus), args.pack_tokens, get_tokenizer())
    qs = load_questions(d / f"{args.name}_questions.jsonl")
    index = G2ConSIndex.build(corpus, embedder="minilm", cache_dir=args.cache_dir, show_progress=False)
    host = None
    if not args.proxy_only:
        from g2cons_plugins.hosts.graph_walk import GraphWalkHost

        host = GraphWalkHost(path=str(d / f"{args.name}_kg_gpt35.jsonl"), model="gpt-3.5-turbo-1106",
                             link_texts={"auto": None, "on": True, "off": False}[args.link_texts])  # fmt: skip
    prompt = host.prompt_tokens_per_call if host is not None else PROMPT
    st, dv = index.stored, index.derived
    tokens = np.asarray(st.chunk_tokens)
    ids = [c.id for c in st.chunks]
    pos = {c: i for i, c in enumerate(ids)}
    total_input = float(tokens.sum() + prompt * len(ids))
    gold = {g for q in qs for g in q.get("supporting_passage_ids") or []}
    if not gold:
        raise SystemExit(f"{d}: the questions list no supporting passages")
    members = {c.id: [c.id] for c in st.chunks}  # a packed chunk holds several passages: its metadata says which
    for c in st.chunks:
        src = (c.metadata or {}).get("source_ids") if isinstance(c.metadata, dict) else None
        if isinstance(src, list):
            members[c.id] = [str(p) for p in src]
    gold_chunks = {c for c, ps in members.items() if any(p in gold for p in ps)}

    def keep(order: list[int], kappa: float) -> list[str]:
        return [ids[i] for i in S.take(list(order), tokens + prompt, kappa, "tokens")]

    cov = S.rank_chunks(index, "coverage")
    oracle = sorted(range(len(ids)), key=lambda i: (ids[i] not in gold_chunks, cov.index(i)))

    def judge(name: str, kappa: float, kept: list[str]) -> dict[str, Any]:
        t0 = time.perf_counter()
        kt = int(tokens[[pos[c] for c in kept]].sum())
        g = sum(1 for c in kept for p in members[c] if p in gold)
        row: dict[str, Any] = {
            "kappa": kappa,
            "selector": name,
            "kept_chunks": len(kept),
            "input_share": round((kt + prompt * len(kept)) / total_input, 4),
            "supporting_kept_share": round(g / len(gold), 4),
            "supporting_per_1k_input": round(1000.0 * g / max(kt + prompt * len(kept), 1), 4),
        }
        if host is not None:
            ks = set(kept)
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
            cr = [100.0 * sum(hits[b]) / len(qs) for b in BUDGETS]
            row.update({f"host_cr_{b}": c for b, c in zip(BUDGETS, cr, strict=True)})
            row["host_cr_mean"] = round(sum(cr) / len(cr), 2)
            row["host_hits"] = {str(b): "".join(map(str, hits[b])) for b in BUDGETS}
        row["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps({k: v for k, v in row.items() if k != "host_hits"}), file=sys.stderr, flush=True)
        return row

    rows: list[dict[str, Any]] = []
    for kappa in [float(x) for x in args.kappas.split(",")]:
        mine = select_anti_hub(ids, tokens, dv.chunk_inc, dv.pagerank, kappa, prompt)
        rows.append(judge("anti_hub", kappa, mine))
        for sel in ("coverage", "pagerank", "knn_pagerank"):
            rows.append(judge(sel, kappa, keep(S.rank_chunks(index, sel), kappa)))
        rows.append(judge("oracle_gold", kappa, keep(oracle, kappa)))
        cov_kept = keep(cov, kappa)
        for s in range(args.seeds):
            rows.append(judge(f"lmr{s}", kappa, _length_matched(index, cov_kept, s)))
        for s in range(args.own_seeds):
            rows.append(judge(f"own{100 + s}", kappa, _length_matched(index, mine, 100 + s)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    meta = {"data": str(d), "name": args.name, "pack_tokens": args.pack_tokens, "budgets": BUDGETS}
    tmp.write_text(json.dumps({**meta, "rows": rows}, indent=2))
    tmp.replace(args.out)
    print(render(rows, host is not None))


def _stats(v: list[float]) -> str:
    if not v:
        return "-"
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return f"{statistics.mean(v):.3g} ± {sd:.2g} ({min(v):.3g}..{max(v):.3g}, n={len(v)})"


def render(rows: list[dict[str, Any]], with_host: bool) -> str:
    """Markdown: every row, then per kappa the random draws' mean ± sd (min..max) and each selector's difference."""
    metrics = [f"host_cr_{b}" for b in BUDGETS] + ["host_cr_mean"] if with_host else []
    metrics += ["supporting_kept_share", "supporting_per_1k_input"]
    out = ["# anti_hub vs the library's selectors and length-matched random\n", "## Every row\n"]
    cols = ["kappa", "selector", "kept_chunks", "input_share", *metrics]
    out.append("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    out += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    out.append("\n## Summary: random's spread and each selector's difference from its mean\n")
    out.append("lmr: random with coverage's length profile; own: random with anti_hub's length profile. "
               "sd: of one random draw.\n")  # fmt: skip
    head = ["kappa", "metric", "lmr mean ± sd (min..max)", "own mean ± sd (min..max)", "coverage", "pagerank",
            "knn_pagerank", "anti_hub", "anti_hub - lmr", "anti_hub - own", "coverage - lmr",
            "oracle_gold"]  # fmt: skip
    out.append("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for kappa in sorted({r["kappa"] for r in rows}):
        at = [r for r in rows if r["kappa"] == kappa]
        by = {r["selector"]: r for r in at}
        for m in metrics:
            lmr = [float(r[m]) for r in at if r["selector"].startswith("lmr")]
            own = [float(r[m]) for r in at if r["selector"].startswith("own")]
            lm = statistics.mean(lmr) if lmr else float("nan")
            om = statistics.mean(own) if own else float("nan")
            a = float(by["anti_hub"][m])
            cells = [str(kappa), m, _stats(lmr), _stats(own)]
            cells += [f"{float(by[s][m]):.3g}" for s in ("coverage", "pagerank", "knn_pagerank", "anti_hub")]
            cells += [f"{a - lm:+.3g}", f"{a - om:+.3g}", f"{float(by['coverage'][m]) - lm:+.3g}"]
            cells.append(f"{float(by['oracle_gold'][m]):.3g}")
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
