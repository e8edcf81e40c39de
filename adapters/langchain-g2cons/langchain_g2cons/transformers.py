"""``CoreChunkSelector``: G2ConS core-chunk selection as a LangChain document transformer.

Place it between a text splitter and ``LLMGraphTransformer``::

    chunks = splitter.split_documents(docs)
    selector = CoreChunkSelector(kappa=0.8)
    core = selector.transform_documents(chunks)           # the top kappa share, input order, stable ids
    graph_docs = LLMGraphTransformer(llm=llm).convert_to_graph_documents(core)
    concept = selector.as_retriever()                     # the concept graph covers *all* chunks

The concept graph is built over every input document; only the selected ones are returned, so only they cost
extraction calls. The dropped ones stay retrievable through :class:`ConceptGraphRetriever` /
:class:`G2ConSRetriever` over ``selector.index``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal

from g2cons_plugins import G2ConSConfig, G2ConSIndex, InputError, SelectionReport
from g2cons_plugins.errors import PersistError
from g2cons_plugins.hosts.pipelines.integration import (
    DEFAULT_EMBEDDER,
    INDEX_SUBDIR,
    add_and_select,
    atomic_write_text,
    selection_counts,
)
from g2cons_plugins.hosts.pipelines.overlap import warn_if_overlapping
from g2cons_plugins.hosts.pipelines.param_types import NonNegativeFloat, NonNegativeInt, Share
from g2cons_plugins.hosts.pipelines.prices import EXTRACTION_PROMPT_TOKENS
from langchain_core.callbacks import Callbacks
from langchain_core.callbacks.manager import CallbackManager
from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, validate_call

from ._convert import DEFAULT_ID_KEY, assign_ids, drop_empty, to_chunks
from ._holder import ConceptGraphHolder
from .embeddings import as_core_embedder
from .retrievers import ConceptGraphRetriever

SELECTION_EVENT = "g2cons_selection"
SELECTOR_FILE = "g2cons_selector.json"
_SAVED = ("kappa", "kappa_by", "selector", "id_key", "price_per_mtok", "prompt_tokens_per_call", "skip_empty")


def _trace(callbacks: Callbacks, data: dict[str, Any]) -> None:
    """A LangChain custom event ``g2cons_selection`` to ``callbacks`` (a transformer is not a run: no parent)."""
    if callbacks:
        CallbackManager.configure(inheritable_callbacks=callbacks).on_custom_event(SELECTION_EVENT, data)


class CoreChunkSelector(BaseDocumentTransformer, ConceptGraphHolder):
    """Keep the top ``kappa`` share of documents (G2ConS core chunks); build the concept graph over all of them.

    Ids: every output document carries a stable id in ``Document.id`` and in ``metadata[id_key]``: its own
    ``Document.id`` when set, else ``metadata[id_key]``, else ``"h:" + sha1(page_content)[:16]`` (``#k`` appended to
    the k-th repeat of the same text). Text splitters drop ``Document.id``, so chunks get content-hash ids that are
    the same on every run. Documents are copied, never mutated; the output keeps input order.

    Args:
        kappa: share of the corpus to keep (of tokens or chunks, see ``kappa_by``); default ``config.kappa`` (0.8).
        kappa_by: ``"tokens"`` or ``"chunks"``; default ``config.selection.kappa_by``.
        selector: the core's selector name (``"coverage"``, ``"pagerank"``, ...); default ``config.selector``.
        embedder: ``"auto"`` (core default: wordllama, multilingual for non-English text), ``"wordllama"``,
            ``"minilm"``, ``"hash"``, a core ``Embedder`` or any LangChain ``Embeddings``.
        config: a ``G2ConSConfig`` (beta, lambda and retrieval settings travel with the index).
        tokenizer: the core's tokenizer spec (default: bundled tiktoken ``cl100k_base``).
        cache_dir: embedding cache directory (content-hash keyed; re-runs embed nothing known).
        id_key: metadata key for the id (``None``: only ``Document.id``). Use ``"id"`` for hosts such as
            ``Neo4jGraph.add_graph_documents(include_source=True)`` that key source documents on ``metadata["id"]``.
        price_per_mtok: for the cost line of ``report.summary()``; prompt_tokens_per_call: the extraction prompt's
        tokens per chunk (kappa by tokens is a share of chunk + prompt tokens; also in the cost line); default
        ``LLMGraphTransformer``'s own prompt (426 tokens, ``EXTRACTION_PROMPT_TOKENS["langchain"]``).
        skip_empty: drop documents whose text is empty or whitespace only, counted in one warning; by default such
            a document raises an ``InputError`` naming it (position, ``metadata["source"]``, its own id).
        show_progress: progress bars for the concept-graph build.

    The arguments are checked here, by pydantic (``kappa`` in [0, 1], ``kappa_by`` "tokens" or "chunks",
    ``price_per_mtok`` and ``prompt_tokens_per_call`` >= 0): a bad value raises a ``pydantic.ValidationError``
    (a ``ValueError``) naming the parameter before any document is read.

    After a call: ``index`` (the ``G2ConSIndex``), ``report`` (the ``SelectionReport``), ``documents`` (all
    inputs with ids), ``kept_ids`` (every id returned so far). New documents later: ``add_documents(docs)``
    returns the kept new ones (same selection rule); ``delete(ids)`` removes documents from the concept graph.
    """

    @validate_call(config=ConfigDict(arbitrary_types_allowed=True))
    def __init__(
        self,
        kappa: Share | None = None,
        *,
        kappa_by: Literal["tokens", "chunks"] | None = None,
        selector: str | None = None,
        embedder: Any = DEFAULT_EMBEDDER,
        config: G2ConSConfig | None = None,
        tokenizer: Any = None,
        cache_dir: str | Path | None = None,
        id_key: str | None = DEFAULT_ID_KEY,
        price_per_mtok: NonNegativeFloat = 0.15,
        prompt_tokens_per_call: NonNegativeInt | None = None,
        show_progress: bool = False,
        skip_empty: bool = False,
    ) -> None:
        self.kappa = kappa
        self.kappa_by = kappa_by
        self.selector = selector
        self.embedder = as_core_embedder(embedder)
        self.config = config or G2ConSConfig()
        self.tokenizer = tokenizer
        self.cache_dir = cache_dir
        self.id_key = id_key
        self.price_per_mtok = price_per_mtok
        # not given: LLMGraphTransformer's default prompt, sent with every chunk (the cost and kappa by tokens)
        self.prompt_tokens_per_call = (
            EXTRACTION_PROMPT_TOKENS["langchain"] if prompt_tokens_per_call is None else prompt_tokens_per_call
        )
        self.show_progress = show_progress
        self.skip_empty = skip_empty
        self.index: G2ConSIndex | None = None
        self.report: SelectionReport | None = None
        self.documents: list[Document] = []
        self.kept_ids: frozenset[str] = frozenset()

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """Return the selected documents (copies with ids, input order). ``kwargs`` may override ``kappa``,
        ``kappa_by`` and ``selector`` for this call; ``callbacks=[handler]`` gets a ``g2cons_selection`` custom
        event with the counts and tokens kept and dropped. An empty document raises an ``InputError`` naming it,
        or is dropped (one warning) with ``skip_empty``."""
        if not documents:
            return []  # nothing to select (as the LlamaIndex selector); the index stays as it was
        with_text = drop_empty(documents, self.skip_empty, "CoreChunkSelector")
        if not with_text:
            raise InputError(f"CoreChunkSelector: all {len(documents)} documents are empty: there is no text to select")
        docs = assign_ids(with_text, self.id_key)
        warn_if_overlapping([d.page_content for d in docs], "CoreChunkSelector")  # a splitter's chunk_overlap
        self.index = G2ConSIndex.build(
            to_chunks(docs),
            embedder=self.embedder,
            config=self.config,
            tokenizer=self.tokenizer,
            cache_dir=self.cache_dir,
            show_progress=self.show_progress,
        )
        self.report = self.index.select(
            kappa=kwargs.get("kappa", self.kappa),
            kappa_by=kwargs.get("kappa_by", self.kappa_by),
            selector=kwargs.get("selector", self.selector),
            price_per_mtok=self.price_per_mtok,
            prompt_tokens_per_call=self.prompt_tokens_per_call,
        )
        # the core collapses an id given twice with the same text; keep the first document of each id
        first: dict[str, Document] = {}
        for d in docs:
            first.setdefault(str(d.id), d)
        self.documents = list(first.values())
        kept = set(self.report.kept_ids)
        self.kept_ids = frozenset(kept)
        _trace(kwargs.get("callbacks"), {**selection_counts(self.report, len(docs)), "n_chunks": len(self.documents)})
        return [d for d in self.documents if d.id in kept]

    def add_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[Document]:
        """Decide on new documents after a first ``transform_documents``: they join the concept graph
        (``G2ConSIndex.add``, nothing known re-embedded) and the same selection (same kappa, kappa_by, selector)
        is re-run over the whole corpus; a new document is kept iff it is in the new top-kappa set
        (``g2cons_plugins.hosts.pipelines.integration``). Returns the kept new documents (send only these to the
        extractor); documents whose id is already known are skipped. Earlier decisions are not revisited; ``report``
        becomes the latest full selection and ``kept_ids`` lists everything returned so far. Before any
        ``transform_documents`` this is ``transform_documents``."""
        if self.index is None:
            return list(self.transform_documents(documents, **kwargs))
        docs = assign_ids(drop_empty(documents, self.skip_empty, "CoreChunkSelector"), self.id_key)
        known = {str(d.id) for d in self.documents}
        new = list({str(d.id): d for d in docs if str(d.id) not in known}.values())
        if not new:
            return []
        decision = add_and_select(
            self.index,
            to_chunks(new),
            kappa=kwargs.get("kappa", self.kappa),
            kappa_by=kwargs.get("kappa_by", self.kappa_by),
            selector=kwargs.get("selector", self.selector),
            price_per_mtok=self.price_per_mtok,
            prompt_tokens_per_call=self.prompt_tokens_per_call,
            show_progress=self.show_progress,
        )
        self.report = decision.report
        self.documents = self.documents + new
        kept = set(decision.kept_ids)
        self.kept_ids = self.kept_ids | kept
        _trace(kwargs.get("callbacks"), decision.counts(len(self.documents)))
        return [d for d in new if d.id in kept]

    def dropped_documents(self) -> list[Document]:
        """The documents this selector held back (every document it holds that it never returned), in the order
        it saw them: give them to ``GraphWalkRetriever(documents=...)`` so the walk reaches the chunks whose KG was
        not extracted. A ``RuntimeError`` before the first ``transform_documents``."""
        self._require_index()
        return [d for d in self.documents if str(d.id) not in self.kept_ids]

    def delete(self, ids: Sequence[str], callbacks: Callbacks = None) -> bool:
        """Remove documents by id from the concept graph (unknown ids ignored); True if any was removed."""
        index = self._require_index()
        held = {str(d.id) for d in self.documents}
        gone = [i for i in dict.fromkeys(str(x) for x in ids) if i in held]
        if gone:
            index.remove(gone)
            drop = set(gone)
            self.documents = [d for d in self.documents if str(d.id) not in drop]
            self.kept_ids = self.kept_ids - drop
            _trace(callbacks, {"incremental": True, "n_removed": len(gone), "n_chunks": len(self.documents)})
        return bool(gone)

    async def atransform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """Async variant: the same work in a thread (the build is CPU-bound numpy/scipy)."""
        return await run_in_executor(None, self.transform_documents, documents, **kwargs)

    def as_retriever(self, **kwargs: Any) -> ConceptGraphRetriever:
        """A :class:`ConceptGraphRetriever` over the concept graph of the last call (all documents)."""
        return ConceptGraphRetriever(index=self._require_index(), **kwargs)

    def save(self, path: str | Path) -> None:
        """Save the concept graph (``path/g2cons_index``, the folder a retriever's ``save(path)`` writes too) and
        the selector's settings and decisions (``path/g2cons_selector.json``), both atomically; other files in
        ``path`` are left alone. ``CoreChunkSelector.load(path)`` restores it, and
        ``G2ConSRetriever.load(path, host=..., selector=selector)`` / ``ConceptGraphRetriever.load(path,
        selector=selector)`` read the same graph (one graph for the selector and its retrievers)."""
        index = self._require_index()
        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        index.save(d / INDEX_SUBDIR)
        state: dict[str, Any] = {name: getattr(self, name) for name in _SAVED}
        state["tokenizer"] = self.tokenizer if isinstance(self.tokenizer, str) else None
        state["kept_ids"] = sorted(self.kept_ids)
        state["report"] = None if self.report is None else self.report.to_dict()
        atomic_write_text(d / SELECTOR_FILE, json.dumps(state, indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path, *, embedder: Any = None, **kwargs: Any) -> CoreChunkSelector:
        """A selector saved by :meth:`save`: its settings (``kwargs`` override them), the concept graph, every
        document it holds (rebuilt from the graph's chunks, ids and metadata included) and the ids it returned.
        ``embedder`` defaults to the built-in one the graph was built with (pass the same LangChain
        ``Embeddings`` if it was built with one). ``add_documents`` and ``delete`` then go on where they
        stopped."""
        d = Path(path)
        f = d / SELECTOR_FILE
        try:
            state = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            hint = "was CoreChunkSelector.save(path) run there?"
            raise PersistError(f"{f}: missing or unreadable ({e}); {hint}") from None
        settings = {k: state[k] for k in _SAVED if k in state}
        if state.get("tokenizer"):
            settings["tokenizer"] = state["tokenizer"]
        emb = None if embedder is None else as_core_embedder(embedder)
        index = G2ConSIndex.load(d / INDEX_SUBDIR if (d / INDEX_SUBDIR).is_dir() else d, embedder=emb)
        sel = cls(**{**settings, **kwargs}, embedder=index.embedder, config=index.config)
        sel.index = index
        sel.documents = [Document(id=c.id, page_content=c.text, metadata=dict(c.metadata)) for c in index.chunks]
        sel.kept_ids = frozenset(state.get("kept_ids") or ())
        if state.get("report"):
            names = {fl.name for fl in fields(SelectionReport)}
            sel.report = SelectionReport(**{k: v for k, v in state["report"].items() if k in names})
        return sel

    def _require_index(self) -> G2ConSIndex:
        """The concept graph of the last call; a ``RuntimeError`` before the first."""
        if self.index is None:
            raise RuntimeError("CoreChunkSelector has no index yet: call transform_documents first")
        return self.index
