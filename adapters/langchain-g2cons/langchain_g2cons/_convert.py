"""Translation between LangChain ``Document``s and the core's records (chunks, retrieved units, fused items).

No retrieval or selection logic lives here: only ids, metadata and field mapping.

Stable ids (``assign_ids``), in order of precedence:
1. ``Document.id`` when it is set;
2. else ``metadata[id_key]`` when present (a document that already went through the selector);
3. else ``g2cons_plugins.content_id(page_content)``: ``"h:" + sha1(text)[:16]``, so the same text gets the
   same id on every run, in every process.
When a content id repeats (the same text twice in the input), the k-th repeat gets ``"#k"`` appended (k = 2, 3, ...),
so every input document stays one chunk; this suffix depends on input order only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from g2cons_plugins import FusedItem, HostItem, RetrievedItem, content_id
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts.pipelines.integration import check_metadata
from g2cons_plugins.hosts.pipelines.integration import drop_empty as drop_empty_items
from langchain_core.documents import Document

DEFAULT_ID_KEY = "g2cons_id"


def plain(value: Any) -> Any:
    """JSON-friendly copy: dicts, lists and tuples are copied; numpy scalars and arrays become Python numbers and
    lists; other non-JSON objects become ``str``."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        return item()
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    return str(value)


def assign_ids(documents: Sequence[Document], id_key: str | None = DEFAULT_ID_KEY) -> list[Document]:
    """Copies of ``documents`` with stable ids (see module doc) in ``Document.id`` and, unless ``id_key`` is None,
    in ``metadata[id_key]`` too (for hosts that keep metadata but drop ``Document.id``)."""
    out: list[Document] = []
    seen: dict[str, int] = {}
    for pos, doc in enumerate(documents):
        if not isinstance(doc, Document):
            raise InputError(f"document #{pos}: expected langchain_core Document, got {type(doc).__name__}")
        given = doc.id or (doc.metadata.get(id_key) if id_key else None)
        if given:
            cid = str(given)
        else:
            base = content_id(doc.page_content)
            seen[base] = seen.get(base, 0) + 1
            cid = base if seen[base] == 1 else f"{base}#{seen[base]}"
        meta = dict(doc.metadata)
        if id_key:
            meta[id_key] = cid
        out.append(doc.model_copy(update={"id": cid, "metadata": meta}))
    return out


def to_chunks(documents: Sequence[Document]) -> list[dict[str, Any]]:
    """Core chunk records of documents that already carry ids. Metadata is made JSON-safe (values that are not
    JSON types become ``str``) so the index can be saved."""
    return [
        {"id": d.id, "text": d.page_content, "metadata": plain(check_metadata(d.metadata, f"document {d.id!r}"))}
        for d in documents
    ]


def document_source(doc: Any, position: int) -> str:
    """A document in the user's terms: its position in the input, ``metadata["source"]`` and its own id (the
    content-hash ids the selector gives are not shown: the user never saw them)."""
    parts = [f"document #{position}"]
    meta = getattr(doc, "metadata", None) or {}
    if meta.get("source"):
        parts.append(f"source {str(meta['source'])!r}")
    if getattr(doc, "id", None):
        parts.append(f"id {doc.id!r}")
    return ", ".join(parts)


def drop_empty(documents: Sequence[Document], skip_empty: bool, who: str) -> list[Document]:
    """``documents`` without the empty ones (``g2cons_plugins.hosts.pipelines.integration.drop_empty``), named by
    :func:`document_source`."""
    docs = list(documents)
    texts = [d.page_content if isinstance(d, Document) else "x" for d in docs]  # non-Documents: refused later
    return drop_empty_items(docs, texts, lambda p: document_source(docs[p], p), skip_empty, who, "document")


def host_key(doc: Document, id_key: str | None, known: Any) -> str | None:
    """The chunk id a host document refers to: ``metadata[id_key]``, else ``Document.id`` when the index knows it
    (``known(id)`` is true), else None, so the core matches the host item by text instead."""
    if id_key and doc.metadata.get(id_key) is not None:
        return str(doc.metadata[id_key])
    if doc.id is not None and known(str(doc.id)):
        return str(doc.id)
    return None


def to_host_items(docs: Sequence[Document], id_key: str | None, known: Any) -> list[HostItem]:
    """Host documents as core ``HostItem``s (the core's ensemble counts their tokens)."""
    items = []
    for d in docs:
        score = d.metadata.get("relevance_score", d.metadata.get("score"))
        text = d.page_content if d.page_content.strip() else None
        items.append(
            HostItem(
                chunk_id=host_key(d, id_key, known),
                text=text,
                score=float(score) if isinstance(score, (int, float)) else None,
                metadata=d.metadata,
            )
        )
    return items


def concept_document(item: RetrievedItem, chunk_metadata: Mapping[str, Any], extra: Mapping[str, Any]) -> Document:
    """A concept-path unit as a Document: ``id`` = its chunk id (what a host KG knows), unit text."""
    meta = dict(chunk_metadata)
    meta.update(
        relevance_score=float(item.score),
        g2cons_chunk_id=item.parent_id,
        g2cons_unit_id=item.unit_id,
        g2cons_n_tokens=int(item.n_tokens),
        g2cons_reason=plain(item.reason),
    )
    meta.update(extra)
    return Document(id=item.parent_id, page_content=item.text, metadata=meta)


def fused_document(item: FusedItem, host_doc: Document | None, chunk_metadata: Mapping[str, Any]) -> Document:
    """A fused item as a Document; host-sourced items keep the host document's metadata (its own score, if any,
    moves to ``g2cons_host_score``)."""
    if host_doc is not None:
        meta = dict(host_doc.metadata)
        if "relevance_score" in meta:
            meta["g2cons_host_score"] = meta["relevance_score"]
        doc_id = item.chunk_id or host_doc.id
    else:
        meta = dict(chunk_metadata)
        doc_id = item.chunk_id
    meta.update(relevance_score=float(item.score), g2cons_source=item.source, g2cons_n_tokens=int(item.n_tokens))
    if item.concept is not None:
        meta.update(
            g2cons_chunk_id=item.concept.parent_id,
            g2cons_unit_id=item.concept.unit_id,
            g2cons_reason=plain(item.concept.reason),
        )
    return Document(id=doc_id, page_content=item.text, metadata=meta)
