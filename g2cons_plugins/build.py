"""The index state, as plain immutable data, and the functions that make it.

State is split in two (nano-graphrag style):
- :class:`Stored`, the only thing ever embedded or split: chunks (sorted by id), their retrieval units, the
  distinct sentences, the unit vectors and, where the concept vectors need them (``vector_level="sentence"``, Eq. 1),
  the sentence vectors;
- :class:`Derived`, recomputed from the stored state by :func:`derive` with sparse algebra in seconds, in the
  paper's order: TF-IDF concepts and their incidences (:mod:`~g2cons_plugins.concepts`), concept vectors (Eq. 1),
  edges and PageRank (:mod:`~g2cons_plugins.graph`), and the bridge names. ``derive`` knows nothing of memory or
  of the engine: a caller passes a hook (``after_step``) that runs between its steps.

A build, an incremental ``add``/``remove`` and a ``load`` all end in the same ``derive`` call, so an updated
index equals a full rebuild on the same chunks, and nothing known is ever re-embedded. Chunks are kept sorted by
id (:func:`store` sorts them), so every position, every tie and therefore every result is independent of the
order the chunks were given in. Arrays are made read-only (:func:`freeze`; loaded ones too): a snapshot is shared by
concurrent readers.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, Protocol, TypeVar

import numpy as np
import scipy.sparse as sp

from .arrays.ones import binary, share_ones
from .arrays.products import transposed_product
from .arrays.tables import chunk_id_view, unit_text_view
from .arrays.wide_rows import Matrix, WideRows
from .chunks import Chunk, Unit, check_unit_ids, split_units
from .concepts import (
    BridgeNames,
    Incidences,
    TermIndex,
    analyze,
    bridge_names,
    chunk_concepts,
    concept_incidences,
    share,
)
from .config import G2ConSConfig
from .embedders import Embedder, validate_embeddings
from .errors import InputError
from .graph import (
    NEAR_MARGIN,
    ConceptVectors,
    EdgeSet,
    GraphStats,
    NearPairs,
    adjacency,
    build_edges,
    concept_vectors,
    graph_stats,
    pagerank,
)
from .text import Tokenizer, count_tokens_batch

__all__ = [
    "Derived",
    "Keep",
    "check_degenerate",
    "count_texts",
    "embed_texts",
    "own_batch_counter",
    "DegenerateEmbeddingWarning",
    "Stored",
    "derive",
    "freeze",
    "needs_sentence_vectors",
    "store",
    "with_vectors",
]

log = logging.getLogger("g2cons_plugins")
_T = TypeVar("_T")


class DegenerateEmbeddingWarning(UserWarning):
    """The embedder gives (nearly) the same vector for different texts (a mock or constant embedder): cosine
    scores carry no information, theta_sem calibration keeps every candidate pair, dense ranking is arbitrary."""


@dataclass(frozen=True)
class Derived:
    """Everything recomputed from the stored state (see module doc)."""

    vocab: list[str]
    concept_index: dict[str, int]
    extracted: sp.csr_matrix  # chunks x concepts: concept was a top-n keyword of the chunk
    sent_inc: sp.csr_matrix  # sentences x concepts
    unit_inc: sp.csr_matrix  # units x concepts
    chunk_inc: sp.csr_matrix  # chunks x concepts (T_w as columns)
    unit_concepts: Matrix  # concepts x units (transpose of unit_inc, for fast row access: wide_rows.row)
    concept_vecs: np.ndarray
    sentence_counts: np.ndarray  # |S_w|
    df: np.ndarray  # |T_w|: number of chunks containing w
    edges: EdgeSet
    A: sp.csr_matrix
    pagerank: np.ndarray
    name_share: np.ndarray  # per concept: share of capitalised occurrences
    names: list[str]  # bridge vocabulary: names (capitalised non-stop words in >= 2 chunks)
    name_df: np.ndarray
    unit_names: sp.csr_matrix  # units x names
    name_units: Matrix  # names x units
    stats: GraphStats
    terms: TermIndex  # per-sentence word counts: an add analyses only new sentences
    # per concept: the norm of its vector's unnormalised sum (graph.concept_vectors), so a trickle update adds or takes
    # away the changed rows' vectors; None in a save from before it existed (the moved vectors are summed again)
    sum_norms: np.ndarray | None = None


@dataclass(frozen=True)
class Stored:
    """Chunks (sorted by id), units, distinct sentences and their vectors; see module doc."""

    chunks: Sequence[Chunk]  # a list, or columns (g2cons_plugins.arrays.tables) for a loaded index
    chunk_tokens: np.ndarray
    units: Sequence[Unit]
    unit_parent: np.ndarray
    unit_tokens: np.ndarray
    sentences: Sequence[str]
    sent_unit: sp.csr_matrix  # sentences x units membership
    sent_vecs: np.ndarray | None  # None: not embedded (the concept vectors come from the unit vectors)
    unit_vecs: np.ndarray
    timings: Mapping[str, float] = field(default_factory=dict)

    @cached_property
    def median_unit_tokens(self) -> float:
        """Median unit size in tokens (>= 1)."""
        return max(float(np.median(self.unit_tokens)), 1.0) if len(self.unit_tokens) else 1.0


def derive(
    st: Stored,
    config: G2ConSConfig,
    terms: TermIndex | None = None,
    after_step: Callable[[str], None] | None = None,
    keep: Keep | None = None,
) -> Derived:
    """The derived state of ``st`` (deterministic), in the paper's order: concepts -> incidences -> concept vectors
    (Eq. 1) -> edges -> PageRank, and the bridge names. All text analysis is in ``terms`` (analysed here unless
    given, e.g. updated by an add: :mod:`g2cons_plugins.concepts`); the rest is sparse algebra.

    ``after_step``: called with each step's name once it is done ("concepts", "incidences", "vectors",
    "edges.plan", "edges.candidates", "edges.pairs", "edges", "pagerank", "names"); the caller's hook between the
    steps (the index passes the engine's memory hook, :func:`g2cons_plugins.storage.memory.after_build_step`).
    ``keep``: given each result the derive holds on to as soon as it is made ("terms", "concepts", "incidences",
    "vectors", each block of candidate edges as "edges.block", "edges", "adjacency", "names", "unit_concepts",
    "name_units", and the assembled state as "derived"), returns what to hold instead, with the same values (the
    engine's :class:`g2cons_plugins.storage.step_spill.SpillSteps` moves large arrays to files); by default each is
    kept as it is."""
    step = after_step or _no_step
    kept = keep or _same
    terms = kept("terms", _terms(st, config, terms))
    unit_chunk = _unit_chunk(st)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="g2cons-names") as pool:
        # the bridge names depend on the term counts only: made while the concept graph is built
        names_job = pool.submit(bridge_names, terms, st.sent_unit, unit_chunk, config)
        cols, extracted = chunk_concepts(terms, st.sent_unit, unit_chunk, config)
        extracted = kept("concepts", extracted)
        step("concepts")
        inc = kept("incidences", concept_incidences(terms, cols, extracted, st.sent_unit, unit_chunk, config))
        step("incidences")
        vecs = concept_vectors(
            config.graph.vector_level, inc.sentences, inc.units, st.sent_unit, st.sent_vecs, st.unit_vecs, step
        )
        vecs = kept("vectors", vecs)
        step("vectors")
        edges = kept("edges", _edges(inc, vecs.vectors, config, step, kept))
        step("edges")
        A = kept("adjacency", adjacency(edges, len(cols)))
        pr = pagerank(A, damping=config.graph.pagerank_damping)
        step("pagerank")
        names = kept("names", names_job.result())
        step("names")
    # the transposes retrieval reads by row, each held as soon as it is made
    by_row = (kept("unit_concepts", _unit_concepts(inc, st, config)), kept("name_units", names.unit_names.T.tocsr()))
    vocab = [terms.words[j] for j in cols.tolist()]
    dv = _assemble(st, terms, vocab, share(terms, cols), extracted, inc, vecs, edges, A, pr, names, by_row)
    return freeze(kept("derived", dv))


class Keep(Protocol):
    """A derive's ``keep`` hook: ``(name, value) -> value`` with the same values (see :func:`derive`)."""

    def __call__(self, step: str, value: _T) -> _T: ...


def _same(step: str, value: _T) -> _T:
    """No hook: every result kept as it is."""
    return value


def _no_step(step: str) -> None:
    """No hook: nothing between the steps."""


def _terms(st: Stored, config: G2ConSConfig, terms: TermIndex | None) -> TermIndex:
    """``terms`` checked against ``st``'s sentences, or the term index of those sentences when None."""
    if terms is None:
        return analyze(st.sentences, config)
    if terms.n_sentences != len(st.sentences):
        raise InputError(f"term index has {terms.n_sentences} rows for {len(st.sentences)} sentences")
    return terms


def _unit_chunk(st: Stored) -> sp.csr_matrix:
    """Units x chunks 0/1: each unit's chunk."""
    n_units = len(st.units)
    return sp.csr_matrix(
        (np.ones(n_units, np.float32), (np.arange(n_units), st.unit_parent)), shape=(n_units, len(st.chunks))
    )


def _edges(
    inc: Incidences, vectors: np.ndarray, config: G2ConSConfig, step: Callable[[str], None], kept: Keep
) -> EdgeSet:
    """The edge step: co-occurrence over chunks (or sentences: ablation A) filtered by cosine; near pairs kept for
    trickle updates except in ``mode="paper"`` (the paper has none). The candidate blocks it holds go through
    ``kept`` too (as "edges.block")."""
    co_inc = inc.sentences if config.graph.cooccurrence == "sentence" else inc.chunks
    margin = 0.0 if config.mode == "paper" else NEAR_MARGIN
    percentile = config.graph.theta_sem_percentile
    return build_edges(
        co_inc, vectors, config.theta_co, config.theta_sem, percentile, margin=margin, after_step=step, keep=kept
    )


def _unit_concepts(inc: Incidences, st: Stored, config: G2ConSConfig) -> sp.csr_matrix:
    """Concepts x units, the transpose of ``inc.units`` by row. Where a unit holds the concepts of its sentences
    (``incidence="contains"``) it is made from the sentence incidence, the same matrix (0/1, sorted) without
    reading the units x concepts one back (at 1M passages its transpose read 0.7 GB of it from its file beside the
    0.7 GB it made)."""
    if config.graph.incidence == "contains":
        return binary(transposed_product(inc.sentences, st.sent_unit))
    return inc.units.T.tocsr()


def _assemble(
    st: Stored,
    terms: TermIndex,
    vocab: list[str],
    name_share: np.ndarray,
    extracted: sp.csr_matrix,
    inc: Incidences,
    vecs: ConceptVectors,
    edges: EdgeSet,
    A: sp.csr_matrix,
    pr: np.ndarray,
    names: BridgeNames,
    by_row: tuple[sp.csr_matrix, sp.csr_matrix],
) -> Derived:
    """The :class:`Derived` of the steps' results (with ``by_row``: the transposes retrieval reads by row, of the
    unit and the name incidences; and the stats)."""
    return Derived(
        vocab=vocab,
        concept_index={w: i for i, w in enumerate(vocab)},
        extracted=extracted,
        sent_inc=inc.sentences,
        unit_inc=inc.units,
        chunk_inc=inc.chunks,
        unit_concepts=by_row[0],
        concept_vecs=vecs.vectors,
        sentence_counts=vecs.counts,
        df=np.asarray(inc.chunks.sum(axis=0)).ravel().astype(np.int64),
        edges=edges,
        A=A,
        pagerank=pr,
        name_share=name_share,
        terms=terms,
        names=names.names,
        name_df=names.df,
        unit_names=names.unit_names,
        name_units=by_row[1],
        stats=graph_stats((len(st.chunks), len(st.units), len(st.sentences), len(vocab)), edges, A),
        sum_norms=vecs.sum_norms,
    )


def freeze(obj: _T) -> _T:
    """``obj`` (a :class:`Derived`, :class:`~g2cons_plugins.graph.EdgeSet` and its near pairs, :class:`TermIndex`,
    sparse matrix or array) with every array in it made read-only, in place: a snapshot is shared by concurrent
    readers, so no caller may change what every other reader sees (a writer builds new arrays). A 0/1 matrix's
    data becomes a view of one shared buffer of ones (:mod:`g2cons_plugins.arrays.ones`)."""
    if isinstance(obj, np.ndarray):
        obj.flags.writeable = False
    elif sp.issparse(obj):
        share_ones(obj)
        for name in ("data", "indices", "indptr"):
            a = getattr(obj, name, None)
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
    elif isinstance(obj, (Derived, EdgeSet, NearPairs, WideRows)):
        for f in fields(obj):
            freeze(getattr(obj, f.name))
    elif isinstance(obj, TermIndex):
        for M in (obj.counts, obj.noninit, obj.caps):
            freeze(M)
    return obj


def store(
    chunks: Iterable[Chunk],
    emb: Embedder,
    tok: Tokenizer,
    config: G2ConSConfig,
    show_progress: bool,
    previous: Stored | None = None,
    engine: Any = None,
) -> Stored:
    """Split chunks into units and sentences, count tokens, embed what is not known yet.

    Chunks are sorted by id first. With ``previous``, a chunk id already there keeps its units and token count,
    and a sentence or unit text already there keeps its vector (nothing known is split, counted or embedded
    again). The units are always embedded (dense scores); the sentences only where the concept vectors need them
    (``config.graph.vector_level == "sentence"``: Eq. 1) or ``previous`` holds sentence vectors (kept complete).
    ``engine``: None (here, in this process) or an object with ``split(chunks, tokenizer_name, unit_tokens) ->
    list[list[Unit]]``, ``count(texts, tokenizer_name) -> list[int]`` and ``embed(texts, embedder_spec) -> array``
    that runs those stages elsewhere (e.g. on Ray); the result is the same."""
    chunks = sorted(chunks, key=lambda c: c.id)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    units, parents = _split(chunks, tok, config, show_progress, previous, engine)
    sentences, sent_unit = _sentence_units(units)
    chunk_tokens = _chunk_tokens(chunks, tok, previous, engine, units)
    timings["split_and_count"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    unit_vecs = _vectors(emb, [u.text for u in units], previous, "units", show_progress, engine)
    sent_vecs = None
    if needs_sentence_vectors(config) or (previous is not None and previous.sent_vecs is not None):
        sent_vecs = _frozen(_vectors(emb, sentences, previous, "sentences", show_progress, engine))
    if previous is None:
        check_degenerate(sent_vecs if sent_vecs is not None else unit_vecs, emb.name)
    timings["embed"] = time.perf_counter() - t0
    if previous is not None:
        timings = {**previous.timings, **{f"update_{k}": v for k, v in timings.items()}}
    return Stored(
        chunks=chunks,
        chunk_tokens=_frozen(chunk_tokens),
        units=units,
        unit_parent=_frozen(np.asarray(parents, dtype=np.int64)),
        unit_tokens=_frozen(np.array([u.n_tokens for u in units], dtype=np.int64)),
        sentences=sentences,
        sent_unit=sent_unit,
        sent_vecs=sent_vecs,
        unit_vecs=_frozen(unit_vecs),
        timings=dict(timings),
    )


def needs_sentence_vectors(config: G2ConSConfig) -> bool:
    """Whether the concept vectors of ``config`` are made from sentence vectors (Eq. 1: ``vector_level ==
    "sentence"``, paper mode's unless an ablation sets another); otherwise only the retrieval units are embedded."""
    return config.graph.vector_level == "sentence"


def with_vectors(st: Stored, emb: Embedder, config: G2ConSConfig, show_progress: bool = False) -> Stored:
    """``st`` with every vector ``config`` needs: the sentence vectors embedded when ``config`` needs them (Eq. 1)
    and ``st`` holds none (it was built with ``vector_level="unit"`` or ``"chunk"``); ``st`` itself otherwise."""
    if st.sent_vecs is not None or not needs_sentence_vectors(config):
        return st
    t0 = time.perf_counter()
    vecs = _frozen(embed_texts(emb, list(st.sentences), "sentences", show_progress))
    timings = {**st.timings, "embed_sentences": time.perf_counter() - t0}
    return replace(st, sent_vecs=vecs, timings=timings)


def _vectors(
    emb: Embedder, texts: list[str], previous: Stored | None, what: str, show_progress: bool, engine: Any
) -> np.ndarray:
    """Vectors of ``texts`` (``what``: "units" or "sentences"): those ``previous`` holds copied, the rest embedded."""
    if previous is None:
        return embed_texts(emb, texts, what, show_progress, engine)
    if what == "units":
        old_texts, old_vecs = list(unit_text_view(previous.units)), previous.unit_vecs
    elif previous.sent_vecs is not None:
        old_texts, old_vecs = list(previous.sentences), previous.sent_vecs
    else:
        old_texts, old_vecs = [], np.zeros((0, emb.dim), np.float32)
    return _reuse_or_embed(emb, texts, old_texts, old_vecs, what, show_progress, engine)


def _split(
    chunks: list[Chunk],
    tok: Tokenizer,
    config: G2ConSConfig,
    show_progress: bool,
    previous: Stored | None,
    engine: Any,
) -> tuple[list[Unit], list[int]]:
    """The retrieval units of the (sorted) chunks and the position of each unit's chunk; a chunk ``previous``
    holds keeps its units."""
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
    split_by_engine: dict[str, list[Unit]] = {}
    if engine is not None:
        todo = [c for c in chunks if c.id not in old_units]
        split = engine.split(todo, tok.name, config.graph.unit_tokens)
        split_by_engine = dict(zip((c.id for c in todo), split, strict=True))
    for i, ch in iterator:
        us = old_units.get(ch.id) or split_by_engine.get(ch.id) or split_units(ch, tok, config.graph.unit_tokens)
        units.extend(us)
        parents.extend([i] * len(us))
    check_unit_ids(units, {c.id for c in chunks})
    return units, parents


def _sentence_units(units: list[Unit]) -> tuple[list[str], sp.csr_matrix]:
    """The distinct sentences in order of first use, and the (sentence x unit) 0/1 incidence matrix."""
    sent_pos: dict[str, int] = {}
    rows, cols = [], []
    for j, u in enumerate(units):
        for s in u.sentences:
            rows.append(sent_pos.setdefault(s, len(sent_pos)))
            cols.append(j)
    sentences = list(sent_pos)
    sent_unit = freeze(
        binary(sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(sentences), len(units))))
    )
    return sentences, sent_unit


def _chunk_tokens(
    chunks: list[Chunk], tok: Tokenizer, previous: Stored | None, engine: Any, units: Sequence[Unit] = ()
) -> np.ndarray:
    """Token count of each chunk; a chunk ``previous`` holds keeps its count. Built here (no ``previous``, no
    engine) with a tiktoken or a plain tokenizer, a chunk that is one unit holding its own text has that unit's
    count (the same ``encode`` of the same text): only the chunks cut into several units are counted again."""
    if previous is None and engine is None and units and not own_batch_counter(tok):
        out = np.full(len(chunks), -1, dtype=np.int64)
        pos = {c.id: i for i, c in enumerate(chunks)}
        for u in units:
            if u.id == u.parent_id and u.text is chunks[pos[u.id]].text:
                out[pos[u.id]] = u.n_tokens
        todo = np.flatnonzero(out < 0)
        if len(todo):
            out[todo] = count_texts(engine, tok, [chunks[i].text for i in todo.tolist()])
        return out
    if previous is None:
        return np.array(count_texts(engine, tok, [c.text for c in chunks]), dtype=np.int64)
    old_tok = dict(zip(chunk_id_view(previous.chunks), previous.chunk_tokens.tolist(), strict=True))
    missing = [c.text for c in chunks if c.id not in old_tok]
    fresh = iter(count_texts(engine, tok, missing))
    return np.array([old_tok[c.id] if c.id in old_tok else next(fresh) for c in chunks], dtype=np.int64)


def own_batch_counter(tok: Tokenizer) -> bool:
    """True when ``tok`` brings its own batch counter or encoder (one that might count otherwise than ``encode``)."""
    from .text import TiktokenTokenizer

    return not isinstance(tok, TiktokenTokenizer) and (hasattr(tok, "count_batch") or hasattr(tok, "encode_batch"))


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` made read-only (shared by concurrent readers; a writer must build a new array)."""
    a.flags.writeable = False
    return a


def _reuse_or_embed(
    emb: Embedder,
    texts: list[str],
    old_texts: list[str],
    old_vecs: np.ndarray,
    what: str,
    show_progress: bool,
    engine: Any = None,
) -> np.ndarray:
    """Vectors of ``texts``: copied from ``old_vecs`` where the text is known, embedded otherwise."""
    old = {t: i for i, t in enumerate(old_texts)}
    src = np.fromiter((old.get(t, -1) for t in texts), dtype=np.int64, count=len(texts))
    out = np.empty((len(texts), old_vecs.shape[1] if old_vecs.ndim == 2 else emb.dim), dtype=np.float32)
    known = src >= 0
    out[known] = old_vecs[src[known]]
    new = np.flatnonzero(~known)
    if len(new):
        out[new] = embed_texts(emb, [texts[i] for i in new.tolist()], what, show_progress, engine)
    return out


def check_degenerate(vecs: np.ndarray, source: str, sample: int = 512) -> bool:
    """Warn (:class:`DegenerateEmbeddingWarning`) when ``vecs`` of different texts have rank <= 1 (e.g. a
    constant mock embedder); returns True then. Checked on an evenly spaced sample of at most ``sample`` rows."""
    n = len(vecs)
    if n < 2:
        return False
    X = np.asarray(vecs[np.linspace(0, n - 1, min(n, sample)).astype(np.int64)], dtype=np.float64)
    X = X - X.mean(axis=0, keepdims=True)
    if float(np.abs(X).max(initial=0.0)) > 1e-6:  # not constant
        if len(X) < 8:
            return False
        s = np.linalg.svd(X, compute_uv=False)
        if s[1] > 1e-6 * s[0]:  # rank >= 2 (a real embedder of >= 8 texts)
            return False
    warnings.warn(
        f"embedder {source!r} gives (nearly) the same vector, or vectors on one line, for different texts: "
        "semantic edges (theta_sem) and dense scores carry no information; use a real embedder",
        DegenerateEmbeddingWarning,
        stacklevel=3,
    )
    return True


def count_texts(engine: Any, tok: Tokenizer, texts: list[str]) -> list[int]:
    """Token counts of ``texts``: here (``engine`` None: :func:`~g2cons_plugins.text.count_tokens_batch`) or by
    the engine's ``count``."""
    return count_tokens_batch(tok, texts) if engine is None or not texts else list(engine.count(texts, tok.name))


_EMBED_BATCH = 2048  # texts per embed call: what one call holds while it runs (each text's vector is its own)


def embed_texts(emb: Embedder, texts: list[str], what: str, show_progress: bool, engine: Any = None) -> np.ndarray:
    """Vectors of ``texts`` (validated). Here (no ``engine``) in calls of :data:`_EMBED_BATCH` texts written into one
    array, so an embedder's working memory is that of one batch, not of the corpus (measured at 100k passages with
    wordllama: the one call over 154k units held 880 MB beyond its result); the vectors are the same (an embedder
    embeds each text on its own: tested)."""
    if show_progress:
        log.info("embedding %d %s with %s", len(texts), what, emb.name)
    if engine is not None and texts:
        return validate_embeddings(engine.embed(texts, emb.name), len(texts), emb.dim, emb.name)
    if len(texts) <= _EMBED_BATCH:
        return validate_embeddings(emb.embed(texts), len(texts), emb.dim, emb.name)
    out = np.empty((len(texts), emb.dim), dtype=np.float32)
    bar = None
    if show_progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(texts), desc=f"embed {what}", unit=what.rstrip("s"))
    try:
        for start in range(0, len(texts), _EMBED_BATCH):
            batch = texts[start : start + _EMBED_BATCH]
            out[start : start + len(batch)] = validate_embeddings(emb.embed(batch), len(batch), emb.dim, emb.name)
            if bar is not None:
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return out
