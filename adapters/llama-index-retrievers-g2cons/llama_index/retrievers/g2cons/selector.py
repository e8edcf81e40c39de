"""``CoreChunkSelector``: a ``TransformComponent`` that keeps the kappa share of core chunks for the KG extractors.

It builds the G2ConS concept graph over every node it sees (the concept path still covers the dropped ones),
asks the core which chunks to keep, and returns only those. Host traps handled here:

* every ``from_documents`` kwarg reaches ``__call__``: they are accepted and ignored;
* an ``IngestionPipeline`` cache hit skips ``__call__``: with ``persist_dir`` the graph is saved on fit and
  ``.index`` loads it back; without it, ``.index`` raises and says so (``fit(nodes)`` rebuilds it);
* ``num_workers > 1`` hands each worker a batch: an unfitted selector refuses to rank a batch (it raises); a
  fitted one (``fit(all_nodes)`` first) filters each batch by the global selection;
* nothing is written into ``node.metadata`` (it would reach extraction prompts and entity properties);
* an empty node (a splitter makes one from an empty ``Document``) raises an ``InputError`` naming its source
  document (``ref_doc_id``, ``file_name`` / ``file_path`` metadata), or with ``skip_empty=True`` is dropped (it
  never reaches the extractors) and counted in one warning;
* NEXT/PREVIOUS of kept nodes are relinked to the nearest kept node along the chain (or removed), and
  PARENT/CHILD links to dropped nodes are removed, so no structural edge dangles to a dropped node.

Incremental updates: ``index.insert(doc)`` re-runs the stored transformations, so the selector sees nodes it was not
fitted on. They join the concept graph through the core's ``G2ConSIndex.add`` and are kept or dropped by the same
selection rule (``g2cons_plugins.hosts.pipelines.integration``: the selection is re-run with the same kappa over the
whole corpus, and a new node is kept iff it is in the new top-kappa set; earlier decisions are not revisited). Only
kept nodes reach the KG extractors. ``selector.track(index)`` also routes ``insert_nodes`` through the selector and
makes ``delete_ref_doc`` / ``delete_nodes`` / ``update_ref_doc`` / ``refresh_ref_docs`` remove the old chunks from the
concept graph (``G2ConSIndex.remove``). Retrievers built from this selector share its concept graph, so they see
every insert and delete at once.
"""

from __future__ import annotations

import json
import multiprocessing
import weakref
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from g2cons_plugins import G2ConSConfig, G2ConSIndex, SelectionReport
from g2cons_plugins.errors import InputError, PersistError
from g2cons_plugins.hosts.pipelines.integration import add_and_select, atomic_write_text, selection_counts
from g2cons_plugins.hosts.pipelines.integration import drop_empty as drop_empty_items
from g2cons_plugins.hosts.pipelines.overlap import warn_if_overlapping
from g2cons_plugins.hosts.pipelines.param_types import NonNegativeFloat, NonNegativeInt, Share
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr, field_validator
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)

from ._convert import LI_KEY, chunk_node, embedder_label, nodes_to_chunks, resolve_embedder, settings_embedder
from .events import G2ConSSelectionEvent, dispatcher
from .prompts import default_prompt_tokens

INDEX_SUBDIR = "g2cons_index"
SELECTOR_FILE = "g2cons_selector.json"
_CHAIN = (NodeRelationship.PREVIOUS, NodeRelationship.NEXT)
_LOADED: weakref.WeakValueDictionary[str, CoreChunkSelector] = weakref.WeakValueDictionary()
"""Selectors loaded by ``from_persist_dir`` in this process, by folder: one concept graph per folder."""


class CoreChunkSelector(TransformComponent):
    """Keep the G2ConS core chunks (top kappa) and drop the rest before KG extraction."""

    kappa: Share = Field(default=0.8, description="Share of chunks (or tokens) kept.")
    kappa_by: str | None = Field(default=None, description="'tokens' or 'chunks' (core default: tokens).")
    selector: str | None = Field(default=None, description="Core selector name (core default: coverage).")
    embedder: str | None = Field(
        default=None, description="Core embedder name; None = 'wordllama' (the adapters' one default)."
    )
    config: dict[str, Any] | None = Field(default=None, description="G2ConSConfig fields.")
    persist_dir: str | None = Field(default=None, description="Save the concept graph here on every fit.")
    cache_dir: str | None = Field(default=None, description="Embedding cache directory (content-hash keyed).")
    show_progress: bool = Field(default=False, description="Progress bars for the concept-graph build.")
    price_per_mtok: NonNegativeFloat = Field(default=0.15, description="USD per million input tokens (report only).")
    prompt_tokens_per_call: NonNegativeInt = Field(
        default=0,
        description="Extraction prompt tokens per chunk (kappa by tokens counts chunk + prompt; the cost too). "
        "Not given: the tokens of SimpleLLMPathExtractor's default prompt (PropertyGraphIndex's default extractor).",
    )
    skip_empty: bool = Field(
        default=False,
        description="Drop empty nodes with one warning (default: an InputError naming the empty node's document).",
    )

    _embedder_obj: Any = PrivateAttr(default=None)
    _index: G2ConSIndex | None = PrivateAttr(default=None)
    _report: SelectionReport | None = PrivateAttr(default=None)
    _links: dict[str, list[str | None]] | None = PrivateAttr(default=None)
    _kept: frozenset[str] = PrivateAttr(default=frozenset())
    _dropped: frozenset[str] = PrivateAttr(default=frozenset())
    _saved: tuple[int, int, int] | None = PrivateAttr(default=None)  # the state file as last read or written

    def __init__(self, kappa: float = 0.8, *, embedder: Any = None, config: Any = None, **kwargs: Any) -> None:
        obj = None if embedder is None or isinstance(embedder, str) else embedder
        if kwargs.get("prompt_tokens_per_call") is None:  # the default extractor's prompt, sent with every chunk
            kwargs["prompt_tokens_per_call"] = default_prompt_tokens(10)  # SimpleLLMPathExtractor's default
        super().__init__(kappa=kappa, embedder=embedder_label(embedder), config=config, **kwargs)  # type: ignore[call-arg]
        self._embedder_obj = obj

    @field_validator("persist_dir", "cache_dir", mode="before")
    @classmethod
    def _path_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, Path) else v

    @field_validator("config", mode="before")
    @classmethod
    def _config_dict(cls, v: Any) -> Any:
        return v.to_dict() if isinstance(v, G2ConSConfig) else v

    @classmethod
    def class_name(cls) -> str:
        """Serialisation name (part of the ``IngestionPipeline`` cache key)."""
        return "G2ConSCoreChunkSelector"

    @classmethod
    def from_defaults(
        cls,
        kappa: float = 0.8,
        kappa_by: str | None = None,
        selector: str | None = None,
        embedder: Any = None,
        config: G2ConSConfig | dict[str, Any] | None = None,
        persist_dir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        show_progress: bool = False,
        price_per_mtok: float = 0.15,
        prompt_tokens_per_call: int | None = None,
        skip_empty: bool = False,
    ) -> CoreChunkSelector:
        """A selector (same arguments as the constructor; paths may be ``Path``s)."""
        return cls(
            kappa,
            kappa_by=kappa_by,
            selector=selector,
            embedder=embedder,
            config=config,
            persist_dir=None if persist_dir is None else str(persist_dir),
            cache_dir=None if cache_dir is None else str(cache_dir),
            show_progress=show_progress,
            price_per_mtok=price_per_mtok,
            prompt_tokens_per_call=prompt_tokens_per_call,
            skip_empty=skip_empty,
        )

    # ------------------------------------------------------------------ state
    def core_embedder(self) -> Any:
        """The core embedder: the object given (a LlamaIndex ``BaseEmbedding`` is wrapped), else the core name
        given, else "auto" (wordllama, or the multilingual model for a corpus mostly not in English). A selector
        saved with a LlamaIndex model reloads with ``Settings.embed_model``."""
        if self._embedder_obj is not None:
            return resolve_embedder(self._embedder_obj)
        if self.embedder and self.embedder.startswith("llamaindex-"):
            return settings_embedder()
        return resolve_embedder(self.embedder)

    @property
    def fitted(self) -> bool:
        """True once the selector has a concept graph and a selection (after ``fit`` or the first call)."""
        return self._report is not None

    @property
    def kept_ids(self) -> frozenset[str]:
        """Ids of every node this selector passed on to the extractors (first fit and later inserts)."""
        return self._kept

    @property
    def dropped_ids(self) -> frozenset[str]:
        """Ids of every node this selector held back (still in the concept graph)."""
        return self._dropped

    def dropped_nodes(self) -> list[TextNode]:
        """The nodes this selector held back, rebuilt from its concept graph (id, text, metadata and what renders
        them, source document), in the order it saw them: give them to ``GraphWalkRetriever(extra_nodes=...)`` so
        the walk reaches the chunks whose KG was not extracted."""
        index = self.index
        return [chunk_node(index, c.id) for c in index.stored.chunks if c.id in self._dropped]

    @property
    def index(self) -> G2ConSIndex:
        """The concept graph over all nodes seen (loaded from ``persist_dir`` after a pipeline cache hit)."""
        if self._index is None:
            if self.persist_dir and (Path(self.persist_dir) / SELECTOR_FILE).is_file():
                self._load(Path(self.persist_dir))
            else:
                raise InputError(
                    "CoreChunkSelector has no concept graph: it never ran in this process (an IngestionPipeline "
                    "cache hit skips it, and worker processes keep theirs). Pass persist_dir=... so the graph is "
                    "saved and reloaded, or call selector.fit(all_nodes)."
                )
        assert self._index is not None
        return self._index

    @property
    def report(self) -> SelectionReport:
        """What the selection kept and dropped (``summary()``, ``to_dict()``)."""
        if self._report is None:
            self.index  # noqa: B018 (loads from persist_dir or raises)
        assert self._report is not None
        return self._report

    @dispatcher.span
    def fit(self, nodes: Sequence[BaseNode], show_progress: bool | None = None) -> CoreChunkSelector:
        """Build the concept graph over ``nodes`` (all of them) and select the core chunks. Empty nodes raise an
        ``InputError`` naming their document, or are skipped with a warning when ``skip_empty`` is set.
        ``show_progress``: bars for every build stage (default: the selector's ``show_progress``)."""
        nodes = drop_empty(nodes, self.skip_empty, "CoreChunkSelector")
        if not nodes:
            raise InputError("CoreChunkSelector.fit: no node with text to build the concept graph from")
        cfg = G2ConSConfig.from_dict(self.config) if self.config else None
        # a splitter's chunk_overlap near its chunk_size multiplies the extraction calls: say so
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        warn_if_overlapping(texts, "CoreChunkSelector", "node")
        index = G2ConSIndex.build(
            nodes_to_chunks(nodes),
            embedder=self.core_embedder(),
            config=cfg,
            cache_dir=self.cache_dir,
            show_progress=self.show_progress if show_progress is None else show_progress,
        )
        report = index.select(
            kappa=self.kappa,
            kappa_by=self.kappa_by,
            selector=self.selector,
            price_per_mtok=self.price_per_mtok,
            prompt_tokens_per_call=self.prompt_tokens_per_call,
        )
        self._set(index, report, _chain_links(nodes, set(report.kept_ids)))
        dispatcher.event(G2ConSSelectionEvent(**selection_counts(report, len(nodes)), n_chunks=len(index.chunks)))
        if self.persist_dir:
            self.persist(self.persist_dir)
        return self

    @classmethod
    def from_index(cls, index: G2ConSIndex, selection: SelectionReport, nodes: Sequence[BaseNode]) -> CoreChunkSelector:
        """A selector already fitted: ``selection`` (``index.select(...)``) over an existing core ``index`` whose
        chunk ids are the ``nodes``' ids (no second concept-graph build)."""
        ids = {c.id for c in index.stored.chunks}
        strange = [n.node_id for n in nodes if n.node_id not in ids]
        if strange:
            raise InputError(f"{len(strange)} node(s) (e.g. {strange[0]!r}) are not chunks of the given index")
        sel = cls(
            selection.kappa,
            embedder=index.embedder,
            config=index.config,
            kappa_by=selection.kappa_by,
            selector=selection.selector,
            price_per_mtok=selection.price_per_mtok,
            prompt_tokens_per_call=selection.prompt_tokens_per_call,
        )
        sel._set(index, selection, _chain_links(list(nodes), set(selection.kept_ids)))
        return sel

    def _set(self, index: G2ConSIndex | None, report: SelectionReport, links: dict[str, list[str | None]]) -> None:
        self._index, self._report, self._links = index, report, links
        self._kept, self._dropped = frozenset(report.kept_ids), frozenset(report.dropped_ids)

    # ------------------------------------------------------------------ the transformation
    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Keep the core chunks. ``kwargs`` (every ``from_documents`` argument) are ignored but ``show_progress``
        (LlamaIndex passes its own to every transformation): it turns the build's progress bars on. An empty node
        raises an ``InputError`` naming its document; with ``skip_empty`` empty nodes are dropped (one warning)."""
        nodes = drop_empty(nodes, self.skip_empty, "CoreChunkSelector")
        if not nodes:
            return []
        if not self.fitted:
            if multiprocessing.parent_process() is not None:
                raise InputError(
                    "CoreChunkSelector got one batch of a multi-process run (num_workers > 1): a global core-chunk "
                    "ranking cannot be computed per batch. Call selector.fit(all_nodes) before the pipeline runs, "
                    "or use num_workers=1."
                )
            self.fit(nodes, show_progress=self.show_progress or bool(kwargs.get("show_progress")))
        unseen = [n for n in nodes if n.node_id not in self._kept and n.node_id not in self._dropped]
        if unseen:
            self.insert_nodes(unseen)
        return [self._relinked(n) for n in nodes if n.node_id in self._kept]

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Same as ``__call__`` (CPU-bound)."""
        return self.__call__(nodes, **kwargs)

    # ------------------------------------------------------------------ incremental updates
    @dispatcher.span
    def insert_nodes(self, nodes: Sequence[BaseNode]) -> list[str]:
        """Add nodes the selector has not seen to the concept graph and decide each by the selection rule
        (module doc); returns the ids of the new nodes that are kept. Known nodes are left as they were."""
        if multiprocessing.parent_process() is not None and self._index is None:
            raise InputError(
                f"CoreChunkSelector got {len(nodes)} node(s) it was not fitted on inside a worker process "
                "(num_workers > 1): the concept graph lives in the main process. Call selector.fit(all_nodes) "
                "with every node first, or use num_workers=1."
            )
        seen = self._kept | self._dropped
        nodes = drop_empty(nodes, self.skip_empty, "CoreChunkSelector")
        new = list({n.node_id: n for n in nodes if n.node_id not in seen}.values())
        if not new:
            return []
        decision = add_and_select(
            self.index,
            nodes_to_chunks(new),
            kappa=self.kappa,
            kappa_by=self.kappa_by,
            selector=self.selector,
            price_per_mtok=self.price_per_mtok,
            prompt_tokens_per_call=self.prompt_tokens_per_call,
            show_progress=self.show_progress,
        )
        kept = set(decision.kept_ids)
        links = {**(self._links or {}), **_chain_links(new, kept)}
        self._report, self._links = decision.report, links
        self._kept, self._dropped = self._kept | kept, self._dropped | set(decision.dropped_ids)
        dispatcher.event(G2ConSSelectionEvent(**decision.counts(len(self.index.chunks))))
        self._persist_if_asked()
        return list(decision.kept_ids)

    @dispatcher.span
    def delete_nodes(self, node_ids: Sequence[str]) -> list[str]:
        """Remove these nodes from the concept graph (ids it does not hold are ignored); returns the removed ids."""
        held = self._kept | self._dropped
        gone = list(dict.fromkeys(i for i in node_ids if i in held))
        if not gone:
            return []
        self.index.remove(gone)
        drop = set(gone)
        self._kept, self._dropped = self._kept - drop, self._dropped - drop
        self._links = {k: v for k, v in (self._links or {}).items() if k not in drop}
        dispatcher.event(
            G2ConSSelectionEvent(incremental=True, n_removed=len(gone), n_chunks=len(self.index.chunks))
        )
        self._persist_if_asked()
        return gone

    def delete_ref_doc(self, ref_doc_id: str) -> list[str]:
        """Remove every node of the source document ``ref_doc_id`` (kept and dropped ones) from the concept graph;
        returns the removed ids."""
        ids = [c.id for c in self.index.chunks if (c.metadata.get(LI_KEY) or {}).get("ref_doc_id") == ref_doc_id]
        return self.delete_nodes(ids)

    def track(self, index: Any) -> Any:
        """Keep the concept graph in sync with a host ``index`` (e.g. a ``PropertyGraphIndex``) and return it.

        On this index object: ``insert_nodes`` / ``ainsert_nodes`` first pass the nodes through the selector (so
        only kept ones reach the KG extractors), and ``delete_ref_doc`` / ``adelete_ref_doc`` / ``delete_nodes`` /
        ``adelete_nodes`` also remove the chunks from the concept graph. ``update_ref_doc`` and
        ``refresh_ref_docs`` go through these, so they stay in sync too. ``insert`` needs no tracking (it runs
        the stored transformations, the selector among them). Call it again on an index loaded from storage."""
        _track(self, index)
        return index

    def _persist_if_asked(self) -> None:
        if self.persist_dir:
            self.persist(self.persist_dir)

    def _relinked(self, node: BaseNode) -> BaseNode:
        links = (self._links or {}).get(node.node_id, [None, None])
        rels: dict[NodeRelationship, Any] = {}
        for rel, info in node.relationships.items():
            if isinstance(info, list):  # CHILD: keep the kept children
                kids = [k for k in info if k.node_id not in self._dropped]
                if kids:
                    rels[rel] = kids
            elif rel in _CHAIN:  # PREVIOUS / NEXT: the nearest kept node along the chain, or nothing
                target = links[_CHAIN.index(rel)]
                if target is not None:
                    rels[rel] = (
                        info if info.node_id == target else RelatedNodeInfo(node_id=target, node_type=info.node_type)
                    )
            elif rel != NodeRelationship.PARENT or info.node_id not in self._dropped:
                rels[rel] = info
        if rels == node.relationships:
            return node
        node = node.model_copy()
        node.relationships = rels
        return node

    # ------------------------------------------------------------------ persistence and pickling
    def persist(self, persist_dir: str | Path) -> None:
        """Save the concept graph to ``persist_dir/g2cons_index`` and the selection to ``g2cons_selector.json``
        (safe next to a LlamaIndex ``StorageContext`` in the same directory)."""
        d = Path(persist_dir)
        d.mkdir(parents=True, exist_ok=True)
        self.index.save(d / INDEX_SUBDIR)
        state = {"fields": self.model_dump(exclude={"class_name"}), "report": self.report.to_dict()}
        state.update(links=self._links or {}, kept=sorted(self._kept), dropped=sorted(self._dropped))
        atomic_write_text(d / SELECTOR_FILE, json.dumps(state))
        self._saved = _signature(d)

    @classmethod
    def from_persist_dir(cls, persist_dir: str | Path, embedder: Any = None, fresh: bool = False) -> CoreChunkSelector:
        """A selector saved by :meth:`persist` (every field, the concept graph and the decisions made).

        One folder, one selector in a process, as one ``StorageContext`` serves an index and its retrievers: while
        a selector loaded from ``persist_dir`` is alive (``G2ConSRetriever.from_persist_dir`` loads one), this
        returns that same object, so its concept graph, its tracking of the host index and its saves stay one.
        ``fresh=True`` (or an ``embedder``) reads the folder again into a new selector."""
        key = str(Path(persist_dir).resolve())
        live = _LOADED.get(key)
        if live is not None and not fresh and embedder is None and live._saved == _signature(Path(persist_dir)):
            return live  # what is on disk is what it read or wrote last: nobody else saved there since
        state = _read_state(Path(persist_dir))
        kw = {k: v for k, v in state["fields"].items() if k in cls.model_fields and k != "embedder"}
        kw["persist_dir"] = str(persist_dir)
        sel = cls(embedder=embedder if embedder is not None else state["fields"].get("embedder"), **kw)
        sel._load(Path(persist_dir))
        _LOADED[key] = sel
        return sel

    def _load(self, d: Path) -> None:
        self._saved = _signature(d)
        state = _read_state(d)
        names = {f.name for f in fields(SelectionReport)}
        report = SelectionReport(**{k: v for k, v in state["report"].items() if k in names})
        index = G2ConSIndex.load(d / INDEX_SUBDIR, embedder=self.core_embedder())
        self._set(index, report, state.get("links") or {})
        if "kept" in state:
            self._kept, self._dropped = frozenset(state["kept"]), frozenset(state["dropped"])

    def __getstate__(self) -> dict[Any, Any]:
        # the concept graph and the embedder stay in this process: a worker only filters by the global selection
        state = BaseModel.__getstate__(self)
        private = dict(state.get("__pydantic_private__") or {})
        private.update(_index=None, _embedder_obj=None)
        state["__pydantic_private__"] = private
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)  # BaseComponent re-runs __init__, which resets private attributes
        for key, value in (state.get("__pydantic_private__") or {}).items():
            setattr(self, key, value)


def node_source(node: BaseNode) -> str:
    """Where a node comes from, in the user's terms: its document (``ref_doc_id``) and file (``file_name`` /
    ``file_path`` metadata); the node id only when it has neither."""
    parts = [f"document {node.ref_doc_id!r}"] if node.ref_doc_id else []
    for key in ("file_name", "file_path"):
        if node.metadata.get(key):
            parts.append(f"{key} {str(node.metadata[key])!r}")
            break
    return ", ".join(parts) if parts else f"node {node.node_id!r} (no ref_doc_id, file_name or file_path)"


def drop_empty(nodes: Sequence[BaseNode], skip_empty: bool, who: str) -> list[BaseNode]:
    """``nodes`` without the empty ones (``g2cons_plugins.hosts.pipelines.integration.drop_empty``), named by their
    source document (:func:`node_source`), not the node id a splitter made up."""
    nodes = list(nodes)
    texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
    return drop_empty_items(nodes, texts, lambda p: node_source(nodes[p]), skip_empty, who, "node", "a node of ")


def _signature(d: Path) -> tuple[int, int, int] | None:
    """``(inode, mtime_ns, size)`` of ``d/g2cons_selector.json`` (each save renames a new file in), None when
    absent: whether a save happened since."""
    try:
        st = (d / SELECTOR_FILE).stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _read_state(d: Path) -> dict[str, Any]:
    f = d / SELECTOR_FILE
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PersistError(f"{f}: missing or unreadable ({e}); was CoreChunkSelector.persist run here?") from None


def _chain_links(nodes: Sequence[BaseNode], kept: set[str]) -> dict[str, list[str | None]]:
    """For each kept node: its nearest kept PREVIOUS and NEXT along the node chain (None: no kept neighbour)."""
    by_id = {n.node_id: n for n in nodes}
    out: dict[str, list[str | None]] = {}
    for n in nodes:
        if n.node_id not in kept:
            continue
        ends: list[str | None] = []
        for rel in _CHAIN:
            info, seen = n.relationships.get(rel), set()
            target: str | None = info.node_id if isinstance(info, RelatedNodeInfo) else None
            while target is not None and target not in kept and target in by_id and target not in seen:
                seen.add(target)
                nxt = by_id[target].relationships.get(rel)
                target = nxt.node_id if isinstance(nxt, RelatedNodeInfo) else None
            ends.append(target if target in kept else None)
        out[n.node_id] = ends
    return out


def _track(selector: CoreChunkSelector, index: Any) -> None:
    """Wrap ``index``'s insert/delete methods on this instance (see :meth:`CoreChunkSelector.track`)."""
    if getattr(index, "_g2cons_tracked_by", None) is selector:
        return
    insert_nodes, ainsert_nodes = index.insert_nodes, index.ainsert_nodes
    delete_nodes, adelete_nodes = index.delete_nodes, index.adelete_nodes
    delete_ref_doc, adelete_ref_doc = index.delete_ref_doc, index.adelete_ref_doc

    def _insert_nodes(nodes: Sequence[BaseNode], **kw: Any) -> None:
        insert_nodes(selector(nodes), **kw)

    async def _ainsert_nodes(nodes: Sequence[BaseNode], **kw: Any) -> None:
        await ainsert_nodes(selector(nodes), **kw)

    def _delete_nodes(node_ids: list[str], *a: Any, **kw: Any) -> None:
        delete_nodes(node_ids, *a, **kw)
        selector.delete_nodes(node_ids)

    async def _adelete_nodes(node_ids: list[str], *a: Any, **kw: Any) -> None:
        await adelete_nodes(node_ids, *a, **kw)
        selector.delete_nodes(node_ids)

    def _delete_ref_doc(ref_doc_id: str, *a: Any, **kw: Any) -> None:
        delete_ref_doc(ref_doc_id, *a, **kw)
        selector.delete_ref_doc(ref_doc_id)

    async def _adelete_ref_doc(ref_doc_id: str, *a: Any, **kw: Any) -> None:
        await adelete_ref_doc(ref_doc_id, *a, **kw)
        selector.delete_ref_doc(ref_doc_id)

    index.insert_nodes, index.ainsert_nodes = _insert_nodes, _ainsert_nodes
    index.delete_nodes, index.adelete_nodes = _delete_nodes, _adelete_nodes
    index.delete_ref_doc, index.adelete_ref_doc = _delete_ref_doc, _adelete_ref_doc
    index._g2cons_tracked_by = selector
