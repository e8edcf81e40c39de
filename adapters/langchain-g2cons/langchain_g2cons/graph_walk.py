"""``GraphWalkRetriever``: walk the KG of LangChain graph documents the way HippoRAG 2 walks its graph.

``LLMGraphTransformer.convert_to_graph_documents(docs)`` returns one ``GraphDocument`` per document: ``nodes``,
``relationships`` (``source`` / ``target`` nodes and a ``type``) and the ``source`` document. This retriever turns
each into a :class:`g2cons_plugins.hosts.GraphRecord` (the source document's id and text, its triples, its node
names) and ranks the **source documents** with :class:`g2cons_plugins.hosts.GraphWalk` (facts by embedding -> seed
entities -> personalized PageRank over entities and documents, synonym edges by embedding, a dense document prior;
no LLM at query time). The algorithm is the core's; this module only translates.

Graph documents are read by their attributes (``nodes``, ``relationships``, ``source``), so those of
``langchain_community.graphs.graph_document`` and of ``langchain_neo4j`` both work. LangChain's graph stores
(``Neo4jGraph``, ...) take graph documents in (``add_graph_documents``) but have no generic way to hand them back (only
queries in the store's own language), so the retriever keeps the graph documents it is given; add new ones with
:meth:`GraphWalkRetriever.add_graph_documents` (the walk is rebuilt on the next query).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from g2cons_plugins import content_id
from g2cons_plugins.errors import InputError
from g2cons_plugins.hosts import GraphRecord, GraphWalk, GraphWalkSettings, app_settings
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr

from ._convert import DEFAULT_ID_KEY

__all__ = ["GraphWalkRetriever", "graph_records"]


def _doc_id(doc: Document, id_key: str | None) -> str:
    given = doc.id or (doc.metadata.get(id_key) if id_key else None)
    return str(given) if given else content_id(doc.page_content)


def _node_name(node: Any, where: str) -> str:
    name = getattr(node, "id", None)
    if name is None or (isinstance(name, str) and not name.strip()):
        raise InputError(f"{where}: a node has no id (its name), got {node!r}")
    return str(name)


def graph_records(
    graph_documents: Sequence[Any], documents: Sequence[Document] = (), id_key: str | None = DEFAULT_ID_KEY
) -> tuple[list[GraphRecord], dict[str, Document]]:
    """One :class:`GraphRecord` per graph document (its source document's id and text, its relationships as
    ``(source id, type, target id)`` triples, its node names), one without triples per extra document in
    ``documents`` (a chunk nothing was extracted from: found by its dense prior only), and the documents by id.

    A document's id: ``Document.id``, else ``metadata[id_key]``, else a content hash (the same text, the same id)."""
    if isinstance(graph_documents, (str, bytes)) or not isinstance(graph_documents, Sequence):
        raise InputError("graph_documents must be a list of GraphDocument (as LLMGraphTransformer returns)")
    records: list[GraphRecord] = []
    docs: dict[str, Document] = {}
    for n, gd in enumerate(graph_documents):
        where = f"graph document #{n}"
        source = getattr(gd, "source", None)
        if not isinstance(source, Document):
            raise InputError(f"{where}: its source must be the Document it was extracted from, got {source!r}")
        cid = _doc_id(source, id_key)
        triples = []
        for rel in getattr(gd, "relationships", None) or ():
            rtype = getattr(rel, "type", None)
            if not isinstance(rtype, str):
                raise InputError(f"{where}: a relationship has no type, got {rel!r}")
            s, o = getattr(rel, "source", None), getattr(rel, "target", None)
            triples.append((_node_name(s, where), rtype.replace("_", " ").lower(), _node_name(o, where)))
        names = [_node_name(node, where) for node in getattr(gd, "nodes", None) or ()]
        records.append(GraphRecord(cid, source.page_content, triples, names))
        docs.setdefault(cid, source)
    for n, doc in enumerate(documents):
        if not isinstance(doc, Document):
            raise InputError(f"documents[{n}]: expected a langchain_core Document, got {type(doc).__name__}")
        cid = _doc_id(doc, id_key)
        if cid not in docs:
            records.append(GraphRecord(cid, doc.page_content))
            docs[cid] = doc
    return records, docs


class GraphWalkRetriever(BaseRetriever):
    """HippoRAG 2's graph walk over graph documents; returns their source documents, best first.

    Each result is a copy of the source ``Document`` with ``metadata["relevance_score"]`` (the walk's PageRank mass,
    or the dense score for a query that reaches no fact). Per-call override: ``invoke(q, k=3)``.
    Build with :meth:`from_graph_documents` or the fields below; the walk is built on the first query.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    graph_documents: list[Any] = Field(default_factory=list, repr=False)
    """``GraphDocument``s (``nodes``, ``relationships``, ``source``), as ``LLMGraphTransformer`` returns them."""
    embeddings: Embeddings
    """Embeds facts, entity names and documents (``embed_documents``) and the query (``embed_query``)."""
    documents: list[Document] = Field(default_factory=list, repr=False)
    """Documents no graph document covers (chunks the extractor was not run on, e.g. those ``CoreChunkSelector``
    dropped, or found nothing in): walked as nodes with their dense prior and, with ``link_texts`` (automatic), an
    edge to every KG entity their text names."""
    k: int = Field(default=4, ge=1)
    """Documents returned per query."""
    id_key: str | None = DEFAULT_ID_KEY
    """Metadata key holding a document's id when ``Document.id`` is not set (as written by ``CoreChunkSelector``)."""
    settings: GraphWalkSettings = Field(default_factory=app_settings)
    """The walk's parameters (:class:`g2cons_plugins.hosts.GraphWalkSettings`): HippoRAG 2's defaults with
    ``link_texts`` automatic (a document in ``documents`` is linked to the KG entities its text names once the
    graph documents cover a third of all documents; :func:`g2cons_plugins.hosts.app_settings`)."""

    _walk: GraphWalk | None = PrivateAttr(default=None)
    _docs: dict[str, Document] = PrivateAttr(default_factory=dict)

    @classmethod
    def from_graph_documents(
        cls,
        graph_documents: Sequence[Any],
        embeddings: Embeddings,
        *,
        documents: Sequence[Document] = (),
        k: int = 4,
        id_key: str | None = DEFAULT_ID_KEY,
        **walk_options: Any,
    ) -> GraphWalkRetriever:
        """The retriever over ``graph_documents``; ``walk_options`` are :class:`GraphWalkSettings` fields
        (``damping=0.5``, ``top_facts=5``, ``link_texts=False``, ...) over the default ``settings``."""
        return cls(
            graph_documents=list(graph_documents),
            embeddings=embeddings,
            documents=list(documents),
            k=k,
            id_key=id_key,
            settings=app_settings(**walk_options),
        )

    def add_graph_documents(self, graph_documents: Sequence[Any], documents: Sequence[Document] = ()) -> None:
        """Add graph documents (and documents without one); the walk is rebuilt on the next query."""
        graph_records(graph_documents, documents, self.id_key)  # refuse bad input now, not at the next query
        self.graph_documents.extend(graph_documents)
        self.documents.extend(documents)
        self._walk = None

    @property
    def walk(self) -> GraphWalk:
        """The core walk (built on first use, and again after :meth:`add_graph_documents`)."""
        if self._walk is None:
            records, docs = graph_records(self.graph_documents, self.documents, self.id_key)
            if not records:
                raise InputError("GraphWalkRetriever has no graph document and no document: nothing to walk")
            emb = self.embeddings
            self._walk = GraphWalk.from_records(
                records,
                lambda texts: np.asarray(emb.embed_documents(list(texts)), dtype=np.float32),
                query_fn=emb.embed_query,
                settings=self.settings,
            )
            self._docs = docs
        return self._walk

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise InputError(f"k must be a positive int, got {k!r}")
        walk = self.walk
        out = []
        for cid, score in walk.retrieve(query, self.k if k is None else k):
            doc = self._docs[cid]
            out.append(doc.model_copy(update={"id": cid, "metadata": {**doc.metadata, "relevance_score": score}}))
        return out

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return await run_in_executor(None, self._get_relevant_documents, query, run_manager=run_manager.get_sync(), k=k)
