"""Host items against the concept graph: which units a host item stands for, how much the host agrees with the
concept path for a query, and the concept path's head (the passages it is surest of)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..retrieval import RetrievedItem, retrieve
from ..snapshot import HasSnapshot, Snapshot, as_snapshot
from .items import HostItem, as_host_items, norm_text
from .options import FuseOptions, FuseRequest

__all__ = [
    "AGREEMENT_TOP",
    "BothPaths",
    "agreement",
    "both_paths",
    "chunk_units",
    "concept_head",
    "cut",
    "distinct",
    "host_units",
    "resolve_host_items",
    "units_of_hosts",
]

AGREEMENT_TOP = 5
"""How many of the host's first graph chunks its agreement with the concept path is measured on."""


def resolve_host_items(index: HasSnapshot, host: Sequence[Any]) -> list[HostItem]:
    """Validated host items; an id-only item whose id is a chunk (or unit) of the graph gets that text. Ids the
    graph does not hold are reported in one warning (they cannot be placed without text)."""
    snap = as_snapshot(index)
    out, unknown = [], []
    for h in as_host_items(host):
        cid = h.chunk_id
        if h.text is None and cid is not None:
            if cid in snap.chunk_pos:
                h = replace(h, text=snap.stored.chunks[snap.chunk_pos[cid]].text)
            elif cid in snap.unit_pos:
                h = replace(h, text=snap.stored.units[snap.unit_pos[cid]].text)
            else:
                unknown.append(cid)
        out.append(h)
    if unknown:
        warnings.warn(
            f"{len(unknown)} id-only host item(s) name chunks this graph does not hold and have no text: "
            f"{unknown[:5]}",
            stacklevel=3,
        )
    return out


def distinct(hosts: Sequence[HostItem]) -> list[HostItem]:
    """Host items without repeats (the same chunk id, or the same text of an item without id), first kept."""
    seen: set[str] = set()
    out = []
    for h in hosts:
        key = h.chunk_id if h.chunk_id is not None else "\0" + (h.text or "")
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


def _units_table(snap: Snapshot) -> tuple[np.ndarray, np.ndarray]:
    parent = np.asarray(snap.stored.unit_parent)
    order = np.argsort(parent, kind="stable")
    starts = np.searchsorted(parent[order], np.arange(len(snap.stored.chunks) + 1))
    return order, starts


def chunk_units(snap: Snapshot, chunk_pos: int) -> np.ndarray:
    """Unit positions of one chunk (a chunk -> units table built once per snapshot)."""
    order, starts = snap.memo("fusion.chunk_units", lambda: _units_table(snap))
    return order[starts[chunk_pos] : starts[chunk_pos + 1]]


def host_units(snap: Snapshot, h: HostItem) -> np.ndarray | None:
    """Unit positions a host item stands for (its chunk's units, or one unit), None when the graph lacks it."""
    if h.chunk_id is not None:
        if h.chunk_id in snap.chunk_pos:
            return chunk_units(snap, snap.chunk_pos[h.chunk_id])
        if h.chunk_id in snap.unit_pos:
            return np.asarray([snap.unit_pos[h.chunk_id]], dtype=np.int64)
    return None


def _texts_table(snap: Snapshot) -> dict[str, int]:
    table: dict[str, int] = {}
    for pos, c in enumerate(snap.stored.chunks):
        table.setdefault(norm_text(c.text), pos)
    return table


def _match_text(snap: Snapshot, text: str, alone: Sequence[RetrievedItem]) -> np.ndarray | None:
    """Units of the chunk a host text is (normalised equal), or the units of the concept path's own result whose
    text it contains (a host chunk covering ours, as the ensemble matches); None when neither."""
    pos = snap.memo("fusion.chunk_by_text", lambda: _texts_table(snap)).get(norm_text(text))
    if pos is not None:
        return chunk_units(snap, pos)
    hn = norm_text(text)
    hit = [snap.unit_pos[c.unit_id] for c in alone if len(norm_text(c.text)) >= 20 and norm_text(c.text) in hn]
    return np.asarray(hit, dtype=np.int64) if hit else None


def units_of_hosts(
    snap: Snapshot, hosts: Sequence[HostItem], alone: Sequence[RetrievedItem]
) -> list[np.ndarray | None]:
    """The unit positions each host item stands for, None where the graph lacks it: by its id; an item without an
    id by its text (:func:`_match_text`); an unknown id is never matched by text."""
    out = []
    for h in hosts:
        units = host_units(snap, h)
        if units is None and h.text and h.chunk_id is None:
            units = _match_text(snap, h.text, alone)
        out.append(units)
    return out


def agreement(hosts: list[HostItem], units_of: list[np.ndarray | None], concept_chunks: set[str]) -> float:
    """Share of the host's first :data:`AGREEMENT_TOP` graph chunks that the concept path alone also places: how
    much this query's host results are worth (a host that returns noise for a query gets no say in its ranking)."""
    top = [h.chunk_id for h, u in zip(hosts, units_of, strict=True) if u is not None][:AGREEMENT_TOP]
    return sum(c in concept_chunks for c in top) / len(top) if top else 0.0


def concept_head(alone: list[RetrievedItem], n: int, beta: int) -> list[RetrievedItem]:
    """The concept path's own first ``n`` passages (its units up to the n-th distinct chunk, at most half of beta):
    kept first whatever the host says, so the host's evidence reorders the rest of the context, never the head the
    concept path is surest of."""
    head: list[RetrievedItem] = []
    parents: set[str] = set()
    used = 0
    for it in alone:
        if (it.parent_id not in parents and len(parents) >= n) or used + it.n_tokens > beta // 2:
            break
        parents.add(it.parent_id)
        head.append(it)
        used += it.n_tokens
    return head


def cut(items: list[RetrievedItem], beta: int) -> list[RetrievedItem]:
    """Items in order while they fit in beta (one that does not fit is skipped)."""
    used, out = 0, []
    for it in items:
        if used + it.n_tokens <= beta:
            used += it.n_tokens
            out.append(it)
    return out


@dataclass(frozen=True)
class BothPaths:
    """One query's two paths side by side: its vector, the concept path alone at beta, the unit positions each
    host item stands for (None: the graph lacks it) and the host's agreement with the concept path (1.0 when
    ``host_agreement`` is off)."""

    query_vector: np.ndarray
    alone: list[RetrievedItem]
    units_of: list[np.ndarray | None]
    agreement: float


def both_paths(req: FuseRequest, opt: FuseOptions) -> BothPaths:
    """The concept path alone (the caller's, or run now) and the host items matched to it (share and score)."""
    snap = req.snap
    qv = snap.embed_query(req.query) if req.query_vector is None else req.query_vector
    alone = list(req.concept) if req.concept is not None else retrieve(snap, req.query, opt.beta, opt.strategy, qv)
    units_of = units_of_hosts(snap, req.hosts, alone)
    agree = agreement(req.hosts, units_of, {c.parent_id for c in alone}) if opt.host_agreement else 1.0
    return BothPaths(qv, alone, units_of, agree)
