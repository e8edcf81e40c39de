"""G2ConS retrievers for LangChain: the concept path alone, and the concept path fused with any host retriever.

Both only translate: the core's ``G2ConSIndex.retrieve`` does the concept path, ``g2cons_plugins.fusion.fuse_report``
the Weighted Context Ensemble (beta budget, lambda share, overlapping items first, id matching before text).
Scores go to ``metadata["relevance_score"]`` on new ``Document``s; host documents are never mutated.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from g2cons_plugins import FusedItem, G2ConSIndex, InputError, RetrievedItem, fuse_report
from g2cons_plugins.errors import PersistError
from g2cons_plugins.hosts.pipelines.integration import (
    DEFAULT_EMBEDDER,
    SETTINGS_FILE,
    check_beta,
    concept_counts,
    fusion_counts,
    load_retriever,
    rank_order_scores,
    read_settings,
    resolve_fusion,
    save_retriever,
)
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, field_validator

from ._convert import (
    DEFAULT_ID_KEY,
    assign_ids,
    concept_document,
    drop_empty,
    fused_document,
    to_chunks,
    to_host_items,
)
from ._holder import ConceptGraphHolder
from .embeddings import as_core_embedder

CONCEPT_EVENT = "g2cons_concept_path"
FUSION_EVENT = "g2cons_fusion"


def _trace(run_manager: CallbackManagerForRetrieverRun, name: str, data: dict[str, Any]) -> None:
    """A LangChain custom event on this retriever run (``on_custom_event`` handlers, ``astream_events``)."""
    run_manager.get_child().on_custom_event(name, data, run_id=run_manager.run_id)


async def _atrace(run_manager: AsyncCallbackManagerForRetrieverRun, name: str, data: dict[str, Any]) -> None:
    await run_manager.get_child().on_custom_event(name, data, run_id=run_manager.run_id)



class _IndexRetriever(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: G2ConSIndex
    """The concept graph (from ``CoreChunkSelector.index``, ``G2ConSIndex.build`` or ``load``)."""
    beta: int | None = None
    """Token budget of the returned context; default ``index.config.beta``."""
    strategy: str | None = None
    """Concept-path strategy (``"bridge"``, ``"paper"``, ``"ppr"``, ``"dense"``); default ``index.config.strategy``."""
    k: int | None = Field(default=None, ge=1)
    """At most this many documents (after the budget); ``None``: all that fit in beta."""
    id_key: str | None = DEFAULT_ID_KEY
    """Metadata key holding the chunk id (as written by ``CoreChunkSelector``); also written by ``add_documents``."""

    @field_validator("beta", mode="before")
    @classmethod
    def _check_beta(cls, v: Any) -> int | None:
        return check_beta(v)  # the core's one check: a whole number of tokens >= 1 (2.5, "x", 0, -5 refused)

    def _chunk_metadata(self, chunk_id: str | None) -> dict[str, Any]:
        if chunk_id is None:
            return {}
        try:
            return dict(self.index.chunk(chunk_id).metadata)
        except InputError:
            return {}

    def _concept(self, query: str, beta: int | None) -> list[RetrievedItem]:
        b = self.beta if beta is None else check_beta(beta)
        return list(self.index.retrieve(query, beta=b, strategy=self.strategy))

    def _concept_data(self, query: str, beta: int | None, items: list[RetrievedItem]) -> dict[str, Any]:
        b = resolve_fusion(self.index, self.beta if beta is None else beta).beta
        return {"query": query, "beta": b, **concept_counts(items)}

    def add_documents(self, documents: Sequence[Document], *, skip_empty: bool = False, **kwargs: Any) -> list[str]:
        """Add documents to the concept graph (``G2ConSIndex.add``; nothing known is re-embedded) and return their
        ids (``Document.id``, else ``metadata[id_key]``, else the content hash, as ``CoreChunkSelector`` gives).
        A known id is replaced when its text changed and skipped when it did not (vector-store upsert semantics).
        Queries see the new documents at once. A host retriever keeps its own store: add them there too. An empty
        document raises an ``InputError`` naming it; ``skip_empty``: empty ones are skipped (one warning)."""
        docs = assign_ids(drop_empty(documents, skip_empty, type(self).__name__), self.id_key)
        known = [d for d in docs if self._known(str(d.id))]
        changed = [str(d.id) for d in known if self.index.chunk(str(d.id)).text != d.page_content]
        if changed:
            self.index.remove(changed)
        skip = {str(d.id) for d in known} - set(changed)
        new = [d for d in docs if str(d.id) not in skip]
        if new:
            self.index.add(to_chunks(new))
        return [str(d.id) for d in docs]

    def delete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> bool:
        """Remove chunks by id from the concept graph (ids it does not hold are ignored); True if any was removed.
        ``ids=None`` is refused (it would empty the graph)."""
        if ids is None:
            raise InputError("delete(ids=None) would remove every chunk: pass the ids to delete")
        gone = [i for i in dict.fromkeys(str(x) for x in ids) if self._known(i)]
        if gone:
            self.index.remove(gone)
        return bool(gone)

    def _known(self, chunk_id: str) -> bool:
        try:
            self.index.chunk(chunk_id)
        except InputError:
            return False
        return True

    _kind: ClassVar[str] = ""
    _settings: ClassVar[tuple[str, ...]] = ("beta", "strategy", "k", "id_key")

    def settings(self) -> dict[str, Any]:
        """Every setting of this retriever (what ``save`` writes and ``load`` restores)."""
        return {name: getattr(self, name) for name in self._settings}

    def save(self, path: str | Path) -> None:
        """Save the concept graph (``path/g2cons_index``) and every setting (``path/g2cons_retriever.json``),
        both atomically; ``load(path)`` restores an equal retriever."""
        save_retriever(self.index, path, self._kind, self.settings())

    @classmethod
    def _load_parts(cls, path: str | Path, embedder: Any, selector: Any = None) -> tuple[G2ConSIndex, dict[str, Any]]:
        """The concept graph and saved settings: the ``selector``'s graph when one is given (one graph for the
        selector and the retriever: its ``add_documents`` / ``delete`` show at once), else the graph saved in
        ``path``."""
        if selector is None:
            emb = None if embedder is None else as_core_embedder(embedder)
            index, settings = load_retriever(path, embedder=emb, kind=cls._kind)
        else:
            if not isinstance(selector, ConceptGraphHolder):
                got = type(selector).__name__
                raise InputError(f"selector must be a langchain_g2cons.CoreChunkSelector, got {got}")
            kind, settings = read_settings(path)
            if kind is not None and kind != cls._kind:
                f = Path(path) / SETTINGS_FILE
                raise PersistError(f"{f}: saved by a {kind!r} retriever, not a {cls._kind!r} one")
            index = selector._require_index()
        return index, {k: v for k, v in settings.items() if k in cls._settings}


class ConceptGraphRetriever(_IndexRetriever):
    """The G2ConS concept path alone: units (sub-chunks of at most ``unit_tokens``) within ``beta`` tokens.

    Each result is ``Document(id=<chunk id>, page_content=<unit text>, metadata={<chunk metadata>,
    "relevance_score": float, "g2cons_concept_score": float, "g2cons_reason": {...}, "g2cons_chunk_id",
    "g2cons_unit_id", "g2cons_n_tokens"})``, in the core's rank order. Several units of one chunk share the chunk
    id; ``g2cons_unit_id`` tells them apart.

    Scores: ``relevance_score`` is the rank-order score, the core's score capped by every score above it (running
    minimum, :func:`rank_order_scores`), so it never increases down the list and a score threshold drops a tail,
    never a document in the middle. The core's own score (seed units first, then bridged ones, so not monotone) is
    ``g2cons_concept_score``.
    Per-call overrides: ``invoke(q, k=3)``, ``invoke(q, beta=2000)``.
    """

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        *,
        embedder: Any = DEFAULT_EMBEDDER,
        config: Any = None,
        skip_empty: bool = False,
        **kwargs: Any,
    ) -> ConceptGraphRetriever:
        """Build the concept graph over ``documents`` (ids as in ``CoreChunkSelector``) without selecting. An empty
        document raises an ``InputError`` naming it; ``skip_empty``: empty ones are skipped (one warning)."""
        docs = assign_ids(drop_empty(documents, skip_empty, cls.__name__))
        index = G2ConSIndex.build(to_chunks(docs), embedder=as_core_embedder(embedder), config=config)
        return cls(index=index, **kwargs)

    _kind: ClassVar[str] = "concept"

    @classmethod
    def load(
        cls, path: str | Path, *, embedder: Any = None, selector: Any = None, **kwargs: Any
    ) -> ConceptGraphRetriever:
        """Load what ``save`` wrote (or a bare index directory, or a ``CoreChunkSelector.save`` folder);
        ``kwargs`` override saved settings. ``embedder`` defaults to the built-in one it was built with (pass the
        same LangChain ``Embeddings`` if it was built with one). ``selector``: a loaded ``CoreChunkSelector``
        whose concept graph this retriever reads (one graph for both)."""
        index, settings = cls._load_parts(path, embedder, selector)
        return cls(index=index, **{**settings, **kwargs})

    def _to_documents(self, items: list[RetrievedItem], k: int | None) -> list[Document]:
        limit = self.k if k is None else k
        items = items if limit is None else items[:limit]
        scores = rank_order_scores([it.score for it in items])
        return [
            concept_document(
                it, self._chunk_metadata(it.parent_id), {"relevance_score": s, "g2cons_concept_score": float(it.score)}
            )
            for it, s in zip(items, scores, strict=True)
        ]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        beta: int | None = None,
    ) -> list[Document]:
        items = self._concept(query, beta)
        if run_manager.handlers:
            _trace(run_manager, CONCEPT_EVENT, self._concept_data(query, beta, items))
        return self._to_documents(items, k)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        beta: int | None = None,
    ) -> list[Document]:
        items = await run_in_executor(None, self._concept, query, beta)
        if run_manager.handlers:
            await _atrace(run_manager, CONCEPT_EVENT, self._concept_data(query, beta, items))
        return self._to_documents(items, k)


class G2ConSRetriever(_IndexRetriever):
    """A host retriever (any ``BaseRetriever``: a graph retriever, a Neo4j retriever, a vector store ...) plus the
    concept path, fused under ``beta`` tokens by the config's rule (``fusion``; novel-first by default, the paper's
    Weighted Context Ensemble in paper mode; ``lambda_`` as that rule reads it).

    Each result carries ``metadata["relevance_score"]`` (the fused score) and ``metadata["g2cons_source"]`` in
    ``{"host", "concept", "both"}``. Host documents match concept units by chunk id:
    ``metadata[id_key]``, else ``Document.id`` if the index knows it, else (no id) by text. Host-sourced results
    keep the host's text and metadata (a host score moves to ``g2cons_host_score``). ``ainvoke`` runs the host and
    the concept path concurrently. Host texts are counted with the index's tokenizer (tiktoken, offline).
    Per-call overrides: ``invoke(q, k=..., beta=..., lambda_=...)``.
    """

    host: BaseRetriever
    """The host retriever (its own ``k``/search settings decide how many host documents compete)."""
    lambda_: float | None = None
    """The host's tokens beyond its first novel passage (novel) or its share (share, ensemble) of ``beta``; default
    the config's ``fusion_lambda`` (0.2; paper mode 0.6)."""
    spill: bool | None = None
    """Let one path use the other's unused share (still within beta); default ``index.config.fusion_spill`` (True; paper
    mode False)."""
    fusion: Literal["share", "score", "ensemble", "novel"] | None = None
    """"novel" (the default: the host's first two passages the concept path lacks displace its tail, behind its
    first five; in a context of 20 passages or more the first from any rank), "share" (overlap first, then each
    path's best within its lambda share, then the spill), "score" (host chunks as evidence on the concept path's
    unit scores; lambda does not apply) or "ensemble" (the paper's; the only one ``spill`` applies to); default
    ``index.config.fusion``."""

    @field_validator("lambda_")
    @classmethod
    def _check_lambda(cls, v: float | None) -> float | None:
        if v is not None and not 0.0 <= v <= 1.0:
            raise ValueError(f"lambda_ must be in [0, 1], got {v}")
        return v

    _kind: ClassVar[str] = "g2cons"
    _settings: ClassVar[tuple[str, ...]] = ("beta", "strategy", "k", "id_key", "lambda_", "spill", "fusion")

    @classmethod
    def load(
        cls, path: str | Path, *, host: BaseRetriever, embedder: Any = None, selector: Any = None, **kwargs: Any
    ) -> G2ConSRetriever:
        """Load what ``save`` wrote and wrap ``host`` (the host persists through its own store); ``kwargs``
        override saved settings. ``selector``: a loaded ``CoreChunkSelector`` (``CoreChunkSelector.load(path)``)
        whose concept graph this retriever reads, so the documents it adds are retrieved at once."""
        index, settings = cls._load_parts(path, embedder, selector)
        return cls(index=index, host=host, **{**settings, **kwargs})

    def _fuse(
        self,
        query: str,
        host_docs: list[Document],
        concept: list[RetrievedItem],
        k: int | None,
        beta: int | None,
        lambda_: float | None,
        traced: bool = False,
    ) -> tuple[list[Document], dict[str, Any]]:
        kept = [d for d in host_docs if d.page_content.strip() or d.id or (self.id_key and d.metadata.get(self.id_key))]
        if len(kept) < len(host_docs):
            warnings.warn(
                f"{len(host_docs) - len(kept)} host document(s) with neither text nor id ignored", stacklevel=3
            )
        items = to_host_items(kept, self.id_key, self._known)
        by_item = {id(h): d for h, d in zip(items, kept, strict=True)}
        fs = resolve_fusion(
            self.index,
            self.beta if beta is None else beta,
            self.lambda_ if lambda_ is None else lambda_,
            self.spill,
        )
        fusion = fuse_report(
            self.index,
            items,
            query,
            fs.beta,
            fs.lambda_,
            fs.spill,
            concept=concept,
            strategy=self.strategy,
            rule=self.fusion,
        )
        fused: list[FusedItem] = fusion.items
        limit = self.k if k is None else k
        if limit is not None:
            fused = fused[:limit]
        docs = []
        for f in fused:
            host_doc = by_item.get(id(f.host)) if f.host is not None else None
            # a host document keeps its own metadata: the chunk's is only looked up for concept-only items
            docs.append(fused_document(f, host_doc, {} if host_doc is not None else self._chunk_metadata(f.chunk_id)))
        if not traced:
            return docs, {}
        return docs, {
            "beta": fs.beta,
            "lambda_": fs.lambda_,
            "rule": fusion.rule,
            "host_dropped": sum(fusion.dropped.values()),
            "host_dropped_reasons": dict(fusion.dropped),
            **fusion_counts(len(kept), concept, fused),
        }

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        beta: int | None = None,
        lambda_: float | None = None,
    ) -> list[Document]:
        host_docs = self.host.invoke(query, config={"callbacks": run_manager.get_child()})
        concept = self._concept(query, beta)
        docs, data = self._fuse(query, host_docs, concept, k, beta, lambda_, traced=bool(run_manager.handlers))
        if run_manager.handlers:
            _trace(run_manager, CONCEPT_EVENT, self._concept_data(query, beta, concept))
            _trace(run_manager, FUSION_EVENT, {"query": query, **data})
        return docs

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        beta: int | None = None,
        lambda_: float | None = None,
    ) -> list[Document]:
        host_docs, concept = await asyncio.gather(
            self.host.ainvoke(query, config={"callbacks": run_manager.get_child()}),
            run_in_executor(None, self._concept, query, beta),
        )
        docs, data = self._fuse(query, host_docs, concept, k, beta, lambda_, traced=bool(run_manager.handlers))
        if run_manager.handlers:
            await _atrace(run_manager, CONCEPT_EVENT, self._concept_data(query, beta, concept))
            await _atrace(run_manager, FUSION_EVENT, {"query": query, **data})
        return docs
