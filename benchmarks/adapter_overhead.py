"""Overhead of the adapters' G2ConSRetriever over the host retriever alone, and the concept retriever's CR
against the core's ``concept`` method, on MuSiQue ketrag500 (6,761 passages).

    python benchmarks/adapter_overhead.py --embedder minilm --out benchmarks/results/adapter_overhead.json

The host is a stub that returns 20 fixed chunks at zero cost, so its time is the frameworks' own call overhead;
the query embedding is excluded (question vectors are cached before timing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from g2cons_plugins import G2ConSIndex
from g2cons_plugins.eval.evaluation import answer_in_context, load_questions, read_jsonl

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "musique"


def timed(fn, queries: list[str]) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--beta", type=int, nargs="+", default=[2000, 12000])
    ap.add_argument("--n", type=int, default=200, help="questions timed")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    corpus = read_jsonl(DATA / "ketrag500_corpus.jsonl")
    qs = load_questions(DATA / "ketrag500_questions.jsonl")
    index = G2ConSIndex.build(corpus, embedder=args.embedder, cache_dir=Path(__file__).parent / "cache")
    questions = [q["question"] for q in qs]
    index.embedder.embed(questions)  # cache: the query embedding is a lookup from here on
    timed_q = questions[: args.n]
    rows = []

    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever as LCRetriever
    from langchain_g2cons import ConceptGraphRetriever as LCConcept
    from langchain_g2cons import G2ConSRetriever as LCFused
    from llama_index.core.retrievers import BaseRetriever as LIRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index.retrievers.g2cons import ConceptGraphRetriever as LIConcept
    from llama_index.retrievers.g2cons import G2ConSRetriever as LIFused

    fixed = index.chunks[:20]

    class LCStub(LCRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            return [Document(id=c.id, page_content=c.text) for c in fixed]

    class LIStub(LIRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_=c.id, text=c.text), score=1.0) for c in fixed]

    for beta in args.beta:
        hosts = {"langchain": LCStub(), "llama_index": LIStub()}
        fused = {
            "langchain": LCFused(host=hosts["langchain"], index=index, beta=beta, lambda_=0.6),
            "llama_index": LIFused(index, hosts["llama_index"], beta=beta, lambda_=0.6),
        }
        calls = {
            "langchain": (hosts["langchain"].invoke, fused["langchain"].invoke),
            "llama_index": (hosts["llama_index"].retrieve, fused["llama_index"].retrieve),
        }
        core = timed(lambda q, b=beta: index.retrieve(q, beta=b), timed_q)
        for name, (host_fn, fused_fn) in calls.items():
            host_fn(timed_q[0]), fused_fn(timed_q[0])  # warm up
            h, f = timed(host_fn, timed_q), timed(fused_fn, timed_q)
            rows.append(
                {
                    "adapter": name,
                    "beta": beta,
                    "host_p50_ms": round(statistics.median(h), 3),
                    "fused_p50_ms": round(statistics.median(f), 3),
                    "overhead_p50_ms": round(statistics.median(f) - statistics.median(h), 3),
                    "core_retrieve_p50_ms": round(statistics.median(core), 3),
                }
            )
    # CR of the concept retrievers vs the core concept method (all 500 questions, beta 2000)
    lc, li = LCConcept(index=index, beta=2000), LIConcept(index, beta=2000)
    cr = {"core": 0, "langchain": 0, "llama_index": 0}
    for q in qs:
        cr["core"] += answer_in_context(
            q["answers"], "\n".join(x.text for x in index.retrieve(q["question"], beta=2000))
        )
        cr["langchain"] += answer_in_context(q["answers"], "\n".join(d.page_content for d in lc.invoke(q["question"])))
        cr["llama_index"] += answer_in_context(
            q["answers"], "\n".join(n.node.get_content() for n in li.retrieve(q["question"]))
        )
    result = {
        "overhead": rows,
        "cr_at_2000": {k: round(100 * v / len(qs), 2) for k, v in cr.items()},
        "embedder": index.embedder.name,
        "n_timed": len(timed_q),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
