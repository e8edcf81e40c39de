"""``G2ConSRetriever``: a host retriever and the concept path, fused by the core's rule (``G2ConSConfig.fusion``:
novel-first fusion by default, the paper's lambda-weighted ensemble in paper mode; ``g2cons_plugins.fusion``)
under beta. The adapter only translates: host nodes -> ``HostItem`` (chunk id, LLM-visible text and its
tokens), concept items -> nodes, fused items -> ``NodeWithScore``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from g2cons_plugins import G2ConSConfig, G2ConSIndex, RetrievedItem, fuse_report
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts.pipelines.integration import check_beta, fusion_counts, resolve_fusion, resolve_rule
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode

from ._convert import concept_node, concept_nodes, host_items, tag
from .concept import ConceptGraphRetriever, _top_k, load_shared, persist_shared, resolve_index
from .events import G2ConSFusionEvent, dispatcher, listening
from .selector import CoreChunkSelector


class G2ConSRetriever(BaseRetriever):
    """Dual-path retrieval: ``host_retriever`` (e.g. ``PropertyGraphIndex.as_retriever(include_text=True)``) plus
    the G2ConS concept path, fused within ``beta`` tokens. Each result has a fused score and
    ``metadata["g2cons_source"]`` in {"host", "concept", "both"}; "both" items come first.

    Args:
        g2cons_index: the concept graph (``CoreChunkSelector.index``, ``G2ConSIndex.build`` or ``load``).
        host_retriever: any LlamaIndex retriever over the host index.
        beta: token budget of the fused context; default ``g2cons_index.config.beta``.
        lambda_: the host's tokens beyond its first novel passage (novel) or its share (share, ensemble) of
            ``beta``; default the config's ``fusion_lambda`` (0.2; paper mode 0.6).
        spill: let one path use the other's unused share; default the config's ``fusion_spill``.
        fusion: "novel" (the default: the concept path's first five passages, the host's first two passages the
            concept path lacks, in a context of 20 passages or more the first from any rank, the rest, the
            spill), "share" (overlap first, then each path's best within its lambda share, then the spill),
            "score" (host chunks as evidence on the concept path's unit scores; lambda_ does not apply) or
            "ensemble" (the paper's; the only one spill applies to); default the config's ``fusion``.
        strategy: concept-path strategy; default the config's.
        similarity_top_k: at most this many fused nodes (after the budget); ``None``: all that fit.
    """

    def __init__(
        self,
        g2cons_index: G2ConSIndex,
        host_retriever: BaseRetriever,
        beta: int | None = None,
        lambda_: float | None = None,
        spill: bool | None = None,
        strategy: str | None = None,
        similarity_top_k: int | None = None,
        fusion: str | None = None,
        callback_manager: CallbackManager | None = None,
        objects: list[Any] | None = None,
        object_map: dict[str, Any] | None = None,
        verbose: bool = False,
    ) -> None:
        self._concept = ConceptGraphRetriever(g2cons_index, beta=beta, strategy=strategy)
        self._host = host_retriever
        fs = resolve_fusion(g2cons_index, check_beta(beta), lambda_, spill)
        self.lambda_, self.spill = fs.lambda_, fs.spill
        self.fusion = resolve_rule(g2cons_index, fusion, strategy)
        self.similarity_top_k = _top_k(similarity_top_k)
        super().__init__(callback_manager=callback_manager, object_map=object_map, objects=objects, verbose=verbose)

    @classmethod
    def from_defaults(
        cls,
        index: Any = None,
        host_retriever: BaseRetriever | None = None,
        g2cons_index: G2ConSIndex | None = None,
        selector: CoreChunkSelector | None = None,
        nodes: Sequence[BaseNode] | None = None,
        embedder: Any = None,
        config: G2ConSConfig | None = None,
        include_text: bool = True,
        **kwargs: Any,
    ) -> G2ConSRetriever:
        """``index``: the host index (default host: ``index.as_retriever(include_text=True)``); the concept graph
        comes from ``g2cons_index``, a fitted ``selector`` (shared: its inserts show at once, and ``persist``
        saves the selector with it) or ``nodes`` (all chunks, dropped ones included)."""
        out = cls(
            resolve_index(g2cons_index, selector, nodes, embedder, config),
            _host(index, host_retriever, include_text),
            **kwargs,
        )
        out._concept._selector = selector if g2cons_index is None else None
        return out

    @property
    def index(self) -> G2ConSIndex:
        """The concept graph (same object as ``g2cons_index``; the host index is not held here)."""
        return self._concept.index

    @property
    def g2cons_index(self) -> G2ConSIndex:
        """The concept graph."""
        return self._concept.index

    @property
    def beta(self) -> int:
        """Token budget of the fused context."""
        return self._concept.beta

    @property
    def strategy(self) -> str | None:
        """Concept-path strategy (None: the config's)."""
        return self._concept.strategy

    @property
    def selector(self) -> CoreChunkSelector | None:
        """The selector whose concept graph this retriever reads (``from_defaults(selector=...)`` or
        ``from_persist_dir``), or None."""
        return self._concept.selector

    @property
    def concept_retriever(self) -> ConceptGraphRetriever:
        """The concept path alone."""
        return self._concept

    @property
    def host_retriever(self) -> BaseRetriever:
        """The host retriever."""
        return self._host

    def settings(self) -> dict[str, Any]:
        """Every setting of this retriever (what ``persist`` saves and ``from_persist_dir`` restores)."""
        return {
            "beta": self.beta,
            "lambda_": self.lambda_,
            "spill": self.spill,
            "strategy": self.strategy,
            "similarity_top_k": self.similarity_top_k,
            "fusion": self.fusion,
        }

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {"host_retriever": self._host}

    def _fuse(
        self, query: str, host: list[NodeWithScore], items: list[RetrievedItem], nodes: Mapping[str, TextNode]
    ) -> list[NodeWithScore]:
        idx = self.index
        fusion = fuse_report(
            idx,
            host_items(host, idx),
            query,
            self.beta,
            self.lambda_,
            self.spill,
            concept=items,
            strategy=self.strategy,
            rule=self.fusion,
            recount=lambda its: concept_nodes(idx, its)[0],  # tokens as the LLM sees them (metadata rendered)
        )
        fused = fusion.items
        if self.similarity_top_k is not None:
            fused = fused[: self.similarity_top_k]
        if listening():
            counts = fusion_counts(len(host), items, fused)
            dispatcher.event(
                G2ConSFusionEvent(
                    query=query,
                    beta=self.beta,
                    lambda_=self.lambda_,
                    rule=fusion.rule,
                    host_dropped=sum(fusion.dropped.values()),
                    host_dropped_reasons=dict(fusion.dropped),
                    **counts,
                )
            )
        out = []
        for f in fused:
            meta: dict[str, Any] = {
                "g2cons_source": f.source,
                "g2cons_chunk_id": f.chunk_id,
                "g2cons_unit_id": f.unit_id,
                "g2cons_host_score": None if f.host is None else f.host.score,
                "g2cons_concept_score": None if f.concept is None else f.concept.score,
            }
            if f.concept is not None:
                meta["g2cons_reason"] = dict(f.concept.reason)
            base: NodeWithScore | BaseNode
            if f.host is not None and (f.concept is None or fusion.rule == "ensemble"):
                base = host[f.host.metadata["position"]]  # the host's own node: its text is the item's
            else:  # a unit of ours (score fusion places our units of a host chunk, not the host's text)
                assert f.concept is not None and f.unit_id is not None
                base = nodes[f.unit_id] if f.unit_id in nodes else concept_node(idx, f.concept)
            out.append(tag(base, f.score, **meta))
        return out

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        host = self._host.retrieve(query_bundle)
        items, nodes = self._concept.concept_path(query_bundle.query_str)
        return self._fuse(query_bundle.query_str, host, items, nodes)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        host, (items, nodes) = await asyncio.gather(
            self._host.aretrieve(query_bundle),
            asyncio.to_thread(self._concept.concept_path, query_bundle.query_str),
        )
        return self._fuse(query_bundle.query_str, host, items, nodes)

    def persist(self, persist_dir: str | Path) -> None:
        """Save into ``persist_dir`` (the folder of the host's ``storage_context.persist``: the files sit beside
        LlamaIndex's): the concept graph (``g2cons_index/``), the selector's decisions (``g2cons_selector.json``,
        when the retriever reads a selector's graph) and every setting (``g2cons_retriever.json``). The host index
        persists through its own ``StorageContext``."""
        persist_shared(self.index, self.selector, persist_dir, "g2cons", self.settings())

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | Path,
        index: Any = None,
        host_retriever: BaseRetriever | None = None,
        embedder: Any = None,
        include_text: bool = True,
        selector: CoreChunkSelector | None = None,
        **kwargs: Any,
    ) -> G2ConSRetriever:
        """Reload next to a host index loaded with ``load_index_from_storage`` (pass it as ``index``); ``kwargs``
        override saved settings.

        One concept graph for the selector and the retriever: the ``selector``'s when given
        (``CoreChunkSelector.from_persist_dir(persist_dir)``), else the selector saved in ``persist_dir`` (loaded
        once; ``retriever.selector``). Either way the selector tracks ``index``, so ``index.insert(doc)`` and
        ``index.delete_ref_doc(id)`` change the graph this retriever reads, and a selector loaded from
        ``persist_dir`` saves every change back there."""
        g2, state, sel = load_shared(persist_dir, "g2cons", selector, embedder, index)
        names = ("beta", "lambda_", "spill", "strategy", "similarity_top_k", "fusion")
        kw: dict[str, Any] = {k: state[k] for k in names if k in state}
        out = cls(g2, _host(index, host_retriever, include_text), **{**kw, **kwargs})
        out._concept._selector = sel
        return out


def _host(index: Any, host_retriever: BaseRetriever | None, include_text: bool) -> BaseRetriever:
    if host_retriever is not None:
        return host_retriever
    if index is None:
        raise InputError("give the host index (index=...) or a host_retriever=...")
    return index.as_retriever(include_text=include_text)
