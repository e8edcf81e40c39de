"""``PropertyGraphIndex`` as a ``g2cons eval --host`` plug-in (entry points ``llama-index-ner``, ``llama-index-llm``).

Each ``build`` makes a real ``PropertyGraphIndex`` over every chunk of the core index, with ``CoreChunkSelector``
(fitted from that same core index, so the kept chunks are exactly ``kept_ids``) in front of the extractor:

* ``llama-index-ner`` - ``NERCooccurrenceExtractor`` (spaCy NER co-occurrence, **no LLM**; labelled as such) and
  ``NEREntityRetriever``. Cost columns are what an LLM extractor would have been sent: one call per kept chunk,
  its tokens plus ``prompt_tokens_per_call`` (default: ``SimpleLLMPathExtractor``'s prompt, 112 tokens).
* ``llama-index-llm`` - ``SimpleLLMPathExtractor`` with ``llm`` (default: ``llama_index.llms.openai.OpenAI`` from
  ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, model ``G2CONS_LLM_MODEL`` or gpt-4o-mini), calls and input/output
  tokens counted by LlamaIndex's ``TokenCountingHandler``; retrieval by ``LLMSynonymRetriever`` plus
  ``NEREntityRetriever`` over the LLM's triplets.
"""

from __future__ import annotations

import os
import time
from typing import Any

from g2cons_plugins import G2ConSIndex, HostItem, SelectionReport
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import HostBuildCost
from llama_index.core import PropertyGraphIndex
from llama_index.core.graph_stores.types import KG_SOURCE_REL, ChunkNode, EntityNode
from llama_index.core.schema import QueryBundle, TextNode

from ._convert import host_items
from .extractors import NERCooccurrenceExtractor, NEREntityRetriever, load_spacy
from .prompts import default_prompt_tokens
from .selector import CoreChunkSelector

NER_LABEL = "LLM-free host KG: spaCy NER co-occurrence triplets (NOT an LLM-extracted KG)"


def chunk_nodes(index: G2ConSIndex) -> list[TextNode]:
    """One node per core chunk: id = chunk id, text = chunk text."""
    return [TextNode(id_=c.id, text=c.text) for c in index.stored.chunks]


class PropertyGraphHost:
    """A ``PropertyGraphIndex`` host KG, rebuilt per ``build`` over the kept chunks."""

    def __init__(
        self,
        kind: str = "ner",
        llm: Any = None,
        prompt_tokens_per_call: int | None = None,
        retriever_limit: int = 30,
        hops: int = 2,
        max_fanout: int = 50,
        max_paths_per_chunk: int = 10,
    ) -> None:
        if kind not in ("ner", "llm"):
            raise InputError(f"kind must be 'ner' or 'llm', got {kind!r}")
        self.kind = kind
        self.name = f"llama-index-{kind}"
        self.label = NER_LABEL if kind == "ner" else "LLM-extracted host KG (SimpleLLMPathExtractor)"
        self._llm = llm
        # what an LLM extractor sends with every chunk: LlamaIndex's triplet prompt without the text (112 tokens)
        self.prompt_tokens_per_call = (
            default_prompt_tokens(max_paths_per_chunk) if prompt_tokens_per_call is None else prompt_tokens_per_call
        )
        self._limit, self._hops, self._max_fanout = retriever_limit, hops, max_fanout
        self._max_paths = max_paths_per_chunk
        self._extractor: NERCooccurrenceExtractor | None = None  # one per host: NER memoised across builds
        self._index: G2ConSIndex | None = None
        self._retriever: Any = None
        self.pg: PropertyGraphIndex | None = None

    # ------------------------------------------------------------------ build
    def _llm_or_default(self) -> Any:
        if self._llm is None:
            if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
                raise InputError("host llama-index-llm needs OPENAI_API_KEY (or OPENAI_BASE_URL) or an llm=...")
            try:
                from llama_index.llms.openai import OpenAI  # type: ignore[import-not-found]
            except ImportError as e:
                raise InputError("host llama-index-llm needs: pip install llama-index-llms-openai") from e
            self._llm = OpenAI(model=os.environ.get("G2CONS_LLM_MODEL", "gpt-4o-mini"), temperature=0.0)
        return self._llm

    def build(self, index: G2ConSIndex, selection: SelectionReport, show_progress: bool = False) -> HostBuildCost:
        """Build a ``PropertyGraphIndex`` over the kept chunks of ``selection``; returns the measured build cost."""
        nodes = chunk_nodes(index)
        selector = CoreChunkSelector.from_index(index, selection, nodes)
        prompt_tokens = self.prompt_tokens_per_call
        t0 = time.perf_counter()
        if self.kind == "ner":
            _spacy_or_error()
            if self._extractor is None:
                self._extractor = NERCooccurrenceExtractor(
                    token_counter=index.count_tokens, prompt_tokens_per_call=prompt_tokens, memoize=True
                )
            self._extractor.reset_usage()
            self.pg = PropertyGraphIndex(
                nodes=nodes,
                kg_extractors=[selector, self._extractor],
                llm=_mock_llm(),
                embed_kg_nodes=False,
                show_progress=show_progress,
            )
            u = self._extractor.usage
            calls, inp, out = u["calls"], u["input_tokens"], 0
        else:
            from llama_index.core.callbacks import CallbackManager, TokenCountingHandler
            from llama_index.core.indices.property_graph import SimpleLLMPathExtractor

            _spacy_or_error()  # the query side needs it: fail before paying for the LLM build
            llm = self._llm_or_default()
            counter = TokenCountingHandler(tokenizer=index.tokenizer.encode)
            if getattr(llm, "callback_manager", None) is None:
                llm.callback_manager = CallbackManager([])
            llm.callback_manager.add_handler(counter)  # the user's handlers stay
            extractor = SimpleLLMPathExtractor(llm=llm, max_paths_per_chunk=self._max_paths, num_workers=1)
            self.pg = PropertyGraphIndex(
                nodes=nodes,
                kg_extractors=[selector, extractor],
                llm=llm,
                embed_kg_nodes=False,
                show_progress=show_progress,
            )
            # SimpleLLMPathExtractor makes one call per node; a completion-only LLM logs each call twice (chat ->
            # complete), so the token totals are divided by the events per call
            llm.callback_manager.remove_handler(counter)
            calls = len(selection.kept_ids)
            per_call = max(1, round(len(counter.llm_token_counts) / max(calls, 1)))
            inp = counter.prompt_llm_token_count // per_call
            out = counter.completion_llm_token_count // per_call
        seconds = time.perf_counter() - t0
        graph = self.pg.property_graph_store.graph  # type: ignore[attr-defined]
        self._index = index
        self._retriever = self._make_retriever()
        return HostBuildCost(
            calls=int(calls),
            input_tokens=int(inp),
            output_tokens=int(out),
            chunks=len(selection.kept_ids),
            seconds=round(seconds, 3),
            llm=self.kind == "llm",
            graph=graph_counts(graph),
        )

    def _make_retriever(self) -> Any:
        assert self.pg is not None
        store = self.pg.property_graph_store
        subs: list[Any] = []
        if self.kind == "llm":
            from llama_index.core.indices.property_graph import LLMSynonymRetriever

            subs.append(LLMSynonymRetriever(store, llm=self._llm, include_text=True))
        subs.append(
            NEREntityRetriever(
                store, include_text=True, limit=self._limit, hops=self._hops, max_fanout=self._max_fanout
            )
        )
        return self.pg.as_retriever(sub_retrievers=subs, include_text=True, use_async=False)

    # ------------------------------------------------------------------ query
    def retrieve(self, query: str) -> list[HostItem]:
        """The host KG retriever's results for ``query`` as core ``HostItem``s."""
        return answer(self._retriever, self._index, query)


def answer(retriever: Any, index: G2ConSIndex | None, query: str) -> list[HostItem]:
    """A built host's retriever results for ``query`` as core ``HostItem``s (an error before ``build``)."""
    if retriever is None or index is None:
        raise InputError("the host KG is not built yet: call build(index, index.select(kappa=...)) first")
    return host_items(retriever.retrieve(QueryBundle(query)), index)


def graph_counts(graph: Any) -> dict[str, int]:
    """Entities, chunks, relations and entity-chunk mention links of a ``SimplePropertyGraphStore``'s graph."""
    return {
        "entities": sum(isinstance(n, EntityNode) for n in graph.nodes.values()),
        "chunks": sum(isinstance(n, ChunkNode) for n in graph.nodes.values()),
        "relations": sum(r.label != KG_SOURCE_REL for r in graph.relations.values()),
        "mention_links": sum(r.label == KG_SOURCE_REL for r in graph.relations.values()),
    }


def _spacy_or_error() -> None:
    try:
        load_spacy()
    except ImportError as e:
        raise InputError(f'{e} (pip install "llama-index-retrievers-g2cons[ner]")') from e


def _mock_llm() -> Any:
    from llama_index.core.llms import MockLLM

    return MockLLM()


def ner_host(**options: Any) -> PropertyGraphHost:
    """Entry point ``llama-index-ner``."""
    return PropertyGraphHost(kind="ner", **options)


def llm_host(**options: Any) -> PropertyGraphHost:
    """Entry point ``llama-index-llm``."""
    return PropertyGraphHost(kind="llm", **options)
