"""One immutable snapshot of an index: everything a query reads.

A :class:`Snapshot` holds the stored and derived state (:mod:`g2cons_plugins.build`), the config, the tokenizer
and the embedder, and the id -> position maps. Selection, retrieval, fusion and persistence are functions of a
snapshot. Nothing in it changes after construction (arrays are read-only, maps are read-only views), so any
number of threads may read one snapshot while a writer builds the next: :class:`~g2cons_plugins.index.G2ConSIndex`
swaps its reference in one assignment.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from .arrays.positions import ChunkPositions, UnitPositions
from .arrays.tables import ChunkTable, chunk_id_view, ids_increase
from .arrays.unit_index import UnitIndex, unit_index_for
from .embedders import Embedder, validate_embeddings
from .errors import InputError, check_text, normalize_id
from .text import Tokenizer, count_tokens_batch

if TYPE_CHECKING:  # the build is imported by make_snapshot: a query path that only reads a snapshot never loads it
    from .build import Derived, Keep, Stored
    from .chunks import Chunk, Unit
    from .concepts import TermIndex
    from .config import G2ConSConfig
    from .graph import GraphStats
    from .retrieval.lexical import LexicalIndex

__all__ = [
    "MAX_QUERY_CHARS",
    "HasSnapshot",
    "Snapshot",
    "as_snapshot",
    "make_snapshot",
]

_T = TypeVar("_T")


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
    unit_index_s: float = 0.0  # seconds to make (or update) the unit index with this snapshot
    unit_ann: UnitIndex | None = None  # the unit index over the unit vectors (large corpora; arrays.unit_index)
    pending: Any = None  # the update engine's trickle state since the last exact derive (engine.update.Pending)
    bm25: Any = field(default=None, repr=False)  # the units' BM25 weights read with a saved index, else None
    origin: Any = None  # where it is saved (engine.trickle_log.Origin), when exact and loaded or saved as is
    # per-snapshot values computed on first use (see memo); a new snapshot (made, replaced, unpickled) starts empty
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def memo(self, key: str, make: Callable[[], _T]) -> _T:
        """The value ``make()`` computed once for this snapshot under ``key`` (a name owned by the caller, e.g.
        ``"retrieval.min_tokens"``). Thread-safe enough: two threads asking at once may both compute it (``make``
        must be deterministic), and either result is kept. A cache that lives and dies with the snapshot, in place of
        module dictionaries keyed by ``id()``."""
        try:
            return self._memo[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._memo[key] = make()
            return value

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the memo (recomputed on first use after loading)."""
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__["_memo"] = {}

    @cached_property
    def chunk_pos(self) -> ChunkPositions:
        """Chunk id -> position (:mod:`g2cons_plugins.arrays.positions`)."""
        return ChunkPositions(self.stored.chunks)

    @cached_property
    def unit_pos(self) -> UnitPositions:
        """Unit id -> position (:mod:`g2cons_plugins.arrays.positions`)."""
        return UnitPositions(self.stored.units, self.stored.unit_parent, self.chunk_pos)

    @cached_property
    def lexical(self) -> LexicalIndex:
        """BM25 over the units (read with a saved index, else built on first use from the term index;
        :mod:`g2cons_plugins.retrieval.lexical`)."""
        from .retrieval.lexical import LexicalIndex

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
        """Seconds per build stage (read: the input checked and spooled, by a streaming build; split_and_count,
        embed, derive, unit_index; update_* after add/remove)."""
        return {**self.stored.timings, "derive": self.derive_s, "unit_index": self.unit_index_s}

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
        vec: np.ndarray = validate_embeddings(raw, 1, self.embedder.dim, self.embedder.name)[0]
        return vec

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
    unit_ann: UnitIndex | None = None,
    bm25: Any = None,
    after_step: Callable[[str], None] | None = None,
    keep: Keep | None = None,
) -> Snapshot:
    """A snapshot over ``stored`` (derived state computed unless given, from ``terms`` when given; ``after_step``
    and ``keep``: the derive's hooks between its steps and on its results, :func:`~g2cons_plugins.build.derive`). A
    ``stored`` whose chunks are not sorted by id (saved by an older version, or made by hand) is re-sorted
    first, reusing its units and vectors. ``previous``: the snapshot ``stored`` was made from (its unit index is
    updated, not rebuilt); ``unit_ann``: a unit index loaded with ``stored``."""
    from .build import derive, store

    # the ids alone (a refresh's chunks are a rope of tables: every chunk made with its text read ~0.7 GB at 1M)
    if not isinstance(stored.chunks, ChunkTable) and not ids_increase(chunk_id_view(stored.chunks)):
        stored = store(stored.chunks, embedder, tokenizer, config, False, previous=stored)
        derived = terms = unit_ann = bm25 = None  # a given unit index's keys follow the old unit order
    t0 = time.perf_counter()
    dv = derived if derived is not None else derive(stored, config, terms, after_step, keep)
    derive_s = time.perf_counter() - t0 if derived is None else 0.0
    t0 = time.perf_counter()
    ann = unit_index_for(stored, config, previous, unit_ann)
    return Snapshot(
        stored=stored,
        derived=dv,
        config=config,
        tokenizer=tokenizer,
        embedder=embedder,
        derive_s=derive_s,
        unit_index_s=time.perf_counter() - t0,
        unit_ann=ann,
        bm25=bm25 if derived is not None else None,
    )


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
