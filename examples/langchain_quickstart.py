"""LangChain quickstart: splitter -> CoreChunkSelector -> LLMGraphTransformer -> host graph retriever -> G2ConSRetriever
-> an LCEL chain that answers one question.

    pip install -e . -e "adapters/langchain-g2cons[wordllama,examples]"
    python examples/langchain_quickstart.py [--kappa 0.8] [--beta 1500] [--limit N] [--embedder wordllama|hash]

With OPENAI_API_KEY set (and ``langchain-openai`` installed) the extraction and answer models are ``gpt-4o-mini``.
Without it, both are FAKE models, labelled as such in the output: the extractor links capitalised names that occur
in the same chunk (no LLM), and the answer model returns a fixed string. The run then shows the plumbing and the
number of extraction calls saved; it measures no answer or KG quality.

Data: an attributed excerpt of MuSiQue (examples/data/README.md). The host retriever below is a small entity-name
lookup over the GraphDocuments, written for this example (any LangChain retriever can be the host).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from langchain_g2cons import CoreChunkSelector, G2ConSRetriever, token_length
from langchain_text_splitters import RecursiveCharacterTextSplitter

DATA = Path(__file__).parent / "data"
NAME = re.compile(r"\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*")


class FakeTripletChatModel(BaseChatModel):
    """FAKE extraction model (no LLM): links consecutive capitalised names of the chunk as MENTIONED_WITH."""

    @property
    def _llm_type(self) -> str:
        return "fake-triplets"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        text = str(messages[-1].content).rsplit("Text: ", 1)[-1]
        names = list(dict.fromkeys(m.group(0) for m in NAME.finditer(text) if len(m.group(0)) > 2))[:8]
        rels = [
            {"head": a, "head_type": "Entity", "relation": "MENTIONED_WITH", "tail": b, "tail_type": "Entity"}
            for a, b in zip(names, names[1:], strict=False)
        ]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=json.dumps(rels)))])


class CallCounter(BaseCallbackHandler):
    """Counts chat-model calls (works for real and fake models alike)."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.calls += 1


class EntityGraphRetriever(BaseRetriever):
    """Host KG retriever for this example: the chunks whose extracted entities are named in the question, then the
    chunks of their one-hop neighbours (half weight). Returns the source chunks with their ids."""

    graph_documents: list[Any]
    k: int = 6

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = query.lower()
        sources: dict[str, set[int]] = defaultdict(set)
        neighbours: dict[str, set[str]] = defaultdict(set)
        for pos, gd in enumerate(self.graph_documents):
            for node in gd.nodes:
                sources[str(node.id).lower()].add(pos)
            for rel in gd.relationships:
                a, b = str(rel.source.id).lower(), str(rel.target.id).lower()
                neighbours[a].add(b)
                neighbours[b].add(a)
        hit = [e for e in sources if re.search(rf"\b{re.escape(e)}\b", q)]
        score: dict[int, float] = defaultdict(float)
        for e in hit:
            for pos in sources[e]:
                score[pos] += 1.0
            for n in neighbours[e]:
                for pos in sources[n]:
                    score[pos] += 0.5
        ranked = sorted(score, key=lambda p: (-score[p], p))[: self.k]
        return [self.graph_documents[p].source for p in ranked]


def load_corpus(limit: int | None) -> list[Document]:
    docs = []
    with (DATA / "musique_excerpt_corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            text = f"{row['title']}\n{row['text']}" if row.get("title") else row["text"]
            docs.append(Document(page_content=text, metadata={"passage_id": row["id"], "title": row.get("title", "")}))
            if limit and len(docs) >= limit:
                break
    return docs


def models() -> tuple[BaseChatModel, BaseChatModel, str]:
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from langchain_openai import ChatOpenAI

            llm = ChatOpenAI(model="gpt-4o-mini", temperature=0)
            return llm, llm, "OpenAI gpt-4o-mini"
        except ImportError:
            print("OPENAI_API_KEY is set but langchain-openai is not installed: using the FAKE models")
    answer = FakeListChatModel(responses=["[FAKE chat model: fixed text, no answer was generated]"])
    return FakeTripletChatModel(), answer, "FAKE models (no OPENAI_API_KEY): the output measures no quality"


def graph_transformer_class() -> Any:
    """``LLMGraphTransformer`` lives in sunset packages: langchain-experimental (or langchain-neo4j)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*being sunset.*")  # emitted on import
        try:
            from langchain_experimental.graph_transformers import LLMGraphTransformer
        except ImportError:  # pragma: no cover
            try:
                from langchain_neo4j import LLMGraphTransformer
            except ImportError:
                raise SystemExit(
                    'LLMGraphTransformer is not installed: pip install -e . -e "adapters/langchain-g2cons[examples]" '
                    "(langchain-experimental), or langchain-neo4j"
                ) from None
    return LLMGraphTransformer


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before any embedder loads: no hub calls
    logging.getLogger("g2cons_plugins").setLevel(logging.WARNING)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kappa", type=float, default=0.8)
    ap.add_argument("--beta", type=int, default=1500)
    ap.add_argument("--limit", type=int, default=None, help="use only the first N passages")
    ap.add_argument("--embedder", default="wordllama")
    args = ap.parse_args()
    t0 = time.perf_counter()
    extractor, answer_llm, label = models()
    print(f"models: {label}")

    # 1. split (token lengths with the core's bundled tiktoken encoding: no download)
    passages = load_corpus(args.limit)
    splitter = RecursiveCharacterTextSplitter(chunk_size=200, chunk_overlap=0, length_function=token_length())
    chunks = splitter.split_documents(passages)
    print(f"1. {len(passages)} passages -> {len(chunks)} chunks (the splitter leaves Document.id = None)")

    # 2. core-chunk selection: only the selected chunks go to the LLM; the concept graph covers all of them
    selector = CoreChunkSelector(kappa=args.kappa, embedder=args.embedder)
    core = selector.transform_documents(chunks)
    assert selector.report is not None and selector.index is not None
    print(f"2. CoreChunkSelector(kappa={args.kappa}): {selector.report.summary()}")
    print(f"   ids are content hashes, e.g. {core[0].id} (Document.id and metadata['g2cons_id'])")

    # 3. KG extraction over the core chunks only
    counter = CallCounter()
    graph_docs = graph_transformer_class()(llm=extractor).convert_to_graph_documents(core, {"callbacks": [counter]})
    n_rel = sum(len(g.relationships) for g in graph_docs)
    print(
        f"3. LLMGraphTransformer: {counter.calls} extraction calls made, {len(chunks) - counter.calls} saved "
        f"of {len(chunks)} ({n_rel} relationships)"
    )

    # 4. host graph retriever + concept path, fused under beta
    host = EntityGraphRetriever(graph_documents=graph_docs)
    retriever = G2ConSRetriever(host=host, index=selector.index, beta=args.beta)  # config: lambda 0.4, spill

    # 5. an LCEL chain
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context only, in a few words.\n\nContext:\n{context}"), ("human", "{question}")]
    )

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | answer_llm
        | StrOutputParser()
    )
    with (DATA / "musique_excerpt_questions.jsonl").open(encoding="utf-8") as fh:
        question = json.loads(fh.readline())
    docs = retriever.invoke(question["question"])
    answer = chain.invoke(question["question"])
    by_source: dict[str, int] = defaultdict(int)
    for d in docs:
        by_source[d.metadata["g2cons_source"]] += 1
    gold = set(question["supporting_passage_ids"])
    found = gold & {d.metadata.get("passage_id") for d in docs}
    tokens = sum(d.metadata["g2cons_n_tokens"] for d in docs)
    print(
        f"4. G2ConSRetriever(beta={args.beta}): {len(docs)} documents, {tokens} tokens, {dict(by_source)}"
    )
    print(f"   supporting passages in the context: {len(found)}/{len(gold)} (one question: a smoke check, not a score)")
    print(f"5. Q: {question['question']}\n   A: {answer}\n   gold: {question['answers'][0]}")
    print(f"done in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
