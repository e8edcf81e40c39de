"""A snapshot's next version: chunks added or removed (exactly, or by a trickle update), a trickle state made exact
again (``refreshed``), a saved log replayed, the saved origin recorded. Each function returns a new
:class:`~g2cons_plugins.snapshot.Snapshot`; the one it is given is left unchanged."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..arrays.unit_index import UnitIndex, unit_index_for
from ..build import Derived, Stored, store
from ..chunks import Chunk
from ..concepts import TermIndex
from ..concepts import update as update_terms
from ..errors import InputError, PersistError, normalize_id
from ..snapshot import Snapshot, make_snapshot
from ..storage.memory import drop_mapped_pages, release_free_memory, state_arrays
from ..storage.step_spill import derive_hooks, spilled
from .refresh_store import refreshed_stored
from .trickle_log import Origin, RecordingEmbedder, ReplayEmbedder, TrickleOp
from .trickle_store import drop_stored, insert_stored
from .update import Pending, TrickleTooLarge, append_terms, derive_added, derive_removed, supports, use_trickle

__all__ = ["refreshed", "replayed", "spilled_snapshot", "with_added", "with_origin", "with_removed"]


def with_added(
    snap: Snapshot, new: Sequence[Chunk], show_progress: bool = False, exact: bool | None = None
) -> Snapshot:
    """The next snapshot: ``snap`` plus ``new`` chunks (ids must be new). ``snap`` is left unchanged. ``exact``:
    True re-derives everything (the result equals a fresh build), False makes a trickle update (time
    proportional to the change, bounded drift until :func:`refreshed`; see :mod:`g2cons_plugins.engine.update`), None
    chooses by :func:`g2cons_plugins.engine.update.use_trickle`."""
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
    return make_snapshot(
        st,
        snap.embedder,
        snap.config,
        snap.tokenizer,
        terms=_terms(snap, st),
        previous=snap,
        **derive_hooks(st),
    )


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
    return make_snapshot(
        st,
        snap.embedder,
        snap.config,
        snap.tokenizer,
        terms=_terms(snap, st),
        previous=snap,
        **derive_hooks(st),
    )


def refreshed(snap: Snapshot) -> Snapshot:
    """``snap`` itself when it is exact, else the snapshot a fresh build on its chunks makes (every vector
    reused, the derived state recomputed: the trickle drift is gone)."""
    if snap.pending is None:
        return snap
    # the trickle state's chunks, units and vectors as they are, the sentences in store's order (refresh_store)
    st = refreshed_stored(snap.stored, snap.config) or store(
        snap.stored.chunks, snap.embedder, snap.tokenizer, snap.config, False, previous=snap.stored
    )
    drop_mapped_pages(state_arrays(snap.stored))  # what that read of the texts and vectors of a loaded index
    # previous=snap: the same units, so the unit index is kept as it is (not rebuilt)
    return make_snapshot(
        st,
        snap.embedder,
        snap.config,
        snap.tokenizer,
        terms=_terms(snap, st),
        previous=snap,
        **derive_hooks(st),
    )


def replayed(snap: Snapshot, ops: Sequence[TrickleOp]) -> Snapshot:
    """``snap`` after the logged trickle updates ``ops``, made again in their order
    (:mod:`g2cons_plugins.engine.trickle_log`): the same state the updates left, with nothing embedded. An update
    that does not fit ``snap`` (an added id it holds, a removed id it does not) raises
    :class:`~g2cons_plugins.errors.InputError`."""
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


def spilled_snapshot(snap: Snapshot) -> Snapshot:
    """``snap`` with the large arrays its trickle updates made in memory (the concept vectors, the edges, the
    adjacency, the incidences a removal renumbered) in read-only maps of unlinked temporary files
    (:func:`g2cons_plugins.storage.step_spill.spilled`): the same state, its computed look-ups kept; ``snap`` itself
    when it has nothing to move (an exact loaded index is file-backed already).

    Why: a removal or a refresh makes the next state beside this one (readers may hold it until the swap), so what
    this one holds in memory is paid twice at its peak. Measured at 100k passages after the benchmark's adds
    (``benchmarks/scale/bench.py``): 230-400 MB of such arrays. The caller swaps this in first and gives the freed
    heap back (:class:`g2cons_plugins.G2ConSIndex` does, before a removal or a refresh)."""
    if snap.pending is None:
        return snap
    stored, n_stored = spilled(snap.stored)
    derived, n_derived = spilled(snap.derived)
    if n_stored + n_derived == 0:
        return snap
    new = replace(snap, stored=stored, derived=derived)
    return _with_lookups(new, snap)


def with_origin(snap: Snapshot, origin: Origin) -> Snapshot:
    """``snap`` noted as saved at ``origin`` (an exact snapshot), or its trickle updates as starting from the exact
    snapshot saved there: the same state, its computed look-ups (positions, BM25) kept."""
    new = (
        replace(snap, origin=origin)
        if snap.pending is None
        else replace(snap, pending=replace(snap.pending, origin=origin))
    )
    return _with_lookups(new, snap)


def _with_lookups(new: Snapshot, snap: Snapshot) -> Snapshot:
    """``new`` (the same chunks and units as ``snap``) with the look-ups ``snap`` computed (positions, BM25)."""
    for name in ("chunk_pos", "unit_pos", "lexical"):
        if name in snap.__dict__:
            new.__dict__[name] = snap.__dict__[name]
    return new


def _trickle_added(
    snap: Snapshot, new: Sequence[Chunk], force: bool = False, replay: TrickleOp | None = None
) -> Snapshot:
    """A trickle add (:mod:`g2cons_plugins.engine.update`), logged (:mod:`g2cons_plugins.engine.trickle_log`);
    ``replay``: the logged add being replayed (its vectors are used, nothing is embedded)."""
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
    """A trickle removal (:mod:`g2cons_plugins.engine.update`)."""
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
        unit_index_s=snap.unit_index_s,
        unit_ann=unit_ann,
        pending=pd,
    )


def _trickled_ann(snap: Snapshot, st: Stored, old_units: np.ndarray) -> UnitIndex | None:
    """``snap``'s unit index updated by the changed units (their old positions known: no pass over the ids)."""
    from ..arrays.unit_hnsw import UnitANN, moved_unit_ann, unit_ann_params

    if isinstance(snap.unit_ann, UnitANN) and snap.config.unit_index_kind(len(st.units), "hnsw") == "hnsw":
        return moved_unit_ann(snap.unit_ann, old_units, st.unit_vecs, unit_ann_params(snap.config))
    return unit_index_for(st, snap.config, previous=snap, old_units=old_units)


def _terms(snap: Snapshot, st: Stored) -> TermIndex:
    """The term index of ``st``: ``snap``'s rows re-used, only new sentences analysed."""
    return update_terms(snap.derived.terms, snap.stored.sentences, st.sentences, snap.config)
