"""LlamaIndex quickstart: G2ConS core-chunk selection before a PropertyGraphIndex, then dual-path retrieval.

    pip install -e . -e adapters/llama-index-retrievers-g2cons
    python examples/llama_index_quickstart.py [--kappa 0.5] [--n-docs 400] [--beta 1500]

Data: an attributed excerpt of MuSiQue (examples/data/README.md). The concept graph uses the core's offline
WordLlama embedder.

LLM: OpenAI ``gpt-4o-mini`` when OPENAI_API_KEY is set and ``llama-index-llms-openai`` is installed. Otherwise an
OFFLINE DETERMINISTIC EXTRACTOR: a rule-based fake LLM that links capitalised words into "(A, related to, B)"
triplets and "answers" by quoting its context. It lets the build and the query engine run with no network; its
graph and its answer say nothing about quality. The extraction calls and prompt tokens printed are real counts
(TokenCountingHandler) of what an LLM extractor is sent with and without selection.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llama_index.core import Document, PropertyGraphIndex, Settings
from llama_index.core.callbacks import CallbackManager, TokenCountingHandler
from llama_index.core.indices.property_graph import ImplicitPathExtractor, SimpleLLMPathExtractor
from llama_index.core.llms import LLM, CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode
from llama_index.retrievers.g2cons import CoreChunkSelector, G2ConSRetriever

DATA = Path(__file__).parent / "data"
CAP = re.compile(r"\b[A-Z][a-z]{2,}\b")


class OfflineTripletLLM(CustomLLM):
    """OFFLINE DETERMINISTIC EXTRACTOR (a fake LLM, not a model): capitalised words -> triplets; query -> its
    capitalised words as keywords; anything else -> a labelled quote of the first context line."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="offline-deterministic-extractor", context_window=32768, num_output=256)

    def _answer(self, prompt: str) -> str:
        if "KEYWORDS:" in prompt:  # LLMSynonymRetriever
            return "^".join(dict.fromkeys(CAP.findall(prompt.split("QUERY:")[-1].split("----")[0])))
        if prompt.rstrip().endswith("Triplets:"):  # SimpleLLMPathExtractor
            text = prompt.rsplit("\nText: ", 1)[-1]
            words = list(dict.fromkeys(CAP.findall(text)))[:8]
            return "\n".join(f"({a}, related to, {b})" for a, b in zip(words, words[1:], strict=False))
        context = prompt.split("---------------------")[1].strip() if "-----" in prompt else prompt
        first = next((line for line in context.splitlines() if line.strip()), "")
        return f"[offline fake LLM, not an answer] first context line: {first[:160]}"

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()  # own acomplete: the inherited one calls complete and is counted twice
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        text = self._answer(prompt)
        yield CompletionResponse(text=text, delta=text)


def make_llm() -> tuple[LLM, str]:
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from llama_index.llms.openai import OpenAI  # type: ignore[import-not-found]

            return OpenAI(model="gpt-4o-mini", temperature=0), "OpenAI gpt-4o-mini"
        except ImportError:
            print("OPENAI_API_KEY is set but llama-index-llms-openai is not installed: using the offline extractor")
    return OfflineTripletLLM(), "OFFLINE DETERMINISTIC EXTRACTOR (rule-based fake LLM; measures no quality)"


def load_documents(n: int) -> list[Document]:
    docs = []
    with (DATA / "musique_excerpt_corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            docs.append(Document(id_=row["id"], text=row["text"], metadata={"title": row["title"]}))
            if len(docs) >= n:
                break
    return docs


def build(docs: list[Document], llm: LLM, selector: CoreChunkSelector | None) -> PropertyGraphIndex:
    transformations: list[Any] = [SentenceSplitter(chunk_size=256, chunk_overlap=0)]
    if selector is not None:
        transformations.append(selector)
    return PropertyGraphIndex.from_documents(
        docs,
        transformations=transformations,
        kg_extractors=[SimpleLLMPathExtractor(llm=llm, max_paths_per_chunk=10), ImplicitPathExtractor()],
        llm=llm,
        embed_kg_nodes=False,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kappa", type=float, default=0.5)
    ap.add_argument("--n-docs", type=int, default=400)
    ap.add_argument("--beta", type=int, default=1500, help="context budget in tokens")
    args = ap.parse_args()
    t0 = time.perf_counter()
    llm, label = make_llm()
    print(f"LLM: {label}")
    tc = TokenCountingHandler()
    Settings.callback_manager = CallbackManager([tc])
    llm.callback_manager = Settings.callback_manager
    docs = load_documents(args.n_docs)

    build(docs, llm, selector=None)
    print(
        f"without selection: {len(tc.llm_token_counts):>6} extraction calls, "
        f"{tc.prompt_llm_token_count:>8,} prompt tokens"
    )
    tc.reset_counts()
    selector = CoreChunkSelector(kappa=args.kappa, embedder="wordllama")
    pg = build(docs, llm, selector)
    print(
        f"with selection (kappa={args.kappa}): {len(tc.llm_token_counts):>6} extraction calls, "
        f"{tc.prompt_llm_token_count:>8,} prompt tokens"
    )
    print(f"selector: {selector.report.summary()}")

    question = json.loads((DATA / "musique_excerpt_questions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    retriever = G2ConSRetriever.from_defaults(index=pg, selector=selector, beta=args.beta)
    response = RetrieverQueryEngine.from_args(retriever, llm=llm).query(question["question"])
    print(f"\nQ: {question['question']}  (gold: {question['answers'][0]})")
    print(f"A: {response}")
    used = sum(
        retriever.index.count_tokens(
            [r.node.get_content(metadata_mode=MetadataMode.LLM) for r in response.source_nodes]
        )
    )
    print(f"context: {len(response.source_nodes)} nodes, {used} of {retriever.beta} budget tokens")
    for r in response.source_nodes:
        md = r.node.metadata
        print(f"  g2cons_source={md['g2cons_source']:<7} score={r.get_score():.3f} title={md.get('title')!r}")
    print(f"\ndone in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
