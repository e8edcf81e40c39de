"""``G2ConSIndex``: the whole method behind one object.

State is split in two (nano-graphrag style):
- *stored* state, the only thing ever embedded or split: chunks, their retrieval units, the distinct
  sentences, and the sentence and unit vectors;
- *derived* state, recomputed from the stored state by :func:`derive` with sparse algebra in seconds:
  TF-IDF concepts, incidences, concept vectors (Eq. 1), edges, PageRank.
A build, an incremental ``add``/``remove`` and a ``load`` all end in the same ``derive`` call, so an updated
index equals a full rebuild on the same chunks, and nothing known is ever re-embedded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .chunks import Chunk, Unit, check_unit_ids, make_chunks, split_units
from .concepts import extract_vocabulary, incidence, name_share, name_vocabulary
from .config import G2ConSConfig
from .embedders import CachedEmbedder, Embedder, get_embedder, validate_embeddings
from .errors import InputError
from .graph import EdgeSet, GraphStats, adjacency, build_edges, concept_vectors, degree_stats, pagerank
from .text import Tokenizer, count_tokens_batch, get_tokenizer

log = logging.getLogger("g2cons_plugins")


@dataclass
class Derived:
    """Everything recomputed from the stored state (see module doc)."""

    vocab: list[str]
    concept_index: dict[str, int]
    extracted: sp.csr_matrix  # chunks x concepts: concept was a top-n keyword of the chunk
    sent_inc: sp.csr_matrix  # sentences x concepts
    unit_inc: sp.csr_matrix  # units x concepts
    chunk_inc: sp.csr_matrix  # chunks x concepts (T_w as columns)
    unit_concepts: sp.csr_matrix  # concepts x units (transpose of unit_inc, csr for fast row access)
    concept_vecs: np.ndarray
    sentence_counts: np.ndarray  # |S_w|
    df: np.ndarray  # |T_w|: number of chunks containing w
    edges: EdgeSet
    A: sp.csr_matrix
    pagerank: np.ndarray
    name_share: np.ndarray  # per concept: share of capitalised occurrences
    names: list[str]  # bridge vocabulary (see concepts.name_vocabulary)
    name_df: np.ndarray
    unit_names: sp.csr_matrix  # units x names
    name_units: sp.csr_matrix  # names x units
    stats: GraphStats


@dataclass
class Stored:
    chunks: list[Chunk]
    chunk_tokens: np.ndarray
    units: list[Unit]
    unit_parent: np.ndarray
    unit_tokens: np.ndarray
    sentences: list[str]
    sent_unit: sp.csr_matrix  # sentences x units membership
    sent_vecs: np.ndarray
    unit_vecs: np.ndarray
    timings: dict[str, float] = field(default_factory=dict)

    @cached_property
    def median_unit_tokens(self) -> float:
        return max(float(np.median(self.unit_tokens)), 1.0) if len(self.unit_tokens) else 1.0


def derive(st: Stored, config: G2ConSConfig) -> Derived:
    """Concepts, incidences, Eq. 1 vectors, edges and PageRank from the stored state (deterministic)."""
    vocab, extracted = extract_vocabulary([c.text for c in st.chunks], config)
    sent_inc = incidence(st.sentences, vocab, config)
    unit_chunk = sp.csr_matrix(
        (np.ones(len(st.units), np.float32), (np.arange(len(st.units)), st.unit_parent)),
        shape=(len(st.units), len(st.chunks)),
    )
    unit_inc = _binary(st.sent_unit.T @ sent_inc)
    chunk_inc = _binary(unit_chunk.T @ unit_inc)
    if config.incidence == "extracted":
        chunk_inc = _binary(chunk_inc.multiply(extracted))
        unit_inc = _binary(unit_inc.multiply(unit_chunk @ extracted))
        sent_chunk = _binary(st.sent_unit @ unit_chunk)
        sent_inc = _binary(sent_inc.multiply(sent_chunk @ extracted))
    if config.vector_level == "chunk":  # ablation C: mean of the (sub-)chunk vectors instead of Eq. 1
        vecs, counts = concept_vectors(unit_inc, st.unit_vecs)
    else:
        vecs, counts = concept_vectors(sent_inc, st.sent_vecs)
    co_inc = sent_inc if config.cooccurrence == "sentence" else chunk_inc  # ablation A: sentence windows
    edges = build_edges(co_inc, vecs, config.theta_co, config.theta_sem, config.theta_sem_percentile)
    A = adjacency(edges, len(vocab))
    pr = pagerank(A, damping=config.pagerank_damping)
    names, unit_names, name_df = name_vocabulary([u.text for u in st.units], st.sentences, unit_chunk, config)
    isolated, mean_deg, max_deg = degree_stats(A)
    stats = GraphStats(
        n_chunks=len(st.chunks),
        n_units=len(st.units),
        n_sentences=len(st.sentences),
        n_concepts=len(vocab),
        n_candidate_pairs=edges.n_candidates,
        n_edges=len(edges.rows),
        theta_sem=edges.theta_sem,
        isolated_share=isolated,
        mean_degree=mean_deg,
        max_degree=max_deg,
    )
    return Derived(
        vocab=vocab,
        concept_index={w: i for i, w in enumerate(vocab)},
        extracted=extracted,
        sent_inc=sent_inc,
        unit_inc=unit_inc,
        chunk_inc=chunk_inc,
        unit_concepts=unit_inc.T.tocsr(),
        concept_vecs=vecs,
        sentence_counts=counts,
        df=np.asarray(chunk_inc.sum(axis=0)).ravel().astype(np.int64),
        edges=edges,
        A=A,
        pagerank=pr,
        name_share=name_share(st.sentences, vocab),
        names=names,
        name_df=name_df,
        unit_names=unit_names,
        name_units=unit_names.T.tocsr(),
        stats=stats,
    )


def _binary(M: Any) -> sp.csr_matrix:
    M = sp.csr_matrix(M, dtype=np.float32)
    M.eliminate_zeros()
    M.data[:] = 1.0
    return M


class G2ConSIndex:
    """Concept graph + core-chunk selection + concept-path retrieval + fusion over one corpus."""

    def __init__(
        self,
        stored: Stored,
        embedder: Embedder,
        config: G2ConSConfig,
        tokenizer: Tokenizer,
        derived: Derived | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.tokenizer = tokenizer
        self._st = stored
        t0 = time.perf_counter()
        self._dv = derived or derive(stored, config)
        self._derive_s = time.perf_counter() - t0  # per index: views over one Stored (paper mode) share its timings
        self._reindex()
        log.info("%s", self._dv.stats)

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls,
        chunks: Iterable[Any],
        embedder: str | Embedder | Callable[..., Any] = "wordllama",
        config: G2ConSConfig | None = None,
        tokenizer: str | Tokenizer | None = None,
        cache_dir: str | Path | None = None,
        show_progress: bool = False,
    ) -> G2ConSIndex:
        """Build from chunks: ``Chunk``s, strings, ``{"id", "text", "title"?, "metadata"?}`` dicts, or
        ``(id, text)`` pairs. ``embedder``: "wordllama", "minilm", "openai[:model]", "hash", or an Embedder;
        it is wrapped in a text-hash cache (on disk when ``cache_dir`` is given)."""
        config = config or G2ConSConfig()
        emb = _cached(get_embedder(embedder), cache_dir)
        tok = get_tokenizer(tokenizer)
        stored = _store(make_chunks(chunks), emb, tok, config, show_progress)
        return cls(stored, emb, config, tok)

    def add(self, chunks: Iterable[Any], show_progress: bool = False) -> None:
        """Add chunks without re-embedding anything known; derived state is recomputed (equals a rebuild)."""
        new = make_chunks(chunks)
        clash = [c.id for c in new if c.id in self._chunk_pos]
        if clash:
            raise InputError(f"chunk ids already in the index: {clash[:5]} (remove them first)")
        merged = self._st.chunks + new
        self._st = _store(merged, self.embedder, self.tokenizer, self.config, show_progress, previous=self._st)
        self._refresh()

    def remove(self, ids: Iterable[str]) -> None:
        """Remove chunks by id (unknown ids raise); derived state is recomputed (equals a rebuild)."""
        drop = set(ids)
        unknown = sorted(drop - set(self._chunk_pos))
        if unknown:
            raise InputError(f"unknown chunk ids: {unknown[:5]}")
        keep = [c for c in self._st.chunks if c.id not in drop]
        if not keep:
            raise InputError("removing these ids would leave an empty corpus")
        self._st = _store(keep, self.embedder, self.tokenizer, self.config, False, previous=self._st)
        self._refresh()

    def _refresh(self) -> None:
        t0 = time.perf_counter()
        self._dv = derive(self._st, self.config)
        self._derive_s = time.perf_counter() - t0
        self._reindex()

    def _reindex(self) -> None:
        self._chunk_pos = {c.id: i for i, c in enumerate(self._st.chunks)}
        self._unit_pos = {u.id: i for i, u in enumerate(self._st.units)}

    # ------------------------------------------------------------------ read access
    @property
    def stats(self) -> GraphStats:
        return self._dv.stats

    @property
    def timings(self) -> dict[str, float]:
        return {**self._st.timings, "derive": self._derive_s}

    @property
    def chunks(self) -> list[Chunk]:
        return list(self._st.chunks)

    @property
    def units(self) -> list[Unit]:
        return list(self._st.units)

    @property
    def stored(self) -> Stored:
        return self._st

    @property
    def derived(self) -> Derived:
        return self._dv

    def chunk(self, chunk_id: str) -> Chunk:
        try:
            return self._st.chunks[self._chunk_pos[chunk_id]]
        except KeyError:
            raise InputError(f"unknown chunk id {chunk_id!r}") from None

    def concept_pagerank(self) -> dict[str, float]:
        return dict(zip(self._dv.vocab, self._dv.pagerank.tolist(), strict=True))

    def embed_query(self, query: str) -> np.ndarray:
        if not isinstance(query, str) or not query.strip():
            raise InputError("query must be a non-empty string")
        return validate_embeddings(self.embedder.embed([query]), 1, self.embedder.dim, self.embedder.name)[0]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return count_tokens_batch(self.tokenizer, texts)

    # ------------------------------------------------------------------ the three parts of the method
    def select(self, **kwargs: Any) -> Any:
        """Core-chunk selection (see :func:`g2cons_plugins.selection.select`)."""
        from .selection import select

        return select(self, **kwargs)

    def retrieve(self, query: str, **kwargs: Any) -> Any:
        """Concept-path retrieval (see :func:`g2cons_plugins.retrieval.retrieve`)."""
        from .retrieval import retrieve

        return retrieve(self, query, **kwargs)

    def fuse(
        self,
        host: Sequence[Any],
        query: str,
        beta: int | None = None,
        lambda_: float | None = None,
        spill: bool | None = None,
        query_vector: np.ndarray | None = None,
    ) -> Any:
        """Dual-path: retrieve the concept path for ``query`` and fuse it with ``host`` results (see
        :func:`g2cons_plugins.ensemble.fuse`) into one context of at most ``beta`` tokens. ``lambda_`` / ``spill``
        default to the config's (0.4 / True; paper mode 0.6 / False)."""
        from .ensemble import fuse

        beta = self.config.beta if beta is None else int(beta)
        lam = self.config.fusion_lambda if lambda_ is None else lambda_
        sp = self.config.fusion_spill if spill is None else spill
        concept = self.retrieve(query, beta=beta, query_vector=query_vector)
        return fuse(host, concept, beta=beta, lambda_=lam, tokenizer=self.tokenizer, spill=sp)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> None:
        from .persistence import save_index

        save_index(self, Path(path))

    @classmethod
    def load(
        cls,
        path: str | Path,
        embedder: str | Embedder | Callable[..., Any] | None = None,
        tokenizer: str | Tokenizer | None = None,
    ) -> G2ConSIndex:
        from .persistence import load_index

        return load_index(Path(path), embedder=embedder, tokenizer=tokenizer)


def _cached(emb: Embedder, cache_dir: str | Path | None) -> Embedder:
    if isinstance(emb, CachedEmbedder) and cache_dir is None:
        return emb
    return CachedEmbedder(emb, cache_dir=cache_dir)


def _store(
    chunks: list[Chunk],
    emb: Embedder,
    tok: Tokenizer,
    config: G2ConSConfig,
    show_progress: bool,
    previous: Stored | None = None,
) -> Stored:
    """Split chunks into units and sentences, count tokens, embed what is not known yet."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    old_units: dict[str, list[Unit]] = {}
    if previous is not None:
        for u in previous.units:
            old_units.setdefault(u.parent_id, []).append(u)
    units: list[Unit] = []
    parents: list[int] = []
    iterator: Iterable[tuple[int, Chunk]] = enumerate(chunks)
    if show_progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, total=len(chunks), desc="split", unit="chunk")
    for i, ch in iterator:
        us = old_units.get(ch.id) or split_units(ch, tok, config.unit_tokens)
        units.extend(us)
        parents.extend([i] * len(us))
    check_unit_ids(units, {c.id for c in chunks})
    sent_pos: dict[str, int] = {}
    rows, cols = [], []
    for j, u in enumerate(units):
        for s in u.sentences:
            rows.append(sent_pos.setdefault(s, len(sent_pos)))
            cols.append(j)
    sentences = list(sent_pos)
    sent_unit = _binary(
        sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(sentences), len(units)))
    )
    if previous is not None:
        old_tok = dict(zip((c.id for c in previous.chunks), previous.chunk_tokens.tolist(), strict=True))
        missing = [c.text for c in chunks if c.id not in old_tok]
        fresh = iter(count_tokens_batch(tok, missing))
        chunk_tokens = np.array([old_tok[c.id] if c.id in old_tok else next(fresh) for c in chunks])
    else:
        chunk_tokens = np.array(count_tokens_batch(tok, [c.text for c in chunks]), dtype=np.int64)
    timings["split_and_count"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if previous is not None and isinstance(emb, CachedEmbedder):
        emb.add(previous.sentences, previous.sent_vecs)
        emb.add([u.text for u in previous.units], previous.unit_vecs)
    sent_vecs = _embed(emb, sentences, "sentences", show_progress)
    unit_vecs = _embed(emb, [u.text for u in units], "units", show_progress)
    timings["embed"] = time.perf_counter() - t0
    if previous is not None:
        timings = {**previous.timings, **{f"update_{k}": v for k, v in timings.items()}}
    return Stored(
        chunks=chunks,
        chunk_tokens=chunk_tokens.astype(np.int64),
        units=units,
        unit_parent=np.asarray(parents, dtype=np.int64),
        unit_tokens=np.array([u.n_tokens for u in units], dtype=np.int64),
        sentences=sentences,
        sent_unit=sent_unit,
        sent_vecs=sent_vecs,
        unit_vecs=unit_vecs,
        timings=timings,
    )


def _embed(emb: Embedder, texts: list[str], what: str, show_progress: bool) -> np.ndarray:
    if show_progress:
        log.info("embedding %d %s with %s", len(texts), what, emb.name)
    return validate_embeddings(emb.embed(texts), len(texts), emb.dim, emb.name)
