"""The stored state a refresh derives from, made from a trickle state without materialising the corpus.

A refresh (:func:`g2cons_plugins.engine.snapshot_updates.refreshed`) must derive from exactly the stored state a
fresh build on the same chunks makes. ``store(chunks, previous=...)`` gives it, but re-walks the whole corpus as
Python objects: every chunk (a list), every unit (a dict of lists of units by chunk id), every unit's text (a
list, a second list of the previous texts and a dict of them) and a new in-memory copy of all unit vectors (with a
second one while it is made). Measured at 100k passages on a loaded index after a trickle add: +870 MB held and a
peak of +1,040 MB before the derive starts (at 1M passages about ten times that: most of the 18 GB peak of a
refresh).

A trickle update keeps the chunks and units sorted by id exactly as ``store`` keeps them, with their token counts,
parents and vectors (:mod:`g2cons_plugins.engine.trickle_store`). Only two things differ from ``store``'s result:
new distinct sentences were appended after the known ones (``store`` orders them by first use) and a removed
chunk's sentences stay as rows no unit reads. So :func:`refreshed_stored` keeps the chunks, units, counts and unit
vectors as they are (columns and maps stay columns and maps) and remakes only the sentences in first-use order,
the sentence x unit matrix and, where there are sentence vectors, their rows in that order. What it holds is the
distinct sentences (a dict, as ``store``) and 8 bytes per unit.

``store`` copies each unit's vector from the last unit with the same text. A unit with the same text as another
has the same vector wherever an embedder embeds each text on its own; where two differ, the same copy is made here
(the units are grouped by a hash of their text, each group checked on the texts themselves). Where the state is
not one a trickle update made (chunks out of id order, sentence vectors the config needs but the state lacks),
None: the caller uses ``store``.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from ..arrays.ones import binary
from ..arrays.tables import chunk_id_view, ids_increase, unit_text_view
from ..build import Stored, freeze, needs_sentence_vectors
from ..chunks import Unit
from ..config import G2ConSConfig
from ..storage.memory import drop_mapped_pages

_T = TypeVar("_T")

__all__ = ["PAGE_DROP_UNITS", "refreshed_stored"]

# units read between two unmappings of the pages read of their texts (:func:`_dropping`)
PAGE_DROP_UNITS = 1 << 17


def refreshed_stored(st: Stored, config: G2ConSConfig) -> Stored | None:
    """The stored state ``store(st.chunks, ..., previous=st)`` makes from a trickle state ``st``, field by field
    (module doc), without embedding, splitting or counting anything; None where ``st`` is not one a trickle update
    leaves (then ``store`` must run)."""
    t0 = time.perf_counter()
    if (st.sent_vecs is None and needs_sentence_vectors(config)) or not ids_increase(chunk_id_view(st.chunks)):
        return None
    sentences, sent_unit = _sentence_units(st.units)
    sent_vecs = None
    if st.sent_vecs is not None:
        old = {s: i for i, s in enumerate(st.sentences)}  # the last row of a text, as store's vector look-up
        rows = np.fromiter((old.get(s, -1) for s in sentences), dtype=np.int64, count=len(sentences))
        del old
        if len(rows) and int(rows.min()) < 0:
            return None  # a unit's sentence the state has no vector for: store would embed it
        sent_vecs = _frozen(np.ascontiguousarray(st.sent_vecs[rows], dtype=np.float32))
    unit_vecs = _same_text_same_vector(st.units, st.unit_vecs)
    timings = {**st.timings, "update_split_and_count": time.perf_counter() - t0, "update_embed": 0.0}
    return replace(
        st,
        chunk_tokens=_int64(st.chunk_tokens),
        unit_parent=_int64(st.unit_parent),
        unit_tokens=_int64(st.unit_tokens),
        sentences=sentences,
        sent_unit=sent_unit,
        sent_vecs=sent_vecs,
        unit_vecs=unit_vecs,
        timings=timings,
    )


def _sentence_units(units: Sequence[Unit]) -> tuple[list[str], sp.csr_matrix]:
    """The distinct sentences in order of first use and the (sentence x unit) 0/1 matrix, as ``store`` makes them
    (:func:`g2cons_plugins.build._sentence_units`), with the pairs in arrays instead of lists of ints."""
    sent_pos: dict[str, int] = {}
    rows, cols = array("q"), array("q")
    for j, u in enumerate(_dropping(units, units)):
        for s in u.sentences:
            rows.append(sent_pos.setdefault(s, len(sent_pos)))
            cols.append(j)
    sentences = list(sent_pos)
    del sent_pos
    r, c = np.frombuffer(rows, dtype=np.int64), np.frombuffer(cols, dtype=np.int64)
    ones = np.ones(len(r), np.float32)
    sent_unit = freeze(binary(sp.csr_matrix((ones, (r, c)), shape=(len(sentences), len(units)))))
    return sentences, sent_unit


def _same_text_same_vector(units: Sequence[Unit], vecs: np.ndarray) -> np.ndarray:
    """``vecs`` where each unit's vector is the vector of the last unit with its text (``store``'s copy by text),
    as it is when no two units of the same text have different vectors; a corrected copy otherwise."""
    texts = unit_text_view(units)
    keys = np.fromiter((hash(t) for t in _dropping(texts, units)), dtype=np.int64, count=len(texts))
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
    sizes = np.diff(np.concatenate((starts, [len(sk)])))
    fixes: list[tuple[np.ndarray, int]] = []
    for g in np.flatnonzero(sizes > 1).tolist():  # units whose texts hash alike: few (repeated texts)
        members = order[starts[g] : starts[g] + sizes[g]]
        by_text: dict[str, list[int]] = {}
        for j in members.tolist():
            by_text.setdefault(texts[j], []).append(j)
        for same in by_text.values():
            last = max(same)
            others = np.array([j for j in same if j != last], dtype=np.int64)
            want = np.tile(np.asarray(vecs[last]), (len(others), 1)).tobytes()
            if len(others) and np.ascontiguousarray(vecs[others]).tobytes() != want:  # bit for bit
                fixes.append((others, last))
    if not fixes:
        return vecs
    out = np.array(vecs, dtype=np.float32)
    for others, last in fixes:
        out[others] = out[last]
    return _frozen(out)


def _dropping(items: Sequence[_T], owner: Any) -> Iterator[_T]:
    """``items`` in order, the pages read of ``owner``'s file maps (a loaded index's unit table: its texts)
    unmapped every :data:`PAGE_DROP_UNITS` items and at the end. A pass over every unit text of a loaded 1M-passage
    index otherwise held its ~1 GB of text pages until the refresh dropped them (two passes: 2 GB at the peak)."""
    try:
        for j, x in enumerate(items):
            if j and j % PAGE_DROP_UNITS == 0:
                drop_mapped_pages([owner])
            yield x
    finally:  # also when the reader stops at a count (``np.fromiter``) and the generator is closed
        drop_mapped_pages([owner])


def _int64(a: np.ndarray) -> np.ndarray:
    """``a`` as int64 (``store``'s type), read-only; ``a`` itself when it is one."""
    return a if a.dtype == np.int64 else _frozen(a.astype(np.int64))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
