"""The linked head (``link_head``): the concept path's first passages put in an order where each next one shares names
with the ones before it, the way the passages of a multi-hop answer chain (question -> bridge entity -> answer).

The bridge strategy ranks each unit by its own score (dense + the bonus of the bridges it was reached through), so its
fifth passage may be one that merely resembles the question while the passage naming the bridge entity of the first
waits at the ninth. This step reorders the first :attr:`~g2cons_plugins.config.RetrievalOptions.link_pool` (10)
passages of the list: the first stays first (and so do the passages the names head placed first for the names the
question writes, :mod:`~g2cons_plugins.retrieval.name_head`); then, up to ``link_head`` (5) passages in all, the
passage with the highest

    1 / (K + its rank)  +  link_weight x |shared| / (2 + |its names|)    (|shared| >= 2, else no link)

is chosen next (K = :data:`RANK_K`; ties: the better rank), where a passage's names are the concepts written
capitalised in most of their occurrences (``name_share`` >= 0.5, the ``bridge_vocab="concepts"`` names) in any of its
units, less the concepts the question writes (those link every candidate alike), and ``shared`` are those of its
names that the passages chosen so far hold. A link takes :data:`MIN_SHARED` (2) shared names: concepts are words and
word n-grams, so one multi-word name ("Korrimax Industries": three concepts) links, one lone word ("Italia") does not.
The chosen passages come first in that order, the rest keep theirs. Only the order changes: the same units, scores
and tokens (so Context Recall at a budget does not move), and a unit whose place changed says in its ``reason`` where
it was (``position_before``: its index in the list before; :func:`position_before`). Off with ``link_head`` < 2 or
``link_weight`` 0; for the ``bridge`` strategy (the default) only.

What it follows: a greedy choice one passage at a time, as maximal marginal relevance (Carbonell and Goldstein, 1998)
picks a list, with a bonus for what links a passage to those chosen instead of MMR's penalty for what repeats them;
the links are the concept graph's concept-to-chunk incidences, the same links the bridge rounds follow
(:mod:`~g2cons_plugins.retrieval.bridge`). Where it differs from the bridge rounds: they add one bonus per unit from
the seeds' bridges before ranking; this step reads the passages already placed, so the third passage can be chosen
for a name the second brought.

Measured (passage recall@2 / recall@5 of the concept path alone, off -> on; the reports of
``benchmarks/default_vs_baselines/run.sh``, summed up in docs/results.md): MuSiQue train100 52.5 / 70.4 -> 54.2 / 73.3,
HotpotQA train100 73.5 / 85.0 -> 76.0 / 89.0, MuSiQue KET-RAG 500 43.5 / 58.6 -> 47.0 / 60.9, XQuAD Spanish 97.7 /
99.0 unchanged (Chinese holds no capitalised names: unchanged). Context Recall does not move (the same units). Chosen
on those four: one shared name and a denominator of 1 + |its names| gave the same multi-hop gains but moved a
neighbouring paragraph of the same article over the answer on XQuAD Spanish (96.0 / 98.0); counting only names rare
in the pool or the corpus lost recall@2 on MuSiQue; link_weight 0.1 / 0.3 gained less than 0.2; chaining over the
names head's places lost HotpotQA's second named entity (74.5 / 87.5).

Cost: 0.42-0.98 ms a query at 80,000 passages (wordllama, 2 cores, the default query at beta 2,000: p50 4.56-4.99 ms
off, 5.15-5.54 on, five rounds taking turns; ``benchmarks/scale/linked_head_latency.py``): the ten chunks'
unit-concept rows from the unit positions the bridge placed, the question read by the concept analyzer once, one
comparison per distinct name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..snapshot import Snapshot
from .filling import RetrievedItem

__all__ = ["MIN_SHARED", "RANK_K", "before_linked", "link_order", "linked_head", "passage_names", "position_before"]

RANK_K = 5.0
"""The rank constant of a passage's own weight 1 / (K + rank) (as reciprocal rank fusion's k, small: the first
ranks weigh clearly more than the tenth)."""


MIN_SHARED = 2
"""The names a passage must share with those chosen before it to be linked to them (module doc)."""


def passage_names(snap: Snapshot, chunk_positions: Sequence[int], query: str) -> list[set[int]]:
    """The name concepts of each chunk (by position; -1: none) over all its units, less the concepts ``query``
    writes. Read from the unit-concept rows of the chunks' units (one slice each); a concept's text is read only to
    compare it with the query's terms, once per distinct name."""
    from ..concepts import text_analyzer

    dv, st = snap.derived, snap.stored
    is_name = snap.memo("retrieval.linked.is_name", lambda: np.asarray(dv.name_share) >= 0.5)  # once per snapshot
    cpos = np.asarray(chunk_positions, dtype=np.int64)
    lo = np.searchsorted(st.unit_parent, cpos, side="left").tolist()
    hi = np.searchsorted(st.unit_parent, cpos + 1, side="left").tolist()
    ptr, idx = dv.unit_inc.indptr, dv.unit_inc.indices
    out: list[set[int]] = []
    for c, a, b in zip(cpos.tolist(), lo, hi, strict=True):
        cols = np.asarray(idx[ptr[a] : ptr[b]], dtype=np.int64) if c >= 0 else np.empty(0, dtype=np.int64)
        out.append(set(cols[is_name[cols]].tolist()))
    # the query's terms, read as incidence reads a text (no lookup of the whole vocabulary; analyzer made once)
    asked = set(snap.memo("retrieval.linked.analyzer", lambda: text_analyzer(snap.config))(query)) if query else set()
    if asked:
        vocab = dv.vocab
        drop = {c for c in set().union(*out) if vocab[c] in asked}
        out = [names - drop for names in out]
    return out


def link_order(names: Sequence[set[int]], n_head: int, weight: float, fixed: int = 1) -> list[int]:
    """The order of the passages (indices into ``names``, which are in rank order): the first ``fixed`` (at least
    one) kept, the next up to ``n_head`` chosen as the module doc says, then the others in rank order."""
    n = len(names)
    fixed = min(max(fixed, 1), n)
    chosen = list(range(fixed))
    held = set().union(*names[:fixed]) if n else set()
    left = list(range(fixed, n))
    while len(chosen) < min(n_head, n):
        best, best_s = -1, -np.inf
        for j in left:
            shared = len(names[j] & held)
            s = 1.0 / (RANK_K + j) + (weight * shared / (2 + len(names[j])) if shared >= MIN_SHARED else 0.0)
            if s > best_s:  # strict: a tie keeps the better rank
                best, best_s = j, s
        chosen.append(best)
        left.remove(best)
        held |= names[best]
    return chosen + left


def linked_head(
    snap: Snapshot, query: str, items: list[RetrievedItem], positions: np.ndarray | Sequence[int] | None = None
) -> list[RetrievedItem]:
    """``items`` (the concept path's context, best first) with its first passages in the linked order (module doc);
    the same items otherwise. ``positions``: the items' unit positions when the caller has them (else looked up)."""
    opt = snap.config.retrieval
    if opt.link_head < 2 or opt.link_weight <= 0 or len(items) < 2:
        return items
    first: dict[str, int] = {}  # passage -> the position of its first unit in the list
    for j, it in enumerate(items):
        first.setdefault(it.parent_id, j)
    pool = list(first)[: max(opt.link_pool, opt.link_head)]
    if len(pool) < 2:
        return items
    unit_at = [positions[first[p]] if positions is not None else snap.unit_pos[items[first[p]].unit_id] for p in pool]
    chunk_at = np.asarray(snap.stored.unit_parent)[np.asarray(unit_at, dtype=np.int64)]
    named = {it.parent_id for it in items if it.reason.get("source") == "name"}
    fixed = 0
    while fixed < len(pool) and pool[fixed] in named:  # the names head's places stay (retrieval.name_head)
        fixed += 1
    order = link_order(passage_names(snap, chunk_at.tolist(), query), opt.link_head, opt.link_weight, fixed)
    if order == sorted(order):
        return items
    place = {pool[j]: i for i, j in enumerate(order)}
    head = [i for i, it in enumerate(items) if it.parent_id in place]
    head.sort(key=lambda i: place[items[i].parent_id])  # stable: a passage's units keep their order
    before = head + [i for i, it in enumerate(items) if it.parent_id not in place]
    return [
        items[i] if i == j else replace(items[i], reason={**items[i].reason, "position_before": i})
        for j, i in enumerate(before)
    ]


def before_linked(items: Sequence[RetrievedItem]) -> list[RetrievedItem]:
    """``items`` (the concept path's list) in their order before the linked head, without ``position_before``: what
    the fusion rules other than novel-first read, so they give what they gave before it."""
    order = sorted(range(len(items)), key=lambda j: position_before(items[j], j))
    out = []
    for j in order:
        it = items[j]
        if "position_before" in it.reason:
            it = replace(it, reason={k: v for k, v in it.reason.items() if k != "position_before"})
        out.append(it)
    return out


def position_before(item: RetrievedItem, position: int) -> int:
    """Where ``item``, now at ``position`` of the concept path's list, was before the linked order (a fusion that
    must drop some of the concept path's units drops the last ones of that order, as without the linked head)."""
    return int(item.reason.get("position_before", position))
