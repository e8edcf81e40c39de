"""Trickle updates: an add or remove of a few chunks in time proportional to the change, with a bounded drift
from a rebuild that ``G2ConSIndex.refresh()`` (:func:`g2cons_plugins.engine.snapshot_updates.refreshed`) removes.

An exact update (``store`` + ``derive`` over every chunk) costs a fraction of a build whatever the change. A
trickle update keeps the concept vocabulary fixed and recomputes only what the changed chunks touch:

- **vocabulary fixed**: the concepts W are those of the last exact derive. A new chunk links to the concepts its
  text contains; its new words are counted in the term index (BM25 sees them at once) and become concepts only
  at the next refresh. A removed chunk's concepts stay, possibly with df 0.
- **exact for every concept of W** (against a rebuild on the same chunks, for the concepts both have): df = |T_w|,
  the sentence / unit / chunk incidences, |S_w|, the Eq. 1 vector and the name share, the co-occurrences Co and
  the Dice weights of the edges, the bridge names' chunk frequencies. The chunks, units and their vectors are
  those of a rebuild; removed chunks are gone at once, new ones retrievable at once (BM25 sees their new words).
- **what drifts**: the vocabulary (new words are not concepts yet; a rebuild's TF-IDF top-n may pick other
  words), ``theta_sem`` (the percentile threshold of the last exact derive is kept), the edges that follow from
  those two. Given those, the edges follow the rule exactly (Co and cosine on the current incidence and vectors):
  a concept's candidate pairs are recomputed once its vector moved more than half the near-pair margin since they
  were, and the near pairs cover the rest (:mod:`g2cons_plugins.engine.edge_update`). An index saved without near pairs
  (before they existed) recomputes them once a vector moved more than :data:`VECTOR_SLACK` instead, so there a
  pair whose cosine is within 2 * VECTOR_SLACK of ``theta_sem`` can be decided otherwise than by the rule, until
  the first refresh. Also drifting: the candidate-pair count (a statistic); PageRank (warm-started from the
  previous vector: the fixed point of the drifted graph to the same tolerance); the ``extracted`` rows of new
  chunks (their top-n among the existing concepts, idf from the current df); the bridge-name list (fixed like W);
  the row order of the sentences (new ones appended; a removed chunk's sentences stay as dead rows, in no unit).

:class:`Pending` rides on a not-yet-refreshed snapshot; a refresh turns it into exactly the snapshot a
fresh build makes (``store`` + ``derive``, reusing every vector). :func:`use_trickle` is the policy of ``add`` /
``remove``: trickle for a change of at most :data:`MAX_SHARE` of a corpus of at least :data:`MIN_CHUNKS` chunks,
while the chunks changed since the last exact derive stay within :data:`DRIFT_BUDGET` of its size; otherwise
exact (an exact update of a trickled snapshot is a refresh).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

import numpy as np
import scipy.sparse as sp

from ..arrays.ones import binary
from ..arrays.wide_rows import Matrix, WideRows, with_columns
from ..build import Derived, Stored, freeze
from ..concepts import TermIndex, analyze, first_rows, later_words
from ..config import G2ConSConfig
from ..errors import InputError
from ..graph import concept_vectors, graph_stats, pagerank
from ..storage.memory import drop_mapped_pages, release_free_memory, state_arrays
from .edge_update import PairWorkExceeded, update_edges
from .trickle_log import Origin, TrickleOp
from .trickle_store import Inserted, RowMap, TextRows, insert_rows, spliced

__all__ = [
    "DEFER_CHUNKS",
    "DEFER_MIN_CHUNKS",
    "DRIFT_BUDGET",
    "MAX_SHARE",
    "MIN_CHUNKS",
    "PAIR_WORK_MAX",
    "PAIR_WORK_SHARE",
    "Deferred",
    "Pending",
    "TrickleTooLarge",
    "append_terms",
    "derive_added",
    "derive_removed",
    "flushed",
    "supports",
    "use_trickle",
]

# the policy, measured in benchmarks/scale/results/trickle_speed_wordllama.md (a trickle is 6-8x faster than an
# exact update for adds of 1 / 10 passages, 2.5-5x for 1% removals, at 10k and 100k passages; 1.2x for an add of
# 1% at 10k)
# and trickle_drift_musique_minilm.json (10% added by trickle: CR within 1.4 points of a rebuild)
MIN_CHUNKS = 2_000  # below this an exact update is cheap (tenths of a second): always exact
MAX_SHARE = 0.01  # a change above this share of the corpus is an exact update
DRIFT_BUDGET = 0.10  # chunks added + removed since the last exact derive, as a share of its size, before a refresh
# a concept's candidate pairs are recomputed once its vector has moved (L2, summed over updates) more than half
# the near-pair margin (graph.NEAR_MARGIN) since they were: the edges then follow the rule exactly
# (g2cons_plugins.engine.edge_update). An index saved without near pairs uses this slack instead, and an edge decision
# can then differ from the rule only for a pair whose cosine is within 2 * VECTOR_SLACK of theta_sem
VECTOR_SLACK = 0.01
# the pair work a trickle may spend: on the recomputed concepts, the sum of their df x the mean concepts per chunk
# (the nonzeros of their co-occurrence product); on the pairs that may have become edges, the sum of the rarer
# end's df (the chunks searched in the other end's list). The limit is the larger of PAIR_WORK_MAX and
# PAIR_WORK_SHARE of a full derive's pair work (nonzeros of the chunk incidence x concepts per chunk): above it
# the change touches so much of the graph that an exact update is cheaper (the products go by blocks of
# edge_update.BLOCK_WORK, so memory stays bounded either way)
PAIR_WORK_MAX = 20_000_000
PAIR_WORK_SHARE = 0.25
# on an index of at least DEFER_MIN_CHUNKS chunks, an add leaves the concept vectors, edges and PageRank of the
# concepts its chunks touch to a later update while at most DEFER_CHUNKS added chunks wait (:class:`Deferred`):
# one chunk's concepts include frequent ones whose every edge and near pair is re-decided (about a million pairs
# at 1M passages, 6 s), and the waiting chunks are re-graphed together at the add that passes DEFER_CHUNKS, the
# next removal, or a refresh (benchmarks/scale/results/add_stream_1m.md)
DEFER_MIN_CHUNKS = 200_000
DEFER_CHUNKS = 64


class TrickleTooLarge(Exception):
    """A trickle update would recompute more pairs than :data:`PAIR_WORK_MAX`: the caller updates exactly."""


Rows = tuple[sp.csr_matrix, np.ndarray, int]  # rows x concepts weights, the rows' vectors, +1 added / -1 removed


@dataclass(frozen=True)
class Deferred:
    """Added chunks whose concept-graph update waits (see :data:`DEFER_CHUNKS`): their chunk incidence rows, the
    rows their concepts' vector sums gain, and the concepts whose vector they move. Everything else of those
    chunks (stored, incidences, df, units, unit index, BM25) is in the snapshot already."""

    chunks: sp.csr_matrix
    rows: Rows
    moved: np.ndarray

    def joined(self, chunks: sp.csr_matrix, rows: Rows, moved: np.ndarray) -> Deferred:
        """These chunks and another add's."""
        X = sp.csr_matrix(sp.vstack([self.rows[0], rows[0]], format="csr"))
        return Deferred(
            sp.csr_matrix(sp.vstack([self.chunks, chunks], format="csr")),
            (X, np.concatenate([self.rows[1], rows[1]]), 1),
            np.union1d(self.moved, moved),
        )


@dataclass(frozen=True)
class Pending:
    """The trickle state of a not-yet-refreshed snapshot (see module doc)."""

    concept_cols: np.ndarray  # term-index column of each concept
    name_cols: np.ndarray  # term-index column of each bridge name
    live: np.ndarray  # per sentence row: in at least one unit
    sent_map: TextRows  # sentence text -> row
    word_map: RowMap  # word -> term-index column
    n_base: int  # chunks at the last exact derive
    n_changed: int  # chunks added + removed since then
    stale: np.ndarray  # per concept: bound on how far its vector moved since its edges' cosines were computed
    deferred: Deferred | None = None  # added chunks whose concept-graph update waits
    origin: Origin | None = None  # where the exact snapshot these updates started from is saved, if it is
    ops: tuple[TrickleOp, ...] = ()  # the updates since then, in order (g2cons_plugins.engine.trickle_log)

    @classmethod
    def start(cls, st: Stored, dv: Derived, origin: Origin | None = None) -> Pending:
        """The trickle state of an exact snapshot (one pass over its sentences and words); ``origin``: where that
        snapshot is saved."""
        word_map = RowMap(dv.terms.words)
        cols = np.fromiter((word_map.rows[w] for w in dv.vocab), np.int64, count=len(dv.vocab))
        name_cols = np.fromiter((word_map.rows[w] for w in dv.names), np.int64, count=len(dv.names))
        live = np.ones(len(st.sentences), bool)
        stale = np.zeros(len(dv.vocab), np.float64)
        return cls(cols, name_cols, live, TextRows(st.sentences), word_map, len(st.chunks), 0, stale, origin=origin)

    def logged(self, op: TrickleOp) -> Pending:
        """This state with ``op`` appended to its log."""
        return replace(self, ops=(*self.ops, op))

    @property
    def drift(self) -> float:
        """Chunks changed since the last exact derive, as a share of its size."""
        return self.n_changed / max(self.n_base, 1)


def supports(config: G2ConSConfig) -> str | None:
    """Why ``config`` cannot be trickle-updated (None when it can): unigram TF-IDF or all-words concepts,
    "contains" incidence, sentence vectors and chunk co-occurrence (the defaults) only."""
    if not config.near_pairs:
        return "mode='paper' (the paper's rebuild semantics)"
    for name, want in (("ngram_max", 1), ("incidence", "contains")):
        if getattr(config.graph, name) != want:
            return f"{name}={getattr(config.graph, name)!r}"
    if config.graph.vector_level not in ("sentence", "unit"):
        return f"vector_level={config.graph.vector_level!r}"
    if config.graph.cooccurrence != "chunk":
        return f"cooccurrence={config.graph.cooccurrence!r}"
    return None


def use_trickle(
    n_chunks: int, n_change: int, pending: Pending | None, config: G2ConSConfig, exact: bool | None
) -> bool:
    """The update policy (module doc): ``exact=True`` / ``False`` forces it (False raises when ``config`` does not
    support a trickle), None decides by size, share and drift budget."""
    why = supports(config)
    if exact is False:
        if why:
            raise InputError(f"exact=False: a trickle update does not support {why}")
        return True
    if exact or why or n_chunks < MIN_CHUNKS or n_change > MAX_SHARE * n_chunks:
        return False
    base = pending.n_base if pending is not None else n_chunks
    done = pending.n_changed if pending is not None else 0
    return done + n_change <= DRIFT_BUDGET * base


# ---------------------------------------------------------------------------------------------- term index
def append_terms(
    terms: TermIndex, fresh: list[str], word_map: RowMap, config: G2ConSConfig
) -> tuple[TermIndex, RowMap]:
    """``terms`` with rows for the ``fresh`` sentences appended; their unknown words get columns after the known
    ones (the words are sorted again at refresh). Returns the word map with those columns too. The new rows are
    those :func:`~g2cons_plugins.concepts.analyze` makes for these sentences after the known ones: a word after a
    sentence's first counts for the name share once it was kept in any earlier row (every known column was) or
    in that sentence (:func:`~g2cons_plugins.concepts.later_words`)."""
    if not fresh:
        return terms, word_map
    a = analyze(fresh, config)
    word_map, cols_list = word_map.extended(len(terms.words), a.words, terms.words)
    cols = np.asarray(cols_list, np.int64)
    n_old, n_known = terms.n_sentences, len(terms.words)
    words = terms.words + tuple(w for w, c in zip(a.words, cols_list, strict=True) if c >= n_known)
    width = len(words)
    first = np.zeros(width, np.int64)  # a known column: in an earlier row
    new_cols = cols >= n_known
    first[cols[new_cols]] = n_old + first_rows(a.counts)[new_cols]
    rows = np.arange(n_old, n_old + len(fresh))
    B = a.counts.tocoo()
    R = sp.csr_matrix((B.data, (B.row, cols[B.col])), shape=(len(fresh), width))
    R.sort_indices()
    mats = []
    added = (R, *later_words(fresh, rows, words, first))
    for old, add in zip((terms.counts, terms.noninit, terms.caps), added, strict=True):
        wide = sp.csr_matrix((old.data, old.indices, old.indptr), shape=(old.shape[0], width))
        mats.append(sp.vstack([wide, add], format="csr"))
    return freeze(TermIndex(words, mats[0], mats[1], mats[2])), word_map


def _mapped(counts: sp.spmatrix, col_to: np.ndarray, width: int, counts_too: bool = False) -> sp.csr_matrix:
    """0/1 rows of ``counts`` (the counts with ``counts_too``) with term columns mapped by ``col_to`` (-1:
    dropped) onto ``width`` columns."""
    C = counts.tocoo()
    to = np.full(max(counts.shape[1], len(col_to)), -1, np.int64)
    to[: len(col_to)] = col_to
    m = to[C.col]
    keep = m >= 0
    M = sp.csr_matrix((C.data[keep], (C.row[keep], m[keep])), shape=(counts.shape[0], width))
    return M if counts_too else binary(M)


def _inverse(cols: np.ndarray, width: int) -> np.ndarray:
    inv = np.full(width, -1, np.int64)
    inv[cols] = np.arange(len(cols))
    return inv


def _share_live(terms: TermIndex, cols: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Name share of the words ``cols`` over the live sentences (:func:`g2cons_plugins.concepts.share`)."""
    sums = []
    for M in (terms.caps, terms.noninit):
        C = sp.csr_matrix(M[:, cols]).tocoo()
        ok = live[C.row]
        sums.append(np.bincount(C.col[ok], weights=C.data[ok], minlength=len(cols)).astype(np.float64))
    caps, total = sums
    return np.divide(caps, total, out=np.zeros(len(cols)), where=total > 0).astype(np.float32)


# ---------------------------------------------------------------------------------------------- derived state
def derive_added(
    dv: Derived,
    pd: Pending,
    st: Stored,
    ins: Inserted,
    terms: TermIndex,
    config: G2ConSConfig,
    force: bool = False,
) -> tuple[Derived, Pending]:
    """The derived state of ``st`` (``dv``'s with the chunks of ``ins`` inserted) in time proportional to the new
    chunks' concepts; ``terms``: the term index with the new sentences' rows (see module doc). Raises
    :class:`TrickleTooLarge` past :data:`PAIR_WORK_MAX` unless ``force``."""
    m, width, n_old = len(dv.vocab), len(terms.words), dv.sent_inc.shape[0]
    col2c = _inverse(pd.concept_cols, width)
    k_u, k_c = len(ins.unit_at), len(ins.chunk_at)
    S = sp.csr_matrix(
        (
            np.ones(sum(map(len, ins.unit_sents)), np.float32),
            (np.repeat(np.arange(k_u), [len(r) for r in ins.unit_sents]), [r for rs in ins.unit_sents for r in rs]),
        ),
        shape=(k_u, len(st.sentences)),
    )
    S = binary(S)
    X = sp.csr_matrix(S @ terms.counts)  # new units x words, occurrences
    P = sp.csr_matrix((np.ones(k_u, np.float32), (ins.unit_chunk, np.arange(k_u))), shape=(k_c, k_u))
    U_new = _mapped(X, col2c, m)
    C_new = binary(P @ U_new)
    sent_inc, live, changed = _revive(dv.sent_inc, pd.live, np.unique(S.indices), terms, col2c, n_old)
    chunk_inc = insert_rows(dv.chunk_inc, ins.chunk_ins, C_new)
    df = dv.df + np.asarray(C_new.sum(axis=0)).ravel().astype(np.int64)
    tf = _mapped(P @ X, col2c, m, counts_too=True)
    N_new = _mapped(X, _inverse(pd.name_cols, width), len(dv.names))
    out = replace(
        dv,
        extracted=insert_rows(dv.extracted, ins.chunk_ins, _top_n(tf, df, len(st.chunks), config.graph.top_n)),
        sent_inc=sent_inc,
        unit_inc=insert_rows(dv.unit_inc, ins.unit_ins, U_new),
        chunk_inc=chunk_inc,
        df=df,
        unit_names=insert_rows(dv.unit_names, ins.unit_ins, N_new),
        name_df=dv.name_df + np.asarray(binary(P @ N_new).sum(axis=0)).ravel().astype(np.int64),
        terms=terms,
    )
    at_end = int(ins.unit_ins.min(initial=len(st.units))) == dv.unit_inc.shape[0]
    out = replace(
        out,
        unit_concepts=_grown_t(dv.unit_concepts, U_new, ins.unit_at) if at_end else out.unit_inc.T.tocsr(),
        name_units=_grown_t(dv.name_units, N_new, ins.unit_at) if at_end else out.unit_names.T.tocsr(),
    )
    pd = replace(pd, n_changed=pd.n_changed + k_c)
    moved = _moved(sent_inc[changed], U_new, config)
    if config.graph.vector_level == "unit":  # each new unit's vector, once per sentence of it holding the concept
        rows: Rows = (sp.csr_matrix(S @ sent_inc), st.unit_vecs[ins.unit_at], 1)
    else:  # each new or revived sentence's vector
        rows = (sent_inc[changed], _rows_of(st.sent_vecs, changed), 1)
    wait = Deferred(sp.csr_matrix(C_new), rows, moved)
    if pd.deferred is not None:
        wait = pd.deferred.joined(wait.chunks, rows, moved)
    if len(st.chunks) >= DEFER_MIN_CHUNKS and wait.chunks.shape[0] <= DEFER_CHUNKS:
        sizes = {"n_chunks": len(st.chunks), "n_units": len(st.units), "n_sentences": int(live.sum())}
        return freeze(replace(out, stats=replace(dv.stats, **sizes))), replace(pd, live=_frozen(live), deferred=wait)
    pd = replace(pd, deferred=None)
    return _regraph(out, dv, pd, st, live, (wait.chunks, 1), wait.moved, config, force, wait.rows)


def flushed(dv: Derived, pd: Pending, st: Stored, config: G2ConSConfig, force: bool = False) -> tuple[Derived, Pending]:
    """``dv`` with the concept-graph update of the added chunks that wait (:class:`Deferred`) made, and no chunk
    waiting (``dv`` itself when none waits). Raises :class:`TrickleTooLarge` as :func:`derive_added` does."""
    wait = pd.deferred
    if wait is None:
        return dv, pd
    pd = replace(pd, deferred=None)
    return _regraph(dv, dv, pd, st, pd.live, (wait.chunks, 1), wait.moved, config, force, wait.rows)


def _grown_t(T: Matrix, rows: sp.csr_matrix, at: np.ndarray) -> Matrix:
    """The transpose ``T`` (columns x units) of an incidence with the new units' ``rows`` appended as columns
    ``at`` (after every old unit, ascending): the new entries go into ``T``'s part of appended columns
    (:class:`~g2cons_plugins.arrays.wide_rows.WideRows`; no copy of the rest), equal to the transpose of the grown
    incidence."""
    base = T.base if isinstance(T, WideRows) else T
    tail = T.tail if isinstance(T, WideRows) else sp.csr_matrix((base.shape[0], 0), dtype=base.dtype)
    return with_columns(T, _grown_csr_t(tail, rows, np.asarray(at, np.int64) - base.shape[1]))


def _grown_csr_t(T: sp.csr_matrix, rows: sp.csr_matrix, at: np.ndarray) -> sp.csr_matrix:
    """:func:`_grown_t` of a csr matrix: each new entry goes at the end of its row (no sort of the touched rows;
    one copy of the arrays, by slices: :func:`~g2cons_plugins.engine.trickle_store.spliced`)."""
    R = sp.csr_matrix(rows).tocoo()
    unit = np.asarray(at, np.int64)[R.row]
    order = np.lexsort((unit, R.col))  # by row of T, then unit: each row's new entries in ascending order
    row, unit, val = R.col[order], unit[order], R.data[order].astype(T.dtype)
    where = T.indptr[row + 1]  # the end of each entry's row in the old arrays (np.insert keeps equal ones in order)
    added = np.bincount(row, minlength=T.shape[0])
    indptr = T.indptr.astype(np.int64) + np.concatenate([[0], np.cumsum(added)])
    indices = spliced(T.indices, where, unit)
    data = spliced(T.data, where, val)
    out = sp.csr_matrix((data, indices, indptr), shape=(T.shape[0], T.shape[1] + rows.shape[0]), copy=False)
    out.has_sorted_indices = True
    return out


def _moved(sentences: sp.csr_matrix, units: sp.csr_matrix, config: G2ConSConfig) -> np.ndarray:
    """The concepts whose vector a change moves: those of the ``sentences`` rows that came or went, and with
    unit-level vectors (each sentence's vector is its unit's) those of the ``units`` that came or went, even where
    their sentences are known."""
    cols = [sentences.indices] + ([units.indices] if config.graph.vector_level == "unit" else [])
    return np.unique(np.concatenate(cols).astype(np.int64))


def derive_removed(
    dv: Derived,
    pd: Pending,
    prev: Stored,
    st: Stored,
    keep_chunk: np.ndarray,
    keep_unit: np.ndarray,
    config: G2ConSConfig,
    force: bool = False,
) -> tuple[Derived, Pending]:
    """The derived state of ``st`` (``prev`` without the chunks where ``keep_chunk`` is False); the removed
    chunks' sentences that no kept unit holds die (module doc). Raises :class:`TrickleTooLarge` as
    :func:`derive_added` does."""
    dv, pd = flushed(dv, pd, prev, config, force)  # the added chunks that wait first: they may be removed now
    gone_c, gone_u = np.flatnonzero(~keep_chunk), np.flatnonzero(~keep_unit)
    live = pd.live & (np.diff(st.sent_unit.indptr) > 0)
    died = np.flatnonzero(pd.live & ~live)
    P = sp.csr_matrix(
        (np.ones(len(gone_u), np.float32), (np.searchsorted(gone_c, prev.unit_parent[gone_u]), np.arange(len(gone_u)))),
        shape=(len(gone_c), len(gone_u)),
    )
    sent_inc = sp.csr_matrix(sp.diags(live.astype(np.float32)) @ dv.sent_inc)
    sent_inc.eliminate_zeros()
    C_gone = dv.chunk_inc[gone_c]
    name_gone = binary(P @ dv.unit_names[gone_u])
    out = replace(  # frozen at once: their data become views of the shared ones, not held through the update
        dv,
        extracted=freeze(dv.extracted[keep_chunk]),
        sent_inc=freeze(sent_inc),
        unit_inc=freeze(dv.unit_inc[keep_unit]),
        chunk_inc=freeze(dv.chunk_inc[keep_chunk]),
        df=dv.df - np.asarray(C_gone.sum(axis=0)).ravel().astype(np.int64),
        unit_names=freeze(dv.unit_names[keep_unit]),
        name_df=dv.name_df - np.asarray(name_gone.sum(axis=0)).ravel().astype(np.int64),
    )
    out = replace(out, unit_concepts=freeze(out.unit_inc.T.tocsr()), name_units=freeze(out.unit_names.T.tocsr()))
    drop_mapped_pages(state_arrays(dv))  # the file pages those copies read (at 1M: 1.2 GB), before the graph update
    pd = replace(pd, n_changed=pd.n_changed + len(gone_c))
    moved = _moved(dv.sent_inc[died], dv.unit_inc[gone_u], config)
    if config.graph.vector_level == "unit":  # what the removed units added (their sentences' rows as they were)
        rows: Rows = (sp.csr_matrix(prev.sent_unit[:, gone_u].T @ dv.sent_inc), prev.unit_vecs[gone_u], -1)
    else:  # the sentences that died
        rows = (dv.sent_inc[died], _rows_of(prev.sent_vecs, died), -1)
    return _regraph(out, dv, pd, st, live, (C_gone, -1), moved, config, force, rows)


def _rows_of(vecs: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
    if vecs is None:  # sentence-level vectors need sentence vectors (supports() allows no other case)
        raise InputError("vector_level='sentence' needs sentence vectors")
    return cast(np.ndarray, vecs[rows])


def _summed(
    vecs: np.ndarray, sum_norms: np.ndarray, moved: np.ndarray, rows: Rows, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The moved concepts' vectors and sum norms from their sums before (vector x sum norm) plus or minus the
    changed rows' vectors (:func:`g2cons_plugins.graph.concept_vectors`, to float rounding): time in the changed rows,
    not in the concepts' frequency. A concept left in no sentence (``counts`` 0) gets a zero vector."""
    X, W, sign = rows
    S = vecs[moved].astype(np.float64) * sum_norms[moved][:, None]
    S += sign * np.asarray(sp.csr_matrix(X)[:, moved].T @ W.astype(np.float64))
    norms = np.linalg.norm(S, axis=1)
    norms[counts == 0] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        V = np.where(norms[:, None] > 0, S / norms[:, None], 0.0).astype(np.float32)
    return V, norms


def _revive(
    sent_inc: sp.csr_matrix, live: np.ndarray, rows: np.ndarray, terms: TermIndex, col2c: np.ndarray, n_old: int
) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """The sentence incidence with the appended rows and the dead rows used again filled in; the liveness and
    the rows that changed."""
    m = sent_inc.shape[1]
    n = terms.n_sentences
    live = np.concatenate([live, np.ones(n - n_old, bool)])
    changed = np.concatenate(
        [rows[(rows < n_old) & ~live[np.minimum(rows, n_old - 1)]] if n_old else rows[:0], np.arange(n_old, n)]
    )
    live[changed] = True
    R = _mapped(terms.counts[changed], col2c, m).tocoo()
    add = sp.csr_matrix((R.data, (changed[R.row], R.col)), shape=(n, m))
    grown = sp.csr_matrix(
        (sent_inc.data, sent_inc.indices, np.concatenate([sent_inc.indptr, np.full(n - n_old, sent_inc.indptr[-1])])),
        shape=(n, m),
    )
    return binary(grown + add) if len(changed) else grown, live, changed


def _top_n(tf: sp.csr_matrix, df: np.ndarray, n_chunks: int, top_n: int) -> sp.csr_matrix:
    """0/1 rows: the ``top_n`` concepts of each row of term counts ``tf`` by TF-IDF (smooth idf from ``df``),
    ties by concept order, as :func:`g2cons_plugins.concepts.top_concepts` ranks them."""
    T = sp.csr_matrix(tf, dtype=np.float64)
    T.sort_indices()
    idf = np.log((1.0 + n_chunks) / (1.0 + df.astype(np.float64))) + 1.0
    rows, cols = [], []
    for i in range(T.shape[0]):
        lo, hi = T.indptr[i], T.indptr[i + 1]
        idx = T.indices[lo:hi]
        score = (T.data[lo:hi] * idf[idx]).astype(np.float32)
        order = np.lexsort((idx, -score))[:top_n]
        rows.extend([i] * len(order))
        cols.extend(idx[order].tolist())
    return sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=T.shape)


def _regraph(
    out: Derived,
    dv: Derived,
    pd: Pending,
    st: Stored,
    live: np.ndarray,
    changed: tuple[sp.csr_matrix, int],
    moved: np.ndarray,
    config: G2ConSConfig,
    force: bool = False,
    rows: Rows | None = None,
) -> tuple[Derived, Pending]:
    """Vectors and name shares of the concepts whose sentences changed (``moved``; from their sums and the changed
    ``rows`` where the snapshot keeps the sum norms, else summed again), the edges after the chunks
    ``changed`` (their incidence rows, and +1 added / -1 removed; a moved concept's candidate pairs are recomputed
    once it moved more than half the near-pair margin, or :data:`VECTOR_SLACK` where the snapshot has no near
    pairs; :func:`g2cons_plugins.engine.edge_update.update_edges`), adjacency, warm-started PageRank, statistics; the
    trickle state with the new liveness and staleness."""
    vecs, counts, shares = dv.concept_vecs.copy(), dv.sentence_counts.copy(), dv.name_share.copy()
    stale = pd.stale.copy()
    sum_norms = None if dv.sum_norms is None or rows is None else dv.sum_norms.copy()
    if len(moved):
        if sum_norms is not None and rows is not None:
            c = np.bincount(out.sent_inc.indices, minlength=len(vecs))[moved].astype(counts.dtype)
            V, sum_norms[moved] = _summed(vecs, sum_norms, moved, rows, c)
        else:
            level, S, U = config.graph.vector_level, out.sent_inc[:, moved], out.unit_inc[:, moved]
            cv = concept_vectors(level, S, U, st.sent_unit, st.sent_vecs, st.unit_vecs)
            V, c = cv.vectors, cv.counts
        stale[moved] += np.linalg.norm(V.astype(np.float64) - vecs[moved], axis=1)
        vecs[moved], counts[moved] = V, c
        del V  # in vecs now; not held through the edge update
        shares[moved] = _share_live(out.terms, pd.concept_cols[moved], live)
    margin = dv.edges.near.margin
    redo = moved[stale[moved] > (margin / 2 if margin > 0 else VECTOR_SLACK)]
    per_chunk = out.chunk_inc.nnz / max(out.chunk_inc.shape[0], 1)
    limit = float("inf") if force else max(PAIR_WORK_MAX, PAIR_WORK_SHARE * out.chunk_inc.nnz * per_chunk)
    if float(out.df[redo].sum()) * per_chunk > limit:
        raise TrickleTooLarge(f"{len(redo):,} concepts to recompute, about {out.df[redo].sum() * per_chunk:,.0f} pairs")
    stale[redo] = 0.0
    try:  # the old edges' and adjacency's file pages (a loaded index) are unmapped once read: at 1M, 0.9 GB
        edges, A = update_edges(
            dv.edges, out.chunk_inc, vecs, moved, redo, *changed, config.theta_co, out.df, limit,
            read=lambda: _edges_read(dv, removal=changed[1] < 0),
        )
        drop_mapped_pages([dv.A])
    except PairWorkExceeded as e:
        raise TrickleTooLarge(str(e)) from e
    stats = graph_stats((len(st.chunks), len(st.units), int(live.sum()), len(dv.vocab)), edges, A)
    dv_new = freeze(
        replace(
            out,
            concept_vecs=vecs,
            sentence_counts=counts,
            name_share=shares,
            edges=edges,
            A=A,
            pagerank=pagerank(A, damping=config.graph.pagerank_damping, x0=dv.pagerank, symmetric=True),
            stats=stats,
            sum_norms=sum_norms,
        )
    )
    return dv_new, replace(pd, live=_frozen(live), stale=stale)


def _edges_read(dv: Derived, removal: bool) -> None:
    """Once the edge update read the old edges for the last time (before it builds the adjacency): their file
    pages (a loaded index), and for a removal, the merge's freed heap too (a removal's peak is there or after)."""
    drop_mapped_pages(state_arrays(dv.edges))
    if removal:
        release_free_memory()


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
