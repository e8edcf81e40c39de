"""``ConceptGraphRetriever``: the concept path alone (the paper's G2ConS-Concept) as a LlamaIndex retriever."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from g2cons_plugins import G2ConSConfig, G2ConSIndex, RetrievedItem
from g2cons_plugins.ensemble import fuse
from g2cons_plugins.errors import InputError, PersistError
from g2cons_plugins.persistence import read_manifest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode

from ._convert import concept_nodes, nodes_to_chunks, resolve_embedder, tag
from .selector import INDEX_SUBDIR, CoreChunkSelector

RETRIEVER_FILE = "g2cons_retriever.json"


def resolve_index(
    g2cons_index: G2ConSIndex | None = None,
    selector: CoreChunkSelector | None = None,
    nodes: Sequence[BaseNode] | None = None,
    embedder: Any = None,
    config: G2ConSConfig | None = None,
) -> G2ConSIndex:
    """The concept graph: given, the selector's (covers every node it saw), or built over ``nodes``."""
    if g2cons_index is not None:
        return g2cons_index
    if selector is not None:
        return selector.index
    if nodes:
        return G2ConSIndex.build(nodes_to_chunks(nodes), embedder=resolve_embedder(embedder), config=config)
    raise InputError("give one of g2cons_index=, selector= (a fitted CoreChunkSelector) or nodes=")


def save_state(index: G2ConSIndex, persist_dir: str | Path, state: dict[str, Any]) -> None:
    """The concept graph to ``persist_dir/g2cons_index``, the retriever's settings to ``g2cons_retriever.json``."""
    d = Path(persist_dir)
    index.save(d / INDEX_SUBDIR)
    (d / RETRIEVER_FILE).write_text(json.dumps(state), encoding="utf-8")


def load_state(persist_dir: str | Path, embedder: Any = None) -> tuple[G2ConSIndex, dict[str, Any]]:
    d = Path(persist_dir)
    f = d / RETRIEVER_FILE
    try:
        state = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}
    except (OSError, ValueError) as e:
        raise PersistError(f"{f}: unreadable ({e})") from None
    if embedder is None and str(read_manifest(d / INDEX_SUBDIR)["embedder"]["name"]).startswith("llamaindex-"):
        embedder = resolve_embedder(None)  # built with a LlamaIndex model: use Settings.embed_model again
    elif embedder is not None:
        embedder = resolve_embedder(embedder)
    return G2ConSIndex.load(d / INDEX_SUBDIR, embedder=embedder), state


class ConceptGraphRetriever(BaseRetriever):
    """G2ConS concept-path retrieval within ``beta`` tokens (counted on the text the LLM will see). Node ids are
    chunk / sub-chunk ids; ``metadata["g2cons_reason"]`` says why each was retrieved."""

    def __init__(
        self,
        index: G2ConSIndex,
        beta: int | None = None,
        strategy: str | None = None,
        callback_manager: CallbackManager | None = None,
        objects: list[Any] | None = None,
        object_map: dict[str, Any] | None = None,
        verbose: bool = False,
    ) -> None:
        self._index = index
        self.beta = int(index.config.beta if beta is None else beta)
        self.strategy = strategy
        super().__init__(callback_manager=callback_manager, object_map=object_map, objects=objects, verbose=verbose)

    @classmethod
    def from_defaults(
        cls,
        g2cons_index: G2ConSIndex | None = None,
        selector: CoreChunkSelector | None = None,
        nodes: Sequence[BaseNode] | None = None,
        embedder: Any = None,
        config: G2ConSConfig | None = None,
        beta: int | None = None,
        strategy: str | None = None,
        **kwargs: Any,
    ) -> ConceptGraphRetriever:
        return cls(resolve_index(g2cons_index, selector, nodes, embedder, config), beta, strategy, **kwargs)

    @property
    def index(self) -> G2ConSIndex:
        return self._index

    def concept_path(self, query: str, beta: int | None = None) -> tuple[list[RetrievedItem], dict[str, TextNode]]:
        """Core concept retrieval; items re-counted on their LLM-visible text and cut to ``beta`` by the core."""
        beta = self.beta if beta is None else int(beta)
        raw = self._index.retrieve(query, beta=beta, strategy=self.strategy)
        items, nodes = concept_nodes(self._index, raw)
        if any(a.n_tokens != b.n_tokens for a, b in zip(items, raw, strict=True)):
            keep = {f.unit_id for f in fuse([], items, beta=beta, lambda_=0.0, tokenizer=self._index.tokenizer)}
            items = [it for it in items if it.unit_id in keep]
        return items, {n.node_id: n for n in nodes}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        items, nodes = self.concept_path(query_bundle.query_str)
        return [
            tag(NodeWithScore(node=nodes[it.unit_id]), it.score, g2cons_source="concept", g2cons_concept_score=it.score)
            for it in items
        ]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def persist(self, persist_dir: str | Path) -> None:
        save_state(self._index, persist_dir, {"kind": "concept", "beta": self.beta, "strategy": self.strategy})

    @classmethod
    def from_persist_dir(cls, persist_dir: str | Path, embedder: Any = None, **kwargs: Any) -> ConceptGraphRetriever:
        index, state = load_state(persist_dir, embedder)
        kw = {"beta": state.get("beta"), "strategy": state.get("strategy"), **kwargs}
        return cls(index, **kw)
