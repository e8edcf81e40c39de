"""The streaming build: the stored state made batch by batch into columns, never the corpus as Python objects.

:func:`g2cons_plugins.build.store` holds every chunk, unit and sentence as a Python object and the vectors in
memory (at 1M passages: ~1.2 GB of chunks, ~2.3 GB of units, 1.5 GB of vectors, before the derive starts). Here:

1. :func:`spool_chunks` checks the input chunks one at a time (:func:`~g2cons_plugins.chunks.iter_chunks`: the
   same errors and warnings as ``make_chunks``) and writes their ids, texts and metadata to spools
   (:mod:`g2cons_plugins.storage.spool`: unnamed temporary files, mapped read-only once written), then the same
   columns again in id order: a :class:`~g2cons_plugins.arrays.tables.ChunkTable` like a loaded index's.
2. :func:`stream_store` walks the sorted chunks in batches: splits them (here, or in an engine's workers, the
   next batch while this one is embedded when the engine can), counts, embeds the units (and the sentences where
   the concept vectors need them) and appends everything to spools: unit parents, token counts and sentence
   positions, the distinct sentences, the vectors. What stays in memory is the distinct sentences' numbers (in
   order of first use, by two 64-bit hashes each, ~64 bytes: :class:`~g2cons_plugins.arrays.first_use.FirstUse`)
   and 8 bytes per chunk.

The result is a :class:`~g2cons_plugins.build.Stored` over columns (a :class:`~g2cons_plugins.arrays.tables.UnitTable`,
a :class:`~g2cons_plugins.arrays.columns.TextColumn` of sentences, mapped vectors) that equals ``store``'s on the
same chunks field by field (the same ids, texts, counts, sentence order, vectors bit for bit: tested on the
shared sets), so the derive, the unit index and the saved files are the same.
"""

from __future__ import annotations

import json
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arrays.columns import TextColumn, bisect_left
from ..arrays.first_use import FirstUse
from ..arrays.tables import ChunkTable, UnitTable, metadata_json
from ..build import (
    Stored,
    check_degenerate,
    count_texts,
    embed_texts,
    needs_sentence_vectors,
    own_batch_counter,
)
from ..chunks import Chunk, Unit, iter_chunks, split_units
from ..config import G2ConSConfig
from ..embedders import Embedder
from ..errors import InputError
from ..storage.memory import drop_mapped_pages
from ..storage.spool import ArraySpool, TextSpool
from ..storage.stored_io import sentence_membership
from ..text import Tokenizer

__all__ = ["BATCH", "SpooledChunks", "spool_chunks", "stream_store"]

BATCH = 4096  # chunks split, counted and embedded per batch: what the batch pass holds as Python objects


class SpooledChunks(ChunkTable):
    """A :class:`~g2cons_plugins.arrays.tables.ChunkTable` whose metadata is JSON where JSON gives it back equal,
    and the chunk's own dict where it would not (a tuple, a date: kept as given, as ``store`` keeps them)."""

    __slots__ = ("kept",)

    def __init__(self, ids: Sequence[str], texts: Sequence[str], metadata: Sequence[str], kept: dict[int, Any]) -> None:
        super().__init__(ids, texts, metadata)
        self.kept = kept

    def meta(self, i: int) -> dict[str, Any]:
        """The metadata of chunk ``i`` (a new dict each call)."""
        if i in self.kept:
            return dict(self.kept[i])
        return super().meta(i)


def _meta_entry(meta: Mapping[str, Any]) -> str | None:
    """The metadata column's entry for ``meta``, or None where JSON would not give ``meta`` back equal."""
    try:
        raw = metadata_json(meta)
    except (TypeError, ValueError):
        return None
    if raw and json.loads(raw) != meta:
        return None
    return raw if _same_types(meta, json.loads(raw) if raw else {}) else None


def _same_types(a: Any, b: Any) -> bool:
    """``a`` and ``b`` (equal) hold the same types all the way down (``1 == 1.0``, ``(1,) != [1]`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return all(_same_types(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return True


def spool_chunks(items: Iterable[Any]) -> SpooledChunks:
    """The chunks of ``items``, checked (see module doc) and sorted by id, as columns in spools."""
    ids: list[str] = []
    texts, metas = TextSpool(), TextSpool()
    kept: dict[int, Any] = {}
    for ch in iter_chunks(items, texts.text):
        raw = _meta_entry(ch.metadata) if ch.metadata else ""
        if raw is None:
            kept[len(ids)] = ch.metadata
        ids.append(ch.id)
        texts.append(ch.text)
        metas.append(raw or "")
    order = sorted(range(len(ids)), key=ids.__getitem__)
    id_col = _written(ids[i] for i in order)
    del ids
    text_col, meta_col = texts.finish(), metas.finish()
    sorted_texts = _written(_dropping(text_col, order))
    sorted_meta = _written(meta_col[i] for i in order)
    where = np.empty(len(order), np.int64)
    where[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    return SpooledChunks(id_col, sorted_texts, sorted_meta, {int(where[k]): m for k, m in kept.items()})


def _written(texts: Iterable[str]) -> TextColumn:
    spool = TextSpool()
    for t in texts:
        spool.append(t)
    return spool.finish()


def _dropping(col: TextColumn, order: list[int], every: int = 65536) -> Iterator[str]:
    """``col``'s texts in ``order``, its mapped pages dropped every ``every`` texts (read once, not kept)."""
    for k, i in enumerate(order):
        if k % every == every - 1:
            drop_mapped_pages([col.buf])
        yield col[i]
    drop_mapped_pages([col.buf])


@dataclass
class _Columns:
    """What the batch pass appends to (see :func:`stream_store`)."""

    parent: ArraySpool
    unit_tokens: ArraySpool
    sent_counts: ArraySpool
    sent_flat: ArraySpool
    sentences: TextSpool
    written: TextSpool
    unit_vecs: ArraySpool
    sent_vecs: ArraySpool | None
    text_at: array[int]
    sent_ids: FirstUse
    chunk_tokens: np.ndarray
    timings: dict[str, float]


def stream_store(
    chunks: SpooledChunks,
    emb: Embedder,
    tok: Tokenizer,
    config: G2ConSConfig,
    show_progress: bool = False,
    engine: Any = None,
    batch: int = BATCH,
) -> Stored:
    """The stored state of ``chunks`` (from :func:`spool_chunks`), made batch by batch (see module doc); equal to
    :func:`g2cons_plugins.build.store` on the same chunks. ``engine``: as ``store``'s (split / count / embed
    elsewhere); one with ``submit_split`` splits the next batch while this one is embedded."""
    if batch < 1:
        raise InputError(f"batch must be >= 1, got {batch}")
    cols = _new_columns(len(chunks), emb.dim, needs_sentence_vectors(config))
    bars = _bars(len(chunks), show_progress)
    try:
        for lo, part, unit_lists in _split_batches(chunks, tok, config, engine, batch, cols.timings):
            _append(chunks, lo, part, unit_lists, cols, emb, tok, engine)
            _drop_read_pages(chunks)
            if bars:
                _advance(bars, len(part), sum(map(len, unit_lists)), len(chunks))
    finally:
        for bar in bars:
            bar.close()
    forget = getattr(emb, "forget", None)  # a memo of the build's texts (CachedEmbedder) serves no query
    if callable(forget):
        forget()
    return _stored(chunks, cols, emb.name)


def _drop_read_pages(chunks: SpooledChunks) -> None:
    """Unmap the pages of the chunk columns a batch read (the texts stay in the file; measured at 1M passages:
    525 MB of them resident two thirds into the pass without this)."""
    drop_mapped_pages(getattr(col, "buf", None) for col in (chunks.ids, chunks.texts, chunks.metadata))


def _new_columns(n_chunks: int, dim: int, sentence_vectors: bool) -> _Columns:
    return _Columns(
        parent=ArraySpool(np.int64),
        unit_tokens=ArraySpool(np.int64),
        sent_counts=ArraySpool(np.int64),
        sent_flat=ArraySpool(np.int64),
        sentences=TextSpool(),
        written=TextSpool(),
        unit_vecs=ArraySpool(np.float32, (dim,)),
        sent_vecs=ArraySpool(np.float32, (dim,)) if sentence_vectors else None,
        text_at=array("q"),
        sent_ids=FirstUse(),
        chunk_tokens=np.full(n_chunks, -1, np.int64),
        timings={"split_and_count": 0.0, "embed": 0.0},
    )


def _bars(total: int, show: bool) -> list[Any]:
    """Two progress bars (stage, rate, ETA): chunks split (of ``total``) and units embedded; none unless ``show``."""
    if not show:
        return []
    from tqdm.auto import tqdm

    return [tqdm(total=total, desc="split", unit="chunk"), tqdm(total=total, desc="embed units", unit="unit")]


def _advance(bars: list[Any], chunks_done: int, units_done: int, n_chunks: int) -> None:
    """Move both bars; the units' total is estimated from the units per chunk so far (it is known at the end)."""
    split, embed = bars
    split.update(chunks_done)
    seen = embed.n + units_done
    embed.total = max(seen, round(seen / split.n * n_chunks))
    embed.update(units_done)


_Batch = tuple[int, list[Chunk], list[list[Unit]]]


def _split_batches(
    chunks: SpooledChunks, tok: Tokenizer, config: G2ConSConfig, engine: Any, batch: int, timings: dict[str, float]
) -> Iterator[_Batch]:
    """``(first position, chunks, their units)`` batch after batch; with an engine that has ``submit_split``, the
    next batch is submitted before this one is yielded (split while the caller embeds)."""
    size = config.graph.unit_tokens
    starts = range(0, len(chunks), batch)
    if engine is None or not hasattr(engine, "submit_split"):
        for lo in starts:
            t0 = time.perf_counter()
            part = chunks[lo : lo + batch]
            if engine is not None:
                units = engine.split(part, tok.name, size)
            else:
                units = [split_units(c, tok, size) for c in part]
            timings["split_and_count"] += time.perf_counter() - t0
            yield lo, part, units
        return
    parts = (chunks[lo : lo + batch] for lo in starts)
    pending: Any = None
    for lo in starts:
        part = next(parts)
        job = engine.submit_split(part, tok.name, size)
        if pending is not None:
            yield _waited(pending, timings)
        pending = (lo, part, job)
    if pending is not None:
        yield _waited(pending, timings)


def _waited(pending: tuple[int, list[Chunk], Any], timings: dict[str, float]) -> _Batch:
    lo, part, job = pending
    t0 = time.perf_counter()
    units = job.result()
    timings["split_and_count"] += time.perf_counter() - t0
    return lo, part, units


def _append(
    chunks: SpooledChunks,
    lo: int,
    part: list[Chunk],
    unit_lists: list[list[Unit]],
    cols: _Columns,
    emb: Embedder,
    tok: Tokenizer,
    engine: Any,
) -> None:
    """Append one batch's units, sentences, token counts and vectors to ``cols``."""
    if len(unit_lists) != len(part):
        raise RuntimeError(f"the split gave units for {len(unit_lists)} of {len(part)} chunks")
    t0 = time.perf_counter()
    reuse = engine is None and not own_batch_counter(tok)
    parents, tokens, counts, unit_texts = [], [], [], []
    flat: list[str] = []  # the batch's sentences, unit by unit
    recount: list[int] = []
    for i, (ch, units) in enumerate(zip(part, unit_lists, strict=True)):
        p = lo + i
        _check_ids(chunks, ch, units)
        single = len(units) == 1
        for u in units:
            parents.append(p)
            tokens.append(u.n_tokens)
            counts.append(len(u.sentences))
            flat.extend(u.sentences)
            if not single or u.text != ch.text:  # as the saved columns: a text that is not its chunk's is written
                _written_text(cols, cols.parent.rows + len(parents) - 1, u.text)
            unit_texts.append(u.text)
        if reuse and single and units[0].text is ch.text:
            cols.chunk_tokens[p] = units[0].n_tokens
        else:
            recount.append(i)
    if recount:
        got = count_texts(engine, tok, [part[i].text for i in recount])
        cols.chunk_tokens[[lo + i for i in recount]] = got
    for spool, values in ((cols.parent, parents), (cols.unit_tokens, tokens), (cols.sent_counts, counts)):
        spool.append(np.asarray(values, dtype=np.int64))
    numbers, first = cols.sent_ids.number(flat)  # the sentences' numbers, in order of first use
    new_sents = [flat[i] for i in first]
    cols.sent_flat.append(numbers)
    for s in new_sents:
        cols.sentences.append(s)
    cols.timings["split_and_count"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    cols.unit_vecs.append(embed_texts(emb, unit_texts, "units", False, engine))
    if cols.sent_vecs is not None and new_sents:
        cols.sent_vecs.append(embed_texts(emb, new_sents, "sentences", False, engine))
    cols.timings["embed"] += time.perf_counter() - t0


def _written_text(cols: _Columns, j: int, text: str) -> None:
    """Unit ``j``'s text written out: it is not what splitting makes of its chunk (see the tables module doc)."""
    cols.text_at.append(j)
    cols.written.append(text)


def _check_ids(chunks: SpooledChunks, ch: Chunk, units: list[Unit]) -> None:
    """As :func:`~g2cons_plugins.chunks.check_unit_ids`: a unit id made for a chunk cut in several must not be
    another chunk's id (``x::1`` next to ``x``); ids are sorted, so a binary search finds it."""
    for u in units:
        if u.parent_id != ch.id:
            raise RuntimeError(f"the split gave unit {u.id!r} of chunk {u.parent_id!r} for chunk {ch.id!r}")
        if u.id != u.parent_id:
            k = bisect_left(chunks.ids, u.id)
            if k < len(chunks.ids) and chunks.ids[k] == u.id:
                raise InputError(f"retrieval unit id {u.id!r} collides with another chunk id; rename that chunk")


def _stored(chunks: SpooledChunks, cols: _Columns, source: str) -> Stored:
    """The :class:`Stored` over the finished columns."""
    parent, counts, flat = cols.parent.finish(), cols.sent_counts.finish(), cols.sent_flat.finish()
    unit_tokens = cols.unit_tokens.finish()
    sentences = cols.sentences.finish()
    off = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=off[1:])
    off.flags.writeable = False
    text_at = np.frombuffer(cols.text_at, dtype=np.int64).copy() if len(cols.text_at) else np.zeros(0, np.int64)
    text_at.flags.writeable = False
    units = UnitTable(chunks, parent, unit_tokens, sentences, (off, flat), (text_at, cols.written.finish()))
    unit_vecs = cols.unit_vecs.finish()
    sent_vecs = cols.sent_vecs.finish() if cols.sent_vecs is not None else None
    check_degenerate(sent_vecs if sent_vecs is not None else unit_vecs, source)
    drop_mapped_pages((unit_vecs, sent_vecs))  # the sample read maps 64 KB around each row it reads
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    chunk_tokens = cols.chunk_tokens
    chunk_tokens.flags.writeable = False
    return Stored(
        chunks=chunks,
        chunk_tokens=chunk_tokens,
        units=units,
        unit_parent=parent,
        unit_tokens=unit_tokens,
        sentences=sentences,
        sent_unit=sentence_membership(flat, owner, len(sentences), len(parent)),
        sent_vecs=sent_vecs,
        unit_vecs=unit_vecs,
        timings=dict(cols.timings),
    )

