"""One immutable snapshot of an index: everything a query reads.

A :class:`Snapshot` holds the stored and derived state (:mod:`g2cons_plugins.state`), the config, the tokenizer
and the embedder, and the id -> position maps. Selection, retrieval, fusion and persistence are functions of a
snapshot. Nothing in it changes after construction (arrays are read-only, maps are read-only views), so any
number of threads may read one snapshot while a writer builds the next: :class:`~g2cons_plugins.index.G2ConSIndex`
swaps its reference in one assignment.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from .chunks import Chunk, Unit
from .config import G2ConSConfig
from .embedders import Embedder, validate_embeddings
from .errors import InputError, PersistError
from .graph import GraphStats
from .lexical import LexicalIndex
from .positions import ChunkPositions, UnitPositions, positions_of
from .state import Derived, Stored, derive, store
from .storage.memory import drop_mapped_pages, release_free_memory, state_arrays
from .tables import ChunkTable
from .terms import TermIndex
from .terms import update as update_terms
from .text import Tokenizer, count_tokens_batch
from .trickle_log import Origin, RecordingEmbedder, ReplayEmbedder, TrickleOp
from .trickle_store import drop_stored, insert_stored
from .update import Pending, TrickleTooLarge, append_terms, derive_added, derive_removed, supports, use_trickle
from .validate import check_text, normalize_id

__all__ = [
    "MAX_QUERY_CHARS",
    "HasSnapshot",
    "Snapshot",
    "as_snapshot",
    "make_snapshot",
    "refreshed",
    "replayed",
    "with_added",
    "with_origin",
    "with_removed",
]


MAX_QUERY_CHARS = 8_000
"""The characters of a question that are read (embedded, matched against names and concepts, scored by BM25): a
longer one is cut at the last white space before this many characters, with a warning, so that any question
returns in bounded time (``benchmarks/hostile/query_worst_case.py``)."""


def capped_query(query: str, warn: bool = True) -> str:
    """``query`` cut to at most :data:`MAX_QUERY_CHARS` characters (at its last white space before them, where
    there is one in the second half); a ``UserWarning`` says so when ``warn``."""
    if not isinstance(query, str) or len(query) <= MAX_QUERY_CHARS:
        return query
    cut = query.rfind(" ", MAX_QUERY_CHARS // 2, MAX_QUERY_CHARS + 1)
    out = query[: cut if cut > 0 else MAX_QUERY_CHARS]
    if warn:
        warnings.warn(
            f"the question has {len(query):,} characters: only its first {len(out):,} are read "
            f"(g2cons_plugins.snapshot.MAX_QUERY_CHARS = {MAX_QUERY_CHARS:,})",
            UserWarning,
            stacklevel=3,
        )
    return out


@dataclass(frozen=True, eq=False)
class Snapshot:
    """Stored + derived state, config, tokenizer and embedder of one version of an index (read-only)."""

    stored: Stored
    derived: Derived
    config: G2ConSConfig
    tokenizer: Tokenizer
    embedder: Embedder
    derive_s: float = 0.0
    unit_ann: Any = None  # approximate nearest-neighbour index over unit vectors (large corpora), else None
    pending: Pending | None = None  # trickle state since the last exact derive (g2cons_plugins.update), else None
    bm25: Any = field(default=None, repr=False)  # the units' BM25 weights read with a saved index, else None
    origin: Origin | None = None  # where this snapshot is saved, when it is exact and was loaded or saved as is

    @cached_property
    def chunk_pos(self) -> ChunkPositions:
        """Chunk id -> position (:mod:`g2cons_plugins.positions`)."""
        return ChunkPositions(self.stored.chunks)

    @cached_property
    def unit_pos(self) -> UnitPositions:
        """Unit id -> position (:mod:`g2cons_plugins.positions`)."""
        return UnitPositions(self.stored.units, self.stored.unit_parent, self.chunk_pos)

    @cached_property
    def lexical(self) -> LexicalIndex:
        """BM25 over the units (read with a saved index, else built on first use from the term index;
        :mod:`g2cons_plugins.lexical`)."""
        if self.bm25 is not None:
            return LexicalIndex.from_weights(self.bm25, self.derived.terms, self.config)
        return LexicalIndex.build(self.stored, self.derived.terms, self.config)

    @property
    def snapshot(self) -> Snapshot:
        """Itself (so functions taking a snapshot also take an index)."""
        return self

    @property
    def refreshed(self) -> bool:
        """True when the derived state equals a fresh build's (no trickle update since the last exact derive)."""
        return self.pending is None

    @property
    def stats(self) -> GraphStats:
        """Graph statistics (nodes, edges, isolated share, degrees)."""
        return self.derived.stats

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per build stage (split_and_count, embed, derive; update_* after add/remove)."""
        return {**self.stored.timings, "derive": self.derive_s}

    @property
    def chunks(self) -> Sequence[Chunk]:
        """All chunks, sorted by id (read-only: a tuple, or the columns of a loaded index)."""
        return _read_only(self.stored.chunks)

    @property
    def units(self) -> Sequence[Unit]:
        """All retrieval units, in chunk-id order (read-only, as :attr:`chunks`)."""
        return _read_only(self.stored.units)

    def chunk(self, chunk_id: Any) -> Chunk:
        """The chunk with this id (InputError if unknown)."""
        cid = normalize_id(chunk_id)
        try:
            return self.stored.chunks[self.chunk_pos[cid]]
        except KeyError:
            raise InputError(f"unknown chunk id {cid!r}") from None

    def has_chunk(self, chunk_id: Any) -> bool:
        """True when a chunk with this id is in the snapshot."""
        try:
            return normalize_id(chunk_id) in self.chunk_pos
        except InputError:
            return False

    def concept_pagerank(self) -> dict[str, float]:
        """PageRank of every concept."""
        return dict(zip(self.derived.vocab, self.derived.pagerank.tolist(), strict=True))

    def embed_query(self, query: str) -> np.ndarray:
        """phi(query): the embedder's unit vector of the query (query prefix used where the embedder has one)."""
        if not isinstance(query, str) or not query.strip():
            raise InputError("query must be a non-empty string")
        check_text("query", query)
        query = capped_query(query, warn=False)  # the caller that reads the rest of it warns
        embed_q = getattr(self.embedder, "embed_queries", None)
        raw = embed_q([query]) if callable(embed_q) else self.embedder.embed([query])
        return validate_embeddings(raw, 1, self.embedder.dim, self.embedder.name)[0]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts with the index's tokenizer."""
        return count_tokens_batch(self.tokenizer, texts)


def make_snapshot(
    stored: Stored,
    embedder: Embedder,
    config: G2ConSConfig,
    tokenizer: Tokenizer,
    derived: Derived | None = None,
    terms: TermIndex | None = None,
    previous: Snapshot | None = None,
    unit_ann: Any = None,
    bm25: Any = None,
) -> Snapshot:
    """A snapshot over ``stored`` (derived state computed unless given, from ``terms`` when given). A
    ``stored`` whose chunks are not sorted by id (saved by an older version, or made by hand) is re-sorted
    first, reusing its units and vectors. ``previous``: the snapshot ``stored`` was made from (its unit index is
    updated, not rebuilt); ``unit_ann``: a unit index loaded with ``stored``."""
    ids = stored.chunks.ids if isinstance(stored.chunks, ChunkTable) else [c.id for c in stored.chunks]
    if not isinstance(stored.chunks, ChunkTable) and any(a >= b for a, b in zip(ids, ids[1:], strict=False)):
        stored = store(stored.chunks, embedder, tokenizer, config, False, previous=stored)
        derived = terms = unit_ann = bm25 = None  # a given unit index's keys follow the old unit order
    t0 = time.perf_counter()
    dv = derived if derived is not None else derive(stored, config, terms)
    derive_s = time.perf_counter() - t0 if derived is None else 0.0
    return Snapshot(
        stored=stored,
        derived=dv,
        config=config,
        tokenizer=tokenizer,
        embedder=embedder,
        derive_s=derive_s,
        unit_ann=_unit_ann(stored, config, previous, unit_ann),
        bm25=bm25 if derived is not None else None,
    )


def _unit_ann(
    stored: Stored,
    config: G2ConSConfig,
    previous: Snapshot | None = None,
    loaded: Any = None,
    old_units: np.ndarray | None = None,
) -> Any:
    """The index over the unit vectors from ``config.ann_threshold`` units on (extra ``[ann]``): a product-quantised
    scan (:mod:`~g2cons_plugins.unit_pq`) or an HNSW graph (:mod:`~g2cons_plugins.vector_index`), as
    :meth:`~g2cons_plugins.config.G2ConSConfig.unit_index_kind` says; None below it, or when the library is not
    installed (then every query scans exactly, with a warning). ``loaded``: the index read with the snapshot (used
    as is when it is of that kind with the config's parameters); ``previous``: the snapshot this one was made from,
    whose index is updated by the changed units instead of rebuilt; ``old_units``: per unit, its position in
    ``previous`` (-1: new), where the caller knows them."""
    n = len(stored.units)
    kind = config.unit_index_kind(n, _kind_of(loaded) or _kind_of(getattr(previous, "unit_ann", None)))
    if kind is None:
        return None
    try:
        if kind == "pq":
            try:
                return _unit_pq(stored, config, previous, loaded, old_units)
            except ImportError as e:
                if config.ann_kind != "auto":
                    raise
                warnings.warn(f"{e}; the unit index is the HNSW graph instead", stacklevel=3)
        from .vector_index import unit_ann_for

        return unit_ann_for(stored, config, previous, loaded)
    except ImportError as e:
        warnings.warn(f"{n:,} units but no ANN library ({e}); queries scan every unit", stacklevel=3)
        return None


def _kind_of(index: Any) -> str | None:
    """``"pq"`` / ``"hnsw"`` for a unit index of that kind, else None."""
    from .unit_pq import UnitPQ
    from .vector_index import UnitANN

    return "pq" if isinstance(index, UnitPQ) else "hnsw" if isinstance(index, UnitANN) else None


def _unit_pq(
    stored: Stored, config: G2ConSConfig, previous: Snapshot | None, loaded: Any, old_units: np.ndarray | None
) -> Any:
    from .unit_pq import UnitPQ, unit_pq_for, unit_pq_params

    params = unit_pq_params(config)
    if isinstance(loaded, UnitPQ) and len(loaded) == len(stored.units):
        if loaded.params == params:
            return loaded
        if loaded.params.dims_per_code == params.dims_per_code:  # the codes hold: only the search differs
            return UnitPQ(loaded.centroids, loaded.codes, params)
    prev = getattr(previous, "unit_ann", None)
    if isinstance(prev, UnitPQ) and old_units is None:
        assert previous is not None
        old_units = positions_of(previous.unit_pos, [u.id for u in stored.units])
    return unit_pq_for(stored.unit_vecs, params, prev, old_units)


def with_added(
    snap: Snapshot, new: Sequence[Chunk], show_progress: bool = False, exact: bool | None = None
) -> Snapshot:
    """The next snapshot: ``snap`` plus ``new`` chunks (ids must be new). ``snap`` is left unchanged. ``exact``:
    True re-derives everything (the result equals a fresh build), False makes a trickle update (time
    proportional to the change, bounded drift until :func:`refreshed`; see :mod:`g2cons_plugins.update`), None
    chooses by :func:`g2cons_plugins.update.use_trickle`."""
    clash = sorted({c.id for c in new if c.id in snap.chunk_pos})
    if clash:
        raise InputError(f"chunk ids already in the index: {clash[:5]} (remove them first)")
    if new and use_trickle(len(snap.stored.chunks), len(new), snap.pending, snap.config, exact):
        try:
            return _trickle_added(snap, new, force=exact is False)
        except TrickleTooLarge:  # the change touches too much of the graph: the exact update is cheaper
            pass
    st = store(
        list(snap.stored.chunks) + list(new),
        snap.embedder,
        snap.tokenizer,
        snap.config,
        show_progress,
        previous=snap.stored,
    )
    return make_snapshot(st, snap.embedder, snap.config, snap.tokenizer, terms=_terms(snap, st), previous=snap)


def with_removed(snap: Snapshot, ids: Iterable[Any], exact: bool | None = None) -> Snapshot:
    """The next snapshot: ``snap`` without the chunks ``ids`` (each must be known); ``exact`` as in
    :func:`with_added`."""
    drop = {normalize_id(i) for i in ids}
    unknown = sorted(i for i in drop if i not in snap.chunk_pos)
    if unknown:
        raise InputError(f"unknown chunk ids: {unknown[:5]}")
    if len(drop) >= len(snap.stored.chunks):
        raise InputError("removing these ids would leave an empty corpus")
    if drop and use_trickle(len(snap.stored.chunks), len(drop), snap.pending, snap.config, exact):
        try:
            return _trickle_removed(snap, drop, force=exact is False)
        except TrickleTooLarge:  # as in with_added
            pass
    keep = [c for c in snap.stored.chunks if c.id not in drop]
    st = store(keep, snap.embedder, snap.tokenizer, snap.config, False, previous=snap.stored)
    return make_snapshot(st, snap.embedder, snap.config, snap.tokenizer, terms=_terms(snap, st), previous=snap)


def refreshed(snap: Snapshot) -> Snapshot:
    """``snap`` itself when it is exact, else the snapshot a fresh build on its chunks makes (every vector
    reused, the derived state recomputed: the trickle drift is gone)."""
    if snap.pending is None:
        return snap
    st = store(snap.stored.chunks, snap.embedder, snap.tokenizer, snap.config, False, previous=snap.stored)
    # previous=snap: the same units, so the unit index is kept as it is (not rebuilt)
    return make_snapshot(st, snap.embedder, snap.config, snap.tokenizer, terms=_terms(snap, st), previous=snap)


def replayed(snap: Snapshot, ops: Sequence[TrickleOp]) -> Snapshot:
    """``snap`` after the logged trickle updates ``ops``, made again in their order (:mod:`g2cons_plugins.trickle_log`):
    the same state the updates left, with nothing embedded. An update that does not fit ``snap`` (an added id it
    holds, a removed id it does not) raises :class:`~g2cons_plugins.errors.InputError`."""
    if not ops:
        return snap
    if supports(snap.config) is not None:
        raise InputError(f"a trickle log cannot replay on this config ({supports(snap.config)})")
    for i, op in enumerate(ops):
        if op.kind == "add":
            clash = sorted(c.id for c in op.chunks if c.id in snap.chunk_pos)
            if clash:
                raise InputError(f"update {i} adds chunk ids the index holds: {clash[:5]}")
            snap = _trickle_added(snap, op.chunks, force=True, replay=op)
        else:
            unknown = sorted(x for x in op.ids if x not in snap.chunk_pos)
            if unknown or len(op.ids) >= len(snap.stored.chunks):
                raise InputError(f"update {i} removes chunk ids the index does not hold ({unknown[:5]}) or all of them")
            snap = _trickle_removed(snap, set(op.ids), force=True)
    return snap


def with_origin(snap: Snapshot, origin: Origin) -> Snapshot:
    """``snap`` noted as saved at ``origin`` (an exact snapshot), or its trickle updates as starting from the exact
    snapshot saved there: the same state, its computed look-ups (positions, BM25) kept."""
    new = (
        replace(snap, origin=origin)
        if snap.pending is None
        else replace(snap, pending=replace(snap.pending, origin=origin))
    )
    for name in ("chunk_pos", "unit_pos", "lexical"):
        if name in snap.__dict__:
            new.__dict__[name] = snap.__dict__[name]
    return new


def _trickle_added(
    snap: Snapshot, new: Sequence[Chunk], force: bool = False, replay: TrickleOp | None = None
) -> Snapshot:
    """A trickle add (:mod:`g2cons_plugins.update`), logged (:mod:`g2cons_plugins.trickle_log`); ``replay``: the
    logged add being replayed (its vectors are used, nothing is embedded)."""
    t0 = time.perf_counter()
    pd = snap.pending or Pending.start(snap.stored, snap.derived, snap.origin)
    emb: RecordingEmbedder | ReplayEmbedder = (
        RecordingEmbedder(snap.embedder)
        if replay is None
        else ReplayEmbedder(snap.embedder.name, snap.embedder.dim, replay, "trickle log")
    )
    st, ins, sent_map = insert_stored(
        snap.stored, new, emb, snap.tokenizer, snap.config, (snap.chunk_pos, snap.unit_pos), pd.sent_map
    )
    if isinstance(emb, ReplayEmbedder) and not emb.done():
        raise PersistError("trickle log: a replayed add embeds fewer texts than the logged add did")
    op = emb.op(new) if isinstance(emb, RecordingEmbedder) else replay
    assert op is not None
    pd = pd.logged(op)
    fresh = list(st.sentences[len(snap.stored.sentences) :])
    terms, word_map = append_terms(snap.derived.terms, fresh, pd.word_map, snap.config)
    pd = replace(pd, sent_map=sent_map, word_map=word_map)
    dv, pd = derive_added(snap.derived, pd, st, ins, terms, snap.config, force)
    old_units = np.insert(np.arange(len(snap.stored.units)), ins.unit_ins, -1)
    return _trickled(snap, st, dv, pd, t0, old_units)


def _trickle_removed(snap: Snapshot, drop: set[str], force: bool = False) -> Snapshot:
    """A trickle removal (:mod:`g2cons_plugins.update`)."""
    t0 = time.perf_counter()
    # what earlier updates freed, first: a removal holds a second copy of most derived arrays at its peak, and the
    # heap they would reuse is fragmented (at 80k passages after the adds: 190 MB of free pages kept)
    release_free_memory()
    pd = (snap.pending or Pending.start(snap.stored, snap.derived, snap.origin)).logged(TrickleOp.remove(sorted(drop)))
    keep_chunk = np.ones(len(snap.stored.chunks), bool)
    keep_chunk[[snap.chunk_pos[i] for i in drop]] = False
    st, keep_unit = drop_stored(snap.stored, keep_chunk)
    drop_mapped_pages(state_arrays(snap.stored))  # the file pages the copies read (at 1M: 1.5 GB of unit vectors)
    dv, pd = derive_removed(snap.derived, pd, snap.stored, st, keep_chunk, keep_unit, snap.config, force)
    return _trickled(snap, st, dv, pd, t0, np.flatnonzero(keep_unit))


def _trickled(
    snap: Snapshot,
    st: Stored,
    dv: Derived,
    pd: Pending,
    t0: float,
    old_units: np.ndarray,
) -> Snapshot:
    """The snapshot after a trickle update; ``old_units``: per unit of ``st``, its position in ``snap`` (-1: new)."""
    # the derive's temporaries, before the unit index may take a copy of its graph (not after every add: the next
    # update would touch fresh pages again, 0.4 s on an add of 1% at 80k passages)
    release_free_memory()
    unit_ann = _trickled_ann(snap, st, old_units)
    drop_mapped_pages(state_arrays(snap.stored, snap.derived))  # file pages the update read from a loaded index
    timings = {**st.timings, "update_trickle": time.perf_counter() - t0}
    return Snapshot(
        stored=replace(st, timings=timings),
        derived=dv,
        config=snap.config,
        tokenizer=snap.tokenizer,
        embedder=snap.embedder,
        derive_s=snap.derive_s,
        unit_ann=unit_ann,
        pending=pd,
    )


def _trickled_ann(snap: Snapshot, st: Stored, old_units: np.ndarray) -> Any:
    """``snap``'s unit index updated by the changed units (their old positions known: no pass over the ids)."""
    from .vector_index import UnitANN, moved_unit_ann, unit_ann_params

    if isinstance(snap.unit_ann, UnitANN) and snap.config.unit_index_kind(len(st.units), "hnsw") == "hnsw":
        return moved_unit_ann(snap.unit_ann, old_units, st.unit_vecs, unit_ann_params(snap.config))
    return _unit_ann(st, snap.config, previous=snap, old_units=old_units)


def _terms(snap: Snapshot, st: Stored) -> TermIndex:
    """The term index of ``st``: ``snap``'s rows re-used, only new sentences analysed."""
    return update_terms(snap.derived.terms, snap.stored.sentences, st.sentences, snap.config)


def _read_only(seq: Sequence[Any]) -> Sequence[Any]:
    """A list as a tuple (a caller cannot change the snapshot); columns and ropes are read-only already."""
    return tuple(seq) if isinstance(seq, list) else seq


class HasSnapshot(Protocol):
    """A :class:`Snapshot` or an object holding one (``G2ConSIndex``)."""

    @property
    def snapshot(self) -> Snapshot: ...


def as_snapshot(obj: HasSnapshot) -> Snapshot:
    """The snapshot of a :class:`Snapshot` or of anything with a ``snapshot`` attribute (a ``G2ConSIndex``),
    read once: a caller holding it sees one consistent version."""
    snap = getattr(obj, "snapshot", None)
    if isinstance(snap, Snapshot):
        return snap
    raise InputError(f"expected a G2ConSIndex or Snapshot, got {type(obj).__name__}")
