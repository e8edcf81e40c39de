"""``CoreChunkSelector``: a ``TransformComponent`` that keeps the kappa share of core chunks for the KG extractors.

It builds the G2ConS concept graph over every node it sees (the concept path still covers the dropped ones),
asks the core which chunks to keep, and returns only those. Host traps handled here:

* every ``from_documents`` kwarg reaches ``__call__``: they are accepted and ignored;
* an ``IngestionPipeline`` cache hit skips ``__call__``: with ``persist_dir`` the graph is saved on fit and
  ``.index`` loads it back; without it, ``.index`` raises and says so (``fit(nodes)`` rebuilds it);
* ``num_workers > 1`` hands each worker a batch: an unfitted selector refuses to rank a batch (it raises); a
  fitted one (``fit(all_nodes)`` first) filters each batch by the global selection;
* nothing is written into ``node.metadata`` (it would reach extraction prompts and entity properties);
* NEXT/PREVIOUS of kept nodes are relinked to the nearest kept node along the chain (or removed), and
  PARENT/CHILD links to dropped nodes are removed, so no structural edge dangles to a dropped node.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from g2cons_plugins import G2ConSConfig, G2ConSIndex, SelectionReport
from g2cons_plugins.errors import InputError, PersistError
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr, field_validator
from llama_index.core.schema import BaseNode, NodeRelationship, RelatedNodeInfo, TransformComponent

from ._convert import embedder_label, nodes_to_chunks, resolve_embedder

INDEX_SUBDIR = "g2cons_index"
SELECTOR_FILE = "g2cons_selector.json"
_CHAIN = (NodeRelationship.PREVIOUS, NodeRelationship.NEXT)


class CoreChunkSelector(TransformComponent):
    """Keep the G2ConS core chunks (top kappa) and drop the rest before KG extraction."""

    kappa: float = Field(default=0.8, ge=0.0, le=1.0, description="Share of chunks (or tokens) kept.")
    kappa_by: str | None = Field(default=None, description="'tokens' or 'chunks' (core default: tokens).")
    selector: str | None = Field(default=None, description="Core selector name (core default: coverage).")
    embedder: str | None = Field(default=None, description="Embedder name; None = Settings.embed_model.")
    config: dict[str, Any] | None = Field(default=None, description="G2ConSConfig fields.")
    persist_dir: str | None = Field(default=None, description="Save the concept graph here on every fit.")

    _embedder_obj: Any = PrivateAttr(default=None)
    _index: G2ConSIndex | None = PrivateAttr(default=None)
    _report: SelectionReport | None = PrivateAttr(default=None)
    _links: dict[str, list[str | None]] | None = PrivateAttr(default=None)
    _kept: frozenset[str] = PrivateAttr(default=frozenset())
    _dropped: frozenset[str] = PrivateAttr(default=frozenset())

    def __init__(self, kappa: float = 0.8, *, embedder: Any = None, config: Any = None, **kwargs: Any) -> None:
        obj = None if embedder is None or isinstance(embedder, str) else embedder
        super().__init__(kappa=kappa, embedder=embedder_label(embedder), config=config, **kwargs)  # type: ignore[call-arg]
        self._embedder_obj = obj

    @field_validator("config", mode="before")
    @classmethod
    def _config_dict(cls, v: Any) -> Any:
        return v.to_dict() if isinstance(v, G2ConSConfig) else v

    @classmethod
    def class_name(cls) -> str:
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
    ) -> CoreChunkSelector:
        return cls(
            kappa,
            kappa_by=kappa_by,
            selector=selector,
            embedder=embedder,
            config=config,
            persist_dir=None if persist_dir is None else str(persist_dir),
        )

    # ------------------------------------------------------------------ state
    def core_embedder(self) -> Any:
        """The core embedder: the object given, else the core name given, else ``Settings.embed_model``."""
        if self._embedder_obj is not None:
            return resolve_embedder(self._embedder_obj)
        if self.embedder and not self.embedder.startswith("llamaindex-"):
            return self.embedder
        return resolve_embedder(None)

    @property
    def fitted(self) -> bool:
        return self._report is not None

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

    def fit(self, nodes: Sequence[BaseNode]) -> CoreChunkSelector:
        """Build the concept graph over ``nodes`` (all of them) and select the core chunks."""
        nodes = list(nodes)
        cfg = G2ConSConfig.from_dict(self.config) if self.config else None
        index = G2ConSIndex.build(nodes_to_chunks(nodes), embedder=self.core_embedder(), config=cfg)
        report = index.select(kappa=self.kappa, kappa_by=self.kappa_by, selector=self.selector)
        self._set(index, report, _chain_links(nodes, set(report.kept_ids)))
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
        sel = cls(selection.kappa, embedder=index.embedder, config=index.config)
        sel._set(index, selection, _chain_links(list(nodes), set(selection.kept_ids)))
        return sel

    def _set(self, index: G2ConSIndex | None, report: SelectionReport, links: dict[str, list[str | None]]) -> None:
        self._index, self._report, self._links = index, report, links
        self._kept, self._dropped = frozenset(report.kept_ids), frozenset(report.dropped_ids)

    # ------------------------------------------------------------------ the transformation
    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Keep the core chunks. ``kwargs`` (every ``from_documents`` argument) are ignored."""
        nodes = list(nodes)
        if not nodes:
            return []
        if not self.fitted:
            if multiprocessing.parent_process() is not None:
                raise InputError(
                    "CoreChunkSelector got one batch of a multi-process run (num_workers > 1): a global core-chunk "
                    "ranking cannot be computed per batch. Call selector.fit(all_nodes) before the pipeline runs, "
                    "or use num_workers=1."
                )
            self.fit(nodes)
        unknown = [n.node_id for n in nodes if n.node_id not in self._kept and n.node_id not in self._dropped]
        if unknown:
            raise InputError(
                f"{len(unknown)} node(s) (e.g. {unknown[0]!r}) are not in the concept graph this selector was "
                f"fitted on ({len(self._kept) + len(self._dropped)} chunks): call selector.fit(all_nodes) again "
                "or use a new CoreChunkSelector for a new corpus."
            )
        return [self._relinked(n) for n in nodes if n.node_id in self._kept]

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        return self.__call__(nodes, **kwargs)

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
        self.index.save(d / INDEX_SUBDIR)
        state = {"fields": self.model_dump(exclude={"class_name"}), "report": self.report.to_dict()}
        state["links"] = self._links or {}
        (d / SELECTOR_FILE).write_text(json.dumps(state), encoding="utf-8")

    @classmethod
    def from_persist_dir(cls, persist_dir: str | Path, embedder: Any = None) -> CoreChunkSelector:
        state = _read_state(Path(persist_dir))
        kw = {k: v for k, v in state["fields"].items() if k in cls.model_fields and k != "embedder"}
        kw["persist_dir"] = str(persist_dir)
        sel = cls(embedder=embedder if embedder is not None else state["fields"].get("embedder"), **kw)
        sel._load(Path(persist_dir))
        return sel

    def _load(self, d: Path) -> None:
        state = _read_state(d)
        names = {f.name for f in fields(SelectionReport)}
        report = SelectionReport(**{k: v for k, v in state["report"].items() if k in names})
        index = G2ConSIndex.load(d / INDEX_SUBDIR, embedder=self.core_embedder())
        self._set(index, report, state.get("links") or {})

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
