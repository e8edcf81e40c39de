"""Host-KG path WITHOUT an LLM (spaCy NER co-occurrence triplets), the concept path and their fusion, per kappa.

    python benchmarks/host_kg_eval.py --corpus ../shared/data/musique/ketrag500_corpus.jsonl \
        --questions ../shared/data/musique/ketrag500_questions.jsonl --embedder minilm --cache-dir benchmarks/cache \
        --kappas 0.2,0.8,1.0 --lambdas 0,0.2,0.4,0.6,0.8,1.0 --budgets 2000,4000

LABEL: the host KG here is NOT an LLM-built KG. It is a real LlamaIndex ``PropertyGraphIndex`` built through the
adapter's ``CoreChunkSelector`` (kappa share of core chunks kept) with ``NERCooccurrenceExtractor`` (entities of
each chunk, ``co_occurs_with`` between entities of one sentence, as E2GraphRAG builds its entity graph). The host
retriever is ``pg_index.as_retriever(include_text=True)`` with LLM-free sub-retrievers: ``ner`` (query entities
matched to graph entities, ``NEREntityRetriever``) and/or ``vector`` (``VectorContextRetriever`` over entity-name
embeddings from the same embedder). "Cost" columns are what an LLM extractor would have been sent for the same
chunks: one call per kept chunk, its tokens plus the core's prompt-template tokens per call.

Speed (2 cores): spaCy NER (tok2vec+ner+sentencizer) ~14 ms per passage; NER results are memoised across kappas
(one extractor object), so ``pg_build_s`` of a later kappa excludes NER of chunks already seen, while ``usage``
still counts every call. The ``ner`` host retriever costs ~0.3 s per query (SimplePropertyGraphStore scans); the
``vector`` mode (entity-name embeddings in a SimpleVectorStore) did not finish kappa 0.2 on 30 questions in 10
minutes here, so it is off by default.

Per kappa and budget beta, Context Recall (``g2cons_plugins.evaluation.answer_in_context``) of: host alone (its
results in rank order, within beta: ``fuse(host, [], beta, 1.0)``), concept alone (``index.retrieve``), and fused
(``g2cons_plugins.ensemble.fuse(host, concept, beta, lambda)``) for each lambda.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from llama_index.core import PropertyGraphIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.indices.property_graph import VectorContextRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.schema import QueryBundle, TextNode
from llama_index.retrievers.g2cons import CoreChunkSelector
from llama_index.retrievers.g2cons._convert import host_items
from llama_index.retrievers.g2cons.extractors import NERCooccurrenceExtractor, NEREntityRetriever, load_spacy
from tqdm.auto import tqdm

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.ensemble import fuse
from g2cons_plugins.evaluation import answer_in_context, format_table, load_questions, read_jsonl

HOST_MODES = ("ner", "vector", "ner+vector")


class CoreEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model calling a core embedder (so the KG's entity vectors and the concept path use
    the same model and the same cache)."""

    _emb: Any = PrivateAttr()

    def __init__(self, embedder: Any, **kwargs: Any) -> None:
        super().__init__(model_name=str(embedder.name), embed_batch_size=256, **kwargs)
        self._emb = embedder

    def _vecs(self, texts: list[str]) -> list[list[float]]:
        return np.asarray(self._emb.embed(list(texts)), dtype=np.float32).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vecs([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vecs([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._vecs(texts)


def floats(s: str) -> list[float]:
    return [float(x) for x in s.split(",") if x.strip()]


def ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def corpus_nodes(rows: list[dict[str, Any]]) -> list[TextNode]:
    """One TextNode per passage, id = passage id, text = what the core indexes ("title\\ntext" when titled)."""
    out = []
    for r in rows:
        text = f"{r['title']}\n{r['text']}" if r.get("title") else r["text"]
        out.append(TextNode(id_=str(r["id"]), text=text))
    return out


def host_retriever(pg: PropertyGraphIndex, mode: str, embed_model: BaseEmbedding | None, top_k: int) -> Any:
    subs: list[Any] = []
    if "ner" in mode:
        subs.append(NEREntityRetriever(pg.property_graph_store, include_text=True))
    if "vector" in mode:
        subs.append(
            VectorContextRetriever(
                pg.property_graph_store,
                vector_store=pg.vector_store,
                include_text=True,
                embed_model=embed_model,
                similarity_top_k=top_k,
            )
        )
    return pg.as_retriever(sub_retrievers=subs, include_text=True)


def pct(hits: int, n: int) -> float:
    return round(100.0 * hits / max(n, 1), 2)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--kappas", type=floats, default=[0.2, 0.8, 1.0])
    ap.add_argument("--lambdas", type=floats, default=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ap.add_argument("--budgets", type=ints, default=[2000, 4000])
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--host", choices=HOST_MODES, default="ner", help="LLM-free host sub-retrievers")
    ap.add_argument("--vector-top-k", type=int, default=4, help="entities per query for the vector sub-retriever")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/host_kg_<data>_<emb>.json)")
    ap.add_argument("--md", default=None, help="Markdown path (default: the JSON path with .md)")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    show = not args.quiet
    t_all = time.perf_counter()

    rows = read_jsonl(args.corpus)
    qs = load_questions(args.questions)[: args.limit]
    nodes = corpus_nodes(rows)
    t0 = time.perf_counter()
    index = G2ConSIndex.build(rows, embedder=args.embedder, cache_dir=args.cache_dir, show_progress=show)
    t_concept = time.perf_counter() - t0
    emb = index.embedder
    qtexts = [q["question"] for q in qs]
    qvecs = emb.embed(qtexts)
    use_vec = "vector" in args.host
    embed_model = CoreEmbedding(emb) if use_vec else None

    # the full build's would-be LLM input (every chunk, one call each), counted like the extractor counts
    node_texts = [n.get_content() for n in nodes]
    prompt_tok = int(index.select(kappa=1.0).prompt_tokens_per_call)
    full_chunk_tokens = int(sum(index.count_tokens(node_texts)))
    full_input_tokens = full_chunk_tokens + len(nodes) * prompt_tok

    # the concept path is kappa-independent: retrieve once per (question, beta)
    concept: dict[int, list[Any]] = {b: [] for b in args.budgets}
    lat_concept: list[float] = []
    for i, q in enumerate(tqdm(qtexts, desc="concept path", unit="q", disable=not show)):
        for b in args.budgets:
            t = time.perf_counter()
            concept[b].append(index.retrieve(q, beta=b, query_vector=qvecs[i]))
            lat_concept.append(time.perf_counter() - t)

    load_spacy()  # load once, outside the timed build
    # one extractor for every kappa: a chunk's NER runs once (memoised), usage is counted per build
    extractor = NERCooccurrenceExtractor(
        token_counter=index.count_tokens, prompt_tokens_per_call=prompt_tok, memoize=True
    )
    builds, cr_rows = [], []
    for kappa in args.kappas:
        t0 = time.perf_counter()
        selector = CoreChunkSelector(kappa, embedder=emb, config=index.config.to_dict())
        selector.fit(nodes)
        t_fit = time.perf_counter() - t0
        core_report = index.select(kappa=kappa)
        same = selector.report.kept_ids == core_report.kept_ids
        extractor.reset_usage()
        t0 = time.perf_counter()
        pg = PropertyGraphIndex(
            nodes=[n.model_copy() for n in nodes],
            kg_extractors=[selector, extractor],
            llm=MockLLM(),
            embed_model=embed_model,
            embed_kg_nodes=use_vec,
            show_progress=show,
        )
        t_pg = time.perf_counter() - t0
        store = pg.property_graph_store
        chunk_ids = {n.id for n in store.get() if not hasattr(n, "name")}
        u = extractor.usage
        build = {
            "kappa": kappa,
            "selector_matches_core": same,
            "n_chunks": len(nodes),
            "n_kept": len(selector.report.kept_ids),
            "kept_share_tokens_core": round(selector.report.kept_share_tokens, 4),
            "extractor_calls": u["calls"],
            "extractor_chunk_tokens": u["chunk_tokens"],
            "extractor_input_tokens": u["input_tokens"],
            "share_of_full_chunk_tokens": round(u["chunk_tokens"] / max(full_chunk_tokens, 1), 4),
            "share_of_full_input_tokens": round(u["input_tokens"] / max(full_input_tokens, 1), 4),
            "share_of_full_calls": round(u["calls"] / max(len(nodes), 1), 4),
            "entities": u["entities"],
            "relations": u["relations"],
            "graph_entity_nodes": sum(1 for n in store.get() if hasattr(n, "name")),
            "graph_chunk_nodes": len(chunk_ids),
            "chunks_outside_selection": len(chunk_ids - set(selector.report.kept_ids)),
            "selector_fit_s": round(t_fit, 2),
            "pg_build_s": round(t_pg, 2),
        }
        retriever = host_retriever(pg, args.host, embed_model, args.vector_top_k)
        hits = {
            (m, b): 0 for b in args.budgets for m in ["host", "concept"] + [f"fused@{lam:g}" for lam in args.lambdas]
        }
        n_host, host_tok, any_host, lat_host, both = [], [], 0, [], {b: [] for b in args.budgets}
        for i, q in enumerate(tqdm(qs, desc=f"queries kappa={kappa:g}", unit="q", disable=not show)):
            t = time.perf_counter()
            res = retriever.retrieve(QueryBundle(q["question"]))
            lat_host.append(time.perf_counter() - t)
            hitems = host_items(res, index)
            n_host.append(len(hitems))
            host_tok.append(sum(h.n_tokens or 0 for h in hitems))
            any_host += bool(hitems)
            for b in args.budgets:
                c = concept[b][i]
                ctx_h = "\n".join(f.text for f in fuse(hitems, [], b, 1.0, tokenizer=index.tokenizer))
                hits[("host", b)] += answer_in_context(q["answers"], ctx_h)
                hits[("concept", b)] += answer_in_context(q["answers"], "\n".join(x.text for x in c))
                for lam in args.lambdas:
                    fused = fuse(hitems, c, b, lam, tokenizer=index.tokenizer)
                    hits[(f"fused@{lam:g}", b)] += answer_in_context(q["answers"], "\n".join(f.text for f in fused))
                    if lam == args.lambdas[len(args.lambdas) // 2]:
                        both[b].append(sum(f.source == "both" for f in fused))
        build.update(
            host_results_mean=round(float(np.mean(n_host)), 2) if n_host else 0.0,
            host_tokens_mean=round(float(np.mean(host_tok)), 1) if host_tok else 0.0,
            questions_with_host_results=pct(any_host, len(qs)),
            host_latency_ms_p50=round(1000 * statistics.median(lat_host), 2) if lat_host else None,
            host_latency_ms_p95=round(1000 * float(np.percentile(lat_host, 95)), 2) if lat_host else None,
        )
        builds.append(build)
        for b in args.budgets:
            row: dict[str, Any] = {"kappa": kappa, "budget": b}
            for (m, bb), h in hits.items():
                if bb == b:
                    row[m] = pct(h, len(qs))
            row["both_items_mean"] = round(float(np.mean(both[b])), 2) if both[b] else 0.0
            cr_rows.append(row)

    settings = {
        "corpus": args.corpus,
        "questions": args.questions,
        "n_questions": len(qs),
        "limit": args.limit,
        "embedder": emb.name,
        "host": args.host,
        "host_label": "LLM-free host KG: spaCy NER co-occurrence triplets (NOT an LLM-extracted KG)",
        "spacy_model": "{lang}_{name}-{version}".format(**load_spacy().meta),
        "kappas": args.kappas,
        "lambdas": args.lambdas,
        "budgets": args.budgets,
        "prompt_tokens_per_call": prompt_tok,
        "full_build": {"calls": len(nodes), "chunk_tokens": full_chunk_tokens, "input_tokens": full_input_tokens},
        "config": index.config.to_dict(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    result = {
        "settings": settings,
        "build": builds,
        "context_recall": cr_rows,
        "timings_s": {
            "concept_index_build": round(t_concept, 2),
            "concept_latency_ms_p50": round(1000 * statistics.median(lat_concept), 2) if lat_concept else None,
            "total": round(time.perf_counter() - t_all, 2),
        },
    }
    md = report_md(result)
    print(md)
    out = Path(args.out) if args.out else default_out(args.corpus, args.embedder)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    Path(args.md or out.with_suffix(".md")).write_text(md, encoding="utf-8")
    return result


def default_out(corpus: str, embedder: str) -> Path:
    p = Path(corpus)
    name = f"{p.parent.name}_{p.stem.replace('_corpus', '')}_{embedder.split(':')[0]}"
    return Path(__file__).parent / "results" / f"host_kg_{name}.json"


def report_md(r: dict[str, Any]) -> str:
    s = r["settings"]
    lines = [
        "# Host-KG path without an LLM: NER co-occurrence PropertyGraphIndex, concept path, fusion",
        "",
        f"**{s['host_label']}.** Host retriever: `{s['host']}`; spaCy model `{s['spacy_model']}`; "
        f"embedder `{s['embedder']}`; {s['n_questions']} questions; corpus `{s['corpus']}`.",
        "",
        "## KG build per kappa (would-be LLM extraction cost: one call per kept chunk, chunk tokens + "
        f"{s['prompt_tokens_per_call']} prompt tokens per call)",
        "",
    ]
    fb = s["full_build"]
    lines.append(
        f"Full build (kappa 1, every chunk): {fb['calls']:,} calls, {fb['chunk_tokens']:,} chunk tokens, "
        f"{fb['input_tokens']:,} input tokens."
    )
    lines.append("")
    cols = [
        "kappa",
        "n_kept",
        "extractor_calls",
        "extractor_input_tokens",
        "share_of_full_input_tokens",
        "share_of_full_chunk_tokens",
        "graph_entity_nodes",
        "relations",
        "chunks_outside_selection",
        "pg_build_s",
        "questions_with_host_results",
        "host_results_mean",
        "host_latency_ms_p50",
    ]
    lines += [format_table(r["build"], cols), "", "## Context Recall (%)", ""]
    cr = r["context_recall"]
    if cr:
        cols = [k for k in cr[0] if k != "both_items_mean"] + ["both_items_mean"]
        lines.append(format_table(cr, cols))
    lines += [
        "",
        "host = host KG alone within beta; concept = G2ConS concept path alone; fused@L = core ensemble with "
        "lambda L; both_items_mean = items found by both paths (at the middle lambda). NER is memoised across "
        "kappas: pg_build_s of a later kappa excludes NER of chunks already extracted.",
        "",
        f"Timings: {json.dumps(r['timings_s'])}",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
