"""A replayed LLM extraction as a framework-free host KG (``g2cons fuse --host replay:PATH``, ``--host replay-core``).

The host KG of a selection holds only what the kept chunks produced (:meth:`Extraction.restrict`). Retrieval, LLM
free, in the way HippoRAG links a query to its graph: the query's entities are the graph's entity names written in
the query (case-insensitive word n-grams) plus the ``top_entities`` names nearest to the query by the index's
embedder (as LlamaIndex's ``VectorContextRetriever`` over embedded entity nodes); each linked entity adds its
weight x IDF to the chunks that mention it (hop 1) and half that to the chunks of its triple neighbours (hop 2, only
through entities mentioned in at most ``max_fanout`` chunks). The best ``limit`` chunks are returned, id only.
"""

from __future__ import annotations

import math
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..fusion.items import HostItem
from ..snapshot import capped_query
from .protocol import HostBuildCost
from .replay import Extraction, align, chunk_aliases, read_extraction

if TYPE_CHECKING:
    from ..index import G2ConSIndex
    from ..selection import SelectionReport

_WORD = re.compile(r"\w+")
MAX_NAME_WORDS = 32  # longer entity names are not looked for word by word in the question (bounded query time)
DEFAULT_PROMPT_TOKENS = 112  # LlamaIndex SimpleLLMPathExtractor's prompt without the text (cl100k)


def _key(name: str) -> str:
    return " ".join(_WORD.findall(name.casefold()))



def align_to_index(extraction: Extraction, index: G2ConSIndex) -> Extraction:
    """``extraction``'s records aligned to ``index``'s chunks (by id, by the passages a packed chunk holds, by text or
    by containment: :func:`~g2cons_plugins.hosts.replay.align`)."""
    chunks = index.stored.chunks
    return align(extraction, {c.id: c.text for c in chunks}, chunk_aliases(chunks))


class ReplayHost:
    """``HostKG`` over a precomputed extraction (see module doc)."""

    def __init__(
        self,
        path: str | None = None,
        extraction: Extraction | None = None,
        model: str | None = None,
        format: str = "auto",
        prompt_tokens_per_call: int = DEFAULT_PROMPT_TOKENS,
        top_entities: int = 5,
        max_fanout: int = 50,
        limit: int = 30,
    ) -> None:
        if extraction is None:
            if path is None:
                raise InputError("host replay needs a path: --host replay:PATH (JSONL, HippoRAG, GraphRAG, LightRAG)")
            extraction = read_extraction(path, format=format, model=model)
        if top_entities < 0 or max_fanout < 1 or limit < 1:
            raise InputError("top_entities must be >= 0, max_fanout and limit >= 1")
        self.extraction = extraction
        self.name = "replay-core"
        self.label = extraction.label() + "; retrieval: entity names in the query + nearest entity vectors (no LLM)"
        self.prompt_tokens_per_call = int(prompt_tokens_per_call)
        self._top, self._fanout, self._limit = top_entities, max_fanout, limit
        self._aligned: tuple[int, Extraction] | None = None
        self._vec_cache: dict[str, np.ndarray] = {}
        self._index: G2ConSIndex | None = None

    def _align(self, index: G2ConSIndex) -> Extraction:
        if self._aligned is None or self._aligned[0] != id(index):
            self._aligned = (id(index), align_to_index(self.extraction, index))
        return self._aligned[1]

    def build(self, index: G2ConSIndex, selection: SelectionReport, show_progress: bool = False) -> HostBuildCost:
        """The host KG of ``selection.kept_ids``: entity mentions and triple links of the kept chunks only."""
        t0 = time.perf_counter()
        ext = self._align(index).restrict(selection.kept_ids)
        mentions: dict[str, set[str]] = defaultdict(set)  # entity key -> chunk ids
        neighbours: dict[str, set[str]] = defaultdict(set)
        names: dict[str, str] = {}
        n_triples = 0
        out_texts = []
        by_chunk = ext.by_chunk()
        for cid, recs in by_chunk.items():
            for r in recs:
                for name in (*r.entities, *(t[0] for t in r.triples), *(t[2] for t in r.triples)):
                    k = _key(name)
                    if k:
                        mentions[k].add(cid)
                        names.setdefault(k, name)
                for s, _, o in r.triples:
                    a, b = _key(s), _key(o)
                    if a and b and a != b:
                        neighbours[a].add(b)
                        neighbours[b].add(a)
                n_triples += len(r.triples)
                out_texts.append("\n".join(" | ".join(t) for t in r.triples))
        self._mentions, self._neighbours = dict(mentions), dict(neighbours)
        self._keys = sorted(mentions)
        # word counts of the names matched as n-grams of the question (a longer name is linked by its vector only)
        self._lengths = sorted({n for k in self._keys if (n := len(k.split())) <= MAX_NAME_WORDS})
        self._n_chunks = max(len(selection.kept_ids), 1)
        self._vecs = self._entity_vectors(index, [names[k] for k in self._keys]) if self._top else None
        self._index = index
        kept_tokens = sum(index.count_tokens([index.chunk(c).text for c in selection.kept_ids]))
        calls = len(selection.kept_ids)
        return HostBuildCost(
            calls=calls,
            input_tokens=int(kept_tokens) + self.prompt_tokens_per_call * calls,
            output_tokens=int(sum(index.count_tokens(out_texts))) if out_texts else 0,
            chunks=calls,
            seconds=round(time.perf_counter() - t0, 3),
            llm=True,
            graph={"entities": len(self._keys), "relations": n_triples, "chunks": len(by_chunk)},
        )

    def _entity_vectors(self, index: G2ConSIndex, names: Sequence[str]) -> np.ndarray:
        todo = [n for n in dict.fromkeys(names) if n not in self._vec_cache]
        if todo:
            self._vec_cache.update(zip(todo, index.embedder.embed(todo), strict=True))
        if not names:
            return np.zeros((0, index.embedder.dim), dtype=np.float32)
        return np.stack([self._vec_cache[n] for n in names]).astype(np.float32)

    def _linked(self, query: str) -> dict[str, float]:
        words = _WORD.findall(capped_query(query, warn=False).casefold())  # the concept path warns
        linked: dict[str, float] = {}
        for n in self._lengths:
            for i in range(len(words) - n + 1):
                k = " ".join(words[i : i + n])
                if k in self._mentions:
                    linked[k] = 1.0
        if self._vecs is not None and len(self._keys):
            assert self._index is not None
            sims = self._vecs @ self._index.snapshot.embed_query(query)
            for j in np.argsort(-sims, kind="stable")[: self._top].tolist():
                linked[self._keys[j]] = max(linked.get(self._keys[j], 0.0), float(sims[j]))
        return linked

    def retrieve(self, query: str) -> list[HostItem]:
        """Chunks of the host KG for ``query``, best first (ids of the index's chunks)."""
        if self._index is None:
            raise InputError("the host KG is not built yet: call build(index, index.select(kappa=...)) first")
        score: dict[str, float] = defaultdict(float)
        for k, w in self._linked(query).items():
            chunks = self._mentions[k]
            idf = math.log(1.0 + self._n_chunks / len(chunks))
            for c in chunks:
                score[c] += w * idf
            for nb in self._neighbours.get(k, ()):
                if len(self._mentions[nb]) <= self._fanout:
                    nidf = math.log(1.0 + self._n_chunks / len(self._mentions[nb]))
                    for c in self._mentions[nb]:
                        score[c] += 0.5 * w * nidf
        best = sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[: self._limit]
        return [HostItem(chunk_id=c, score=s) for c, s in best]


def replay_host(path: str | None = None, **options: Any) -> ReplayHost:
    """Entry point ``replay-core`` (``--host replay-core:PATH``)."""
    return ReplayHost(path=path, **options)
