"""A precomputed LLM extraction as LangChain graph documents: what ``LLMGraphTransformer`` would have returned for
the kept documents, without calling an LLM again.

``graph_documents(path_or_extraction, core_docs)`` reads the extraction with the core's readers (our JSONL,
HippoRAG OpenIE JSON, MS GraphRAG output, a LightRAG working dir; :func:`g2cons_plugins.hosts.read_extraction`),
aligns it to the documents (by id, by text, or by the passages a packed chunk holds) and returns one
``GraphDocument`` per document that the extraction covers, with its entities as ``Node``s and its triples as
``Relationship``s, ready for ``graph.add_graph_documents(...)`` (Neo4j, Memgraph, ...). Only the given documents'
records are used: pass the selector's kept documents and the graph holds only what the kept chunks produced.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import Extraction, align, read_extraction
from langchain_core.documents import Document

from ._convert import DEFAULT_ID_KEY

ENTITY_TYPE = "Entity"  # the extraction does not type its entities; LLMGraphTransformer's nodes need a type


def graph_documents(
    extraction: Extraction | str | os.PathLike[str],
    documents: Sequence[Document],
    id_key: str | None = DEFAULT_ID_KEY,
    format: str = "auto",
    model: str | None = None,
) -> list[Any]:
    """``GraphDocument``s of ``documents`` from a precomputed extraction (module doc); documents the extraction has
    nothing for are left out (their count is in a warning)."""
    try:
        from langchain_community.graphs.graph_document import GraphDocument, Node, Relationship
    except ImportError as e:  # the package LLMGraphTransformer's output types live in
        raise InputError('graph_documents needs langchain-community: pip install "langchain-g2cons[examples]"') from e
    ext = extraction if isinstance(extraction, Extraction) else read_extraction(extraction, format, model)
    ids = [_doc_id(d, id_key, pos) for pos, d in enumerate(documents)]
    aliases = {
        str(s): i for i, d in zip(ids, documents, strict=True) for s in (d.metadata.get("source_ids") or ()) if s
    }
    aligned = align(ext, {i: d.page_content for i, d in zip(ids, documents, strict=True)}, aliases).restrict(ids)
    graphs = aligned.chunk_graphs()
    out = []
    for i, doc in zip(ids, documents, strict=True):
        entities, triples = graphs.get(i, ((), ()))
        nodes = {name: Node(id=name, type=ENTITY_TYPE) for name in entities}
        rels = [
            Relationship(source=nodes[s], target=nodes[o], type=r.strip().replace(" ", "_").upper() or "RELATED")
            for s, r, o in triples
        ]
        if nodes:
            out.append(GraphDocument(nodes=list(nodes.values()), relationships=rels, source=doc))
    if len(out) < len(documents):
        import warnings

        warnings.warn(
            f"{len(documents) - len(out)} of {len(documents)} document(s) have no record in {ext.source}",
            stacklevel=2,
        )
    return out


def _doc_id(doc: Document, id_key: str | None, pos: int) -> str:
    given = doc.id or (doc.metadata.get(id_key) if id_key else None)
    if not given:
        raise InputError(
            f"document #{pos} has no id: pass the documents CoreChunkSelector returned (it gives every one an id)"
        )
    return str(given)
