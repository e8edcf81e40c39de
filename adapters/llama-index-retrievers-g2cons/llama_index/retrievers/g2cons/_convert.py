"""Translation between LlamaIndex nodes and ``g2cons_plugins`` records. No retrieval or ranking logic lives here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from g2cons_plugins import CallableEmbedder, G2ConSIndex, HostItem, RetrievedItem
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts.pipelines.integration import DEFAULT_EMBEDDER, token_counts
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode

LI_KEY = "llama_index"  # where a chunk record keeps what is needed to rebuild a node like the original
G2CONS_KEYS = (
    "g2cons_source",
    "g2cons_chunk_id",
    "g2cons_unit_id",
    "g2cons_host_score",
    "g2cons_concept_score",
    "g2cons_reason",
)
_NODE_FORMAT = ("metadata_template", "metadata_separator", "text_template")


def node_to_chunk(node: BaseNode) -> dict[str, Any]:
    """A node as a core chunk record: its id, its raw text (no metadata), and what rebuilds its rendering."""
    li: dict[str, Any] = {
        "metadata": dict(node.metadata),
        "ref_doc_id": node.ref_doc_id,
        "excluded_llm_metadata_keys": list(node.excluded_llm_metadata_keys),
        "excluded_embed_metadata_keys": list(node.excluded_embed_metadata_keys),
    }
    for attr in _NODE_FORMAT:
        if isinstance(getattr(node, attr, None), str):
            li[attr] = getattr(node, attr)
    return {"id": node.node_id, "text": node.get_content(metadata_mode=MetadataMode.NONE), "metadata": {LI_KEY: li}}


def nodes_to_chunks(nodes: Sequence[BaseNode]) -> list[dict[str, Any]]:
    return [node_to_chunk(n) for n in nodes]


class BatchEmbedding:
    """``texts -> model.get_text_embedding_batch(texts)``: a picklable function of a LlamaIndex model (a closure
    does not pickle, nor does the instrumented bound method)."""

    def __init__(self, model: BaseEmbedding) -> None:
        self.model = model

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        return self.model.get_text_embedding_batch(list(texts))


def wrap_embedding(model: BaseEmbedding) -> CallableEmbedder:
    """A LlamaIndex embedding model as a core embedder (batch text embeddings; dim from one probe text); it pickles
    whenever the model does."""
    dim = len(model.get_text_embedding("dimension probe"))
    return CallableEmbedder(
        BatchEmbedding(model),
        dim=dim,
        name=f"llamaindex-{model.model_name}",
    )


def resolve_embedder(embedder: Any) -> Any:
    """``None`` -> the adapters' default (``g2cons_plugins.hosts.pipelines.integration.DEFAULT_EMBEDDER``,
    "wordllama"); a LlamaIndex ``BaseEmbedding`` (e.g. ``Settings.embed_model``) -> wrapped; anything else as given (a
    core embedder name such as "minilm"/"hash", or a core ``Embedder``)."""
    if embedder is None:
        return DEFAULT_EMBEDDER
    if isinstance(embedder, BaseEmbedding):
        return wrap_embedding(embedder)
    return embedder


def settings_embedder() -> Any:
    """``Settings.embed_model`` wrapped for the core (to reload an index built with a LlamaIndex model)."""
    from llama_index.core import Settings

    try:
        model = Settings.embed_model
    except Exception as e:  # the "default" (OpenAI) model is not installed or has no key
        raise InputError(
            f"this concept graph was built with a LlamaIndex embedding model and Settings.embed_model is not usable "
            f"({e}); pass embedder=<the same BaseEmbedding>"
        ) from e
    return wrap_embedding(model)


def embedder_label(embedder: Any) -> str | None:
    """A stable name for an embedder (part of the selector's cache key)."""
    if embedder is None or isinstance(embedder, str):
        return embedder
    if isinstance(embedder, BaseEmbedding):
        return f"llamaindex-{embedder.model_name}"
    return str(getattr(embedder, "name", type(embedder).__name__))


def llm_text(node: BaseNode) -> str:
    """The text an LLM sees for this node (metadata rendered unless excluded)."""
    return node.get_content(metadata_mode=MetadataMode.LLM)


def _rebuilt(
    index: G2ConSIndex, chunk_id: str, node_id: str, text: str, g2cons: Mapping[str, Any] | None = None
) -> TextNode:
    """A node like the original of chunk ``chunk_id`` (its metadata, exclusions, templates, source document) with
    ``node_id`` and ``text``; ``g2cons`` keys, when given, are added to its metadata and hidden from the LLM and the
    embedder."""
    li = dict(index.chunk(chunk_id).metadata.get(LI_KEY) or {})
    meta = dict(li.get("metadata") or {})
    rels: dict[NodeRelationship, Any] = {}
    if li.get("ref_doc_id"):
        rels[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=li["ref_doc_id"])
    if node_id != chunk_id:
        rels[NodeRelationship.PARENT] = RelatedNodeInfo(node_id=chunk_id)
    llm_hidden, embed_hidden = li.get("excluded_llm_metadata_keys"), li.get("excluded_embed_metadata_keys")
    if g2cons is not None:
        meta.update(g2cons)
        llm_hidden, embed_hidden = _hide(llm_hidden), _hide(embed_hidden)
    fmt = {k: li[k] for k in _NODE_FORMAT if k in li}
    return TextNode(
        id_=node_id,
        text=text,
        metadata=meta,
        excluded_llm_metadata_keys=list(llm_hidden or []),
        excluded_embed_metadata_keys=list(embed_hidden or []),
        relationships=rels,
        **fmt,
    )


def concept_node(index: G2ConSIndex, item: RetrievedItem) -> TextNode:
    """A concept-path unit as a node: id = unit id (= chunk id for a one-unit chunk), the chunk's metadata, and
    the g2cons keys (hidden from the LLM and the embedder) saying why it was retrieved."""
    keys = {"g2cons_chunk_id": item.parent_id, "g2cons_unit_id": item.unit_id, "g2cons_reason": dict(item.reason)}
    return _rebuilt(index, item.parent_id, item.unit_id, item.text, keys)


def chunk_node(index: G2ConSIndex, chunk_id: str) -> TextNode:
    """A chunk of the concept graph as the node it came from: its id, raw text, metadata, exclusions, templates and
    source document (what :func:`node_to_chunk` kept)."""
    return _rebuilt(index, chunk_id, chunk_id, index.chunk(chunk_id).text)


def _hide(keys: Sequence[str] | None) -> list[str]:
    keys = list(keys or [])
    return keys + [k for k in G2CONS_KEYS if k not in keys]


def tag(nws: NodeWithScore | BaseNode, score: float, **meta: Any) -> NodeWithScore:
    """``nws`` with a new score and g2cons metadata (hidden from LLM/embeddings). A ``NodeWithScore`` (a host's)
    is copied, never mutated; a bare node (one :func:`concept_node` just made) is tagged in place."""
    if isinstance(nws, NodeWithScore):
        node = nws.node.model_copy()
        node.metadata = {**nws.node.metadata, **meta}
        node.excluded_llm_metadata_keys = _hide(nws.node.excluded_llm_metadata_keys)
        node.excluded_embed_metadata_keys = _hide(nws.node.excluded_embed_metadata_keys)
    else:
        node = nws
        node.metadata.update(meta)  # concept nodes already hide every g2cons key
    return NodeWithScore(node=node, score=score)


def host_chunk_id(node: BaseNode, index: G2ConSIndex) -> str | None:
    """The chunk a host result comes from: its own id for a source-chunk node (PropertyGraphIndex with
    include_text=True), else its SOURCE id (``ref_doc_id``) for a triplet node; never a hash."""
    for cid in (node.node_id, node.ref_doc_id):
        if cid is not None and is_chunk(index, cid):
            return cid
    return node.node_id


def is_chunk(index: G2ConSIndex, chunk_id: str) -> bool:
    try:
        index.chunk(chunk_id)
    except InputError:
        return False
    return True


def host_items(results: Sequence[NodeWithScore], index: G2ConSIndex) -> list[HostItem]:
    """Host results as core HostItems with the text the LLM will see (the fusion counts its tokens, memoised)."""
    return [
        HostItem(chunk_id=host_chunk_id(r.node, index), text=llm_text(r.node), score=r.score, metadata={"position": p})
        for p, r in enumerate(results)
    ]


class ConceptNodes(Mapping[str, TextNode]):
    """Concept items' nodes by unit id, built on first access (a query usually returns only some of them)."""

    def __init__(self, index: G2ConSIndex, items: Sequence[RetrievedItem]) -> None:
        self._index = index
        self._items = {it.unit_id: it for it in items}
        self._nodes: dict[str, TextNode] = {}

    def __getitem__(self, unit_id: str) -> TextNode:
        node = self._nodes.get(unit_id)
        if node is None:
            node = self._nodes[unit_id] = concept_node(self._index, self._items[unit_id])
        return node

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def renders_metadata(index: G2ConSIndex, chunk_id: str) -> bool:
    """True when the LLM text of this chunk's nodes differs from the chunk text (visible metadata)."""
    li = index.chunk(chunk_id).metadata.get(LI_KEY) or {}
    hidden = set(li.get("excluded_llm_metadata_keys") or ())
    return any(k not in hidden for k in li.get("metadata") or {})


def concept_nodes(index: G2ConSIndex, items: Sequence[RetrievedItem]) -> tuple[list[RetrievedItem], ConceptNodes]:
    """Concept items and their nodes (built lazily), with each item's ``n_tokens`` recounted where the node renders
    metadata for the LLM (so budgets count what the LLM will see)."""
    nodes = ConceptNodes(index, items)
    out = list(items)
    redo = [i for i, it in enumerate(items) if renders_metadata(index, it.parent_id)]
    texts = [llm_text(nodes[items[i].unit_id]) for i in redo]
    redo_texts = [(i, t) for i, t in zip(redo, texts, strict=True) if t != items[i].text]
    if redo_texts:
        counts = token_counts(index, [t for _, t in redo_texts])
        for (i, _), n in zip(redo_texts, counts, strict=True):
            out[i] = RetrievedItem(
                items[i].unit_id, items[i].parent_id, items[i].text, items[i].score, n, items[i].reason
            )
    return out, nodes
