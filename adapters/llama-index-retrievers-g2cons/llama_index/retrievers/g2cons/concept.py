"""``ConceptGraphRetriever``: the concept path alone (the paper's G2ConS-Concept) as a LlamaIndex retriever."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from g2cons_plugins import G2ConSConfig, G2ConSIndex, RetrievedItem, fuse
from g2cons_plugins.errors import InputError, PersistError
from g2cons_plugins.hosts.pipelines.integration import (
    SETTINGS_FILE,
    check_beta,
    concept_counts,
    load_retriever,
    rank_order_scores,
    read_settings,
    save_retriever,
    save_settings,
    saved_embedder_name,
)
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode

from ._convert import concept_nodes, nodes_to_chunks, resolve_embedder, settings_embedder, tag
from .events import G2ConSConceptPathEvent, dispatcher, listening
from .selector import INDEX_SUBDIR, SELECTOR_FILE, CoreChunkSelector, drop_empty

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
    (``g2cons_plugins.hosts.pipelines.integration.load_retriever``); an index built with a LlamaIndex embedding model
    gets ``Settings.embed_model`` again unless ``embedder`` is given."""
    d = Path(persist_dir)
    folder = d / INDEX_SUBDIR if (d / INDEX_SUBDIR).is_dir() else d
    if embedder is None and saved_embedder_name(folder).startswith("llamaindex-"):
        embedder = settings_embedder()  # built with a LlamaIndex model: use Settings.embed_model again
    elif embedder is not None:
        embedder = resolve_embedder(embedder)
    return load_retriever(d, embedder=embedder, kind=kind)


def load_shared(
    persist_dir: str | Path,
    kind: str,
    selector: CoreChunkSelector | None = None,
    embedder: Any = None,
    index: Any = None,
) -> tuple[G2ConSIndex, dict[str, Any], CoreChunkSelector | None]:
    """What a retriever's ``from_persist_dir`` loads: ``(concept graph, saved settings, selector)``.

    One concept graph for the selector and the retriever, as LlamaIndex keeps one ``StorageContext`` for an
    index and its retrievers: the graph of the ``selector`` given (``CoreChunkSelector.from_persist_dir``), else
    of the selector saved in ``persist_dir`` beside the settings (``g2cons_selector.json``, written by the
    retriever's ``persist``: loaded once here), else the graph saved there alone. A selector found here tracks the
    host ``index`` when one is given (``CoreChunkSelector.track``), so ``index.insert`` / ``delete_ref_doc`` reach
    the graph the retriever reads."""
    d = Path(persist_dir)
    if selector is None and (d / SELECTOR_FILE).is_file():
        selector = CoreChunkSelector.from_persist_dir(d, embedder=embedder)
    if selector is None:
        g2, state = load_state(d, embedder, kind=kind)
        return g2, state, None
    if not isinstance(selector, CoreChunkSelector):
        raise InputError(f"selector must be a CoreChunkSelector, got {type(selector).__name__}")
    saved_kind, state = read_settings(d)
    if saved_kind is not None and saved_kind != kind:
        raise PersistError(f"{d / SETTINGS_FILE}: saved by a {saved_kind!r} retriever, not a {kind!r} one")
    g2 = selector.index  # raises, naming the fix, for a selector that never ran
    if index is not None:
        selector.track(index)
    return g2, state, selector


def persist_shared(
    g2cons_index: G2ConSIndex,
    selector: CoreChunkSelector | None,
    persist_dir: str | Path,
    kind: str,
    settings: dict[str, Any],
) -> None:
    """Save a retriever: its selector (concept graph and decisions, ``CoreChunkSelector.persist``) when it reads
    that selector's graph, else the graph alone; then the settings (``g2cons_retriever.json``)."""
    if selector is not None and selector._index is g2cons_index:
        selector.persist(persist_dir)
        save_settings(persist_dir, kind, settings)
    else:
        save_retriever(g2cons_index, persist_dir, kind, settings)


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
        self._selector: CoreChunkSelector | None = None
        self.beta = int(g2cons_index.config.beta if beta is None else check_beta(beta))  # type: ignore[arg-type]
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
        out = cls(index, beta, strategy, similarity_top_k, **kwargs)
        out._selector = selector if g2cons_index is None else None
        return out

    @property
    def index(self) -> G2ConSIndex:
        """The concept graph (same object as ``g2cons_index``)."""
        return self._index

    @property
    def g2cons_index(self) -> G2ConSIndex:
        """The concept graph."""
        return self._index

    @property
    def selector(self) -> CoreChunkSelector | None:
        """The selector whose concept graph this retriever reads (``from_defaults(selector=...)`` or
        ``from_persist_dir``), or None."""
        return self._selector

    def settings(self) -> dict[str, Any]:
        """Every setting of this retriever (what ``persist`` saves and ``from_persist_dir`` restores)."""
        return {"beta": self.beta, "strategy": self.strategy, "similarity_top_k": self.similarity_top_k}

    def concept_path(self, query: str, beta: int | None = None) -> tuple[list[RetrievedItem], Mapping[str, TextNode]]:
        """Core concept retrieval; items re-counted on their LLM-visible text and cut to ``beta`` by the core."""
        beta = self.beta if beta is None else check_beta(beta)
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
        """Save the concept graph (``persist_dir/g2cons_index``; with the selector's decisions in
        ``g2cons_selector.json`` when built from a selector) and every setting (``g2cons_retriever.json``)."""
        persist_shared(self._index, self._selector, persist_dir, "concept", self.settings())

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | Path,
        embedder: Any = None,
        selector: CoreChunkSelector | None = None,
        **kwargs: Any,
    ) -> ConceptGraphRetriever:
        """Reload what ``persist`` saved; ``kwargs`` override saved settings. The concept graph is the
        ``selector``'s when one is given (one graph for both, inserts included), else the selector's saved in
        ``persist_dir``, else the graph saved alone (:func:`load_shared`)."""
        index, state, sel = load_shared(persist_dir, "concept", selector, embedder)
        kw: dict[str, Any] = {k: state[k] for k in ("beta", "strategy", "similarity_top_k") if k in state}
        out = cls(index, **{**kw, **kwargs})
        out._selector = sel
        return out



def _top_k(value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"similarity_top_k must be an int >= 1 or None, got {value!r}")
    return value
