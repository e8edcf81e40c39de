"""``ConceptGraphRetriever``: the concept path alone (the paper's G2ConS-Concept) as a LlamaIndex retriever."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from g2cons_plugins import G2ConSConfig, G2ConSIndex, RetrievedItem
from g2cons_plugins.ensemble import fuse
from g2cons_plugins.errors import InputError
from g2cons_plugins.pipelines.integration import (
    SETTINGS_FILE,
    concept_counts,
    load_retriever,
    rank_order_scores,
    save_retriever,
)
from g2cons_plugins.storage.persistence import read_manifest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode

from ._convert import concept_nodes, nodes_to_chunks, resolve_embedder, settings_embedder, tag
from .events import G2ConSConceptPathEvent, dispatcher, listening
from .selector import INDEX_SUBDIR, CoreChunkSelector, drop_empty

RETRIEVER_FILE = SETTINGS_FILE


def resolve_index(
    g2cons_index: G2ConSIndex | None = None,
    selector: CoreChunkSelector | None = None,
    nodes: Sequence[BaseNode] | None = None,
    embedder: Any = None,
    config: G2ConSConfig | None = None,
    skip_empty: bool = False,
) -> G2ConSIndex:
    """The concept graph: given, the selector's (covers every node it saw), or built over ``nodes`` (an empty node
    raises an ``InputError`` naming its document; ``skip_empty``: empty nodes are skipped with a warning)."""
    if g2cons_index is not None:
        return g2cons_index
    if selector is not None:
        return selector.index
    if nodes:
        kept = drop_empty(nodes, skip_empty, "ConceptGraphRetriever")
        if not kept:
            raise InputError("every node given is empty: there is no text to build a concept graph from")
        return G2ConSIndex.build(nodes_to_chunks(kept), embedder=resolve_embedder(embedder), config=config)
    raise InputError("give one of g2cons_index=, selector= (a fitted CoreChunkSelector) or nodes=")


def load_state(
    persist_dir: str | Path, embedder: Any = None, kind: str | None = None
) -> tuple[G2ConSIndex, dict[str, Any]]:
    """The concept graph and the settings saved by ``persist``
    (``g2cons_plugins.pipelines.integration.load_retriever``); an index built with a LlamaIndex embedding model gets
    ``Settings.embed_model`` again unless ``embedder`` is given."""
    d = Path(persist_dir)
    folder = d / INDEX_SUBDIR if (d / INDEX_SUBDIR).is_dir() else d
    if embedder is None and str(read_manifest(folder)["embedder"]["name"]).startswith("llamaindex-"):
        embedder = settings_embedder()  # built with a LlamaIndex model: use Settings.embed_model again
    elif embedder is not None:
        embedder = resolve_embedder(embedder)
    return load_retriever(d, embedder=embedder, kind=kind)


class ConceptGraphRetriever(BaseRetriever):
    """G2ConS concept-path retrieval within ``beta`` tokens (counted on the text the LLM will see). Node ids are
    chunk / sub-chunk ids; ``metadata["g2cons_reason"]`` says why each was retrieved.

    Scores: nodes come in the core's rank order, and ``NodeWithScore.score`` is the rank-order score, the core's
    score capped by every score above it (running minimum, see :func:`rank_order_scores`), so scores never increase
    down the list and a ``SimilarityPostprocessor`` cutoff drops a tail, never a node in the middle. The core's own
    score (seed units first, then bridged ones, so not monotone) is in ``metadata["g2cons_concept_score"]``.

    Args:
        g2cons_index: the concept graph (``CoreChunkSelector.index``, ``G2ConSIndex.build`` or ``load``).
        beta: token budget of the returned context; default ``g2cons_index.config.beta``.
        strategy: concept-path strategy (``"bridge"``, ``"paper"``, ``"ppr"``, ``"dense"``); default the config's.
        similarity_top_k: at most this many nodes (after the budget); ``None``: all that fit in ``beta``.
    """

    def __init__(
        self,
        g2cons_index: G2ConSIndex,
        beta: int | None = None,
        strategy: str | None = None,
        similarity_top_k: int | None = None,
        callback_manager: CallbackManager | None = None,
        objects: list[Any] | None = None,
        object_map: dict[str, Any] | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(g2cons_index, G2ConSIndex):
            raise InputError(f"g2cons_index must be a G2ConSIndex, got {type(g2cons_index).__name__}")
        self._index = g2cons_index
        self.beta = int(g2cons_index.config.beta if beta is None else beta)
        self.strategy = strategy
        self.similarity_top_k = _top_k(similarity_top_k)
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
        similarity_top_k: int | None = None,
        skip_empty: bool = False,
        **kwargs: Any,
    ) -> ConceptGraphRetriever:
        """The concept graph from ``g2cons_index``, a fitted ``selector`` (shared: its inserts show at once) or
        ``nodes`` (built here with ``embedder``, default the core's ``"wordllama"``; ``skip_empty``: skip empty
        nodes with a warning instead of raising)."""
        index = resolve_index(g2cons_index, selector, nodes, embedder, config, skip_empty=skip_empty)
        return cls(index, beta, strategy, similarity_top_k, **kwargs)

    @property
    def index(self) -> G2ConSIndex:
        """The concept graph (same object as ``g2cons_index``)."""
        return self._index

    @property
    def g2cons_index(self) -> G2ConSIndex:
        """The concept graph."""
        return self._index

    def settings(self) -> dict[str, Any]:
        """Every setting of this retriever (what ``persist`` saves and ``from_persist_dir`` restores)."""
        return {"beta": self.beta, "strategy": self.strategy, "similarity_top_k": self.similarity_top_k}

    def concept_path(self, query: str, beta: int | None = None) -> tuple[list[RetrievedItem], Mapping[str, TextNode]]:
        """Core concept retrieval; items re-counted on their LLM-visible text and cut to ``beta`` by the core."""
        beta = self.beta if beta is None else int(beta)
        raw = self._index.retrieve(query, beta=beta, strategy=self.strategy)
        items, nodes = concept_nodes(self._index, raw)
        if any(a.n_tokens != b.n_tokens for a, b in zip(items, raw, strict=True)):
            keep = {f.unit_id for f in fuse([], items, beta=beta, lambda_=0.0, tokenizer=self._index.tokenizer)}
            items = [it for it in items if it.unit_id in keep]
        if listening():
            dispatcher.event(G2ConSConceptPathEvent(query=query, beta=beta, **concept_counts(items)))
        return items, nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        items, nodes = self.concept_path(query_bundle.query_str)
        if self.similarity_top_k is not None:
            items = items[: self.similarity_top_k]
        scores = rank_order_scores([it.score for it in items])
        return [
            tag(nodes[it.unit_id], score, g2cons_source="concept", g2cons_concept_score=it.score)
            for it, score in zip(items, scores, strict=True)
        ]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def persist(self, persist_dir: str | Path) -> None:
        """Save the concept graph (``persist_dir/g2cons_index``) and every setting (``g2cons_retriever.json``)."""
        save_retriever(self._index, persist_dir, "concept", self.settings())

    @classmethod
    def from_persist_dir(cls, persist_dir: str | Path, embedder: Any = None, **kwargs: Any) -> ConceptGraphRetriever:
        """Reload what ``persist`` saved; ``kwargs`` override saved settings."""
        index, state = load_state(persist_dir, embedder, kind="concept")
        kw: dict[str, Any] = {k: state[k] for k in ("beta", "strategy", "similarity_top_k") if k in state}
        return cls(index, **{**kw, **kwargs})



def _top_k(value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"similarity_top_k must be an int >= 1 or None, got {value!r}")
    return value
