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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from .chunks import Chunk, Unit
from .config import G2ConSConfig
from .embedders import Embedder, validate_embeddings
from .errors import InputError
from .graph import GraphStats
from .lexical import LexicalIndex
from .state import Derived, Stored, derive, store
from .terms import TermIndex
from .terms import update as update_terms
from .text import Tokenizer, count_tokens_batch
from .validate import check_text, normalize_id

__all__ = ["HasSnapshot", "Snapshot", "as_snapshot", "make_snapshot", "with_added", "with_removed"]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """Stored + derived state, config, tokenizer and embedder of one version of an index (read-only)."""

    stored: Stored
    derived: Derived
    config: G2ConSConfig
    tokenizer: Tokenizer
    embedder: Embedder
    derive_s: float = 0.0
    chunk_pos: Mapping[str, int] = field(default_factory=dict)
    unit_pos: Mapping[str, int] = field(default_factory=dict)
    unit_ann: Any = None  # approximate nearest-neighbour index over unit vectors (large corpora), else None

    @cached_property
    def lexical(self) -> LexicalIndex:
        """BM25 over the units (built on first use from the term index; :mod:`g2cons_plugins.lexical`)."""
        return LexicalIndex.build(self.stored, self.derived.terms, self.config)

    @property
    def snapshot(self) -> Snapshot:
        """Itself (so functions taking a snapshot also take an index)."""
        return self

    @property
    def stats(self) -> GraphStats:
        """Graph statistics (nodes, edges, isolated share, degrees)."""
        return self.derived.stats

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per build stage (split_and_count, embed, derive; update_* after add/remove)."""
        return {**self.stored.timings, "derive": self.derive_s}

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        """All chunks, sorted by id."""
        return tuple(self.stored.chunks)

    @property
    def units(self) -> tuple[Unit, ...]:
        """All retrieval units, in chunk-id order."""
        return tuple(self.stored.units)

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
) -> Snapshot:
    """A snapshot over ``stored`` (derived state computed unless given, from ``terms`` when given). A
    ``stored`` whose chunks are not sorted by id (saved by an older version, or made by hand) is re-sorted
    first, reusing its units and vectors. ``previous``: the snapshot ``stored`` was made from (its unit index is
    updated, not rebuilt); ``unit_ann``: a unit index loaded with ``stored``."""
    ids = [c.id for c in stored.chunks]
    if any(a >= b for a, b in zip(ids, ids[1:], strict=False)):
        stored = store(stored.chunks, embedder, tokenizer, config, False, previous=stored)
        derived = terms = unit_ann = None  # a given unit index's keys follow the old unit order
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
        chunk_pos={c.id: i for i, c in enumerate(stored.chunks)},
        unit_pos={u.id: i for i, u in enumerate(stored.units)},
        unit_ann=_unit_ann(stored, config, previous, unit_ann),
    )


def _unit_ann(stored: Stored, config: G2ConSConfig, previous: Snapshot | None = None, loaded: Any = None) -> Any:
    """The HNSW index over the unit vectors from ``config.ann_threshold`` units on (usearch, extra ``[ann]``); None
    below it, or when usearch is not installed (then every query scans exactly, with a warning). ``loaded``: the
    index read with the snapshot (used as is when its parameters are the config's); ``previous``: the snapshot this
    one was made from, whose index is updated by the changed units instead of rebuilt
    (:func:`~g2cons_plugins.vector_index.unit_ann_for`)."""
    n = len(stored.units)
    if config.ann_threshold is None or n < config.ann_threshold:
        return None
    from .vector_index import unit_ann_for

    try:
        return unit_ann_for(stored, config, previous, loaded)
    except ImportError as e:
        warnings.warn(f"{n:,} units but no ANN library ({e}); queries scan every unit", stacklevel=3)
        return None


def with_added(snap: Snapshot, new: Sequence[Chunk], show_progress: bool = False) -> Snapshot:
    """The next snapshot: ``snap`` plus ``new`` chunks (ids must be new). ``snap`` is left unchanged."""
    clash = sorted({c.id for c in new if c.id in snap.chunk_pos})
    if clash:
        raise InputError(f"chunk ids already in the index: {clash[:5]} (remove them first)")
    st = store(
        list(snap.stored.chunks) + list(new),
        snap.embedder,
        snap.tokenizer,
        snap.config,
        show_progress,
        previous=snap.stored,
    )
    return make_snapshot(st, snap.embedder, snap.config, snap.tokenizer, terms=_terms(snap, st), previous=snap)


def with_removed(snap: Snapshot, ids: Iterable[Any]) -> Snapshot:
    """The next snapshot: ``snap`` without the chunks ``ids`` (each must be known)."""
    drop = {normalize_id(i) for i in ids}
    unknown = sorted(drop - set(snap.chunk_pos))
    if unknown:
        raise InputError(f"unknown chunk ids: {unknown[:5]}")
    keep = [c for c in snap.stored.chunks if c.id not in drop]
    if not keep:
        raise InputError("removing these ids would leave an empty corpus")
    st = store(keep, snap.embedder, snap.tokenizer, snap.config, False, previous=snap.stored)
    return make_snapshot(st, snap.embedder, snap.config, snap.tokenizer, terms=_terms(snap, st), previous=snap)


def _terms(snap: Snapshot, st: Stored) -> TermIndex:
    """The term index of ``st``: ``snap``'s rows re-used, only new sentences analysed."""
    return update_terms(snap.derived.terms, snap.stored.sentences, st.sentences, snap.config)


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
